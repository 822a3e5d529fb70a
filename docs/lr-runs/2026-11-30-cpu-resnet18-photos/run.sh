#!/usr/bin/env bash
# docs/lr-runs/2026-11-30-cpu-resnet18-photos: the case that made the learning rate an issue — resnet18 at 32² on 2,100
# crops of 21 photos (the class is the photo a crop came from), AdamW at resnet18's default rate 1e-3, where on
# 2026-11-26 batch 128 reached the baseline's loss 5.56× sooner against 1.22× predicted, with fewer samples
# (docs/time-to-train-runs/2026-11-26-cpu-other-data/). Here: the same tune (time objective, --run-length 16,000), then
# the rate measured at both batches — lr-sweep --from-run --at your-batch and --at changed-batch (2 data orders, 512-
# sample smoothing) — the tune run's report re-priced with both sweeps, and each sweep's answer trained from random
# weights by converge --from-sweep (60 s a run, 2 data orders each). On the 2-core VM with nothing else running;
# OUT (default runs/lr-resnet18-photos) must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=build/bin/autotune
OUT="${1:-runs/lr-resnet18-photos}"
PHOTOS=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos
mkdir -p "$OUT"
build/bin/make_image_folder "$PHOTOS" "$OUT/photos" 2100 21 48 48 90
"$A" tune --workload resnet18 --data "$OUT/photos" --image-size 32 --device cpu --knobs batch_size=32,64,128,256 \
  --budget 4m --run-length 16000 --out "$OUT/tune" || true  # exit 1 (no stable config) still leaves the run to read
for at in your-batch changed-batch; do
  "$A" lr-sweep --from-run "$OUT/tune" --at "$at" --run-length 16000 --smooth-samples 512 --orders 2 --seconds 120 \
    --out "$OUT/sweep-$at"
done
"$A" report "$OUT/tune"
for at in your-batch changed-batch; do
  "$A" converge --from-sweep "$OUT/sweep-$at" --seconds 60 --reruns 1 --out "$OUT/converge-$at"
done
# (b) over (a) at the measured rates, trained: the baseline at (a)'s best rate and (b) at the rule applied to it (×√r,
# which lands on (b)'s own best, 0.000192), both from random weights to one loss.
"$A" converge --from-run "$OUT/tune" --compare changed-batch --lr 0.000111 --seconds 60 --reruns 1 --arm-orders 2 \
  --out "$OUT/converge-at-measured-rates"
