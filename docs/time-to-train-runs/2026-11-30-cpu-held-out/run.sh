#!/usr/bin/env bash
# docs/time-to-train-runs/2026-11-30-cpu-held-out: the held-out loss of converge on a task with a held-out split —
# make tune's digits, the first 1,497 scans to train on and the last 300 held out (digits_split.py's val_dataset()).
# The tune prices (a) and (b) under the time objective over a run of 60,000 samples (40 epochs); converge trains the
# baseline, (b) and the pick from random weights for 60 s each on 2 data orders, evaluating the held-out loss on all
# 300 held-out scans at its default cadence. On the 2-core VM with nothing else running; OUT (default
# runs/held-out-digits) must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=build/bin/autotune
OUT="${1:-runs/held-out-digits}"
TASK=docs/time-to-train-runs/2026-11-30-cpu-held-out/digits_split.py
mkdir -p "$OUT"
"$A" tune --task "$TASK" --knobs batch_size=32,64,128,256 --budget 3m --run-length 60000 --out "$OUT/tune" || true
"$A" converge --from-run "$OUT/tune" --compare pick,changed-batch --seconds 60 --reruns 1 --arm-orders 2 \
  --val-samples 300 --out "$OUT/converge"
