#!/usr/bin/env bash
# The sweep of docs/lr-runs/2026-11-29-cpu-digits: make tune's example task (digits, a small CNN, SGD at lr 0.02), a run of
# 100,000 samples (burn-in 5,000, each rate 10,000 from the checkpoint), two data orders, on the 2-core VM. It ran beside a
# compile: its seconds are noisy; the verdict reads losses and samples, not seconds.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build/bin/autotune lr-sweep --task examples/digits/task.py --run-length 100000 --seconds 120 --out "${1:-runs/lr-sweep-digits}"
