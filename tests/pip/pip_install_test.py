#!/usr/bin/env python3
"""`pip install .` as a Python user does it (docs/install.md): the wheel built from this checkout, installed into a fresh
virtual environment that holds only torch and the packages torch itself requires, and used from there.

    pip_install_test.py BUILD_DIR SOURCE_DIR

Checked: `pip wheel .` builds (scikit-build-core, the project's own CMake, no LibTorch); the wheel holds the tuner's
programs, the Python worker and the noise logger and no C++ worker; the fresh environment sees only torch's closure;
`pip install` of the wheel puts `autotune` on the environment's PATH; `autotune --version` names the environment's own
Python and torch and says the C++ worker is not installed; a short tune of a Python model and of a task file run in
the Python worker of that environment, their reports naming its torch; a built-in workload runs as its Python twin; a
torch older than supported and a missing build dependency are refused in one line each; `pip uninstall` leaves none
of the wheel's files behind. The build and install times are printed. Exit 77 without scikit-build-core in the
project's Python (scripts/setup-deps.sh installs it).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from python_worker_common import SHORT as short, check, finish, has_modules, run, tune_verdict  # noqa: E402

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
project_py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True,
                            text=True).stdout.strip()
if not has_modules(project_py, "torch", "scikit_build_core"):
    print("no Python with torch and scikit-build-core (scripts/setup-deps.sh): skipped")
    sys.exit(77)
work = os.path.join(build, "pip-test")
# The version's one home (pyproject.toml reads it from there too); the Python worker repeats it, checked below.
version = re.search(r"project\(autotune VERSION ([0-9.]+)", open(os.path.join(source, "CMakeLists.txt")).read()).group(1)
shutil.rmtree(os.path.join(work, "env"), ignore_errors=True)  # the wheel's CMake build folder stays: a rebuild is quick
for sub in ("wheel", "torch-site", "runs"):
    shutil.rmtree(os.path.join(work, sub), ignore_errors=True)
os.makedirs(os.path.join(work, "runs"))


def seconds(t0):
    return f"{time.time() - t0:.0f} s"


def cached_compiles():
    """pip's CMake folder and compilers, chosen so that ccache serves the wheel's compiles from the build's own: the
    project gives ccache the checkout as its base (CMakeLists.txt), which makes each compile's paths relative to the
    folder it runs in, and ccache hashes the compiler's name. A folder beside BUILD_DIR (the same relative path to the
    sources), BUILD_DIR's compilers and its warnings-as-errors setting (the CI preset's -Werror is on the compile line)
    make the tuner's compile lines the build's: a fresh machine's wheel then compiles in seconds instead of minutes
    (491 s beside the suite, 2026-11-29; under `make test PRESET=ci` the -Werror difference alone made every compile a
    miss, 632 s of the compiler's CPU on a fresh machine, 2026-11-30). What is checked is pip's packaging, not the
    compiler; a build without ccache compiles the wheel in full, as before."""
    folder = os.path.join(os.path.dirname(build), os.path.basename(build) + "-pip-test")
    cache = os.path.join(build, "CMakeCache.txt")
    lines = open(cache).read().splitlines() if os.path.exists(cache) else []
    defines = [f"cmake.define.{k}={v}" for line in lines for kind in (":FILEPATH=", ":BOOL=") for k, _, v in [line.partition(kind)]
               if k in ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "AUTOTUNE_WERROR") and v]
    return folder, [a for d in defines for a in ("-C", d)]


# ---- the wheel, from this checkout, with the project's Python (which has scikit-build-core: no download)
cmake_folder, compilers = cached_compiles()
t0 = time.time()
r = run([project_py, "-m", "pip", "wheel", source, "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
         "-w", os.path.join(work, "wheel"), "-C", f"build-dir={cmake_folder}", *compilers])
wheels = [f for f in os.listdir(os.path.join(work, "wheel")) if f.endswith(".whl")] if r.returncode == 0 else []
print(f"pip wheel .: {seconds(t0)}")
check(r.returncode == 0 and len(wheels) == 1 and wheels[0].startswith(f"autotune-{version}-"),
      f"pip wheel . builds one wheel, of version {version} ({wheels or r.stderr[-400:]})")
if not wheels:
    finish()
wheel = os.path.join(work, "wheel", wheels[0])
names = run([project_py, "-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
             wheel]).stdout.split()
scripts = sorted(os.path.basename(n) for n in names if ".data/scripts/" in n)
check(scripts == ["autotune", "autotune-resolve", "autotune-trace", "autotune-worker-py"],
      f"the wheel's programs: the tuner and its helpers, no C++ worker ({scripts})")
check(any(n == "autotune_pyworker/trainer.py" for n in names) and "autotune_noise_log.py" in names
      and not any("__pycache__" in n for n in names), "the wheel holds the Python worker and the noise logger")

# ---- a fresh environment holding torch and what torch requires, nothing else: the project's torch, linked in
closure = r"""
import importlib.metadata as md, os, sys
from pip._vendor.packaging.requirements import Requirement
seen, todo, tops = set(), ["torch"], set()
while todo:
    name = todo.pop()
    try:
        d = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    key = d.metadata["Name"].lower().replace("_", "-")
    if key in seen:
        continue
    seen.add(key)
    for f in d.files or []:
        top = str(f).split("/")[0]
        if top not in ("..", "__pycache__") and not top.endswith(".pth"):
            tops.add(os.path.join(str(d.locate_file("")), top))
    for req in d.requires or []:
        q = Requirement(req)
        if q.marker is None or q.marker.evaluate({"extra": ""}):
            todo.append(q.name)
print(len(seen))
print("\n".join(sorted(tops)))
"""
r = run([project_py, "-c", closure])
count, tops = int(r.stdout.split("\n", 1)[0]), r.stdout.split("\n")[1:]
site = os.path.join(work, "torch-site")
os.makedirs(site)
for t in filter(None, tops):
    if os.path.exists(t):
        os.symlink(t, os.path.join(site, os.path.basename(t)))
base_py = run([project_py, "-c", "import sys, os; print(os.path.join(sys.base_prefix, 'bin', 'python3'))"]).stdout.strip()
env = os.path.join(work, "env")
t0 = time.time()
r = run([base_py, "-m", "venv", env])
env_py = os.path.join(env, "bin", "python3")
env_site = run([env_py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
with open(os.path.join(env_site, "torch-only.pth"), "w") as f:
    f.write(site + "\n")
print(f"python -m venv: {seconds(t0)}")
listed = run([env_py, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"]).stdout
have = {p["name"].lower() for p in json.loads(listed or "[]")}
torch_version = run([env_py, "-c", "import torch; print(torch.__version__)"]).stdout.strip()
check(r.returncode == 0 and "torch" in have and "autotune" not in have and "jsonschema" not in have
      and "transformers" not in have and len(have) <= count + 2,
      f"the fresh environment holds torch {torch_version} and its {count - 1} requirements only ({len(have)} packages)")

# ---- pip install of the wheel
t0 = time.time()
r = run([env_py, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", wheel])
print(f"pip install: {seconds(t0)}")
check(r.returncode == 0, "pip install of the wheel into the fresh environment")
bin_dir = os.path.join(env, "bin")
autotune = os.path.join(bin_dir, "autotune")
check(all(os.access(os.path.join(bin_dir, p), os.X_OK) for p in scripts), "its programs are in the environment's bin/")
needed = run(["readelf", "-d", autotune]).stdout
check("libtorch" not in needed and "libcuda" not in needed and "libc10" not in needed,
      "the installed tuner links no LibTorch and no libcuda")

# As a user runs it: the environment's bin first on PATH, nothing of the project's build or its Python in sight.
user_env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTUNE_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
user_env.update(PATH=bin_dir + ":/usr/bin:/bin", VIRTUAL_ENV=env, AUTOTUNE_MAX_HOST_LOAD="100", OMP_NUM_THREADS="1")
runs = os.path.join(work, "runs")


def at(*args, extra=None):
    e = dict(user_env, **(extra or {}))
    return run(["autotune", *args], env=e, cwd=runs)


r = at("--version")
said = r.stdout
check(r.returncode == 0 and said.startswith(f"autotune {version} ({autotune})"),
      f"autotune --version: the version and where it runs from ({said.splitlines()[:1]})")
check(f"at {env_py}" in said or f"at {os.path.join(bin_dir, 'python')}" in said, "--version names the environment's own Python")
check(f"torch {torch_version.split('+')[0]}," in said, f"--version names the environment's torch ({torch_version})")
check("C++ worker: not installed" in said, "--version says the C++ worker is not installed")

# ---- a short tune of a Python model, and of a task file, in that environment
here = os.path.join(source, "tests", "integration")
# Throughput: what these tunes check is the installed environment (its torch, the Python worker), not time to train,
# whose noise-scale trial is the Python worker tests' (python_worker_test, task_test).
tune_args = ["--budget", "25s", "--confirm-rounds", "1", "--objective", "throughput", *short]
r = at("tune", "--model", os.path.join(here, "small_net.py") + ":SmallNet", "--model-input", "B,3,32,32:float32",
       "--model-target", "classes:10", "--knobs", "batch_size=8,16", *tune_args, "--out", os.path.join(runs, "model"))


def tuned(r, name):
    report = os.path.join(runs, name, "report.md")
    text = open(report).read() if os.path.exists(report) else ""
    ok, verdict = tune_verdict(r)  # a winner, or on a shared 2-core machine no stable config / no winner with its reason
    check(ok and text, f"{name}: the tune ran and reported (exit {r.returncode}: {verdict[:160] or r.stderr[-300:]})")
    check(f"| {torch_version.split('+')[0]} |" in text or f"torch {torch_version.split('+')[0]}" in text,
          f"{name}: the report names the environment's torch {torch_version}")
    check("the Python worker trained the model" in text, f"{name}: the report says the Python worker trained it")


tuned(r, "model")
r = at("tune", "--task", os.path.join(here, "tasks", "two_heads_task.py"), "--knobs", "num_workers=0,1", *tune_args,
       "--out", os.path.join(runs, "task"))
tuned(r, "task")

# ---- a built-in workload without the C++ worker: its Python twin
r = at("trial", "--workload", "mlp", *short, "--out", os.path.join(runs, "builtin"))
res_path = os.path.join(runs, "builtin", "0001", "result.json")
res = json.load(open(res_path)) if os.path.exists(res_path) else {}
check(r.returncode == 0 and res.get("status") == "ok"
      and res.get("env", {}).get("autotune_version", "").startswith(f"{version} (python worker"),
      f"--workload mlp runs as its Python twin in the Python worker ({res.get('env', {}).get('autotune_version')})")
r = at("workloads")
check(r.returncode == 0 and "resnet18" in r.stdout, "autotune workloads lists the Python twins")

# ---- a torch older than supported: one line
old = os.path.join(work, "oldtorch")
os.makedirs(os.path.join(old, "torch"), exist_ok=True)
with open(os.path.join(old, "torch", "__init__.py"), "w") as f:
    f.write("__version__ = '2.1.0'\n")
r = at("trial", "--model", os.path.join(here, "small_net.py") + ":SmallNet", "--model-input", "B,3,32,32:float32",
       extra={"PYTHONPATH": old})
lines = r.stderr.strip().splitlines()
check(r.returncode == 2 and len(lines) == 1 and "torch 2.1.0" in lines[0] and "≥ 2.4" in lines[0],
      f"an old torch: exit 2, one line ({lines})")

# ---- a missing build dependency: one line naming it and its Debian package (configure only: it stops there)
r = run([project_py, "-m", "pip", "wheel", source, "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
         "-w", os.path.join(work, "wheel-missing"), "-C", f"build-dir={os.path.join(work, 'cmake-missing')}",
         "-C", "cmake.define.CMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON"])
said = [l.strip() for l in (r.stdout + r.stderr).splitlines() if "missing build dependencies" in l]
check(r.returncode != 0 and said == ["autotune: missing build dependencies: yaml-cpp — on Debian/Ubuntu: apt-get install "
                                      "libyaml-cpp-dev"], f"a missing build dependency: one line ({said})")
shutil.rmtree(os.path.join(work, "cmake-missing"), ignore_errors=True)

# ---- pip uninstall leaves nothing of the wheel behind
record = run([env_py, "-c", "import importlib.metadata as md; d = md.distribution('autotune'); "
                            "print('\\n'.join(str(d.locate_file(f)) for f in d.files))"]).stdout.split()
r = run([env_py, "-m", "pip", "uninstall", "-y", "--disable-pip-version-check", "autotune"])
left = [p for p in record if os.path.exists(p)]
left += [p for p in (os.path.join(env_site, "autotune_pyworker"), autotune) if os.path.exists(p)]
check(r.returncode == 0 and len(record) > 40 and not left, f"pip uninstall removes its {len(record)} files ({left[:5]})")
finish()
