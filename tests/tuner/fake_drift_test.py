#!/usr/bin/env python3
"""The fake worker's landscape replay (FAKE_LANDSCAPE, FAKE_HOST_DRIFT) draws what bench/search_study.py
fits: run one config as trials/0001 … trials/0120 of one run (fresh processes) and check the log rates'
spread and lag-1 autocorrelation. With FAKE_HOST_DRIFT=0.8,1 the whole process variance is an AR(1)
series over the trial numbers (autocorrelation near 0.8); with share 0 the draws are independent (near 0);
the same seed and trial number give the same rate, another seed another series.
  fake_drift_test.py FAKE_WORKER LANDSCAPE WORK_DIR"""
import json
import math
import os
import shutil
import subprocess
import sys

fake, landscape, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
land = json.load(open(landscape))
key = max(land["configs"], key=lambda k: land["configs"][k]["rate"])
land["sigma_process"], land["sigma_window"] = 0.10, 0.0  # every window the process's rate
land_path = os.path.join(work, "landscape.json")
json.dump(land, open(land_path, "w"))
config = dict(kv.split("=", 1) for kv in key.split())
N = 120


def log_rates(drift, seed, n=N, tag=""):
    out = []
    for i in range(1, n + 1):
        d = os.path.join(work, f"{drift}-{seed}{tag}", "trials", f"{i:04d}")
        os.makedirs(d, exist_ok=True)
        plan = {"schema": "autotune.plan/1", "workload": land["workload"], "device": "cpu", "seed": seed,
                "config": config, "measure": {"windows": 3}}
        json.dump(plan, open(os.path.join(d, "plan.json"), "w"))
        env = dict(os.environ, FAKE_LANDSCAPE=land_path, FAKE_HOST_DRIFT=drift)
        subprocess.run([fake, "run", "--plan", os.path.join(d, "plan.json"), "--result", os.path.join(d, "result.json")],
                       env=env, check=True, capture_output=True)
        w = json.load(open(os.path.join(d, "result.json")))["windows"]
        out.append(math.log(w[0]["samples"] / w[0]["seconds"]))
    return out


def lag1(x):
    m = sum(x) / len(x)
    c0 = sum((a - m) ** 2 for a in x)
    return sum((x[i] - m) * (x[i + 1] - m) for i in range(len(x) - 1)) / c0


def sd(x):
    m = sum(x) / len(x)
    return math.sqrt(sum((a - m) ** 2 for a in x) / (len(x) - 1))


failures = []
drifting = log_rates("0.8,1", 5)
independent = log_rates("0.8,0", 5)
ac_d, ac_i = lag1(drifting), lag1(independent)
print(f"host drift (rho 0.8, share 1): lag-1 autocorrelation {ac_d:+.2f}, sd {sd(drifting):.3f}")
print(f"no drift (share 0):            lag-1 autocorrelation {ac_i:+.2f}, sd {sd(independent):.3f}")
if not ac_d > 0.55:
    failures.append(f"with FAKE_HOST_DRIFT=0.8,1 the lag-1 autocorrelation is {ac_d:+.2f}, expected near 0.8")
if not abs(ac_i) < 0.25:
    failures.append(f"with share 0 the lag-1 autocorrelation is {ac_i:+.2f}, expected near 0")
for name, x in (("drift", drifting), ("independent", independent)):
    if not 0.05 < sd(x) < 0.15:
        failures.append(f"{name}: sd of the log rates {sd(x):.3f}, expected near sigma_process 0.10")
again = log_rates("0.8,1", 5, n=10, tag="-again")
if again != drifting[:10]:
    failures.append("the same seed and trial numbers gave other rates")
other = log_rates("0.8,1", 6, n=10)
if other == drifting[:10]:
    failures.append("another seed gave the same host series")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
