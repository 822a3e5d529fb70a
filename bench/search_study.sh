#!/usr/bin/env bash
# The search study of docs/search.md, every step for both workloads (about 90 minutes on a 2-vCPU VM):
# ground-truth grids, ranking fidelity, fitted landscapes, strategies simulated over many seeds, real
# auto runs, re-checks, 40-second timelines, then the tables and the plot.
#   bench/search_study.sh [OUT_DIR]        (default docs/search-runs/study; needs `make build` first)
# Steps resume: a study stopped part-way continues where it stopped when run again.
# Nothing else should run on the machine meanwhile (no compiling): every number is a throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-docs/search-runs/study}"
BIN="${BUILD_DIR:-build}/bin"
STUDY=bench/search_study.py
REPS="${REPS:-3}"
SEEDS="${SEEDS:-100}"

grid() {  # workload, setup flags, knobs…
  local w="$1" setup="$2"
  shift 2
  python3 "$STUDY" grid --autotune "$BIN/autotune" --workload "$w" --out "$OUT/$w" --reps "$REPS" \
    ${setup:+--setup="$setup"} --knobs "$@"
}

grid gpt-mini "" batch_size=8,16,32,64 threads=1,2 precision=fp32,amp_bf16 optimizer_impl=loop,foreach,fused
grid resnet18 "--image-size=32" batch_size=16,32,64 threads=1,2 precision=fp32,amp_bf16 \
  memory_format=contiguous,channels_last optimizer_impl=loop,fused
for w in gpt-mini resnet18; do
  python3 "$STUDY" fidelity --autotune "$BIN/autotune" --out "$OUT/$w" --configs 12 --long 10
  python3 "$STUDY" fit --out "$OUT/$w"
done
for w in gpt-mini resnet18; do
  python3 "$STUDY" simulate --autotune "$BIN/autotune" --fake "$BIN/fake-worker" --landscape "$OUT/$w/landscape.json" \
    --seeds "$SEEDS"
done
for w in gpt-mini resnet18; do
  python3 "$STUDY" simulate --autotune "$BIN/autotune" --fake "$BIN/fake-worker" --landscape "$OUT/$w/landscape.json" \
    --seeds "$SEEDS" --strategies grid auto --host-drift --result "$OUT/$w/simulation-host-drift.json"
done
for w in gpt-mini resnet18; do
  python3 "$STUDY" real --autotune "$BIN/autotune" --out "$OUT/$w" --strategy auto --runs 2
  # is the ground truth still this host's? the grid's top two and the real picks, re-measured interleaved
  python3 "$STUDY" recheck --autotune "$BIN/autotune" --out "$OUT/$w" --rounds 4
done
# do rates change late in a run (warm-up), or does the host switch a running process between speeds?
python3 "$STUDY" timeline --autotune "$BIN/autotune" --out "$OUT/gpt-mini"
python3 "$STUDY" timeline --autotune "$BIN/autotune" --out "$OUT/resnet18" \
  --key "batch_size=32 threads=2 precision=amp_bf16 memory_format=contiguous optimizer_impl=fused"
python3 "$STUDY" report "$OUT/gpt-mini" "$OUT/resnet18" --plot "$OUT/regret-vs-cost.svg" | tee "$OUT/report.md"
