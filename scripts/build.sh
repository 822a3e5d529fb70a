#!/usr/bin/env bash
# Configures (once) and builds autotune with the dependencies found by setup-deps.sh.
#   scripts/build.sh [BUILD_DIR] [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
PRESET="${2:-dev}"
CACHE="${AUTOTUNE_CACHE:-$HOME/.cache/autotune}"
[ -f "$CACHE/deps.env" ] || { echo "build: $CACHE/deps.env missing; run make deps" >&2; exit 1; }
# shellcheck disable=SC1091
source "$CACHE/deps.env"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  "$CMAKE" --preset "$PRESET" -B "$BUILD_DIR" -DCMAKE_PREFIX_PATH="$TORCH_PREFIX"
fi
start=$(date +%s)
"$CMAKE" --build "$BUILD_DIR" -j "$(nproc)"
echo "build: done in $(( $(date +%s) - start )) s ($BUILD_DIR)"
command -v ccache >/dev/null && ccache --show-stats 2>/dev/null | grep -E "^ *(Hits|Misses|Cacheable calls)" | tr -s ' ' | sed 's/^/build: ccache /' || true
