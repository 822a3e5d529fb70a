#!/usr/bin/env python3
"""`autotune lr-sweep` end to end on the fake worker, whose converge curve answers to the learning rate (FAKE_LR_BEST:
progress per sample peaks at that rate, the loss climbs above 8× it; its checkpoint holds the progress made):

  - a rate below the best: "too low", ×3 picked, the time to the user's loss shorter, no widening (the best inside);
  - a best far above: widened ×30 then ×90, and back to ×30 inside the range;
  - a user's rate that diverges: "too high" with no time ratio, widened down to ×1/9 (then ×1/27, worse);
  - every arm from the user's own start (the default), on data orders 0 and 1, for 15% of the run; or, with
    --arms-from checkpoint, from the burn-in's checkpoint for the horizon's 10% (a burn-in that diverges leaves no
    checkpoint, and every arm starts where the user's run does);
  - converge --from-sweep: the user's rate against the sweep's best from the start, predicted at the sweep's gain (the
    fake's response is the same from the start as from the checkpoint, so the two must agree); the sweeps it cannot use
    refused in one line;
  - lr-sweep --from-run --at changed-batch: a tune run's answer (b) swept around the batch rule's rate (the rule's
    prediction beside the measured best), and converge --from-sweep training it at both rates against the baseline;
  - the tune run's report then prices (a) and (b) at the measured rates (each sweep's answer kept beside the run; a
    second sweep of a batch keeps the first, renamed);
  - judged on held-out data as well where the workload has some (the fake's FAKE_HELD_OUT): every rate evaluates it at
    the arms' start and at the horizon; the held-out best agrees with the training loss's, or — a rate that trains
    faster than it generalises (FAKE_VAL_BEST) — differs, and the report says so; --held-out off; --val-data refused
    for a worker that cannot evaluate it;
  - --run-length in epochs (over one pass of the data, which a one-step probe reads first) and in tokens (over the
    sequence length): the same horizon as the samples they come to, and how they were converted said;
  - bad input refused in one line: an unknown unit for --run-length, an --out that holds something, no data (tokens
    for a model without a sequence length: bad_inputs_test, on a real worker).

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


def sweep(name, best, *extra, run_length="400000", env=None):
    out = os.path.join(scratch, name)
    env = dict(os.environ, FAKE_TOKENS="1", FAKE_LR_BEST=str(best), **(env or {}))
    data = [] if "--from-run" in extra else ["--data", tokens]  # a tune run brings its own (other data is refused)
    r = subprocess.run([autotune, "lr-sweep", "--worker", fake, *data, "--run-length", run_length, "--out", out,
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
check(len(p) == 8 and all(q.get("init_from", "") == "" and q["converge"]["max_samples"] == 60000
                          and "save_checkpoint" not in q["converge"] for q in p)
      and sorted((q["lr"], q.get("data_order", 0)) for q in p) == sorted((0.001 * m, o) for m in (1 / 3, 1, 3, 10) for o in (0, 1))
      and not os.path.exists(os.path.join(out, "checkpoint.pt")),
      f"every rate from the user's own start, on data orders 0 and 1, for 15% of a 400,000-sample run ({len(p)} trials)")
md = open(os.path.join(out, "lr-sweep.md")).read() if r.returncode == 0 else ""
check("Your learning rate 0.001 is too low: ×3 (0.003)" in md and "| ×3 (best) |" in md
      and "every rate from your run's start for 15% of the run (60,000 samples)" in md
      and "from the same weights on the same data orders (the loss at the start:" in md and v.get("headline", "") in r.stdout
      and "- Depth: " in md and len(v.get("by_depth", [])) == 3 and v["by_depth"][-1]["gain"] == v.get("gain"),
      "lr-sweep.md and the console: the verdict, the table, the horizon's rule")
check(d.get("arms_from") == "start" and d.get("burn_in") is None and d.get("burn_in_trial") == 0
      and 3.5 < d.get("start_loss", 0) <= 5.05 and d.get("horizon", {}).get("burn_in_samples") == 0,
      f"no burn-in; the arms judged against the start's loss, the lowest first window ({d.get('start_loss')})")
too_low = out

# ---- --horizon-share 0.2: every rate from the start for 5% + 20% of the run (100,000 samples)
r, d, out = sweep("deeper", 0.003, "--horizon-share", "0.2")
p = plans(out) if r.returncode == 0 else []
check(r.returncode == 0 and len(p) == 8 and all(q["converge"]["max_samples"] == 100000 for q in p)
      and d.get("horizon", {}).get("horizon_samples") == 100000
      and "for 25% of the run (100,000 samples)" in d.get("horizon", {}).get("why", ""),
      f"--horizon-share 0.2: a deeper horizon, said ({d.get('horizon', {}).get('why')})")

# ---- --arms-from checkpoint: a burn-in at the user's rate, every arm from its checkpoint for the horizon's 10%
r, d, out = sweep("too-low-checkpoint", 0.003, "--arms-from", "checkpoint")
v = d.get("verdict", {})
check(r.returncode == 0 and v.get("verdict") == "too low" and v.get("best_multiple") == 3 and d.get("arms_from") == "checkpoint",
      f"from a checkpoint: too low, ×3 picked ({v.get('verdict')}, ×{v.get('best_multiple')})")
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
check("burn-in 5% of the run" in md and "every rate from the same checkpoint (trial 1" in md, "lr-sweep.md: the burn-in's rule")
check(d.get("burn_in", {}).get("diverged") is False and d["burn_in"].get("checkpoint") == "checkpoint.pt"
      and d["burn_in"]["end_loss"] < d["burn_in"]["first_loss"], f"a burn-in that trained: its checkpoint kept ({d.get('burn_in')})")
too_low_checkpoint = out

# ---- judged on held-out data as well: the fake's held-out loss is its training loss, plus a gap for rates above
# FAKE_VAL_BEST (the user's 1e-3 here): ×3 trains fastest and generalises worse
for name, env, agrees, held_best in (("held-agrees", {}, True, 3), ("held-differs", {"FAKE_VAL_BEST": "0.001"}, False, 1)):
    r, d, out = sweep(name, 0.003, env=dict(env, FAKE_HELD_OUT="1"))
    h, v = d.get("held_out") or {}, d.get("verdict", {})
    p = plans(out) if r.returncode == 0 else []
    check(r.returncode == 0 and v.get("best_multiple") == 3 and h.get("best_multiple") == held_best and h.get("agrees") is agrees
          and h.get("source") == "the fake's held-out set" and sorted(a["multiple"] for a in h.get("arms", [])) == [1 / 3, 1, 3, 10]
          and all(a["orders"] == 2 for a in h.get("arms", [])),
          f"{name}: trained best ×3, held-out best ×{h.get('best_multiple')}, agrees {h.get('agrees')} ({h.get('reason')})")
    check(len(p) == 8 and all(q["converge"].get("val_every") == 60000 and q["converge"].get("val_needed") for q in p),
          f"{name}: every rate evaluates the held-out set at its start and at the horizon (val_every 60,000)")
    md = open(os.path.join(out, "lr-sweep.md")).read() if r.returncode == 0 else ""
    check(("- Held out: agrees" if agrees else "- Held out: **differs**") in md and "| held-out loss (range) |" in md
          and f"Held out: {h.get('reason')}" in r.stdout and (agrees or "does not generalise best" in h.get("reason", "")),
          f"{name}: lr-sweep.md and the console say it ({h.get('reason', '')[:100]})")
r, d, out = sweep("held-off", 0.003, "--held-out", "off", env={"FAKE_HELD_OUT": "1"})
check(r.returncode == 0 and d.get("held_out") is None and not any(q["converge"].get("val_every") for q in plans(out)),
      "--held-out off: the training loss alone, nothing evaluated")

# ---- --run-length in epochs and in tokens: the token file's 204,800 tokens are 12,800 samples of the fake's 16 tokens
for name, length, first in (("epochs", "31.25epochs", 1), ("tokens", "6.4e6tokens", 0)):
    r, d, out = sweep("run-" + name, 0.003, run_length=length)
    p = plans(out) if r.returncode == 0 else []
    probe = p[0] if first else {}
    burn = p[first] if len(p) > first else {}
    check(r.returncode == 0 and d.get("run_samples") == 400000 and burn.get("converge", {}).get("max_samples") == 60000
          and (not first or (probe["converge"]["max_samples"] == 1 and len(p) == 9)),
          f"--run-length {length}: 400,000 samples, the same horizon ({burn.get('converge', {}).get('max_samples')} samples)"
          + (f" after a one-step probe of the data's size ({len(p)} trials)" if first else ""))
    basis = d.get("run_basis", "")
    want = "× 12,800 samples (one pass over the data, as a one-step probe read it: trial 1) = 400,000 samples" if first \
        else "÷ 16 tokens a sample (the sequence length) = 400,000 samples"
    check(want in basis and f"- Your run: {basis}" in open(os.path.join(out, "lr-sweep.md")).read()
          and f"your run: {basis}" in r.stdout, f"--run-length {length}: the conversion said ({basis})")


def converge(name, sweep_dir, *extra, best=0.003):
    out = os.path.join(scratch, name)
    env = dict(os.environ, FAKE_TOKENS="1", FAKE_LR_BEST=str(best))
    r = subprocess.run([autotune, "converge", "--worker", fake, "--from-sweep", sweep_dir, "--seconds", "20", "--reruns", "1",
                        "--out", out, *extra], capture_output=True, text=True, env=env, timeout=300)
    doc = json.load(open(os.path.join(out, "converge.json"))) if r.returncode == 0 else {}
    if r.returncode != 0 and not extra:
        print(r.stdout[-2000:], r.stderr[-2000:])
    return r, doc, out


# ---- converge --from-sweep: the user's 1e-3 against the sweep's ×3 from the start, to the same loss
gain = v.get("gain", 0)
r, c, out = converge("cv-too-low", too_low)
cmp = (c.get("comparisons") or [{}])[0]
runs = c.get("runs", [])
check(r.returncode == 0 and [(x["role"], round(x["lr"], 9), x["data_order"]) for x in runs]
      == [("baseline", 0.001, 0), ("candidate", 0.003, 0), ("rerun", 0.001, 1), ("candidate-rerun", 0.003, 1)],
      f"the user's rate on 2 orders against the sweep's best on 2 ({[(x.get('role'), x.get('lr')) for x in runs]})")
p = plans(out) if r.returncode == 0 else []
# The baseline's runs stop at the sweep's --run-length (400,000 samples), so the common target is the loss the user's run
# ends at; the candidates train for the seconds. The fake trains fewer samples than that in its 20 s: said.
check(len(p) == 4 and all(q.get("init_from", "") == "" for q in p)
      and [q["converge"].get("max_samples", 0) for q in p] == [400000, 0, 400000, 0]
      and len({json.dumps(q.get("config", {}), sort_keys=True) for q in p}) == 1 and c.get("baseline_samples") == 400000,
      "every run from the start (no checkpoint), the sweep's one config; the baseline's runs to the user's run length")
check("each to train 400,000 samples, your run's length, but one stopped at its 20 s after" in c.get("target_basis", "")
      and "give more --seconds" in c.get("target_basis", ""),
      f"the target's basis: the user's run length, and the seconds that cut it short ({c.get('target_basis', '')[:200]})")
check(cmp.get("lr_gain") == gain and abs(cmp.get("predicted", 0) - cmp.get("throughput_ratio", 0) * gain) < 1e-9,
      f"predicted at the sweep's gain: {cmp.get('predicted', 0):.3f}× = samples/s {cmp.get('throughput_ratio', 0):.3f}× × {gain:.3f}")
check(1.3 < cmp.get("measured", 0) < 1.8 and cmp.get("agrees") is True and cmp.get("samples_ratio", 9) < 0.8,
      f"measured from the start: {cmp.get('measured', 0):.3f}× (the fake's response: 1.54×), agreeing with the sweep's "
      f"{gain:.3f}× ({cmp.get('agreement', 0):+.1%})")
md = open(os.path.join(out, "converge.md")).read() if r.returncode == 0 else ""
check("rates from the lr-sweep" in md and f"the lr-sweep's {gain:.2f}× fewer samples" in md and "`lr 0.003`" in md
      and c.get("from_sweep") == too_low, "converge.md names the sweep, the candidate's rate and the prediction's parts")
# The sweep's own loss (the user's rate's at its horizon) timed from the start: on the fake, whose response to the rate is
# the same from the start as from the checkpoint, it lands near the sweep's gain.
sw = json.load(open(os.path.join(too_low, "lr-sweep.json")))
ref_loss = next((a.get("loss") for a in sw.get("arms", []) if abs(a["multiple"] - 1) < 1e-9), None)
sl = cmp.get("sweep_loss") or {}
check(sl.get("loss") == ref_loss and sl.get("reference") == "baseline" and sl.get("orders") == 2
      and sl.get("sweep_start") == 0 and abs((sl.get("measured") or 0) / gain - 1) < 0.2
      and f"the lr-sweep timed its rates from your start to loss {ref_loss:.4f} (the loss of the baseline at the sweep's horizon): here" in md,
      f"the sweep's own loss, from the same start: {sl} against the sweep's {gain:.3f}×")
# From a checkpoint sweep: the baseline is the burn-in's plan (the user's rate from the start), the sweep's start named.
# --baseline-samples 0: equal wall time only, the target wherever the seconds left the baseline.
r, c, out = converge("cv-too-low-checkpoint", too_low_checkpoint, "--baseline-samples", "0")
cmp = (c.get("comparisons") or [{}])[0]
sl = cmp.get("sweep_loss") or {}
p = plans(out) if r.returncode == 0 else []
check(r.returncode == 0 and c.get("baseline_samples") == 0 and all(q["converge"].get("max_samples", 0) == 0 for q in p)
      and "(each trained 20 s)" in c.get("target_basis", ""), "--baseline-samples 0: every run to equal wall time")
check(r.returncode == 0 and [round(x["lr"], 9) for x in c.get("runs", [])] == [0.001, 0.003, 0.001, 0.003]
      and all(q.get("init_from", "") == "" for q in p) and sl.get("sweep_start") == 20000 and (sl.get("measured") or 0) > 1
      and "from a checkpoint after 20,000 samples" in open(os.path.join(out, "converge.md")).read(),
      f"converge from a checkpoint's sweep: every arm from the start, the sweep's start named ({sl})")

# ---- the best far above: widened twice, the best inside again
r, d, out = sweep("widened", 0.05)
v = d.get("verdict", {})
check(r.returncode == 0 and sorted(a["multiple"] for a in d.get("arms", [])) == [1 / 3, 1, 3, 10, 30, 90]
      and v.get("best_multiple") == 30 and v.get("verdict") == "too low" and not v.get("best_at_end"),
      f"a best far above the start set: ×30 and ×90 added, ×30 picked inside ({[a['multiple'] for a in d.get('arms', [])]})")

# ---- the user's rate diverges: too high, no time ratio, widened down (from the start, then from a checkpoint whose
# burn-in diverges)
r, d, out = sweep("too-high-start", 0.0001)
v = d.get("verdict", {})
arms = {round(a["multiple"], 6): a for a in d.get("arms", [])}
check(r.returncode == 0 and v.get("verdict") == "too high" and v.get("gain") == 0 and abs(v.get("best_multiple", 0) - 1 / 9) < 1e-9
      and arms.get(1.0, {}).get("status") == "diverged" and d.get("start_loss", 9) <= 5.05,
      f"from the start, a diverging rate: too high, ×1/9 picked, judged against the start's loss ({v.get('verdict')}, "
      f"{v.get('best_multiple')}, {d.get('start_loss')})")
r, d, out = sweep("too-high", 0.0001, "--arms-from", "checkpoint")
v = d.get("verdict", {})
arms = {round(a["multiple"], 6): a for a in d.get("arms", [])}
check(r.returncode == 0 and v.get("verdict") == "too high" and v.get("gain") == 0 and abs(v.get("best_multiple", 0) - 1 / 9) < 1e-9,
      f"a diverging rate: too high, ×1/9 picked, no time ratio ({v.get('verdict')}, {v.get('best_multiple')})")
check(arms.get(1.0, {}).get("status") == "diverged" and arms.get(10.0, {}).get("status") == "diverged"
      and round(1 / 27, 6) in arms, f"the diverged rates named, never picked; widened down to ×1/27 ({ {k: a['status'] for k, a in arms.items()} })")
check("it diverged" in r.stdout, "the console says the user's rate diverged")
burn = d.get("burn_in", {})
p = plans(out) if r.returncode == 0 else []
check(burn.get("diverged") is True and burn.get("checkpoint") == "" and not os.path.exists(os.path.join(out, "checkpoint.pt"))
      and burn.get("end_loss", 0) > 1.5 * burn.get("first_loss", 1e9) and d.get("start_loss") == burn.get("first_loss"),
      f"the burn-in diverged: no checkpoint kept, the arms judged against its first loss ({burn})")
check(len(p) > 1 and all("init_from" not in q or q["init_from"] == "" for q in p[1:])
      and "every rate trains from your run's start" in r.stdout and "so no checkpoint" in open(os.path.join(out, "lr-sweep.md")).read(),
      "every arm from the user's own start, said on the console and in lr-sweep.md")
too_high = out

# ---- a tune run's answer (b) swept around the batch rule's rate, then trained at both rates against the baseline
run_dir = os.path.join(scratch, "tune-run")
env = dict(os.environ, FAKE_TOKENS="1", FAKE_CV="0.03", FAKE_CV_SEED="1", FAKE_SLEEP="0", AUTOTUNE_QUIET_WAIT="0")
r = subprocess.run([autotune, "tune", "--worker", fake, "--data", tokens, "--knobs", "batch_size=32,64", "--confirm-rounds", "3", "--budget", "2m",
                    "--out", run_dir], capture_output=True, text=True, env=env, timeout=300)
check(r.returncode == 0, f"the tune run to sweep from ({r.returncode}: {r.stderr.strip()[-200:]})")
r, d, out = sweep("changed-batch", 0.0023, "--from-run", run_dir, "--at", "changed-batch")
v = d.get("verdict", {})
ratio = d.get("user_lr", 0) / max(d.get("your_lr", 1), 1e-12)
# the fake's own batch is 64; (b) is 32, priced at the run's noise scale: r = (32/64)(B̄ + 64)/(B̄ + 32), in (1/2, 1)
check(r.returncode == 0 and d.get("at") == "changed-batch" and d.get("global_batch") == 32 and d.get("user_batch") == 64
      and d.get("your_lr") == 0.001 and 0.5 ** 0.5 < ratio < 1 and "√r" in d.get("rule", ""),
      f"swept at (b)'s batch 32 around the rule's rate {d.get('user_lr', 0):.4g} (your 0.001 × √r = ×{ratio:.3f}; {d.get('rule')})")
check(v.get("verdict") == "too low" and v.get("best_multiple") == 3 and v.get("headline", "").startswith(
      "At global batch 32 the batch rule's rate"), f"the rule's rate measured too low, ×3 the best ({v.get('headline')})")
md = open(os.path.join(out, "lr-sweep.md")).read() if r.returncode == 0 else ""
check("The rule's prediction beside the measured best" in md and "its answer (b)" in md, "lr-sweep.md: the rule beside the best")
changed_sweep = out

# --baseline-samples 50000, a run the baseline finishes inside its 20 s: the target is the loss that run ends at.
r, c, out = converge("cv-changed-batch", changed_sweep, "--baseline-samples", "50000", best=0.0023)
runs = c.get("runs", [])
got = [(x.get("role"), x.get("global_batch"), round(x.get("lr", 0), 7)) for x in runs]
want = [("baseline", 64, 0.001), ("candidate", 32, round(d.get("user_lr", 0), 7)),
        ("candidate", 32, round(d.get("user_lr", 0) * 3, 7))]
check(r.returncode == 0 and got[:3] == want and len(runs) == 6, f"the baseline, (b) at the rule's rate, (b) at the best ({got})")
ends = [x["points"][-1][0] for x in runs if x.get("role") in ("baseline", "rerun")]
check(c.get("baseline_samples") == 50000 and ends and all(50000 <= e < 50000 + 64 for e in ends)
      and "each trained to 50,000 samples, your run's length: the loss your run ends at" in c.get("target_basis", ""),
      f"--baseline-samples 50000: the baseline's runs end there ({ends}) and the target is their final loss")
cmps = c.get("comparisons", [])
rule_arm, best_arm = (cmps + [{}, {}])[:2]
check(len(cmps) == 2 and rule_arm.get("lr_gain") == 1 and best_arm.get("lr_gain") == v.get("gain")
      and abs(best_arm.get("predicted", 0) - best_arm.get("throughput_ratio", 0) * best_arm.get("efficiency", 0) * v.get("gain", 0)) < 1e-9
      and best_arm.get("measured", 0) > rule_arm.get("measured", 9),
      f"(b) at the best rate predicted at samples/s × efficiency × the sweep's gain, and measured faster than at the rule's "
      f"({best_arm.get('measured', 0):.2f}× against {rule_arm.get('measured', 0):.2f}×)")
check(rule_arm.get("sweep_loss") is None and (best_arm.get("sweep_loss") or {}).get("reference") == "changed batch at the batch rule's rate"
      and ((best_arm.get("sweep_loss") or {}).get("measured") or 0) > 1,
      f"at (b)'s batch the sweep's own loss is timed against the rule's arm, its reference ({best_arm.get('sweep_loss')})")
check(not os.path.exists(os.path.join(run_dir, "calibration.json")),
      "an arm at a swept rate calibrates no noise scale into the tune run (its gain is the rate's)")

# ---- the tune run's report prices (a) and (b) at the rates its sweeps measured
gain_b = v.get("gain", 0)
r, d_a, _ = sweep("your-batch", 0.0023, "--from-run", run_dir)
gain_a = d_a.get("verdict", {}).get("gain", 0)
check(r.returncode == 0 and d_a.get("at") == "your-batch" and d_a.get("global_batch") == 64 and d_a["verdict"]["verdict"] == "too low"
      and os.path.exists(os.path.join(run_dir, "lr-sweep-your-batch.json"))
      and os.path.exists(os.path.join(run_dir, "lr-sweep-changed-batch.json")) and "beside the tune run" in r.stdout,
      f"a sweep at your batch too: too low ({gain_a:.2f}×), each sweep's answer kept beside the run")
r = subprocess.run([autotune, "report", run_dir], capture_output=True, text=True, timeout=120)
best = json.load(open(os.path.join(run_dir, "best.json"))) if r.returncode == 0 else {}
t = best.get("time_to_train", {})
lm = t.get("learning_rate_measured", {})
ratio = t.get("changed_batch", {}).get("time_ratio", 0)
want = ratio * gain_b / gain_a if gain_a else 0
check(r.returncode == 0 and ratio > 0 and abs(lm.get("changed_batch_time_ratio_at_measured_rates", 0) - want) < 1e-9
      and lm.get("your-batch", {}).get("prices") is True
      and abs(lm.get("changed-batch", {}).get("best_lr", 0) - d.get("user_lr", 0) * 3) < 1e-12,
      f"best.json: (b) over (a) at the measured rates {lm.get('changed_batch_time_ratio_at_measured_rates', 0):.3f}× = "
      f"{ratio:.3f}× at the rule's × {gain_b:.3f} ÷ {gain_a:.3f}")
md = open(os.path.join(run_dir, "report.md")).read() if r.returncode == 0 else ""
check("Learning rate measured: the lr-sweep at global batch 64" in md and "Priced at the measured rates" in md
      and f"{want:.2f}× (a)'s speed to the same loss (at the rule's rate: {ratio:.2f}×" in md,
      "report.md says both sweeps and (b) priced at the measured rates beside the rule's")
r, _, _ = sweep("your-batch-again", 0.0023, "--from-run", run_dir)
kept = [f for f in os.listdir(run_dir) if f.startswith("lr-sweep-your-batch-") and f.endswith(".json")]
check(r.returncode == 0 and len(kept) == 1 and json.load(open(os.path.join(run_dir, "lr-sweep-your-batch.json")))["sweep_dir"]
      .endswith("your-batch-again"), f"a second sweep at your batch: the newest used, the first kept as {kept}")

# ---- tune --lr-sweep: the sweep inside the run, its time kept from the budget and said up front, its answer priced
tuned = os.path.join(scratch, "tune-with-sweep")
env = dict(os.environ, FAKE_TOKENS="1", FAKE_CV="0.03", FAKE_CV_SEED="1", FAKE_SLEEP="0", AUTOTUNE_QUIET_WAIT="0",
           FAKE_LR_BEST="0.0023")
tune_args = [autotune, "tune", "--worker", fake, "--data", tokens, "--knobs", "batch_size=32,64", "--confirm-rounds", "3",
             "--run-length", "400000", "--lr-sweep", "both", "--budget", "3m"]
r = subprocess.run([*tune_args, "--out", tuned], capture_output=True, text=True, env=env, timeout=600)
kept_line = next((ln for ln in r.stdout.splitlines() if "learning-rate sweep at your batch: about" in ln), "")
inner = os.path.join(tuned, "sweep-your-batch")
d_in = json.load(open(os.path.join(inner, "lr-sweep.json"))) if os.path.exists(os.path.join(inner, "lr-sweep.json")) else {}
check(r.returncode == 0 and "kept from the budget" in kept_line and "2 data orders" in kept_line
      and "] search" in r.stdout and r.stdout.index(kept_line) < r.stdout.index("] search"),
      f"the sweep's time said before the search ({kept_line.strip()[:160]})")
check(d_in.get("from_run") == tuned and d_in.get("at") == "your-batch" and d_in.get("global_batch") == 64
      and all(a["orders"] == 2 for a in d_in.get("arms", [])) and len(d_in.get("arms", [])) >= 4
      and d_in.get("horizon", {}).get("burn_in_samples") == 0 and d_in.get("horizon", {}).get("horizon_samples") == 60000
      and d_in.get("verdict", {}).get("verdict") == "too low" and "Your learning rate" in r.stdout,
      f"the sweep ran from the run's folder at its batch, over its --run-length, and said its verdict ({d_in.get('verdict', {}).get('headline')})")
best = json.load(open(os.path.join(tuned, "best.json"))) if r.returncode == 0 else {}
lm = best.get("time_to_train", {}).get("learning_rate_measured", {})
check(os.path.exists(os.path.join(tuned, "lr-sweep-your-batch.json")) and lm.get("your-batch", {}).get("sweep") == inner
      and "Learning rate measured: the lr-sweep at global batch 64" in open(os.path.join(tuned, "report.md")).read(),
      "its answer kept beside the run; best.json and report.md priced with it as autotune report would")
check(lm.get("changed-batch", {}).get("sweep") == os.path.join(tuned, "sweep-changed-batch")
      and lm.get("changed-batch", {}).get("global_batch") == best.get("time_to_train", {}).get("changed_batch", {}).get("global_batch")
      and lm.get("changed_batch_time_ratio_at_measured_rates", 0) > 0 and "learning-rate sweep at answer (b)'s batch: about" in r.stdout,
      "--lr-sweep both: (b)'s batch swept too, and (b) over (a) priced at both measured rates")
r = subprocess.run([autotune, "tune", "--worker", fake, "--resume", tuned], capture_output=True, text=True, env=env, timeout=600)
check(r.returncode == 0 and "measured already" in r.stdout and not any(f.startswith("sweep-your-batch.") for f in os.listdir(tuned)),
      "a resumed run does not sweep again")
r = subprocess.run([*tune_args[:-2], "--budget", "20s", "--out", os.path.join(scratch, "tune-short")],
                   capture_output=True, text=True, env=env, timeout=600)
check("learning-rate sweep at your batch: not run — it needs about" in r.stdout and "--budget" in r.stdout
      and not os.path.exists(os.path.join(scratch, "tune-short", "sweep-your-batch")),
      "a budget that cannot keep the sweep: dropped up front with the budget it needs")

# ---- converge --from-sweep refuses what it cannot train, in one line, before anything runs
for name, sweep_dir, extra, want in (
        ("cv-diverged", too_high, [], 'its verdict is "too high" with your rate diverging'),
        ("cv-not-a-sweep", scratch, [], "not an lr-sweep folder"),
        ("cv-lr", too_low, ["--lr", "0.01"], "--lr does not combine with --from-sweep"),
        ("cv-mixed", too_low, ["--candidate-set", "batch_size=64"], "does not combine with")):
    r, _, out = converge(name, sweep_dir, *extra, best=0.0001)
    check(r.returncode == 2 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(out),
          f"converge --from-sweep refused: {want} ({r.stderr.strip()[:160]})")

# ---- bad input: one line each, nothing written
for args, want in ((["--run-length", "3weeks"], "unknown unit 'weeks'"),
                   (["--val-data", tokens, "--out", os.path.join(scratch, "val-cpp")], "the C++ worker does not evaluate"),
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
