#!/usr/bin/env python3
"""docs/lr-runs/2026-12-01-cpu-bn: samples, not seconds. For each converge folder given, each candidate's samples to the
baseline's targets over the baseline's, per data order: the training loss (smoothed, converge's common target) and the
held-out loss (converge's held-out target; the first evaluation at or below it). Samples take out the throughput, so
two candidates at one global batch and one rate differ only in what their forward sees.
    python3 docs/lr-runs/2026-12-01-cpu-bn/samples.py runs/bn/converge-b128 runs/bn/converge-b32x4
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "pyworker"))
from autotune_pyworker.curve import reached_target  # noqa: E402

for folder in sys.argv[1:]:
    d = json.load(open(os.path.join(folder, "converge.json")))
    w, target = d["smooth_samples"], d["target_loss"]
    h = d["held_out"]
    runs = {(r["role"] in ("baseline", "rerun"), r["data_order"]): r for r in d["runs"]}
    held = {r["label"]: r["points"] for r in h["runs"]}
    print(f"{folder}: training target {target:.4f}, held-out target {h['target_loss']:.4f}")
    for order in (0, 1):
        base, cand = runs.get((True, order)), runs.get((False, order))
        if not base or not cand:
            continue
        def train_samples(r):
            p = r["points"]
            return next((p[i][0] for i in range(len(p)) if reached_target(p, i, target, w)), None)
        def held_samples(r):
            p = held.get(r["label"], [])
            return next((s for s, _, loss in p if loss <= h["target_loss"]), None)
        tb, tc, hb, hc = train_samples(base), train_samples(cand), held_samples(base), held_samples(cand)
        print(f"  order {order} ({cand['label']}): training {tc} / {tb} samples = {tc / tb:.2f}x;"
              f" held-out {hc} / {hb} samples = {hc / hb:.2f}x; lowest held-out {min(l for *_, l in held[cand['label']]):.4f}"
              f" against {min(l for *_, l in held[base['label']]):.4f}")
