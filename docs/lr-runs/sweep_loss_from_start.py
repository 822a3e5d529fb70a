#!/usr/bin/env python3
"""The sweep's own loss timed from the user's start, recomputed from a converge --from-sweep run's saved curves.

    python3 docs/lr-runs/sweep_loss_from_start.py SWEEP/lr-sweep.json CONVERGE/converge.json

The rule `autotune converge --from-sweep` applies since 2026-12-01 (tuner/converge/converge.cpp, time_at_sweep_loss), for
runs saved before it: the loss the sweep timed its gain to (its reference rate's mean smoothed loss at the horizon), the
samples each arm needed from the start to reach it (the smoothed loss over the sweep's window, knobs/converge.cpp), paired
by data order, against the arm the gain is relative to (the baseline; at (b)'s batch, the arm at the rule's rate).
"""
import json
import os
import sys

# The smoothing and the target test are the Python worker's copy of knobs/converge.cpp's (held to the same numbers by
# tests/knobs/resolution_cross_test.py); torch-free.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyworker"))
from autotune_pyworker.curve import reached_target  # noqa: E402


def samples_to(points, loss, window):
    """The samples at the first point whose smoothed loss is at or below `loss` (knobs/converge.cpp time_to_target)."""
    return next((p[0] for i, p in enumerate(points) if reached_target(points, i, loss, window)), None)


sweep, conv = (json.load(open(p)) for p in sys.argv[1:3])
loss = next(a["loss"] for a in sweep["arms"] if abs(a["multiple"] - 1) < 1e-9)
window = sweep["smooth_samples"]
arms = {}
for r in conv["runs"]:
    arms.setdefault(r["label"].split(", data order")[0], {})[r["data_order"]] = r["points"]
labels = list(arms)
reference = labels[1] if sweep.get("at") == "changed-batch" else labels[0]
best = labels[-1]
pairs = [(samples_to(arms[reference][o], loss, window), samples_to(arms[best][o], loss, window))
         for o in sorted(arms[best]) if o in arms[reference]]
pairs = [(a, b) for a, b in pairs if a and b]
v = sweep["verdict"]
print(f"sweep: {v['headline']}")
print(f"the sweep's loss {loss:.4f} (window {window} samples), its arms from a checkpoint after "
      f"{sweep['horizon']['burn_in_samples']} samples")
for a, b in pairs:
    print(f"  {reference}: {a} samples, {best}: {b} samples: {a / b:.2f}x")
if pairs:
    ratio = sum(a for a, _ in pairs) / sum(b for _, b in pairs)
    print(f"from the start to the sweep's loss: {ratio:.2f}x over {len(pairs)} data orders, against the sweep's {v['gain']:.2f}x "
          f"(the sweep's {v['gain'] / ratio:.2f}x this)")
for c in conv["comparisons"]:
    if c["run"] == best:
        print(f"to the common target {c['target_loss']:.4f}: measured {c['measured']:.2f}x, predicted {c['predicted']:.2f}x")
