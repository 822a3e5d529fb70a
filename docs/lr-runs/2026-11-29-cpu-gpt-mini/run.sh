#!/usr/bin/env bash
# docs/lr-runs/2026-11-29-cpu-gpt-mini: gpt-mini (the C++ worker, AdamW) on text no test trains on — Debian's license
# texts (/usr/share/common-licenses) as byte-level tokens — at a rate set low on purpose, 1e-4 (a fine-tuning recipe's
# rate carried over to training from scratch), so the sweep has something to find: the sweep (a 40,000-sample run, two
# data orders), then converge --from-sweep (the user's rate against the sweep's answer from random weights, 60 s a run,
# each on two data orders). On the 2-core VM; OUT (default runs/lr-gpt-mini) must not exist.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=build/bin/autotune
OUT="${1:-runs/lr-gpt-mini}"
mkdir -p "$OUT"
"$A" prepare-data --tokens-from /usr/share/common-licenses --to "$OUT/licenses.bin"
"$A" lr-sweep --workload gpt-mini --data "$OUT/licenses.bin" --device cpu --lr 1e-4 --run-length 40000 --smooth-samples 256 \
  --orders 2 --seconds 120 --out "$OUT/sweep"
"$A" converge --from-sweep "$OUT/sweep" --seconds 60 --reruns 1 --out "$OUT/converge"
