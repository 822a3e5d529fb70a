#!/usr/bin/env bash
# Installs everything autotune needs to build and test; idempotent and quick when all is present.
#
#   scripts/setup-deps.sh            install what is missing, print what was done
#   scripts/setup-deps.sh --check    only report what is missing (exit 1 if anything is)
#
# What it provides:
#   1. Debian packages (apt-get as root, via `sudo -n` otherwise).
#   2. LibTorch = the torch==2.11.0 wheel from PyPI (CUDA 13.0 build) in a virtual environment under
#      ${AUTOTUNE_CACHE:-~/.cache/autotune}. Skipped when Torch_DIR is set or when the current python3
#      already imports torch 2.11.
#   3. A CMake new enough for torch's CMake config, from PyPI, when Debian's is too old.
# It writes ${AUTOTUNE_CACHE}/deps.env (TORCH_PREFIX, CMAKE, PYTHON) which the Makefile reads.
set -euo pipefail

TORCH_VERSION=2.11.0
CMAKE_MIN=3.25          # checked: torch 2.11's TorchConfig configures with Debian's CMake 3.25.1
CACHE="${AUTOTUNE_CACHE:-$HOME/.cache/autotune}"
VENV="$CACHE/venv-torch-$TORCH_VERSION"
CHECK_ONLY=0
[ "${1:-}" = "--check" ] && CHECK_ONLY=1

say() { printf 'setup-deps: %s\n' "$*"; }
die() { printf 'setup-deps: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- 1. Debian packages
DEB_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3-venv
  libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libturbojpeg0-dev libjpeg62-turbo-dev
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libsqlite3-dev sqlite3
  libjs-chart.js binutils valgrind clang libclang-rt-dev
  libgloo-dev
  libbenchmark-tools python3-scipy
  slurmctld slurmd slurm-client munge
)
# slurm*/munge: a real single-node Slurm for the Slurm executors' tests (scripts/slurm-cluster.sh starts it).
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  say "Debian packages: all ${#DEB_PACKAGES[@]} present"
elif [ $CHECK_ONLY -eq 1 ]; then
  say "Debian packages missing: ${missing[*]}"; exit 1
else
  if [ "$(id -u)" -eq 0 ]; then APT=(apt-get); elif sudo -n true 2>/dev/null; then APT=(sudo -n apt-get);
  else die "missing Debian packages: ${missing[*]} — install them as root (apt-get install ${missing[*]})"; fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${APT[@]}" update -qq >/dev/null || die "apt-get update failed"
  "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install failed for: ${missing[*]}"
  say "installed ${#missing[@]} Debian packages"
fi

