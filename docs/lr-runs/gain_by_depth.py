#!/usr/bin/env python3
"""How a faster rate's gain moves with depth into the run, read off a converge --from-sweep run's saved curves, or off
an lr-sweep folder's trials.

    python3 docs/lr-runs/gain_by_depth.py CONVERGE/converge.json RUN_SAMPLES [SHARE ...]
    python3 docs/lr-runs/gain_by_depth.py --sweep SWEEP_DIR

The second form is lr-sweep.md's Depth line recomputed for a sweep made before the line existed (2026-12-01): the
sweep's best against its ×1 at a third, two thirds and all of its horizon, timed to ×1's smoothed loss there, paired by
data order (tuner/pricing/lr_sweep.cpp, judge_lr_sweep's by_depth), the curves from SWEEP_DIR/trials/*/result.json.

For each share of the user's run (default 0.05 0.15 0.5 1; a share past the baseline's curve is left out): the
baseline's smoothed loss after that many samples (its window: converge's), and the samples the candidate needed from
the same start to reach it, paired by data order; the gain is their ratio, mean over the orders both reached. The sweep
times its gain at 15% of the run (lr-sweep's horizon from the start); converge's headline times the common target.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyworker"))
from autotune_pyworker.curve import reached_target, smoothed_loss  # noqa: E402


def loss_after(points, samples, window):
    """The smoothed loss at the first point at or past `samples` (knobs/converge.cpp loss_at_samples; None past the
    curve's end)."""
    i = next((j for j, p in enumerate(points) if p[0] >= samples), None)
    return None if i is None else smoothed_loss(points, i, window)


def samples_to(points, loss, window):
    return next((p[0] for i, p in enumerate(points) if reached_target(points, i, loss, window)), None)


def sweep_depths(folder):
    d = json.load(open(os.path.join(folder, "lr-sweep.json")))
    horizon, window, best = d["horizon"]["horizon_samples"], d["smooth_samples"], d["verdict"]["best_multiple"]
    curves = {}
    for r in d["runs"]:
        res = json.load(open(os.path.join(folder, "trials", f"{r['trial']:04d}", "result.json")))
        curves[(round(r["multiple"], 9), r["data_order"])] = res["converge"]["points"]
    print(f"{folder}: {d['verdict']['headline']}")
    for at in (horizon // 3, 2 * horizon // 3, horizon):
        ratios = []
        for (m, o), user in curves.items():
            if m != 1 or (round(best, 9), o) not in curves:
                continue
            loss = loss_after(user, at, window)
            a, b = samples_to(user, loss, window), samples_to(curves[(round(best, 9), o)], loss, window)
            if a and b:
                ratios.append(a / b)
        print(f"  at {at:,} samples: " + (f"{sum(ratios) / len(ratios):.2f}x over {len(ratios)} data orders" if ratios
                                           else "not timed"))


if sys.argv[1] == "--sweep":
    for folder in sys.argv[2:]:
        sweep_depths(folder)
    sys.exit(0)
conv = json.load(open(sys.argv[1]))
run = float(sys.argv[2])
shares = [float(x) for x in sys.argv[3:]] or [0.05, 0.15, 0.5, 1.0]
window = conv["smooth_samples"]
arms = {}
for r in conv["runs"]:
    arms.setdefault(r["label"].split(", data order")[0], {})[r["data_order"]] = r["points"]
labels = list(arms)
base = labels[0]
print(f"window {window} samples; the user's run {run:,.0f} samples")
for cand in labels[1:]:
    print(f"{cand} against {base}:")
    for share in shares:
        ratios = []
        for o, pts in arms[base].items():
            if o not in arms[cand]:
                continue
            loss = loss_after(pts, share * run, window)
            if loss is None:
                continue
            a, b = samples_to(pts, loss, window), samples_to(arms[cand][o], loss, window)
            if a and b:
                ratios.append(a / b)
        if ratios:
            print(f"  {100 * share:5.1f}% of the run: {sum(ratios) / len(ratios):.2f}x "
                  f"({min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} data orders)")
        else:
            print(f"  {100 * share:5.1f}% of the run: not timed (the baseline's curve ends before it, or the candidate never got there)")
