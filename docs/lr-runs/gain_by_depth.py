#!/usr/bin/env python3
"""How a faster rate's gain moves with depth into the run, read off a converge --from-sweep run's saved curves.

    python3 docs/lr-runs/gain_by_depth.py CONVERGE/converge.json RUN_SAMPLES [SHARE ...]

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
    """The smoothed loss at the last point at or before `samples` (None past the curve's end)."""
    if not points or points[-1][0] < samples:
        return None
    i = max(j for j, p in enumerate(points) if p[0] <= samples)
    return smoothed_loss(points, i, window)


def samples_to(points, loss, window):
    return next((p[0] for i, p in enumerate(points) if reached_target(points, i, loss, window)), None)


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
