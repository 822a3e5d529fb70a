#!/usr/bin/env bash
# docs/lr-runs/2026-12-01-cpu-from-start, second part: converge --from-sweep again on run.sh's four sweeps, now that the
# baseline's runs stop at the sweep's --run-length (--baseline-samples' default), so the common target is the loss the
# user's run ends at: 60,000 samples for code, 40,000 for gpt-mini, 16,000 for resnet18. --seconds covers the baseline's
# run at its speed on this VM (about 800, 230 and 270 samples/s). On the 2-core VM with nothing else running; OUT is
# run.sh's (default runs/lr-from-start).
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=build/bin/autotune
OUT="${1:-runs/lr-from-start}"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp code
"$A" converge --from-sweep "$OUT/code-sweep" --seconds 100 --reruns 1 --out "$OUT/code-converge-run-end"
stamp resnet18
"$A" converge --from-sweep "$OUT/resnet18-sweep-your-batch" --seconds 75 --reruns 1 --out "$OUT/resnet18-converge-your-batch-run-end"
"$A" converge --from-sweep "$OUT/resnet18-sweep-changed-batch" --seconds 75 --reruns 1 --out "$OUT/resnet18-converge-changed-batch-run-end"
stamp gpt-mini
"$A" converge --from-sweep "$OUT/gpt-mini-sweep" --seconds 200 --reruns 1 --out "$OUT/gpt-mini-converge-run-end"
stamp done
