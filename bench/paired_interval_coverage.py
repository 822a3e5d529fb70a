#!/usr/bin/env python3
"""How often each interval of the headline speedup holds the true ratio, under gpt-mini's measured noise.

The headline speedup (winner ÷ baseline) comes from interleaved rounds, one fresh process of each config per round.
Two intervals are compared here by Monte Carlo, with the noise fitted on this project's CPU VM for gpt-mini
(docs/search-runs/study/gpt-mini/landscape.json: 11.4% per process, 5.4% per window, log scale) and a true ratio of
1.29× (the gain of its best config over PyTorch's defaults):

  * pooled: every window of every round pooled per config, the ratio of the two medians resampled independently
    (what the headline used before the rounds were paired);
  * paired: each round's ratio of medians, their geometric mean, a two-level bootstrap (rounds, then windows) —
    tuner/measures/statistics.h, paired_ratio.

Prints, per number of rounds, the share of simulated runs whose 95% interval holds the true ratio and the share whose
interval reaches 1× (where the tuner keeps PyTorch's defaults).

    python3 bench/paired_interval_coverage.py [--runs 500]
"""
import argparse

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--runs", type=int, default=500)
p.add_argument("--windows", type=int, default=4, help="measured windows per run")
args = p.parse_args()
rng = np.random.default_rng(1)
SIGMA_PROCESS, SIGMA_WINDOW, TRUE = 0.114, 0.054, 1.29


def run(log_mean):
    """One fresh process: its own level, then its windows around it."""
    level = log_mean + rng.normal(0, SIGMA_PROCESS)
    return np.exp(level + rng.normal(0, SIGMA_WINDOW, args.windows))


def pooled(a, b, resamples=1000):
    x, y = np.concatenate(a), np.concatenate(b)
    s = [np.median(rng.choice(x, x.size)) / np.median(rng.choice(y, y.size)) for _ in range(resamples)]
    return np.percentile(s, [2.5, 97.5])


def paired(a, b, resamples=1000):
    rounds, s = len(a), []
    for _ in range(resamples):
        picks = rng.integers(0, rounds, rounds)
        logs = [np.log(np.median(rng.choice(a[k], a[k].size)) / np.median(rng.choice(b[k], b[k].size))) for k in picks]
        s.append(np.exp(np.mean(logs)))
    return np.percentile(s, [2.5, 97.5])


for rounds in (2, 4):
    holds, reaches_one = {"pooled": 0, "paired": 0}, {"pooled": 0, "paired": 0}
    for _ in range(args.runs):
        a = [run(np.log(TRUE)) for _ in range(rounds)]
        b = [run(0.0) for _ in range(rounds)]
        for name, interval in (("pooled", pooled), ("paired", paired)):
            lo, hi = interval(a, b)
            holds[name] += lo <= TRUE <= hi
            reaches_one[name] += lo <= 1
    print(f"{rounds} rounds, {args.runs} simulated runs: " + "; ".join(
        f"{k}: holds the true ratio {holds[k] / args.runs:.0%}, reaches 1× {reaches_one[k] / args.runs:.0%}" for k in holds))
