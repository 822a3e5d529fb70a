#!/usr/bin/env python3
"""Tables from run.sh's folders: each tune's configs (median samples/s over all its trials' windows, compile seconds,
the inductor cache), the winner; the two workers side by side; the HF tunes' winners.   summarize.py OUT_DIR"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]


def results(folder):
    for path in sorted(glob.glob(os.path.join(folder, "trials", "*", "result.json")) +
                       glob.glob(os.path.join(folder, "*", "result.json"))):
        r = json.load(open(path))
        if r.get("status") == "ok" and r.get("windows"):
            yield r


def tune_table(name):
    folder = os.path.join(out, name)
    by = {}
    for r in results(folder):
        key = " ".join(f"{k}={v}" for k, v in sorted(r["config"].items()) if k in ("compile", "batch_size")) or "(defaults)"
        by.setdefault(key, []).append(r)
    best = json.load(open(os.path.join(folder, "best.json")))
    print(f"\n{name}: winner {best.get('config')} — speedup {best.get('speedup', {}).get('value', best.get('speedup'))}")
    print("| config | trials | samples/s (median of windows) | compile s (first step − steady) | inductor cache hits/misses |")
    print("|---|---|---|---|---|")
    rows = {}
    for key, rs in sorted(by.items()):
        sps = statistics.median(w["samples_per_s"] for r in rs for w in r["windows"])
        comp = [r["compile"]["seconds"] for r in rs if r.get("compile")]
        cache = [f"{r['compile']['cache_hits']}/{r['compile']['cache_misses']}" for r in rs if r.get("compile")]
        rows[key] = (sps, comp)
        print(f"| {key} | {len(rs)} | {sps:,.0f} | {', '.join(f'{c:.1f}' for c in comp) or '—'} | {', '.join(cache) or '—'} |")
    return rows


for name in ("compile-resnet18", "compile-gpt2"):
    if os.path.isdir(os.path.join(out, name)):
        rows = tune_table(name)
        off = [v for k, v in rows.items() if "compile=off" in k or k == "(defaults)"]
        on = [v for k, v in rows.items() if "compile=default" in k]
        if off and on and on[0][1]:
            s_off, s_on, c = off[0][0], on[0][0], statistics.median(on[0][1])
            speed = s_on / s_off
            # Break-even: the run length (seconds of eager training) past which compiling pays: T·(1 − 1/speed) = C.
            even = c / (1 - 1 / speed) if speed > 1 else float("inf")
            print(f"steady speedup {speed:.2f}×, compile {c:.1f} s; compiling pays after {even:,.0f} s of training "
                  f"({even / 60:.1f} min); over a 1-hour run it keeps {3600 / (3600 + c) * speed:.3f}× the eager rate")

workers = os.path.join(out, "workers")
if os.path.isdir(workers):
    print("\nresnet18, 64×64, batch 32, 1000 classes, same seed and knobs: three interleaved trials per worker")
    print("| worker | samples/s per trial | median | loss first → last (mean of the trials) |")
    print("|---|---|---|---|")
    for who in ("cpp", "python"):
        rs = [r for d in sorted(glob.glob(os.path.join(workers, f"{who}-*"))) for r in results(d)]
        per = [statistics.median(w["samples_per_s"] for w in r["windows"]) for r in rs]
        first = statistics.mean(r["warmup_losses"][0] for r in rs)
        last = statistics.mean(r["losses"][-1] for r in rs)
        print(f"| {who} | {', '.join(f'{p:,.0f}' for p in per)} | {statistics.median(per):,.0f} | {first:.3f} → {last:.3f} |")

    # The loss trajectories step by step (warm-up and measured steps): the tuner's fp32-reference check compares the
    # mean of the last 10 common steps and allows 5%.
    def trajectory(d):
        r = next(iter(results(d)))
        return r["warmup_losses"] + r["losses"]
    for c_dir, p_dir in zip(sorted(glob.glob(os.path.join(workers, "cpp-*"))), sorted(glob.glob(os.path.join(workers, "python-*")))):
        a, b = trajectory(c_dir), trajectory(p_dir)
        n = min(len(a), len(b))
        la, lb = statistics.mean(a[n - 10:n]), statistics.mean(b[n - 10:n])
        print(f"{os.path.basename(c_dir)} vs {os.path.basename(p_dir)}: {n} common steps, first 10 {statistics.mean(a[:10]):.3f} vs "
              f"{statistics.mean(b[:10]):.3f}, last 10 {la:.3f} vs {lb:.3f} ({abs(la - lb) / la:.1%} apart; the check allows 5%)")

for name in ("hf-bert", "hf-vit", "hf-longformer"):
    if os.path.isdir(os.path.join(out, name)):
        tune_table(name)
