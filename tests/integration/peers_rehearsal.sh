#!/usr/bin/env bash
# CTest: the GPU kit's peers script (bench/peers.py) rehearsed on the CPU with a small model, so it cannot
# rot between GPU runs: Lightning's batch finder (power, binsearch) and Accelerate's, each pick measured.
# torch.compile is left to the GPU run (its CPU compile takes a minute). peers.py exits 77 (skip) without
# the packages (scripts/setup-deps.sh installs them).
#   peers_rehearsal.sh SOURCE_DIR WORK_DIR
set -euo pipefail
PY=$("$1/scripts/autotune-python.sh")
rm -rf "$2" && mkdir -p "$2"
exec "$PY" "$1/bench/peers.py" --device cpu --workload resnet18 --image-size 32 --init-batch 8 --max-trials 3 \
  --start-batch 64 --warmup-steps 2 --window-seconds 0.1 --tools lightning_power lightning_binsearch accelerate \
  --work "$2" --out "$2/peers.json"
