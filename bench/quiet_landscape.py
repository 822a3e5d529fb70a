#!/usr/bin/env python3
"""A synthetic grid of a quiet GPU host, for the search simulation (bench/search_study.py fit, simulate):
resnet18's GPU study space (batch 32/128/256 × fp32/amp_bf16 × contiguous/channels_last × loop/fused AdamW ×
cudnn.benchmark off/on, 48 configs, the baseline among them) with made-up throughputs that interact
(bf16 pays off mostly with channels_last; cudnn.benchmark +10%; the loop AdamW −30%), 1% run-to-run and
0.5% window noise — the noise the H100 showed (window IQR 0–1%), where the winner's-curse effect of a
lucky search draw is larger than the window CIs. Not a measurement: it tests the tuner's decisions on a
quiet host until the kit's search_study step measures a real one.
    quiet_landscape.py AUTOTUNE OUT_DIR     (writes OUT_DIR/grid.json; then `search_study.py fit --out OUT_DIR`)
"""
import itertools
import json
import math
import os
import random
import subprocess
import sys

from search_study import key_of

SPACE = [("batch_size", ["32", "128", "256"]), ("precision", ["fp32", "amp_bf16"]),
         ("memory_format", ["contiguous", "channels_last"]), ("optimizer_impl", ["loop", "fused"]),
         ("cudnn_benchmark", ["false", "true"])]


def rate(c):
    r = 1000 * {"32": 0.5, "128": 1.0, "256": 1.1}[c["batch_size"]]
    if c["precision"] == "amp_bf16":
        r *= 1.8 if c["memory_format"] == "channels_last" else 1.3
    if c["cudnn_benchmark"] == "true":
        r *= 1.1
    return r * {"loop": 0.7, "fused": 1.0}[c["optimizer_impl"]]


def main():
    autotune, out = sys.argv[1:3]
    knobs = [k for k, _ in SPACE]
    rng = random.Random(3)
    trials = []
    configs = [dict(zip(knobs, v)) for v in itertools.product(*[v for _, v in SPACE])]
    for rep in range(2):
        for c in configs:
            r = rate(c) * math.exp(rng.gauss(0, 0.01))
            w = [r * math.exp(rng.gauss(0, 0.005)) for _ in range(3)]
            trials.append({"config": c, "wall_s": 6.0, "status": "ok", "device": "cuda", "windows": w,
                           "window_seconds": [1.0] * 3, "rate": sorted(w)[1], "drift": w[-1] / w[0] - 1, "rep": rep,
                           "key": key_of(c, knobs)})
    infos = json.loads(subprocess.run([autotune, "workloads", "--json"], capture_output=True, text=True, check=True).stdout)
    base = {"batch_size": "32", "precision": "fp32", "memory_format": "contiguous", "optimizer_impl": "loop",
            "cudnn_benchmark": "false"}
    g = {"workload": "resnet18", "knobs": knobs, "space": dict(SPACE), "setup": ["--device=cuda", "--image-size=64"],
         "window_seconds": 1.0, "reps": 2, "baseline": base, "baseline_in_grid": True, "synthetic": __doc__.split("\n")[0],
         "workload_info": next(w for w in infos if w["name"] == "resnet18"), "trials": trials}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "grid.json"), "w") as f:
        json.dump(g, f, indent=1)
    print(os.path.join(out, "grid.json"))


if __name__ == "__main__":
    main()
