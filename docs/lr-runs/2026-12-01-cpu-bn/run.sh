#!/usr/bin/env bash
# docs/lr-runs/2026-12-01-cpu-bn: is batch 128's sample advantage on the photo crops its batch norm's? resnet18 (the
# Python worker) at 32² on the same 2,100 crops as docs/lr-runs/2026-12-01-cpu-from-start (crops 0-2,099 of
# make_image_folder's 2,800; crops 2,100-2,799 are the held-out folder, never trained on). Against the user's batch 32
# at AdamW 1e-3, two candidates at the same global batch 128 and the same rate (the rule's at B̄ = 246, as the tune
# measured): batch 128, whose batch norm sees 128 samples, and batch 32 with grad_accum 4, whose batch norm sees 32 per
# forward and whose optimizer sees 128 per step. Every run on 2 data orders, the baseline to 16,000 samples (the user's
# run), the held-out loss (batch norm in eval mode, on its running statistics) every 1,024 samples.
# On the 2-core VM with nothing else running; OUT (default runs/bn) is made here and must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=build/bin/autotune
OUT="${1:-runs/bn}"
PHOTOS=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos
build/bin/make_image_folder "$PHOTOS" "$OUT/all" 2800 21 48 48 90  # crop i of photo i mod 21, class i mod 21
python3 - "$OUT" <<'PY'
import os, shutil, sys
out = sys.argv[1]
for c in os.listdir(os.path.join(out, "all")):
    for f in os.listdir(os.path.join(out, "all", c)):
        part = "train" if int(f[3:-4]) < 2100 else "val"  # img<i>.jpg
        os.makedirs(os.path.join(out, part, c), exist_ok=True)
        shutil.copy(os.path.join(out, "all", c, f), os.path.join(out, part, c, f))
PY
common=(--trainer python --workload resnet18 --data "$OUT/train" --val-data "$OUT/val" --image-size 32 --device cpu
        --baseline-set batch_size=32 --lr 0.001 --noise-scale 246 --baseline-samples 16000 --seconds 85 --reruns 1
        --arm-orders 2 --smooth-samples 512 --val-every 1024 --val-samples 700)
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp batch 128
"$A" converge "${common[@]}" --candidate-set batch_size=128 --out "$OUT/converge-b128"
stamp batch 32 x grad_accum 4
"$A" converge "${common[@]}" --candidate-set batch_size=32 --candidate-set grad_accum=4 --out "$OUT/converge-b32x4"
stamp done
# The rate at batch 32 judged on the held-out loss as well as on the training loss: lr-sweep from the user's start over
# 15% of the 16,000-sample run, every rate on 2 data orders, each rate's held-out loss at the horizon.
stamp lr-sweep, held-out judge
"$A" lr-sweep --trainer python --workload resnet18 --data "$OUT/train" --val-data "$OUT/val" --val-samples 700 \
  --image-size 32 --device cpu --set batch_size=32 --lr 0.001 --run-length 16000 --smooth-samples 512 --orders 2 \
  --seconds 120 --out "$OUT/sweep-held-out"
stamp done
