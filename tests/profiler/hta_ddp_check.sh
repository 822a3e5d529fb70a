#!/usr/bin/env bash
# CTest wrapper: a real two-rank Gloo trial traced by `autotune profile` (one trace per rank in one folder),
# then loaded by Holistic Trace Analysis as a multi-rank trace (tests/profiler/hta_ddp_check.py).
#   hta_ddp_check.sh AUTOTUNE_BINARY WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PY=$("$here/../../scripts/autotune-python.sh")
rm -rf "$2" && mkdir -p "$2"
"$1" profile --workload mlp --device cpu --set ranks=2 --set threads=1 --set batch_size=16 --steps 4 \
  --trace "$2/mlp.json" --json > "$2/result.json"
exec "$PY" "$here/hta_ddp_check.py" "$2/mlp" "$2/result.json"
