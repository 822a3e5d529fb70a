#!/usr/bin/env python3
"""The noise logger in a real Python training loop (the project's venv) on real data, and the tuner pricing with it.

    noise_log_test.py BUILD_DIR SOURCE_DIR

An MLP trains on sklearn's handwritten digits (digits.csv.gz, fetched by scripts/fetch-test-images.sh) with AdamW and
gradient accumulation, logging with logger/autotune_noise_log.py. Checked: each logged step's sums equal the ones from
every micro-batch's own gradient (autograd on each micro-batch alone) — with the loss divided by K, summed, scaled as a
GradScaler scales it, and logged every 3rd step; an existing file is not overwritten. Then the model is exported
(scripts/export_model.py) and `autotune tune --model M --noise-log LOG --objective time` prices with the log: no
noise-scale trial, the log's whole estimate is the ratio of sums computed here, its windows and B̄ over the run are in
best.json. `autotune report DIR --noise-log LOG2` re-prices and keeps the earlier log. Refused in one line, exit 2,
nothing written: a truncated log, a log of another model, one micro-batch per step (tune and report).
Exit 77 without a Python with torch or without the digits.
"""
import gzip
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time

from python_worker_common import has_modules  # noqa: E402

build, source = sys.argv[1], sys.argv[2]
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
digits = os.path.join(os.environ.get("AUTOTUNE_CACHE", os.path.expanduser("~/.cache/autotune")), "test-images/digits.csv.gz")
if not has_modules(py, "torch"):
    print("no Python with torch: skipped")
    sys.exit(77)
if not os.path.exists(digits):
    print(f"no {digits} (scripts/fetch-test-images.sh): skipped")
    sys.exit(77)
autotune = os.path.join(build, "bin/autotune")
work = os.path.join(build, "noise-log-test")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


# The user's training loop, run in the project's venv: `loop.py JOBS`, JOBS a JSON list of [LOG, STEPS, options]; each
# job trains afresh (its own seeds) and prints its reference sums, or the error the logger raised. One process runs them
# all: torch is imported once, not once per log.
LOOP = r'''
import gzip, json, sys, torch
sys.path[:0] = [%(logger)r, %(here)r]
from autotune_noise_log import NoiseLog
from digits_mlp import DigitsMlp
rows = [l.split(",") for l in gzip.open(%(digits)r, "rt").read().split("\n") if l.strip()]
X = torch.tensor([[float(v) for v in r[:64]] for r in rows]) / 16.0
Y = torch.tensor([int(float(r[64])) for r in rows])


def train(log_path, steps, opt):
    torch.manual_seed(0)
    model = DigitsMlp(hidden=opt.get("hidden", 64))
    adamw = torch.optim.AdamW(model.parameters(), lr=1e-3)
    K, b = opt.get("K", 4), 8
    divided, every, scale = opt.get("divided", True), opt.get("every", 1), opt.get("scale", 1.0)
    g = torch.Generator().manual_seed(1)
    reference = []
    with NoiseLog(log_path, model, micro_batch=b, micro_batches=K, loss_divided=divided, every=every,
                  data="sklearn digits") as log:
        for step in range(steps):
            idx = torch.randint(len(X), (K * b,), generator=g)
            parts = [idx[k * b:(k + 1) * b] for k in range(K)]
            if (step + 1) %% every == 0 and step < 12:  # each micro-batch's own gradient, alone
                gs = [torch.autograd.grad(torch.nn.functional.cross_entropy(model(X[i]), Y[i]), list(model.parameters())) for i in parts]
                small = sum(sum(float(t.double().pow(2).sum()) for t in gk) for gk in gs) / K
                big = sum(float(sum(gk[j].double() for gk in gs).div(K).pow(2).sum()) for j in range(len(gs[0])))
                reference.append({"step": step + 1, "small_sq": small, "big_sq": big})
            adamw.zero_grad(set_to_none=True)
            total = 0.0
            for i in parts:
                loss = torch.nn.functional.cross_entropy(model(X[i]), Y[i])
                total += float(loss) / K
                ((loss / K if divided else loss) * scale).backward()
                log.micro_batch_done()
            log.step(loss=total, grad_scale=scale)
            for p in model.parameters():  # what a GradScaler's unscale_ does before the step
                p.grad.div_(scale)
            adamw.step()
    return reference


out = []
for log_path, steps, opt in json.loads(sys.argv[1]):
    try:
        out.append({"reference": train(log_path, steps, opt)})
    except Exception as e:  # what the logger raised: the caller checks it
        out.append({"error": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
''' % {"logger": os.path.join(source, "logger"), "here": os.path.join(source, "tests/integration"), "digits": digits}
loop = os.path.join(work, "loop.py")
with open(loop, "w") as f:
    f.write(LOOP)


