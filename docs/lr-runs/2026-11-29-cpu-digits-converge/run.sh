#!/usr/bin/env bash
# docs/lr-runs/2026-11-29-cpu-digits-converge: make tune's example task (digits, a small CNN, SGD at its own 0.02) swept
# again as in ../2026-11-29-cpu-digits (a 100,000-sample run, two data orders), then converge --from-sweep: the user's
# rate against the rate the sweep ranked next, from the task's start, 60 s a run, each on two data orders — whether
# "about right" holds over a run from the start. On the 2-core VM; OUT (default runs/lr-digits) must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT="${1:-runs/lr-digits}"
build/bin/autotune lr-sweep --task examples/digits/task.py --run-length 100000 --seconds 120 --out "$OUT/sweep"
build/bin/autotune converge --from-sweep "$OUT/sweep" --seconds 60 --reruns 1 --out "$OUT/converge"
