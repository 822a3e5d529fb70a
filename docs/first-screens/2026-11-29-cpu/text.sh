#!/bin/bash
# A text task's tune and its converge on a quiet host, then the same tune beside a one-core burner — run as a user
# types them (issue 64's text-and-converge screen).
#   text.sh BUILD_DIR OUT_DIR
set -uo pipefail
A="$(cd "$1" && pwd)/bin/autotune"; OUT="$2"; HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../../.." && pwd)"
mkdir -p "$OUT"
at() { echo "\$ autotune $*" ; "$A" "$@"; echo "exit $?"; }
TASK="$ROOT/tests/integration/tasks/text_task.py"
at tune --task "$TASK" --knobs batch_size=8,16,32 --budget 150s --out "$OUT/text-quiet" > "$OUT/text-quiet.txt" 2>&1
at converge --from-run "$OUT/text-quiet" --compare changed-batch --seconds 40 --out "$OUT/converge-from-run" \
  > "$OUT/text-converge.txt" 2>&1
# Whatever the tune picked: batch 16 against the baseline trained to the same loss, as a user proves a changed batch.
at converge --task "$TASK" --candidate-set batch_size=16 --seconds 40 --out "$OUT/converge-16" > "$OUT/text-converge-16.txt" 2>&1
python3 -c "while True: pass" & burner=$!
at tune --task "$TASK" --knobs batch_size=8,16,32 --budget 150s --out "$OUT/text-busy" > "$OUT/text-busy.txt" 2>&1
kill "$burner"; wait "$burner" 2>/dev/null
