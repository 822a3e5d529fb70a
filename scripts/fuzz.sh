#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/) for FUZZ_SECONDS each (default 60) under ASan + UBSan,
# or, with FUZZ_RUNS=N, for N executions each (no time limit; FUZZ_JOBS=2 runs two targets at once),
# starting from the committed seeds; new inputs go to build-fuzz/corpus/<target>, crashes to
# build-fuzz/crashes/<target>. Copy a crash into tests/fuzz/corpus/<target>/ once it is fixed, so
# every build replays it (CTest fuzz_replay_<target>). Needs clang (make deps installs it).
#   scripts/fuzz.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${FUZZ_SECONDS:-60}"
RUNS="${FUZZ_RUNS:-}"
JOBS="${FUZZ_JOBS:-1}"
if [ ! -f build-fuzz/build.ninja ]; then cmake --preset fuzz >/dev/null; fi
cmake --build build-fuzz -j "$(nproc)" >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(space knobs protocol jpeg files)
limit=(-max_total_time="$SECONDS_EACH")
[ -z "$RUNS" ] || limit=(-runs="$RUNS")
one() {  # one target; prints one line; exit status 1 on a crash
  local t=$1 log="build-fuzz/fuzz-$1.log" start=$SECONDS
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  if build-fuzz/fuzz/fuzz_"$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    local runs
    runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || echo "?")
    echo "fuzz $t: $runs executions in $((SECONDS - start)) s, no crash"
  else
    echo "fuzz $t: CRASH — see $log and build-fuzz/crashes/$t/"
    return 1
  fi
}
status=0
running=0
for t in "${targets[@]}"; do
  one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || status=1; running=$((running - 1)); fi  # start the next as soon as one ends
done
while [ "$running" -gt 0 ]; do wait -n || status=1; running=$((running - 1)); done
exit $status
