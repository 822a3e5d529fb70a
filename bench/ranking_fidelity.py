#!/usr/bin/env python3
"""Ranking fidelity: do default-length trials rank configurations as runs 10x longer do?

For each configuration of a grid, one trial with the default measurement and one with windows LONG times
longer (each a fresh `autotune trial` process; the order of all runs shuffled by --seed), then Kendall's
tau-b between the two rankings and whether the top-1 / top-3 agree. A pilot of the search study
(docs/search.md); the study itself measures several repetitions per side.

  ranking_fidelity.py --autotune build/bin/autotune --workload gpt-mini \\
      --grid batch_size=8,16,32 threads=1,2 optimizer_impl=loop,fused [--long 10] [--seed 1] [--out FILE.json]
"""
import argparse
import itertools
import json
import random
import sys

from search_study import kendall_tau_b, run_trial  # one Kendall tau and one trial runner for both studies


def trial(a, config, scale):
    row = run_trial(a.autotune, a.workload, dict(kv.split("=", 1) for kv in config), [], window_scale=scale)
    return (row.get("rate") if row["status"] == "ok" else None), row["wall_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--autotune", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--grid", nargs="+", required=True, help="knob=v1,v2 …")
    ap.add_argument("--long", type=float, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    axes = [[f"{kv.split('=')[0]}={v}" for v in kv.split("=", 1)[1].split(",")] for kv in a.grid]
    configs = [tuple(c) for c in itertools.product(*axes)]
    runs = [(c, s) for c in configs for s in (1, a.long)]
    random.Random(a.seed).shuffle(runs)
    got, walls = {}, {1: 0.0, a.long: 0.0}
    for i, (c, s) in enumerate(runs, 1):
        v, wall = trial(a, c, s)
        got[(c, s)] = v
        walls[s] += wall
        print(f"[{i}/{len(runs)}] {' '.join(c)} x{s:g}: {v if v is None else round(v, 1)} samples/s ({wall:.1f} s)",
              file=sys.stderr, flush=True)
    ok = [c for c in configs if got[(c, 1)] is not None and got[(c, a.long)] is not None]
    short = [got[(c, 1)] for c in ok]
    long = [got[(c, a.long)] for c in ok]
    tau = kendall_tau_b(short, long)
    rank_s = sorted(ok, key=lambda c: -got[(c, 1)])
    rank_l = sorted(ok, key=lambda c: -got[(c, a.long)])
    out = {"workload": a.workload, "configs": len(configs), "usable": len(ok), "long_factor": a.long, "seed": a.seed,
           "kendall_tau_b": tau, "top1_agree": rank_s[0] == rank_l[0],
           "top3_overlap": len(set(rank_s[:3]) & set(rank_l[:3])),
           "wall_seconds": {"default": walls[1], "long": walls[a.long]},
           "rows": [{"config": " ".join(c), "default": got[(c, 1)], "long": got[(c, a.long)]} for c in configs]}
    print(json.dumps(out, indent=2))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
