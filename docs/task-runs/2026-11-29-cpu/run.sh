#!/usr/bin/env bash
# The photo task's tune of docs/task-runs/2026-11-29-cpu/summary.md (issue 63: the loader knobs on the user's own
# data), on this 2-core CPU, with the run's default 1-s windows — the input-bound re-measures lengthen them:
#   run.sh BUILD_DIR OUT_DIR
set -u
B=${1:-build}/bin
O=${2:-/tmp/task-runs-1129}
T=$(cd "$(dirname "$0")/../../../tests/integration/tasks" && pwd)
mkdir -p "$O/photos-in"
# The test photos under 1.5 MB (the GPU kit carries the same), each 4 times an epoch.
find "${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos" -name '*.jpg' -size -1500k -exec cp {} "$O/photos-in/" \;
export TASK_PHOTOS="$O/photos-in" TASK_REPEAT=4
"$B/autotune" tune --task "$T/photo_task.py" --knobs num_workers=0,1,2 --objective throughput --budget 6m \
   --out "$O/photos" > "$O/photos.log" 2>&1
echo "exit $?" >> "$O/photos.log"
