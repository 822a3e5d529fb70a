#!/usr/bin/env python3
"""`autotune lr-sweep` end to end on the fake worker, whose converge curve answers to the learning rate (FAKE_LR_BEST:
progress per sample peaks at that rate, the loss climbs above 8× it; its checkpoint holds the progress made):

  - a rate below the best: "too low", ×3 picked, the time to the user's loss shorter, no widening (the best inside);
  - a best far above: widened ×30 then ×90, and back to ×30 inside the range;
  - a user's rate that diverges: "too high" with no time ratio, widened down to ×1/9 (then ×1/27, worse);
  - every arm from the burn-in's checkpoint, on data orders 0 and 1, for the horizon's samples;
  - bad input refused in one line: epochs for --run-length, an --out that holds something, no data.

    lr_sweep_fake_test.py AUTOTUNE FAKE_WORKER SCRATCH_DIR
"""
import json
import os
import shutil
import subprocess
import sys

autotune, fake, scratch = sys.argv[1:4]
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
tokens = os.path.join(scratch, "tokens.bin")
with open(tokens, "wb") as f:
    f.write(bytes(range(256)) * 800)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def sweep(name, best, *extra):
    out = os.path.join(scratch, name)
    env = dict(os.environ, FAKE_TOKENS="1", FAKE_LR_BEST=str(best))
    r = subprocess.run([autotune, "lr-sweep", "--worker", fake, "--data", tokens, "--run-length", "400000", "--out", out,
                        *extra], capture_output=True, text=True, env=env, timeout=300)
    doc = json.load(open(os.path.join(out, "lr-sweep.json"))) if r.returncode == 0 else {}
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:])
    return r, doc, out


def plans(out):
    folder = os.path.join(out, "trials")
    return [json.load(open(os.path.join(folder, d, "plan.json"))) for d in sorted(os.listdir(folder))]


# ---- too low: the user's 1e-3 against a best of 3e-3
r, d, out = sweep("too-low", 0.003)
v = d.get("verdict", {})
arms = {a["multiple"]: a for a in d.get("arms", [])}
check(r.returncode == 0 and v.get("verdict") == "too low" and v.get("best_multiple") == 3 and v.get("best_lr") == 0.003,
      f"a rate below the best: too low, ×3 picked ({v.get('verdict')}, ×{v.get('best_multiple')})")
check(v.get("gain", 0) > 1.2 and v.get("gain_lo", 0) <= v.get("gain", 0) <= v.get("gain_hi", 0) and not v.get("best_at_end"),
      f"the time to the user's loss: {v.get('gain', 0):.2f}× sooner ({v.get('gain_lo', 0):.2f}–{v.get('gain_hi', 0):.2f}×)")
check(sorted(arms) == [1 / 3, 1, 3, 10] and all(a["status"] == "ok" and a["orders"] == 2 for a in arms.values()),
      f"the start set, each rate on 2 data orders, no widening with the best inside ({sorted(arms)})")
check(arms and arms[3]["loss"] < arms[1]["loss"] < arms[1 / 3]["loss"], "the losses at the horizon follow the fake's response")
p = plans(out) if r.returncode == 0 else []
burn, rest = (p[0], p[1:]) if p else ({}, [])
checkpoint = os.path.join(out, "checkpoint.pt")
check(len(p) == 9 and burn.get("converge", {}).get("max_samples") == 20000 and burn.get("lr") == 0.001
      and os.path.exists(checkpoint),
      f"the burn-in: 5% of a 400,000-sample run at the user's rate, its checkpoint written ({len(p)} trials)")
check(rest and all(q.get("init_from") == os.path.abspath(checkpoint) and q["converge"]["max_samples"] == 40000 for q in rest)
      and sorted((q["lr"], q.get("data_order", 0)) for q in rest) == sorted((0.001 * m, o) for m in (1 / 3, 1, 3, 10) for o in (0, 1)),
      "every rate from the checkpoint, on data orders 0 and 1, for the horizon's 10% (40,000 samples)")
md = open(os.path.join(out, "lr-sweep.md")).read() if r.returncode == 0 else ""
check("Your learning rate 0.001 is too low: ×3 (0.003)" in md and "| ×3 (best) |" in md and "burn-in 5% of the run" in md
      and v.get("headline", "") in r.stdout, "lr-sweep.md and the console: the verdict, the table, the horizon's rule")

# ---- the best far above: widened twice, the best inside again
r, d, out = sweep("widened", 0.05)
v = d.get("verdict", {})
check(r.returncode == 0 and sorted(a["multiple"] for a in d.get("arms", [])) == [1 / 3, 1, 3, 10, 30, 90]
      and v.get("best_multiple") == 30 and v.get("verdict") == "too low" and not v.get("best_at_end"),
      f"a best far above the start set: ×30 and ×90 added, ×30 picked inside ({[a['multiple'] for a in d.get('arms', [])]})")

# ---- the user's rate diverges: too high, no time ratio, widened down
r, d, out = sweep("too-high", 0.0001)
v = d.get("verdict", {})
arms = {round(a["multiple"], 6): a for a in d.get("arms", [])}
check(r.returncode == 0 and v.get("verdict") == "too high" and v.get("gain") == 0 and abs(v.get("best_multiple", 0) - 1 / 9) < 1e-9,
      f"a diverging rate: too high, ×1/9 picked, no time ratio ({v.get('verdict')}, {v.get('best_multiple')})")
check(arms.get(1.0, {}).get("status") == "diverged" and arms.get(10.0, {}).get("status") == "diverged"
      and round(1 / 27, 6) in arms, f"the diverged rates named, never picked; widened down to ×1/27 ({ {k: a['status'] for k, a in arms.items()} })")
check("it diverged" in r.stdout, "the console says the user's rate diverged")

# ---- bad input: one line each, nothing written
for args, want in ((["--run-length", "3epochs"], "lr-sweep takes samples"),
                   (["--out", os.path.join(scratch, "too-low")], "already exists and is not empty")):
    r = subprocess.run([autotune, "lr-sweep", "--worker", fake, "--data", tokens, *args],
                       capture_output=True, text=True, env=dict(os.environ, FAKE_TOKENS="1"), timeout=60)
    check(r.returncode == 2 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1, f"refused: {want} ({r.stderr.strip()})")
r = subprocess.run([autotune, "lr-sweep", "--worker", fake, "--out", os.path.join(scratch, "no-data")], capture_output=True,
                   text=True, timeout=60)
check(r.returncode == 2 and "a sweep trains on your data" in r.stderr and not os.path.exists(os.path.join(scratch, "no-data")),
      f"no data: refused before anything runs ({r.stderr.strip()[:120]})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
