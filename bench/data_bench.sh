#!/usr/bin/env bash
# Input-pipeline benchmark, side by side in one run: our decode modes and loader (Google Benchmark,
# bench/data_bench.cpp) and torchvision ImageFolder + DataLoader (PIL) on the same ImageNet-like folder
# (real photos from Debian packages, cropped/resized to 500×375, q90), 1 and 2 workers, interleaved.
#   bench/data_bench.sh [OUT_DIR=bench-out]     (after `make build`; needs the fetched test photos)
set -euo pipefail
BUILD_DIR=${BUILD_DIR:-build}
OUT=${1:-bench-out}
source "${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/deps.env"
PHOTOS=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos
[ -d "$PHOTOS" ] || scripts/fetch-test-images.sh
mkdir -p "$OUT"
FOLDER=$OUT/imagenet-like
[ -d "$FOLDER" ] || "$BUILD_DIR/bin/make_image_folder" "$PHOTOS" "$FOLDER" 1024 16
"$PYTHON" -c "import torchvision" 2>/dev/null || "$PYTHON" -m pip install -q torchvision==0.26.0
: > "$OUT/peer.jsonl"
for rep in 1 2; do  # interleaved: ours, then the peer, twice
  AUTOTUNE_BENCH_FOLDER=$FOLDER "$BUILD_DIR/bin/data_bench" --benchmark_min_time=2 --benchmark_repetitions=1 \
    --benchmark_out="$OUT/data_bench_rep$rep.json" --benchmark_out_format=json
  for w in 1 2; do "$PYTHON" bench/torchvision_loader.py "$FOLDER" "$w" 40 224 | tee -a "$OUT/peer.jsonl"; done
done
echo "results: $OUT/data_bench_rep{1,2}.json and $OUT/peer.jsonl"
