#!/usr/bin/env bash
# Prepares, on this machine, what the GPU machine lacks for scripts/device-check.sh: the Debian build
# dependencies (downloaded with apt-get download, unpacked with dpkg -x — never installed) and a few
# photos for the generated JPEG folder, in one ignored folder small enough to travel (the device tool
# takes at most 64 MiB of tree). Name that folder in the device call's `carry`.
#
#   scripts/device-deps.sh [DIR]        (default .device-deps; prints its size)
#
# The GPU machine has python3 with torch 2.11.0+cu130, CMake, ninja, nvcc and a compiler; the build
# there finds these packages through CMAKE_PREFIX_PATH=DIR/root/usr (scripts/device-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-.device-deps}"
PACKAGES=(
  libfmt-dev libfmt9 libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian
  libturbojpeg0-dev libturbojpeg0 libjpeg62-turbo-dev libjpeg62-turbo
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libyaml-cpp0.7 libsqlite3-dev libsqlite3-0 libjs-chart.js
  libgloo-dev  # headers only: ProcessGroupGloo.hpp includes them (workloads/engine/dist/gloo_backend.cpp)
)
say() { printf 'device-deps: %s\n' "$*"; }
rm -rf "$DIR/debs" "$DIR/root"
mkdir -p "$DIR/debs" "$DIR/root" "$DIR/photos"
(cd "$DIR/debs" && apt-get download "${PACKAGES[@]}" >/dev/null 2>&1) \
  || { say "error: apt-get download failed for some of: ${PACKAGES[*]}" >&2; exit 1; }
for f in "$DIR"/debs/*.deb; do dpkg -x "$f" "$DIR/root"; done
rm -rf "$DIR/debs" "$DIR/root/usr/share/doc" "$DIR/root/usr/share/man"
# Photos for bench/make_image_folder (the JPEG-folder runs): those under 1.5 MB from fetch-test-images.
PHOTOS="${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos"
[ -d "$PHOTOS" ] || scripts/fetch-test-images.sh >/dev/null
find "$PHOTOS" -name '*.jpg' -size -1500k -exec cp {} "$DIR/photos/" \;
# sklearn's handwritten digits (time_to_train's image classification on real data; 60 KiB).
[ -f "$PHOTOS/../digits.csv.gz" ] && cp "$PHOTOS/../digits.csv.gz" "$DIR/digits.csv.gz"
printf '%s\n' "${PACKAGES[@]}" > "$DIR/packages.txt"
grep -qx "/$DIR/" .git/info/exclude 2>/dev/null || grep -qx "/$DIR/" .gitignore || echo "/$DIR/" >> .git/info/exclude
size=$(du -sm "$DIR" | cut -f1)
say "$DIR: ${#PACKAGES[@]} packages unpacked, $(ls "$DIR/photos" | wc -l) photos, ${size} MiB"
[ "$size" -lt 60 ] || { say "error: $DIR is ${size} MiB; the device takes at most 64 MiB of tree" >&2; exit 1; }
