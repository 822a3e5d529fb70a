#!/usr/bin/env bash
# C++ trainer (autotune-worker) vs PyTorch Python eager on the same model, batch, optimizer and thread
# count, on CPU. Runs are interleaved (C++, Python, Python+heap, then the reverse) so machine drift hits
# all sides alike. The "Python+heap" column runs the same Python with glibc told (by environment) to
# keep freed memory the way autotune-worker does itself (retain_freed_host_memory), so the share of
# the gap that is the heap policy and the share that is C++ can be told apart.
#   bench/compare_eager.sh [REPS]      (default 3 per side per case; needs make build first)
#   BATCHES="8 32" bench/compare_eager.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."
REPS="${1:-3}"
BATCHES="${BATCHES:-8 32}"
CACHE="${AUTOTUNE_CACHE:-$HOME/.cache/autotune}"
source "$CACHE/deps.env"
THREADS=$(nproc)
HEAP=(MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=2147483647)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each run appends one JSON line {"side", "case", "sps", "forward", "backward", "optimizer"} to $tmp/all.
cpp_run() {  # workload batch
  build/bin/autotune trial --workload "$1" --image-size 64 --set batch_size="$2" --set threads="$THREADS" \
    --device cpu --json > "$tmp/r.json"
  python3 - "$tmp/r.json" "$1@$2" >> "$tmp/all" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1])); assert r["status"] == "ok", r["message"]; b = r["breakdown_ms"]
print(json.dumps({"side": "C++", "case": sys.argv[2], "sps": statistics.median(w["samples_per_s"] for w in r["windows"]),
                  **{k: b[k] for k in ("forward", "backward", "optimizer")}}))
PY
}
py_run() {  # side workload batch [env...]
  local side=$1 w=$2 bs=$3; shift 3
  env "$@" "$PYTHON" bench/python_eager.py --workload "$w" --batch-size "$bs" --image-size 64 --threads "$THREADS" > "$tmp/p.json"
  python3 - "$tmp/p.json" "$side" "$w@$bs" >> "$tmp/all" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1])); b = r["breakdown_ms"]
print(json.dumps({"side": sys.argv[2], "case": sys.argv[3], "sps": statistics.median(r["windows"]), **b}))
PY
}
for w in resnet18 gpt-mini; do
  for bs in $BATCHES; do
    for ((i = 1; i <= REPS; i++)); do
      if (( i % 2 )); then cpp_run $w $bs; py_run Python $w $bs; py_run Python+heap $w $bs "${HEAP[@]}"
      else py_run Python+heap $w $bs "${HEAP[@]}"; py_run Python $w $bs; cpp_run $w $bs; fi
      echo "  $w batch $bs rep $i/$REPS done" >&2
    done
  done
done
python3 - "$tmp/all" <<'PY'
import collections, json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in runs: by[(r["case"], r["side"])].append(r)
m = statistics.median
print(f"{'case':<13} {'C++ s/s':>9} {'Python':>9} {'ratio':>7} {'per-rep ratios':>15} {'Python+heap':>12} {'ratio':>7}")
for case in dict.fromkeys(r["case"] for r in runs):
    c, p, h = ([r["sps"] for r in by[(case, s)]] for s in ("C++", "Python", "Python+heap"))
    rr = [a / b for a, b in zip(c, p)]
    print(f"{case:<13} {m(c):9.1f} {m(p):9.1f} {m(c)/m(p):6.3f}x {min(rr):7.3f}–{max(rr):.3f} {m(h):12.1f} {m(c)/m(h):6.3f}x")
print("\nmedian ms per step    forward  backward  optimizer(+zero_grad)")
for case in dict.fromkeys(r["case"] for r in runs):
    for side in ("C++", "Python", "Python+heap"):
        rs = by[(case, side)]
        print(f"{case:<13} {side:<11} {m(r['forward'] for r in rs):7.1f} {m(r['backward'] for r in rs):9.1f} {m(r['optimizer'] for r in rs):10.1f}")
PY
echo "Python+heap: $PYTHON with ${HEAP[*]}"
echo "config: image 64x64 (resnet18), T=64 (gpt-mini), AdamW for-loop, fp32, zero_grad zeros, $THREADS threads, CPU; reps $REPS"
