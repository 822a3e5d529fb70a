#!/usr/bin/env bash
# Real photos for the input-pipeline tests and benchmarks, from Debian packages (downloaded with
# apt-get download and unpacked with dpkg -x — nothing is installed): python3-skimage (rocket.jpg,
# a deliberately truncated.jpg, …), python3-sklearn (china.jpg, flower.jpg) and mate-backgrounds
# (16 large photos), and sklearn's handwritten digits (digits.csv.gz: 1,797 8×8 scans, for the convergence
# runs of docs/time-to-train.md). Into $AUTOTUNE_CACHE/test-images (default ~/.cache/autotune/test-images).
# Optional: tests that need them skip with a message when they are absent.
set -euo pipefail
CACHE=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}
DEST=$CACHE/test-images
if [ -f "$DEST/.complete" ] && [ -f "$DEST/digits.csv.gz" ]; then echo "fetch-test-images: present in $DEST"; exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download python3-skimage python3-sklearn mate-backgrounds >/dev/null 2>&1 \
  || { apt-get update -qq >/dev/null 2>&1 || true; apt-get download python3-skimage python3-sklearn mate-backgrounds >/dev/null 2>&1; } \
  || { echo "fetch-test-images: apt-get download failed; image tests that need real photos will skip"; exit 0; }
for d in *.deb; do dpkg -x "$d" x; done
mkdir -p "$DEST/photos"
find x -iname '*.jpg' ! -name truncated.jpg -size +50k -exec cp {} "$DEST/photos/" \;
cp x/usr/lib/python3/dist-packages/skimage/data/truncated.jpg "$DEST/truncated.jpg"
cp x/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz "$DEST/digits.csv.gz"
touch "$DEST/.complete"
echo "fetch-test-images: $(ls "$DEST/photos" | wc -l) photos + truncated.jpg in $DEST"
