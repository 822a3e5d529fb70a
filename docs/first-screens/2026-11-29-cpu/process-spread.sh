#!/bin/bash
# One unchanged config (make tune's baseline: mlp, batch 64, PyTorch's defaults) timed in one long process and in many
# fresh ones, back to back on a quiet host: how far fresh processes of one config differ (docs/search.md).
#   process-spread.sh BUILD_DIR OUT_DIR [FRESH=24]
set -euo pipefail
A="$(cd "$1" && pwd)/bin/autotune"; OUT="$2"; N="${3:-24}"
mkdir -p "$OUT/norand"
head -1 /proc/stat > "$OUT/stat0"
"$A" trial --json --windows 60 --window-seconds 1 > "$OUT/long.json" 2>/dev/null
head -1 /proc/stat > "$OUT/stat1"
: > "$OUT/fresh.log"
for i in $(seq 1 "$N"); do
  s0=$(head -1 /proc/stat); t0=$(date +%s.%N)
  "$A" trial --json > "$OUT/f$i.json" 2>/dev/null
  echo "$i $t0 | $s0 | $(head -1 /proc/stat)" >> "$OUT/fresh.log"
done
for i in $(seq 1 12); do setarch -R "$A" trial --json > "$OUT/norand/f$i.json" 2>/dev/null; done
python3 "$(dirname "$0")/process_spread.py" "$OUT"
