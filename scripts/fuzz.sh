#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/) for FUZZ_SECONDS each (default 60) under ASan + UBSan,
# starting from the committed seeds; new inputs go to build-fuzz/corpus/<target>, crashes to
# build-fuzz/crashes/<target>. Copy a crash into tests/fuzz/corpus/<target>/ once it is fixed, so
# every build replays it (CTest fuzz_replay_<target>). Needs clang (make deps installs it).
#   scripts/fuzz.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${FUZZ_SECONDS:-60}"
if [ ! -f build-fuzz/build.ninja ]; then cmake --preset fuzz >/dev/null; fi
cmake --build build-fuzz -j "$(nproc)" >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(space knobs protocol jpeg files)
status=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  log="build-fuzz/fuzz-$t.log"
  if build-fuzz/fuzz/fuzz_"$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || echo "?")
    echo "fuzz $t: $runs executions in ${SECONDS_EACH} s, no crash"
  else
    status=1
    echo "fuzz $t: CRASH — see $log and build-fuzz/crashes/$t/"
  fi
done
exit $status
