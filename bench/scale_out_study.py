#!/usr/bin/env python3
"""Scale-out measured on this machine (docs/scale-out.md).

    scale_out_study.py BUILD_DIR OUT_DIR [--quick]

1. Trial-bound: fake-worker trials (FAKE_SLEEP seconds each, no CPU used) through `autotune tune --parallel N
   --pin off` at 1, 4 and 8 slots: search trials per minute, and the search phase's wall time against the
   ideal (serial ÷ N). The span is read from the workers' own timestamps: from the first search trial's start
   to the last one's end.
2. A real 16-config grid of the mlp workload: 2 slots of 1 CPU each against 1 slot of 1 CPU (the serial run
   under taskset -c FIRST_CPU, so every trial has the same one CPU in both): wall time of the search and of the
   whole run, the winners, and the interference ratio the parallel run measured (the baseline alone vs one copy
   per slot at once).
Writes OUT_DIR/study.json and the runs' folders (journals, reports); prints a Markdown table.
"""
import datetime
import json
import os
import sqlite3
import subprocess
import sys
import time

build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
quick = "--quick" in sys.argv
autotune = os.path.join(build, "bin/autotune")
fake = os.path.join(build, "bin/fake-worker")
os.makedirs(out, exist_ok=True)


def iso(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def phases(run):
    """(search trials, search seconds, run seconds, winner diff) from a run folder's journal and best.json. The
    search's span: from the fake worker's own sub-second timestamps (trials/NNNN/result.json.slot) when it
    wrote them, else from the journal's (whole seconds)."""
    db = sqlite3.connect(os.path.join(run, "journal.sqlite"))
    rows = db.execute("SELECT kind, started_at, finished_at, result_json FROM trials ORDER BY id").fetchall()
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    db.close()
    search = []
    for k, s, f, r in rows:
        if k not in ("search", "interference", "remeasure"):
            continue
        seq = (json.loads(r).get("placement") or {}).get("seq")
        slot = os.path.join(run, "trials", f"{seq:04d}", "result.json.slot") if seq else ""
        if slot and os.path.exists(slot):
            w = json.load(open(slot))
            search.append((w["start"], w["end"]))
        else:
            search.append((iso(s), iso(f)))
    span = max(f for _, f in search) - min(s for s, _ in search) if search else 0
    best = json.load(open(os.path.join(run, "best.json")))
    return len(search), span, float(meta.get("elapsed_seconds", 0)), best.get("config", {})


def tune(run, args, env=None, prefix=()):
    subprocess.run(["rm", "-rf", run])
    t0 = time.time()
    p = subprocess.run(list(prefix) + [autotune, "tune", "--out", run, "--objective", "throughput", "--budget", "3600"] + args,
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"tune {run} failed: {p.stderr[-800:]}")
    return time.time() - t0


results = {"date": datetime.date.today().isoformat(), "host_cpus": len(os.sched_getaffinity(0))}

# 1. Trial-bound: the tuner's own cost with many slots.
sleep = 0.5 if quick else 1.0
grid = ["batch_size=16,32,64,128,256,512,1024,2048", "optimizer_impl=loop,foreach,fused", "zero_grad=zeros,none"]
fake_env = dict(os.environ, FAKE_SLEEP=str(sleep), FAKE_RECORD_SLOT="1")
rows = []
for n in (1, 4, 8):
    run = os.path.join(out, f"fake-{n}slots")
    tune(run, ["--worker", fake, "--knobs"] + grid + ["--parallel", str(n), "--pin", "off", "--confirm-rounds", "1"], env=fake_env)
    trials, span, wall, _ = phases(run)
    rows.append({"slots": n, "search_trials": trials, "search_seconds": round(span, 2), "run_seconds": wall,
                 "ideal_seconds": round(trials * sleep / n, 2),
                 "trials_per_minute": round(60 * trials / span, 1) if span else 0})
serial_rate = rows[0]["trials_per_minute"]
for r in rows:
    r["ideal_trials_per_minute"] = round(serial_rate * r["slots"], 1)
    r["of_ideal"] = round(r["trials_per_minute"] / r["ideal_trials_per_minute"], 3) if serial_rate else 0
results["trial_bound"] = {"fake_sleep_seconds": sleep, "grid_configs": 48, "runs": rows}

# 2. A real grid: 2 slots of 1 CPU against 1 slot of 1 CPU.
cpus = sorted(os.sched_getaffinity(0))
real = ["--workload", "mlp", "--knobs", "batch_size=32,64,128,256", "optimizer_impl=loop,foreach", "zero_grad=zeros,none",
        "--windows", "3", "--window-seconds", "0.25" if quick else "0.5"]
one = os.path.join(out, "mlp-1slot")
two = os.path.join(out, "mlp-2slots")
real_rows = []
if len(cpus) >= 2:
    w1 = tune(one, real, prefix=("taskset", "-c", str(cpus[0])))
    w2 = tune(two, real + ["--parallel", "2"])
    for name, run, wall, slots in (("1 slot of 1 CPU", one, w1, 1), ("2 slots of 1 CPU", two, w2, 2)):
        trials, span, elapsed, winner = phases(run)
        real_rows.append({"run": name, "slots": slots, "search_trials": trials, "search_seconds": round(span, 1),
                          "run_seconds": round(wall, 1), "winner": winner})
    best2 = json.load(open(os.path.join(two, "best.json")))
    report = open(os.path.join(two, "report.md")).read()
    inter = next((l for l in report.split("\n") if l.startswith("**Interference:**")), "")
    results["real_grid"] = {"workload": "mlp", "configs": 16, "runs": real_rows,
                            "search_speedup": round(real_rows[0]["search_seconds"] / real_rows[1]["search_seconds"], 3),
                            "run_speedup": round(real_rows[0]["run_seconds"] / real_rows[1]["run_seconds"], 3),
                            "same_winner": real_rows[0]["winner"] == real_rows[1]["winner"],
                            "interference_line": inter}
json.dump(results, open(os.path.join(out, "study.json"), "w"), indent=1)

print("| slots | search trials | search s | trials/min | ideal | of ideal |")
print("|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['slots']} | {r['search_trials']} | {r['search_seconds']} | {r['trials_per_minute']} | "
          f"{r['ideal_trials_per_minute']} | {100 * r['of_ideal']:.0f}% |")
if real_rows:
    print()
    print("| run | search trials | search s | whole run s | winner |")
    print("|---|---|---|---|---|")
    for r in real_rows:
        print(f"| {r['run']} | {r['search_trials']} | {r['search_seconds']} | {r['run_seconds']} | "
              f"{' '.join(f'{k}={v}' for k, v in sorted(r['winner'].items()))} |")
    g = results["real_grid"]
    print(f"\nsearch {g['search_speedup']}x, whole run {g['run_speedup']}x, same winner: {g['same_winner']}")
    print(g["interference_line"])