def train(jobs):
    """Each (log name, steps, options) trained by LOOP, all in one process: {name: (log path, reference sums or None,
    the error the logger raised or "")}."""
    paths = [os.path.join(work, name) for name, _, _ in jobs]
    r = subprocess.run([py, loop, json.dumps([[p, steps, opt] for p, (_, steps, opt) in zip(paths, jobs)])],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"the training loop failed: {r.stderr.strip()[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {name: (p, o.get("reference"), o.get("error", "")) for (name, _, _), p, o in zip(jobs, paths, out)}


def read_log(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    return lines[0], lines[1:]


def ratio_of_sums(header, steps):
    b = header["micro_batch"]
    B = b * header["micro_batches"]
    G = sum((B * s["big_sq"] - b * s["small_sq"]) / (B - b) for s in steps)
    S = sum((s["small_sq"] - s["big_sq"]) / (1 / b - 1 / B) for s in steps)
    return S / G


# Every log the checks below read, trained up front in one process: the four checks' logs, a real run of 600 steps of
# 4 × 8 (about 10 passes over the 1,797 digits), one of 300 steps, and one of another model (a narrower MLP).
CHECKS = [("divided", {}), ("summed", {"divided": False}), ("scaled", {"scale": 1024.0}), ("every3", {"every": 3})]
logs = train([(f"check-{name}.jsonl", 12, opt) for name, opt in CHECKS] +
             [("digits.jsonl", 600, {}), ("digits-300.jsonl", 300, {}), ("other-model.jsonl", 40, {"hidden": 32})])

# 1. The logger's sums against each micro-batch's own gradient.
for name, opt in CHECKS:
    path, ref, _ = logs[f"check-{name}.jsonl"]
    header, steps = read_log(path)
    by_step = {s["step"]: s for s in steps}
    worst = max(max(abs(by_step[r["step"]]["small_sq"] - r["small_sq"]) / r["small_sq"],
                    abs(by_step[r["step"]]["big_sq"] - r["big_sq"]) / r["big_sq"]) for r in ref)
    check(len(ref) == len(steps) and worst < 1e-5,
          f"{name}: {len(steps)} logged steps, each within {worst:.1e} of the micro-batches' own gradients")
every = read_log(os.path.join(work, "check-every3.jsonl"))[1]
check([s["samples"] for s in every] == [96, 192, 288, 384], f"every 3rd step: samples {[s['samples'] for s in every]}")
keep = os.path.join(work, "check-divided.jsonl")
before = open(keep).read()
_, again, error = train([("check-divided.jsonl", 2, {})])["check-divided.jsonl"]
check(again is None and error.startswith("FileExistsError") and open(keep).read() == before,
      f"an existing log is not overwritten ({error})")

# 2. A real run (600 steps, above), the model exported as the user would.
log = logs["digits.jsonl"][0]
header, steps = read_log(log)
expected = ratio_of_sums(header, steps)
model = os.path.join(work, "digits_mlp.pt")
e = subprocess.run([py, os.path.join(source, "scripts/export_model.py"),
                    os.path.join(source, "tests/integration/digits_mlp.py") + ":DigitsMlp", model,
                    "--input", "B,64:float32", "--target", "classes:10"], capture_output=True, text=True)
if e.returncode != 0:
    sys.exit(f"export failed: {e.stderr.strip()}")
run = os.path.join(work, "run")
# Pricing with the log, not speed: short windows, one confirmation round (the search then ends well inside its budget).
tune = [autotune, "tune", "--model", model, "--objective", "time", "--knobs", "batch_size=32,64", "--device", "cpu",
        "--window-seconds", "0.1", "--warmup-seconds", "0", "--confirm-rounds", "1"]
t = subprocess.run(tune + ["--noise-log", log, "--budget", "30s", "--out", run], capture_output=True, text=True)
check(os.path.exists(os.path.join(run, "best.json")), f"the tune with a noise log ran (exit {t.returncode}; {t.stderr.strip()[-300:]})")
check("noise scale from your loop's log" in t.stdout, "it says the log prices the run")
best = json.load(open(os.path.join(run, "best.json")))
ns = best["time_to_train"]["noise_scale"]
along = ns.get("along_run", {})
whole = along.get("trial", {}).get("value", 0)
check(abs(whole - expected) < 1e-6 * expected, f"the log's whole estimate {whole:.6g} is the ratio of sums {expected:.6g}")
check(ns.get("noise_log", "").startswith(log) and along.get("over_run") and len(along.get("windows", [])) >= 3,
      f"priced over the run from {len(along.get('windows', []))} windows of the log: B̄ = {ns.get('value', 0):.4g}")
check(ns["ci95"][0] <= ns["value"] <= ns["ci95"][1], "B̄ lies in its band")
db = sqlite3.connect(os.path.join(run, "journal.sqlite"))
kinds = [k for (k,) in db.execute("select kind from trials")]
db.close()
check(kinds and "noise" not in kinds, f"no noise-scale trial ran (trials: {', '.join(sorted(set(kinds)))})")
check(open(os.path.join(run, "noise-log.jsonl")).read() == open(log).read(), "the log is kept beside the run")

# 3. Re-priced by a report with another log of the same model; the earlier one is kept.
log2 = logs["digits-300.jsonl"][0]
r = subprocess.run([autotune, "report", run, "--noise-log", log2], capture_output=True, text=True)
best2 = json.load(open(os.path.join(run, "best.json")))
whole2 = best2["time_to_train"]["noise_scale"].get("along_run", {}).get("trial", {}).get("value", 0)
expected2 = ratio_of_sums(*read_log(log2))
check(r.returncode in (0, 1) and abs(whole2 - expected2) < 1e-6 * expected2,
      f"report --noise-log re-prices: whole estimate {whole2:.6g} = {expected2:.6g}")
check(open(os.path.join(run, "noise-log-1.jsonl")).read() == open(log).read(), "the earlier log is kept as noise-log-1.jsonl")

# 4. Refused, one line, exit 2, nothing written.
truncated = os.path.join(work, "truncated.jsonl")
text = open(log).read()
with open(truncated, "w") as f:
    f.write(text[: len(text) - 40])
other = logs["other-model.jsonl"][0]
one = os.path.join(work, "one-micro-batch.jsonl")
with open(one, "w") as f:
    f.write(json.dumps(dict(header, micro_batches=1)) + "\n" + "".join(json.dumps(s) + "\n" for s in steps[:20]))
for bad, words in [(truncated, "truncated"), (other, "another model"), (one, "1 micro-batch per step")]:
    out = os.path.join(work, "refused")
    r = subprocess.run(tune + ["--noise-log", bad, "--budget", "20s", "--out", out], capture_output=True, text=True)
    err = r.stderr.strip()
    check(r.returncode == 2 and words in err and len(err.splitlines()) == 1 and not os.path.exists(out),
          f"tune refuses {os.path.basename(bad)}: {err}")
    kept = open(os.path.join(run, "noise-log.jsonl")).read()
    r = subprocess.run([autotune, "report", run, "--noise-log", bad], capture_output=True, text=True)
    err = r.stderr.strip()
    check(r.returncode == 2 and words in err and len(err.splitlines()) == 1 and
          open(os.path.join(run, "noise-log.jsonl")).read() == kept, f"report refuses {os.path.basename(bad)}, keeps its log")

if failures:
    sys.exit(f"{len(failures)} failed")
print("all passed")
