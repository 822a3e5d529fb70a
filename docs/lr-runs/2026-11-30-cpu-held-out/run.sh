#!/bin/sh
# lr-sweep judged on held-out data as well (docs/time-to-train.md, "Judged on held-out data as well"): the held-out
# task of the tests (16 features, a tenth of the labels flipped; its val_dataset() 256 samples of the same rule), SGD
# at its own rate 0.05, a 20,000-sample run, 2 data orders, every held-out sample at each evaluation.
# Run from the repository root after `make build`; writes into this folder's sweep/ (removed first).
set -e
here=$(dirname "$0")
rm -rf "$here/sweep"
OMP_NUM_THREADS=1 build/bin/autotune lr-sweep --task tests/integration/tasks/held_out_task.py --run-length 20000 \
  --orders 2 --smooth-samples 256 --val-samples 256 --out "$here/sweep" | tee "$here/console.txt"
rm -rf "$here/sweep/trials" "$here/sweep/checkpoint.pt" "$here/sweep/journal.sqlite"
