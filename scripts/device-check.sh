#!/usr/bin/env bash
# The GPU proof kit: one command that builds autotune on the GPU machine and proves every GPU path,
# writing device-check.json / .md / .log and artifacts.tar.gz to $OUT (docs/gpu-kit.md).
#
#   On the GPU machine (the device tool's `run`, carry [".device-deps"]):
#     scripts/device-check.sh --deps .device-deps [--resume .device-deps/previous.json]
#   Here, first:   scripts/device-deps.sh        (Debian packages + photos → .device-deps, ~25 MiB)
#   Without a GPU: scripts/device-check.sh --cpu --build-dir build   (what `make test` runs)
#
# Options are scripts/device_check.py's (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
command -v "$PY" >/dev/null || { echo "device-check: python3 is needed" >&2; exit 2; }
exec "$PY" scripts/device_check.py "$@"