# Optional, for the browser test of report.html (CTest label `browser`; it skips without Chromium):
# Debian's headless Chromium, ~19 s to install. A failure here only warns.
OPTIONAL_PACKAGES=(chromium-headless-shell)
opt_missing=()
for p in "${OPTIONAL_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || opt_missing+=("$p")
done
# A failed optional install is remembered for a day (CACHE/optional-failed), so a machine whose mirrors lack the package
# does not retry it (apt-get install, then update and install again) on every `make test` and `make check-fast`.
opt_failed="$CACHE/optional-failed"
if [ ${#opt_missing[@]} -gt 0 ] && [ $CHECK_ONLY -eq 0 ] && [ -z "${AUTOTUNE_NO_OPTIONAL:-}" ]; then
  if [ -f "$opt_failed" ] && [ "$(cat "$opt_failed")" = "${opt_missing[*]}" ] && [ -n "$(find "$opt_failed" -mmin -1440)" ]; then
    say "warning: ${opt_missing[*]} (optional) could not be installed within the last day (rm $opt_failed to retry now): the browser test of report.html will be skipped"
  else
    if [ "$(id -u)" -eq 0 ]; then APT=(apt-get); elif sudo -n true 2>/dev/null; then APT=(sudo -n apt-get); else APT=(); fi
    opt_install() { DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y -qq --no-install-recommends "${opt_missing[@]}" >/dev/null 2>&1; }
    if [ ${#APT[@]} -gt 0 ] && { opt_install || { "${APT[@]}" update -qq >/dev/null 2>&1 && opt_install; }; }; then
      say "installed optional test tools: ${opt_missing[*]}"
      rm -f "$opt_failed"
    else
      mkdir -p "$(dirname "$opt_failed")" && echo "${opt_missing[*]}" > "$opt_failed"
      say "warning: could not install ${opt_missing[*]} (optional): the browser test of report.html will be skipped"
    fi
  fi
fi

# Optional: real photos for the input-pipeline tests and benchmarks (Debian packages, unpacked only).
if [ $CHECK_ONLY -eq 0 ] && [ -z "${AUTOTUNE_NO_OPTIONAL:-}" ]; then
  "$(dirname "$0")/fetch-test-images.sh" | sed 's/^/setup-deps: /' || say "warning: test images not fetched (optional)"
fi

# ---------------------------------------------------------------- 2. LibTorch
# What a Python holds, read without importing it (importing torch, Lightning and transformers to check that they are
# there took about 30 s of every warm `make test`): `py_probe PYTHON torch_version` prints torch's version without its
# local tag (empty when absent), `torch_cuda` its CUDA, `cmake_prefix_path` torch.utils.cmake_prefix_path, and
# `missing MOD...` the modules it cannot find.
py_probe() {
  "$1" - "${@:2}" 2>/dev/null <<'PY'
import importlib.metadata as md, importlib.util as iu, os, re, sys
what, args = sys.argv[1], sys.argv[2:]
spec = iu.find_spec("torch")
root = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else ""
if what == "torch_version":
    print(md.version("torch").split("+")[0] if root else "")
elif what == "torch_cuda":
    m = re.search(r"^cuda\s*(?::\s*\S+)?\s*=\s*'([^']*)'", open(os.path.join(root, "version.py")).read(), re.M) if root else None
    print(m.group(1) if m else "none")
elif what == "cmake_prefix_path":
    print(os.path.join(root, "share", "cmake") if root and os.path.isdir(os.path.join(root, "share", "cmake")) else "")
elif what == "missing":
    print(" ".join(a for a in args if iu.find_spec(a) is None))
PY
}
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
mkdir -p "$CACHE"
PYTHON=""
TORCH_PREFIX=""
if [ -n "${Torch_DIR:-}" ]; then
  [ -f "$Torch_DIR/TorchConfig.cmake" ] || die "Torch_DIR=$Torch_DIR has no TorchConfig.cmake"
  TORCH_PREFIX="$Torch_DIR"
  say "LibTorch: using Torch_DIR=$Torch_DIR (not installing)"
elif [ "$(py_probe python3 torch_version)" = "$TORCH_VERSION" ]; then
  PYTHON="$(command -v python3)"
  say "LibTorch: using torch $TORCH_VERSION already importable by $PYTHON"
else
  if [ ! -x "$VENV/bin/python" ]; then
    [ $CHECK_ONLY -eq 1 ] && { say "torch $TORCH_VERSION venv missing at $VENV"; exit 1; }
    say "creating virtual environment $VENV"
    python3 -m venv "$VENV"
  fi
  PYTHON="$VENV/bin/python"
  if [ "$(py_probe "$PYTHON" torch_version)" != "$TORCH_VERSION" ]; then
    [ $CHECK_ONLY -eq 1 ] && { say "torch $TORCH_VERSION not installed in $VENV"; exit 1; }
    say "installing torch==$TORCH_VERSION from PyPI into $VENV (several GB the first time)"
    "$PYTHON" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy \
      || die "pip install torch==$TORCH_VERSION failed"
  fi
  # jsonschema: the protocol test validates both workers' plan.json and result.json against knobs/protocol.schema.json.
  if [ "$(py_probe "$PYTHON" missing jsonschema)" != "" ]; then
    [ $CHECK_ONLY -eq 1 ] && { say "jsonschema not installed in $VENV"; exit 1; }
    "$PYTHON" -m pip install -q --disable-pip-version-check "jsonschema>=4.18,<5" || die "pip install jsonschema failed"
  fi
  # scikit-build-core: pip's build backend for `pip install .` (pyproject.toml); the pip install test builds the wheel
  # with it from this venv, without downloading anything.
  if [ "$(py_probe "$PYTHON" missing scikit_build_core)" != "" ]; then
    [ $CHECK_ONLY -eq 1 ] && { say "scikit-build-core not installed in $VENV"; exit 1; }
    "$PYTHON" -m pip install -q --disable-pip-version-check "scikit-build-core==1.1.2" || die "pip install scikit-build-core failed"
  fi
  say "LibTorch: torch $(py_probe "$PYTHON" torch_version) cuda $(py_probe "$PYTHON" torch_cuda) in $VENV"
fi
if [ -z "$TORCH_PREFIX" ]; then
  TORCH_PREFIX="$(py_probe "$PYTHON" cmake_prefix_path)"
  [ -n "$TORCH_PREFIX" ] || die "$PYTHON: torch has no share/cmake (torch.utils.cmake_prefix_path)"
fi

# ---------------------------------------------------------------- 3. CMake
CMAKE="$(command -v cmake || true)"
have_cmake="$("$CMAKE" --version 2>/dev/null | head -n1 | awk '{print $3}')"
if [ -z "$have_cmake" ] || ! version_ge "$have_cmake" "$CMAKE_MIN"; then
  CMAKE_VENV="$CACHE/venv-cmake"
  if [ ! -x "$CMAKE_VENV/bin/cmake" ]; then
    [ $CHECK_ONLY -eq 1 ] && { say "cmake >= $CMAKE_MIN missing (have ${have_cmake:-none})"; exit 1; }
    say "Debian cmake ${have_cmake:-none} < $CMAKE_MIN: installing cmake from PyPI into $CMAKE_VENV"
    python3 -m venv "$CMAKE_VENV"
    "$CMAKE_VENV/bin/python" -m pip install -q --disable-pip-version-check "cmake>=$CMAKE_MIN,<5" \
      || die "pip install cmake failed"
  fi
  CMAKE="$CMAKE_VENV/bin/cmake"
fi
say "CMake: $("$CMAKE" --version | head -n1) at $CMAKE"

# ---------------------------------------------------------------- 4. CUDA toolkit (optional)
if [ -x /usr/local/cuda/bin/nvcc ]; then
  say "CUDA toolkit: $(/usr/local/cuda/bin/nvcc --version | tail -n2 | head -n1)"
else
  say "CUDA toolkit: not found at /usr/local/cuda (CPU-only build; CUPTI profiling disabled)"
fi

# ---------------------------------------------------------------- 5. optional Python tools (our venv only)
# Holistic Trace Analysis reads our trace files in the profiler test (pandas < 3: HTA 0.5 breaks on
# pandas 3's stricter dtypes); torchvision is the peer of the input-pipeline benchmark; Lightning and
# Accelerate are the GPU kit's peers (bench/peers.py), rehearsed on the CPU in make test. Failures warn.
if [ $CHECK_ONLY -eq 0 ] && [ -z "${AUTOTUNE_NO_OPTIONAL:-}" ] && [ "$PYTHON" = "$VENV/bin/python" ]; then
  if [ -n "$(py_probe "$PYTHON" missing hta torchvision lightning accelerate)" ]; then
    "$PYTHON" -m pip install -q --disable-pip-version-check HolisticTraceAnalysis==0.5.0 "pandas<3" torchvision==0.26.0 \
      lightning==2.6.6 accelerate==1.15.0 >/dev/null 2>&1 \
      && say "installed optional Python tools: HolisticTraceAnalysis, torchvision, Lightning, Accelerate" \
      || say "warning: optional Python tools (HTA, torchvision, Lightning, Accelerate) not installed: their tests skip, bench/data_bench.sh installs torchvision itself"
  fi
  # Hugging Face transformers and timm: where users' models come from; scripts/export_model.py exports them
  # (hf:MODEL_TYPE, timm:create_model) and tests/integration/hf_export_test.py tunes them (it skips without).
  if [ -n "$(py_probe "$PYTHON" missing transformers timm)" ]; then
    "$PYTHON" -m pip install -q --disable-pip-version-check transformers==5.23.0 timm==1.0.31 >/dev/null 2>&1 \
      && say "installed optional Python tools: transformers, timm" \
      || say "warning: transformers/timm not installed (optional): the Hugging Face export test skips"
  fi
fi

cat > "$CACHE/deps.env" <<ENV
TORCH_PREFIX=$TORCH_PREFIX
CMAKE=$CMAKE
PYTHON=$PYTHON
ENV
say "wrote $CACHE/deps.env"
