#!/usr/bin/env python3
"""Does a fixed host-speed probe explain the trial-to-trial noise? (docs/search.md, "Host drift")

Alternates a 0.3 s probe (bench/host_probe.c: FMA chains and a memory sweep on every core) with fresh
`autotune trial` processes of two configs, probe before and after each trial, and reports how much
the probe and the trials vary and how well the probe predicts a trial's rate. If the host's speed
drove the noise, the trials would move with the probe and with each other.

  python3 bench/host_probe_study.py --autotune build/bin/autotune --rounds 14 --out probe.json
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_study import run_trial  # noqa: E402

CONFIGS = [{"batch_size": "32", "threads": "2", "precision": "amp_bf16", "optimizer_impl": "fused"},
           {"batch_size": "16", "threads": "1", "precision": "fp32", "optimizer_impl": "loop"}]


def corr(a, b):
    ma, mb = statistics.mean(a), statistics.mean(b)
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / den if den else 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--autotune", default="build/bin/autotune")
    p.add_argument("--workload", default="gpt-mini")
    p.add_argument("--rounds", type=int, default=14)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="host-probe-")
    probe = os.path.join(tmp, "probe")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_probe.c")
    subprocess.run(["cc", "-O2", "-pthread", "-o", probe, src], check=True)
    cores = str(os.cpu_count() or 1)

    def run_probe():
        return json.loads(subprocess.run([probe, cores], capture_output=True, text=True, check=True).stdout)

    rows = []
    for i in range(a.rounds):
        for j, c in enumerate(CONFIGS):
            p0 = run_probe()
            r = run_trial(a.autotune, a.workload, c, [])
            p1 = run_probe()
            r.update({"round": i, "config_index": j, "time": time.time(), "probe_before": p0, "probe_after": p1})
            rows.append(r)
            print(f"round {i + 1} config {j}: {r.get('rate', 0):.1f} samples/s, probe {p0['gflops']:.2f}/{p1['gflops']:.2f} "
                  f"GFLOP/s {p0['gbs']:.1f}/{p1['gbs']:.1f} GB/s", file=sys.stderr, flush=True)
    out = {"workload": a.workload, "configs": CONFIGS, "rows": rows, "summary": []}
    for j in range(len(CONFIGS)):
        r = [x for x in rows if x["config_index"] == j and x.get("rate")]
        y = [math.log(x["rate"]) for x in r]
        pc = [math.log((x["probe_before"]["gflops"] + x["probe_after"]["gflops"]) / 2) for x in r]
        pm = [math.log((x["probe_before"]["gbs"] + x["probe_after"]["gbs"]) / 2) for x in r]
        out["summary"].append({"config": CONFIGS[j], "trials": len(y), "sd_log_rate": statistics.pstdev(y),
                               "sd_log_probe_compute": statistics.pstdev(pc), "sd_log_probe_memory": statistics.pstdev(pm),
                               "corr_rate_compute": corr(y, pc), "corr_rate_memory": corr(y, pm)})
    a0 = [math.log(x["rate"]) for x in rows if x["config_index"] == 0 and x.get("rate")]
    a1 = [math.log(x["rate"]) for x in rows if x["config_index"] == 1 and x.get("rate")]
    n = min(len(a0), len(a1))
    out["corr_configs_same_round"] = corr(a0[:n], a1[:n])
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    for s in out["summary"]:
        print(f"{s['config']}: {s['trials']} trials, σ(log rate) {s['sd_log_rate']:.3f}; probe σ compute "
              f"{s['sd_log_probe_compute']:.3f} memory {s['sd_log_probe_memory']:.3f}; corr(rate, probe) compute "
              f"{s['corr_rate_compute']:+.2f} memory {s['corr_rate_memory']:+.2f}")
    print(f"corr between the two configs in the same round: {out['corr_configs_same_round']:+.2f}")


if __name__ == "__main__":
    main()
