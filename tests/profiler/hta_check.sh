#!/usr/bin/env bash
# CTest wrapper: write the sample trace, then check it with HTA in autotune's Python venv.
#   hta_check.sh WRITE_SAMPLE_TRACE_BINARY WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PY=$("$here/../../scripts/autotune-python.sh")
rm -rf "$2" && mkdir -p "$2"
"$1" "$2"
exec "$PY" "$here/hta_check.py" "$2"
