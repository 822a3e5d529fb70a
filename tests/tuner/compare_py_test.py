#!/usr/bin/env python3
"""results.json read by Google Benchmark's own tools/compare.py (Debian's libbenchmark-tools, with
python3-scipy for its U test), the way a user compares two tuning runs:

  - two tunes that searched different knobs pair config by config on the configs both measured (the
    name is the training's differences from PyTorch's defaults, not the run's knob set), and nothing else;
  - A/A (the same tune twice) shows no difference on any pair;
  - A against a 20%-slower worker shows +25% time per sample on every pair;
  - a check's results.json is in the same unit (µs per sample) as a tune's.

    compare_py_test.py AUTOTUNE FAKE_WORKER SCRATCH_DIR [COMPARE_PY]
"""
import json
import os
import shutil
import subprocess
import sys

autotune, fake, scratch = sys.argv[1:4]
compare = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/benchmark/compare.py"
if not os.path.exists(compare):
    sys.exit(f"compare.py not found at {compare}: install Debian's libbenchmark-tools and python3-scipy "
             "(scripts/setup-deps.sh does)")
# compare.py with Debian's scipy: Debian's own interpreter (a pyenv or venv python3 first on PATH may lack it).
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


slow = os.path.join(scratch, "slow-worker.sh")
with open(slow, "w") as f:
    f.write(f"#!/bin/sh\nFAKE_SCALE=0.8 exec '{fake}' \"$@\"\n")
os.chmod(slow, 0o755)
env = dict(os.environ, FAKE_SLEEP="0", FAKE_CV="0.003", FAKE_CV_SEED="7", FAKE_WINDOW_NOISE="0.003")


def tune(name, knobs, worker=fake):
    out = os.path.join(scratch, name)
    p = subprocess.run([autotune, "tune", "--worker", worker, "--objective", "throughput", "--budget", "2m",
                        "--seed", "3", "--out", out, "--knobs"] + knobs, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"tune {name} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return os.path.join(out, "results.json")


def names(path):
    return {b["name"] for b in json.load(open(path))["benchmarks"] if b["run_type"] == "iteration"}


def compare_runs(a, b, tag):
    dump = os.path.join(scratch, f"compare-{tag}.json")
    p = subprocess.run([python, compare, "--no-color", "-d", dump, "benchmarks", a, b],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"compare.py {tag} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    print(p.stdout, flush=True)
    rows = json.load(open(dump))
    # One row per name compare.py paired; iterations only (aggregates pair the same way, by name + suffix).
    return {r["name"]: r for r in rows if r.get("run_type") == "iteration"}


def time_change(row):
    """compare.py's relative change of the mean real time over the paired repetitions."""
    ms = row["measurements"]
    t0 = sum(m["real_time"] for m in ms) / len(ms)
    t1 = sum(m["real_time_other"] for m in ms) / len(ms)
    return t1 / t0 - 1


a = tune("a", ["batch_size=32,64", "threads=default,2"])
b = tune("b", ["batch_size=32,64", "log_every=1,10"])
aa = tune("a-again", ["batch_size=32,64", "threads=default,2"])
slow_run = tune("a-slow", ["batch_size=32,64", "threads=default,2"], worker=slow)

for path in (a, b):
    units = {x["time_unit"] for x in json.load(open(path))["benchmarks"]}
    expect(units == {"us"}, f"{path}: one unit, µs per sample, got {units}")

# Different knob sets: the configs both runs measured pair, by name, and only those.
common = names(a) & names(b)
expect({"mlp/defaults", "mlp/batch_size=32"} <= common, f"both runs measured the baseline and batch 32: common {common}")
ab = compare_runs(a, b, "a-b")
expect(set(ab) == common, f"compare.py paired {sorted(ab)}, the runs share {sorted(common)}")
for n, row in ab.items():
    expect(abs(time_change(row)) < 0.05, f"{n}: the same training in two runs, time change {time_change(row):+.3f}")

# A/A: every config paired, none differs.
same = compare_runs(a, aa, "a-a")
expect(set(same) == names(a), f"A/A pairs every config: {sorted(same)} vs {sorted(names(a))}")
for n, row in same.items():
    expect(abs(time_change(row)) < 0.03, f"A/A {n}: time change {time_change(row):+.3f}")
    u = row.get("utest") or {}
    if u.get("have_optimal_repetitions"):
        expect(u["time_pvalue"] >= 0.01, f"A/A {n}: the U test calls it different, p = {u['time_pvalue']:.4f}")

# A against a worker 20% slower: 1/0.8 − 1 = +25% time per sample on every pair.
ds = compare_runs(a, slow_run, "a-slow")
expect(set(ds) == names(a) & names(slow_run) and ds, f"A vs slow pairs: {sorted(ds)}")
for n, row in ds.items():
    expect(0.2 < time_change(row) < 0.3, f"slow {n}: time change {time_change(row):+.3f}, expected about +0.25")

# A check's results.json speaks the same unit.
chk = os.path.join(scratch, "check")
p = subprocess.run([autotune, "check", "--worker", fake, "--reps", "5", "--set", "threads=2", "--out", chk], env=env,
                   capture_output=True, text=True)
expect(p.returncode == 0, f"check (A/A) exited {p.returncode}: {p.stderr[-500:]}")
if os.path.exists(os.path.join(chk, "results.json")):
    cb = json.load(open(os.path.join(chk, "results.json")))["benchmarks"]
    expect({x["time_unit"] for x in cb} == {"us"}, "check: µs per sample")
    expect({x["name"] for x in cb if x["run_type"] == "iteration"} ==
           {"check/A/mlp/threads=2,zero_grad=zeros", "check/B/mlp/threads=2,zero_grad=zeros"},
           f"check names: {sorted({x['name'] for x in cb})}")

if failures:
    sys.exit(f"{len(failures)} problem(s)")
print("compare.py pairs autotune's results.json config by config")
