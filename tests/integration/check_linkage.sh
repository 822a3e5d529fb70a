#!/usr/bin/env bash
# The programs must start on a machine without a GPU driver: neither may record libcuda.so as
# NEEDED. The tuner must not link LibTorch at all (docs/design.md, "Parts and arrows"). And the worker must really start here.
#   check_linkage.sh BIN_DIR
set -u
bin="$1"
fail=0
for exe in autotune autotune-worker autotune-trace; do
  [ -x "$bin/$exe" ] || { echo "FAIL: $bin/$exe missing"; fail=1; continue; }
  needed=$(readelf -d "$bin/$exe" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}')
  echo "$exe NEEDED: $(echo $needed)"
  if echo "$needed" | grep -q '^libcuda\.so'; then echo "FAIL: $exe records libcuda.so as NEEDED"; fail=1; fi
done
if readelf -d "$bin/autotune" | grep -qE 'NEEDED.*lib(torch|c10)'; then
  echo "FAIL: autotune (the tuner) links LibTorch"; fail=1
fi
if readelf -d "$bin/autotune-trace" | grep -qE 'NEEDED.*lib(torch|c10|cupti)'; then
  echo "FAIL: autotune-trace (the profiler's analysis) links LibTorch or CUPTI"; fail=1
fi
readelf -d "$bin/autotune-worker" | grep -q 'NEEDED.*libtorch' || { echo "FAIL: autotune-worker does not link LibTorch"; fail=1; }
# Without a driver the worker must still start and say so (with one, it must see the device).
info=$("$bin/autotune-worker" info) || { echo "FAIL: autotune-worker info exited $?"; fail=1; }
echo "$info"
echo "$info" | grep -q "built against torch 2.11.0" || { echo "FAIL: worker not built against torch 2.11.0"; fail=1; }
[ $fail -eq 0 ] && echo "linkage: ok"
exit $fail
