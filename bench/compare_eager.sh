#!/usr/bin/env bash
# C++ trainer (autotune-worker) vs PyTorch Python eager on the same model, batch, optimizer and thread
# count, on CPU. Runs are interleaved (C++, Python, Python, C++, …) so machine drift hits both alike.
#   bench/compare_eager.sh [REPS]      (default 3 per side per workload; needs make build first)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS="${1:-3}"
CACHE="${AUTOTUNE_CACHE:-$HOME/.cache/autotune}"
source "$CACHE/deps.env"
THREADS=$(nproc)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
med() { python3 -c "import json,sys,statistics; print(statistics.median(json.load(open(sys.argv[1]))['windows']))" "$1"; }
cpp_run() {  # workload → samples/s (median of 3 windows)
  build/bin/autotune trial --workload "$1" --image-size 64 --set batch_size=32 --set threads="$THREADS" \
    --device cpu --json > "$tmp/r.json"
  python3 -c "import json,statistics; r=json.load(open('$tmp/r.json')); assert r['status']=='ok', r['message']; print(statistics.median(w['samples_per_s'] for w in r['windows']))"
}
py_run() {
  "$PYTHON" bench/python_eager.py --workload "$1" --batch-size 32 --image-size 64 --threads "$THREADS" > "$tmp/p.json"
  med "$tmp/p.json"
}
printf '%-9s %-5s %12s %12s %7s\n' workload rep "C++ s/s" "Python s/s" ratio
for w in resnet18 gpt-mini; do
  cs=() ps=()
  for ((i = 1; i <= REPS; i++)); do
    if (( i % 2 )); then c=$(cpp_run $w); p=$(py_run $w); else p=$(py_run $w); c=$(cpp_run $w); fi
    cs+=("$c"); ps+=("$p")
    printf '%-9s %-5s %12.1f %12.1f %6.3fx\n' "$w" "$i" "$c" "$p" "$(python3 -c "print($c/$p)")"
  done
  python3 - "$w" "${cs[*]}" "${ps[*]}" <<'PY'
import statistics, sys
w, c, p = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"{w:<9} median {statistics.median(c):12.1f} {statistics.median(p):12.1f} {statistics.median(c)/statistics.median(p):6.3f}x"
      f"   (per-rep ratios {min(a/b for a,b in zip(c,p)):.3f}–{max(a/b for a,b in zip(c,p)):.3f})")
PY
done
echo "config: batch 32, image 64x64 (resnet18), T=64 (gpt-mini), AdamW for-loop, fp32, $THREADS threads, CPU"
