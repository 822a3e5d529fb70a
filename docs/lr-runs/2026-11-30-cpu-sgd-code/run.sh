#!/usr/bin/env bash
# docs/lr-runs/2026-11-30-cpu-sgd-code: the third workload of the learning-rate measurements — a user's task with SGD +
# momentum (task.py beside this script: a byte-level GRU on Python's standard library sources, SGD at 0.01, momentum
# 0.9) on data no test trains on. The sweep (two data orders), then converge --from-sweep: the user's rate against the
# sweep's answer from the task's start, to equal wall time, each on two data orders, the held-out loss (task.py's
# val_dataset(): files the training never sees) beside the training loss. On the 2-core VM; OUT (default
# runs/lr-sgd-code) must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT="${1:-runs/lr-sgd-code}"
TASK=docs/lr-runs/2026-11-30-cpu-sgd-code/task.py
build/bin/autotune lr-sweep --task "$TASK" --run-length 60000 --seconds 180 --out "$OUT/sweep"
build/bin/autotune converge --from-sweep "$OUT/sweep" --seconds 90 --reruns 1 --out "$OUT/converge"
