#!/usr/bin/env python3
"""Can an lr-sweep's curves forecast the gain at the end of the user's run? A study, not a feature (2026-12-01).

    python3 docs/lr-runs/forecast_study.py RUNS_DIR

RUNS_DIR holds the folders that docs/lr-runs/2026-12-01-cpu-from-start/run.sh and run-to-run-end.sh wrote (the sweeps
from the start, 15% of the run, and converge held to the run's length). For each workload and data order, each arm's
smoothed loss inside the sweep's horizon is fitted with a power law in samples, L(s) = a + b s^-c (b > 0, a >= 0; c on a
grid, a and b by least squares), with and without the floor a, from a third or a tenth of the horizon on. The forecast
target is the user arm's fitted loss at the run's end; the forecast gain is the run's samples over the samples at which
the candidate's fit reaches it. The measured gain is converge's, in samples, to the baseline's smoothed loss at the
run's end (docs/lr-runs/gain_by_depth.py's arithmetic), per data order.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyworker"))
from autotune_pyworker.curve import reached_target, smoothed_loss  # noqa: E402

CASES = [  # sweep, converge to the run's end, run samples, converge's baseline label, its candidate label, sweep arm
    ("code-sweep", "code-converge-run-end", 60000, "baseline", "the sweep's best rate", 1.0),
    ("gpt-mini-sweep", "gpt-mini-converge-run-end", 40000, "baseline", "the sweep's best rate", 1.0),
    ("resnet18-sweep-your-batch", "resnet18-converge-your-batch-run-end", 16000, "baseline", "the sweep's best rate", 1.0),
    ("resnet18-sweep-changed-batch", "resnet18-converge-changed-batch-run-end", 16000,
     "changed batch at the batch rule's rate", "changed batch at the sweep's best rate", 1.0),
]


def fit(xy, floor):
    best = None
    for k in range(80):
        c = 0.02 * 1.08 ** k
        f = [x ** -c for x, _ in xy]
        y = [v for _, v in xy]
        n, sf, sy = len(f), sum(f), sum(y)
        sff, sfy = sum(a * a for a in f), sum(a * b for a, b in zip(f, y))
        if floor:
            det = n * sff - sf * sf
            if det <= 0:
                continue
            b = (n * sfy - sf * sy) / det
            a = (sy - b * sf) / n
        else:
            a, b = 0.0, sfy / sff
        if b <= 0 or a < 0:
            continue
        sse = sum((a + b * fi - yi) ** 2 for fi, yi in zip(f, y))
        if best is None or sse < best[0]:
            best = (sse, a, b, c)
    return best


def forecast(runs, case, floor, fit_from):
    sweep, _, run, _, _, user_multiple = case
    d = json.load(open(os.path.join(runs, sweep, "lr-sweep.json")))
    window, horizon = d["smooth_samples"], d["horizon"]["horizon_samples"]
    curves = {}
    for r in d["runs"]:
        res = json.load(open(os.path.join(runs, sweep, "trials", f"{r['trial']:04d}", "result.json")))
        curves[(round(r["multiple"], 9), r["data_order"])] = res["converge"]["points"]
    best = round(d["verdict"]["best_multiple"], 9)
    gains = {}
    for order in (0, 1):
        fits = []
        for m in (round(user_multiple, 9), best):
            pts = curves[(m, order)]
            xy = [(p[0], smoothed_loss(pts, i, window)) for i, p in enumerate(pts) if p[0] >= max(window, fit_from * horizon)]
            fits.append(fit(xy, floor))
        if None in fits:
            gains[order] = None
            continue
        (_, au, bu, cu), (_, ab, bb, cb) = fits
        target = au + bu * run ** -cu
        gains[order] = 0.0 if target <= ab else run / ((target - ab) / bb) ** (-1 / cb)
    return gains


def measured(runs, case):
    _, conv, run, base, cand, _ = case
    d = json.load(open(os.path.join(runs, conv, "converge.json")))
    window = d["smooth_samples"]
    arms = {}
    for r in d["runs"]:
        arms.setdefault(r["label"].split(", data order")[0], {})[r["data_order"]] = r["points"]
    ref = arms["baseline"]
    gains = {}
    for order, pts in ref.items():
        i = next(j for j, p in enumerate(pts) if p[0] >= run)
        target = smoothed_loss(pts, i, window)
        first = {}
        for label in (base, cand):
            cp = arms[label][order]
            first[label] = next((p[0] for j, p in enumerate(cp) if reached_target(cp, j, target, window)), None)
        gains[order] = first[base] / first[cand] if first[base] and first[cand] else None
    return gains


def show(g):
    return "/".join("—" if v is None else f"{v:.2f}" for v in g.values())


runs = sys.argv[1]
print("| workload | measured at the run's end | " + " | ".join(
    f"{'a + b s^-c' if floor else 'b s^-c'}, from {frac:.0%}" for floor in (True, False) for frac in (0.1, 0.34)) + " |")
print("|---|---:|" + "---:|" * 4)
for case in CASES:
    cells = [show(forecast(runs, case, floor, frac)) for floor in (True, False) for frac in (0.1, 0.34)]
    print(f"| {case[0]} | {show(measured(runs, case))} | " + " | ".join(cells) + " |")
