#!/usr/bin/env bash
# docs/lr-runs/2026-12-01-cpu-from-start: the three workloads of the learning-rate measurements swept again with every
# rate trained from the user's own start (lr-sweep's default since 2026-12-01; before, from a checkpoint after a burn-in
# at the user's rate), each sweep's answer then trained by converge --from-sweep from the same start to a common loss,
# every arm on 2 data orders. The same commands as before, so the two starts compare:
#   - code: a byte-level GRU with SGD + momentum at 0.01 (docs/lr-runs/2026-11-30-cpu-sgd-code/task.py);
#   - gpt-mini (the C++ worker, AdamW) at 1e-4 on Debian's license texts (as docs/lr-runs/2026-11-29-cpu-gpt-mini);
#   - resnet18 on 2,100 photo crops at 1e-3: a tune run (time objective), then its batch and its answer (b)'s
#     (as docs/lr-runs/2026-11-30-cpu-resnet18-photos).
# On the 2-core VM with nothing else running; OUT (default runs/lr-from-start) must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=build/bin/autotune
OUT="${1:-runs/lr-from-start}"
mkdir -p "$OUT"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

stamp code
TASK=docs/lr-runs/2026-11-30-cpu-sgd-code/task.py
"$A" lr-sweep --task "$TASK" --run-length 60000 --seconds 180 --out "$OUT/code-sweep"
"$A" converge --from-sweep "$OUT/code-sweep" --seconds 90 --reruns 1 --out "$OUT/code-converge"

stamp gpt-mini
"$A" prepare-data --tokens-from /usr/share/common-licenses --to "$OUT/licenses.bin"
"$A" lr-sweep --workload gpt-mini --data "$OUT/licenses.bin" --device cpu --lr 1e-4 --run-length 40000 --smooth-samples 256 \
  --orders 2 --seconds 120 --out "$OUT/gpt-mini-sweep"
"$A" converge --from-sweep "$OUT/gpt-mini-sweep" --seconds 60 --reruns 1 --out "$OUT/gpt-mini-converge"

stamp resnet18
PHOTOS=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos
build/bin/make_image_folder "$PHOTOS" "$OUT/photos" 2100 21 48 48 90
"$A" tune --workload resnet18 --data "$OUT/photos" --image-size 32 --device cpu --knobs batch_size=32,64,128,256 \
  --budget 4m --run-length 16000 --out "$OUT/resnet18-tune" || true  # exit 1 (no stable config) still leaves the run to read
for at in your-batch changed-batch; do
  "$A" lr-sweep --from-run "$OUT/resnet18-tune" --at "$at" --run-length 16000 --smooth-samples 512 --orders 2 --seconds 120 \
    --out "$OUT/resnet18-sweep-$at" || true  # a tune run without an answer (b) refuses changed-batch in one line
  [ -f "$OUT/resnet18-sweep-$at/lr-sweep.json" ] &&
    "$A" converge --from-sweep "$OUT/resnet18-sweep-$at" --seconds 60 --reruns 1 --out "$OUT/resnet18-converge-$at" || true
done
stamp done
