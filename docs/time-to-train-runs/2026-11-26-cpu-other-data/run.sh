#!/usr/bin/env bash
# The time-to-train comparisons on data the earlier runs never saw (docs/time-to-train.md, "On other data"): each
# workload tuned under the time objective (the noise scale along the run, B̄ over --run-length ≈ what the converge
# baseline trains), then `autotune converge --from-run` trains the baseline, the pick, answer (b) and the most
# samples/s to the same loss on two data orders each. All data from Debian packages on this machine.
#   docs/time-to-train-runs/2026-11-26-cpu-other-data/run.sh OUT_DIR [BUILD_DIR]
set -euo pipefail
OUT=$(realpath -m "${1:?usage: run.sh OUT_DIR [BUILD_DIR]}")
B=$(realpath "${2:-build}")
A=$B/bin/autotune
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$("$ROOT/scripts/autotune-python.sh")
D=$OUT/data
mkdir -p "$D"
# Text: Debian's copyright files (license and attribution English), the first 3 MB, as bytes.
if [ ! -f "$D/copyright.bin" ]; then
  { find /usr/share/doc -name copyright | sort | xargs cat 2>/dev/null | head -c 3000000 > "$D/copyright.txt"; } || true  # head closes the pipe
  "$A" prepare-data --tokens-from "$D/copyright.txt" --to "$D/copyright.bin"
fi
# C: the system's headers, the first 3 MB, for the user model.
if [ ! -f "$D/headers.bin" ]; then
  { find /usr/include -maxdepth 2 -name '*.h' | sort | xargs cat 2>/dev/null | head -c 3000000 > "$D/headers.txt"; } || true
  "$A" prepare-data --tokens-from "$D/headers.txt" --to "$D/headers.bin"
fi
# Images: 100 crops of each of the 21 photos the test images hold (Debian's mate-backgrounds, skimage, sklearn), 48²;
# the class is the photo a crop came from.
PHOTOS=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos
[ -d "$D/photos" ] || "$B/bin/make_image_folder" "$PHOTOS" "$D/photos" 2100 21 48 48 90
# The user model: a byte-level GRU, exported to TorchScript.
[ -f "$D/char_gru.pt" ] || "$PY" "$ROOT/scripts/export_model.py" "$ROOT/bench/char_gru.py:CharGru" "$D/char_gru.pt" \
  --input B,64:int64:256 --target classes:256:B,64

SECONDS_PER_RUN=${SECONDS_PER_RUN:-90}
one() {  # NAME RUN_LENGTH KNOBS… -- TRIAL ARGS…
  local name=$1 len=$2; shift 2
  local knobs=() args=()
  while [ "$1" != "--" ]; do knobs+=("$1"); shift; done
  shift
  args=("$@")
  [ -f "$OUT/$name/best.json" ] || "$A" tune "${args[@]}" --device cpu --knobs "${knobs[@]}" --budget 4m \
    --run-length "$len" --out "$OUT/$name" > "$OUT/$name.tune.log" 2>&1 || true
  [ -f "$OUT/$name-converge/converge.json" ] || "$A" converge --from-run "$OUT/$name" --compare pick,changed-batch,fastest \
    --seconds "$SECONDS_PER_RUN" --reruns 1 --arm-orders 2 --out "$OUT/$name-converge" > "$OUT/$name.converge.log" 2>&1 || true
  "$PY" "$ROOT/bench/reprice_converge.py" "$OUT/$name-converge" "$OUT/$name" > "$OUT/$name.repriced.md" 2>&1 || true
}
one gpt-mini-copyright 24000 batch_size=32,64,128 -- --workload gpt-mini --data "$D/copyright.bin"
one resnet18-photos 16000 batch_size=32,64,128,256 -- --workload resnet18 --data "$D/photos" --image-size 32
one char-gru-headers 24000 batch_size=32,64,128 -- --model "$D/char_gru.pt" --data "$D/headers.bin"
# resnet18's batch 128 needed fewer samples than the baseline: again with the baseline at the rate it was given.
[ -f "$OUT/resnet18-photos-converge-lr/converge.json" ] || "$A" converge --from-run "$OUT/resnet18-photos" --compare changed-batch \
  --lr 0.00166 --seconds "$SECONDS_PER_RUN" --reruns 1 --arm-orders 2 --out "$OUT/resnet18-photos-converge-lr" \
  > "$OUT/resnet18-photos.converge-lr.log" 2>&1 || true
