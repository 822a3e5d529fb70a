#!/usr/bin/env python3
"""Every sentence of the first screen agrees with its table and with the journal (issue 64).

Generates many tuning runs with the fake worker — fixed recipes aimed at each kind of outcome, then random ones
(noisy, busy, crashed, out of memory, non-finite, unranked changed batches, slow confirmations, short budgets,
interrupted runs; objective time and throughput) — and for each reads the console, report.md, report.html, best.json and
the journal itself (sqlite3), and checks that every count, ratio, verdict and reason the first screen states is the one
the journal's records give:

  * exit status, console "winner:" / "no stable config:", best.json's winner and the report's Winner line agree;
  * the console's trial numbers are the journal's trial ids, of the kind the line names, in the order the trials ran,
    and every trial of the journal that a line stands for is printed (interrupted runs aside: the trial in flight is
    not journaled);
  * the winner's row in the table is the best.json winner (same trials), its speedup the best.json speedup;
  * "N configs measured, …": N, the stable-but-unranked count and each rejection count equal the table's rows;
  * the busy-host line's counts equal the journal's trials timed above the guard's limit, "stayed busy" equals the
    configs the no-stable line counts as busy, and the host-noise calibration read no busy trial;
  * each confirmation row's "not run" reason agrees with the journal (no confirm trial of it; "interrupted" only when the
    run has no finish time; "budget" only when no confirm trial ran at all);
  * "(b) … runs R× (a)'s samples/s" is the table's two medians' ratio;
  * the headline speedup lies among its interleaved rounds' own ratios (paired round by round), which its basis prints;
  * report.html says the same winner / no-winner sentence as report.md.

Each sentence template of the first screen (TEMPLATES) must be printed by at least one generated run; the test fails
and names the template when none did, so a new sentence needs a run that prints it.

    first_screen_test.py AUTOTUNE FAKE_WORKER SCRATCH_DIR [--random N] [--keep]
"""
import html
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time

autotune, fake, scratch = sys.argv[1:4]
N_RANDOM = int(sys.argv[sys.argv.index("--random") + 1]) if "--random" in sys.argv else 40
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
TOKENS = os.path.join(scratch, "tokens.bin")  # a token file for the fake's token workload (FAKE_TOKENS)
with open(TOKENS, "wb") as f:
    f.write(random.Random(7).randbytes(20000))

# The first screen's sentence templates: (name, where, regex). `where` is "console" or "md" (report.md).
TEMPLATES = [
    ("winner", "console", r"^winner: "),
    ("speedup", "console", r"^speedup over the baseline: [\d.]+× \(95% CI"),
    ("answer (a)", "console", r"^\(a\) at your batch — global batch \d+: "),
    ("answer (b) priced", "console", r"^\(b\) if you change the batch — global batch \d+: .*, predicted [\d.]+× \(a\)'s speed"),
    ("answer (b) unpriced", "console", r"^\(b\) if you change the batch — .* but its time to train is not predicted: "),
    ("why this pick", "console", r"^why this pick: "),
    ("(a) defaults: nothing else at your batch", "md", r"PyTorch's defaults — nothing else ran at your batch"),
    ("(a) defaults: none stable at your batch", "md", r"PyTorch's defaults — none of the \d+ other configs at your batch was stable"),
    ("(a) defaults: nothing beat them", "md", r"PyTorch's defaults \(nothing beat them: \d+ other configs? at your batch measured\)"),
    ("compile", "console", r"^compile: torch\.compile \(default\) took [\d.]+ s once .* graph breaks? \(Tensor\.item\(\) ×2; print\(\)\).*"
                           r"Priced over .*: its samples/s × [\d.]+"),
    ("compile: pays back", "console", r"pays its compile back after about [\d,]+ steps"),
    ("compile: never pays back", "md", r"so its compile never pays back"),
    ("compile per config", "md", r"^torch\.compile in this run, per config"),
    ("no stable: none stable", "console", r"^no stable config: \d+ configs? measured, none stable: "),
    ("no winner: stable but unranked", "console", r"^no winner: \d+ configs? measured, \d+ stable but none ranked"),
    ("no stable: nothing at your batch", "console", r"cannot be ranked: nothing at your batch of \d+ is stable to compare it with"),
    ("no stable: what would rank it", "console", r"--data \(your training data\), --noise-log .* or --noise-scale would rank it"),
    ("no stable: noisy", "console", r"^no (stable config|winner): .*\b(\d+|it was) noisy"),
    ("no stable: busy", "console", r"^no (stable config|winner): .*\b(\d+|it was) timed while other programs used the host"),
    ("no stable: crash", "console", r"^no (stable config|winner): .*\b(\d+|it was) crash"),
    ("no stable: oom", "console", r"^no (stable config|winner): .*\b(\d+|it was) oom"),
    ("no stable: budget", "console", r"The budget left no room to measure"),
    ("no stable: tune on a quiet host", "console", r"A config timed beside another program cannot win"),
    ("busy host", "console", r"^busy host: other programs used up to [\d.]+ of \d+ CPUs while \d+ of the \d+ trials"),
    ("busy host: re-measured, quiet again", "console", r"Their configs were re-measured, quiet again"),
    ("busy host: stayed busy, some timed once", "md", r"stayed busy and cannot win — \d+ of them timed once only, the budget"),
    ("busy host: interrupted before a re-time", "md", r"stayed busy and cannot win — \d+ of them timed once only, the run interrupted"),
    ("busy host: stayed busy", "console", r"; \d+ stayed busy and cannot win \(autotune tune --resume"),
    ("busy: timed again once quiet", "console", r"timed again now that the host is quiet"),
    ("busy host: confirmation busy", "console", r"of the interleaved confirmation's runs (?:was|were) busy"),
    ("interrupted", "console", r"^interrupted by SIG\w+: \d+ trials are kept"),
    ("confirmation: exceeded or reproduced", "md", r" — (exceeded|reproduced)"),
    ("confirmation: not reproduced", "md", r"not reproduced"),
    ("confirmation: host busy", "md", r"not confirmed: the host was busy during \d+ of its \d+ interleaved runs"),
    ("confirmation: not run, nothing to interleave", "md", r"not run: no other config was stable, so there was nothing to interleave"),
    ("confirmation: not run, budget", "md", r"not run \(budget: no other config was measured before the budget ran out"),
    ("confirmation: not run, interrupted", "md", r"not run: the run was interrupted before its interleaved rounds"),
    ("confirmation row: not run", "md", r"\| confirmation \| not run \|"),
    ("verdict: stable, not ranked", "md", r"\| stable, not ranked: "),
    ("verdict: rejected", "md", r"\| rejected: "),
    ("verdict: winner", "md", r"\| \*\*winner\*\*"),
    ("not explored (budget)", "md", r"^\*\*Not explored \(budget\):\*\* \d+ configs"),
    ("host noise calibrated", "md", r"This host's own noise, over the first trial of the first \d+ configs"),
]

# Fixed recipes, each aimed at outcomes random draws reach rarely. env: the fake worker's; args: autotune tune's.
RECIPES = [
    ("plain grid", {}, ["--knobs", "batch_size=64 zero_grad=zeros,none threads=1,2"]),
    # In the fake's landscape batch_size=128 is faster than the baseline's 64, zero_grad=zeros slower.
    ("compiled winner", {"FAKE_COMPILE": "batch_size=128"}, ["--knobs", "batch_size=64,128", "--objective", "throughput"]),
    ("compiled config slower than the baseline", {"FAKE_COMPILE": "zero_grad=zeros"},
     ["--knobs", "zero_grad=zeros,none", "--objective", "throughput"]),
    ("baseline noisy, changed batches stable", {"FAKE_NOISY": "batch_size=64"}, ["--knobs", "batch_size=16,32,64"]),
    ("baseline crashes", {"FAKE_CRASH": "batch_size=64"}, ["--knobs", "batch_size=32,64"]),
    ("the only other config crashes", {"FAKE_CRASH": "zero_grad=none"}, ["--knobs", "zero_grad=zeros,none"]),
    ("out of memory above 32", {"FAKE_OOM_ABOVE": "32"}, ["--knobs", "batch_size=32,64"]),
    ("busy host for one config", {"FAKE_BUSY": "zero_grad=none"}, ["--knobs", "zero_grad=zeros,none"]),
    # The baseline is PyTorch's zero_grad=none.
    ("busy baseline", {"FAKE_BUSY": "zero_grad=none"}, ["--knobs", "zero_grad=zeros,none threads=1,2"]),
    ("busy baseline, the other config crashes", {"FAKE_BUSY": "zero_grad=none", "FAKE_CRASH": "zero_grad=zeros"},
     ["--knobs", "zero_grad=zeros,none"]),
    # Every trial busy; the third (the first re-measure) outlasts the budget: one config stayed busy through its
    # re-measure, the other was timed once — the budget, not an interrupt, left no room.
    ("busy, the budget spent on a re-measure", {"FAKE_BUSY_TRIALS": "0001,0002,0003", "FAKE_LONG_TRIALS": "0003",
                                                "FAKE_LONG_SECONDS": "6"}, ["--knobs", "zero_grad=zeros,none", "--budget", "5s"]),
    # Every trial busy, SIGINT once three have ended (the baseline, the other config, the baseline's re-measure): one
    # config stayed busy through a re-measure, the other was timed once, and the interrupt — not the budget — says why.
    ("interrupted after a busy re-measure", {"FAKE_SLEEP": "0.3", "FAKE_BUSY_TRIALS": "0001,0002,0003,0004"},
     ["--knobs", "zero_grad=zeros,none", "--budget", "5m"]),
    ("busy once, quiet again", {"FAKE_BUSY_TRIALS": "0002"}, ["--knobs", "zero_grad=zeros,none threads=1,2"]),
    ("busy confirmation", {"FAKE_BUSY_TRIALS": "0006,0007,0008"}, ["--knobs", "zero_grad=zeros,none", "--objective", "throughput"]),
    ("the candidate slower in its confirmation", {"FAKE_SLOW_TRIALS": "0004,0005", "FAKE_SLOW_FACTOR": "0.8"},
     ["--knobs", "zero_grad=zeros,none", "--objective", "throughput"]),
    ("everything slower in the confirmation", {"FAKE_SLOW_TRIALS": "0004,0005,0006,0007,0008,0009"},
     ["--knobs", "zero_grad=zeros,none threads=1,2", "--objective", "throughput"]),
    ("noisy host, calibrated", {"FAKE_WINDOW_NOISE": "0.08"}, ["--knobs", "zero_grad=zeros,none threads=1,2 log_every=1,10"]),
    ("short budget", {"FAKE_SLEEP": "0.4"}, ["--knobs", "zero_grad=zeros,none threads=1,2 log_every=1,10", "--budget", "3s"]),
    ("short budget, noisy baseline", {"FAKE_SLEEP": "1.0", "FAKE_NOISY": "zero_grad=none"},
     ["--knobs", "zero_grad=zeros,none threads=1,2", "--budget", "1s"]),
    ("throughput objective across batches", {}, ["--knobs", "batch_size=32,64,128", "--objective", "throughput"]),
    ("changed batch beside the user's", {}, ["--knobs", "batch_size=32,64 zero_grad=zeros,none"]),
    # Real (token) data: the noise scale is usable, so (b) is priced — from the confirmation rounds, paired.
    ("changed batch priced on token data", {"FAKE_TOKENS": "1", "FAKE_CV": "0.03"},
     ["--data", "TOKENS", "--knobs", "batch_size=32,64", "--confirm-rounds", "3"]),
    ("grid without the user's batch", {}, ["--knobs", "batch_size=32,128 zero_grad=zeros,none"]),
    ("the other config at the user's batch noisy", {"FAKE_NOISY": "zero_grad=zeros"}, ["--knobs", "batch_size=32,64 zero_grad=zeros,none"]),
    ("interrupted", {"FAKE_SLEEP": "0.3"}, ["--knobs", "zero_grad=zeros,none threads=1,2 log_every=1,10", "--budget", "5m"]),
]

KNOB_VALUES = {"batch_size": ["16", "32", "64", "128"], "zero_grad": ["zeros", "none"], "threads": ["1", "2"],
               "log_every": ["1", "10"], "optimizer_impl": ["loop", "foreach"]}


def random_recipe(seed):
    rnd = random.Random(seed)
    knobs = {}
    for k in rnd.sample(sorted(KNOB_VALUES), rnd.randint(1, 3)):
        vals = KNOB_VALUES[k]
        knobs[k] = sorted(set(rnd.sample(vals, rnd.randint(1, len(vals)))) | ({"64"} if k == "batch_size" else {vals[0]}))
    env = {}
    pick = lambda: (lambda k: f"{k}={rnd.choice(knobs[k])}")(rnd.choice(sorted(knobs)))
    for fault in rnd.sample(["FAKE_NOISY", "FAKE_CRASH", "FAKE_NAN", "FAKE_BUSY", "FAKE_BUSY_TRIALS", "FAKE_OOM_ABOVE",
                             "FAKE_WINDOW_NOISE", "FAKE_SLOW_TRIALS", "FAKE_NOISY_TRIALS"], rnd.randint(0, 3)):
        if fault in ("FAKE_BUSY_TRIALS", "FAKE_SLOW_TRIALS", "FAKE_NOISY_TRIALS"):
            env[fault] = ",".join(f"{i:04d}" for i in sorted(rnd.sample(range(1, 12), rnd.randint(1, 4))))
        elif fault == "FAKE_OOM_ABOVE":
            env[fault] = rnd.choice(["32", "64", "128"])
        elif fault == "FAKE_WINDOW_NOISE":
            env[fault] = rnd.choice(["0.03", "0.08", "0.2"])
        else:
            env[fault] = pick()
    args = ["--knobs", " ".join(f"{k}={','.join(v)}" for k, v in knobs.items()),
            "--objective", rnd.choice(["time", "throughput"]), "--strategy", rnd.choice(["grid", "random", "auto"])]
    if rnd.random() < 0.25:
        env["FAKE_SLEEP"] = "0.3"
        args += ["--budget", rnd.choice(["2s", "4s"])]
    return f"random {seed}", env, args


def run_one(i, name, env_extra, args):
    out = os.path.join(scratch, f"run{i:03d}")
    # The busy-host guard on (the suite turns it off), judging the fake's busy trials; the real host is not waited for.
    env = dict(os.environ, FAKE_SLEEP="0", AUTOTUNE_MAX_HOST_LOAD="10", AUTOTUNE_QUIET_WAIT="0", FAKE_CV_SEED="1")
    env.update(env_extra)
    argv = []
    for j, a in enumerate(args):  # --knobs takes one argument per knob
        argv += a.split() if j > 0 and args[j - 1] == "--knobs" else [a]
    argv = [TOKENS if a == "TOKENS" else a for a in argv]
    cmd = [autotune, "tune", "--worker", fake, "--workload", "mlp", "--out", out] + argv
    if "--budget" not in argv:
        cmd += ["--budget", "2m"]
    if name.startswith("interrupted"):  # SIGINT once three trials have ended (their lines printed), whatever the speed
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        head, ended = [], 0
        for line in p.stdout:
            head.append(line)
            ended += line.startswith("[")
            if ended == 3:
                p.send_signal(signal.SIGINT)
                break
        rest = p.stdout.read()
        p.wait(timeout=60)
        return out, p.returncode, "".join(head) + rest, ""
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return out, p.returncode, p.stdout, p.stderr


def table_rows(md):
    """The 'All trials' table of report.md: dicts keyed by its header."""
    lines = md.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("| # | config |"))
    head = [h.strip() for h in lines[start].strip("|").split("|")]
    rows = []
    for l in lines[start + 2:]:
        if not l.startswith("|"):
            break
        cells = [c.strip() for c in l.strip("|").split("|")]
        rows.append(dict(zip(head, cells)))
    return rows


def number(text):
    return float(text.replace(",", ""))


failures = []
covered = {name: [] for name, _, _ in TEMPLATES}


def check(cond, run, what):
    if not cond:
        failures.append(f"{run}: {what}")


def check_run(label, out, rc, stdout, stderr):
    console = stdout.splitlines()
    md_path, best_path, html_path = (os.path.join(out, f) for f in ("report.md", "best.json", "report.html"))
    if not os.path.exists(md_path):
        check(False, label, f"no report.md (exit {rc}): {stderr.strip()[-300:]}")
        return
    md = open(md_path).read()
    best = json.load(open(best_path))
    page = html.unescape(re.sub(r"<[^>]+>", "", open(html_path).read()))
    db = sqlite3.connect(os.path.join(out, "journal.sqlite"))
    trials = {row[0]: {"kind": row[1], "config": row[2], "status": row[3], "result": json.loads(row[4])}
              for row in db.execute("SELECT id, kind, config_key, status, result_json FROM trials")}
    meta = dict(db.execute("SELECT key, value FROM meta"))
    finished = bool(meta.get("finished_at"))
    for name, where, rx in TEMPLATES:
        text = stdout if where == "console" else md
        if re.search(rx, text, re.M):
            covered[name].append(label)

    # Trial numbers: each progress line's id is a journaled trial of the kind it names.
    printed = set()
    for line in console:
        m = re.match(r"^\[\s*(\d+)(?:-(\d+))?\] (\w+)", line)
        if not m:
            continue
        first, last, word = int(m.group(1)), int(m.group(2) or m.group(1)), m.group(3)
        for tid in range(first, last + 1):
            printed.add(tid)
            check(tid in trials, label, f"console [{tid}] is not a trial id of the journal: {line}")
            if tid in trials and word in ("baseline", "search", "remeasure", "confirm", "reference", "effect", "trace", "noise"):
                check(trials[tid]["kind"] == word, label, f"console [{tid}] says {word}, the journal says {trials[tid]['kind']}")
    # One trial at a time (no recipe runs slots): the lines come in the order the trials ran, so the ids only grow (a
    # trial whose completion settled the host's noise limits was printed after the re-measures that settling ran).
    order = [int(m.group(1)) for m in (re.match(r"^\[\s*(\d+)", l) for l in console) if m]
    check(order == sorted(order), label, f"console trial ids out of order: {order}")
    missing = [t for t in trials if t not in printed and trials[t]["kind"] not in ("ablation",)]
    check(not missing or not finished, label, f"journaled trials never printed: {missing}")

    # Winner or not, the same everywhere.
    has_winner = any(l.startswith("winner: ") for l in console)
    no_stable = [l for l in console if l.startswith(("no stable config: ", "no winner: "))]
    check(finished or rc not in (0, 1), label, f"an unfinished run exited {rc}")
    if finished:
        check(has_winner != bool(no_stable), label, "the console prints both or neither of winner / no stable config")
        check((rc == 0) == has_winner, label, f"exit {rc} with winner line {has_winner}")
    check(("config" in best and best.get("status") == "ok") == has_winner or not finished, label,
          f"best.json status {best.get('status')} vs console winner {has_winner}")
    check(("**Winner:**" in md) == has_winner or not finished, label, "report.md's Winner line vs the console's")
    rows = table_rows(md)
    check(len(rows) == len({t["config"] for t in trials.values() if t["kind"] in ("baseline", "search", "remeasure", "ablation")})
          or not finished, label, f"table rows {len(rows)} vs configs measured in the journal")
    if has_winner:
        winner_rows = [r for r in rows if r["verdict"].startswith("**winner**")]
        check(len(winner_rows) == 1, label, f"{len(winner_rows)} winner rows")
        if winner_rows:
            ids = [int(x) for x in winner_rows[0]["trials"].split(",")]
            check(ids == best["winner"]["trial_ids"], label, f"winner row trials {ids} vs best.json {best['winner']['trial_ids']}")
        sp = next(l for l in console if l.startswith("speedup over the baseline: "))
        m = re.match(r"speedup over the baseline: ([\d.]+)× \(95% CI ([\d.]+)–([\d.]+)×\)", sp)
        if m and best.get("speedup", {}).get("median"):
            check(abs(float(m.group(1)) - best["speedup"]["median"]) < 0.006, label, f"console speedup {m.group(1)} vs best.json {best['speedup']['median']}")
        check(best["winner"]["samples_per_s"]["median"] > 0, label, "winner without a median")
    if no_stable:
        line = no_stable[0]
        m = re.search(r"(\d+) configs? measured", line)
        check(m and int(m.group(1)) == len(rows), label, f"'{m and m.group(0)}' vs {len(rows)} rows")
        stable_rows = [r for r in rows if r["verdict"].startswith("stable")]
        m2 = re.search(r"(\d+) stable but none ranked", line)
        check((int(m2.group(1)) if m2 else 0) == len(stable_rows), label,
              f"line says {m2 and m2.group(1)} stable but unranked, the table has {len(stable_rows)} stable rows")
        check("none stable" not in line or not stable_rows, label, "'none stable' beside stable rows")
        for r in stable_rows:
            check(r["verdict"].startswith("stable, not ranked: "), label, f"a stable row of a run without a winner says why not: {r['verdict']}")
        busy_rows = [r for r in rows if "timed while other programs" in r["verdict"] or "host busy" in r["verdict"]]
        mb = re.search(r"(\d+|it was) timed while other programs used the host", line)
        n_busy = 0 if not mb else (1 if mb.group(1) == "it was" else int(mb.group(1)))
        mc = re.search(r"(\d+) stayed busy", stdout)
        if mc:
            check(int(mc.group(1)) == n_busy, label, f"busy-host line 'stayed busy' {mc.group(1)} vs no-stable line's busy {n_busy}")
        check(n_busy == len([r for r in rows if r["verdict"].startswith("rejected: ") and "busy" in r["verdict"]]), label,
              f"busy count {n_busy} vs table rows rejected as busy: {[r['verdict'][:80] for r in busy_rows]}")
        m3 = re.search(r"the fastest, (.+?) \(global batch (\d+)\), at ([\d,]+) samples/s", line)
        if m3 and stable_rows:
            fastest = max(stable_rows, key=lambda r: number(r["samples/s"]))
            check(number(m3.group(3)) == number(fastest["samples/s"]), label, f"fastest unranked {m3.group(3)} vs table {fastest['samples/s']}")
        check(("no winner: " in line) == bool(stable_rows), label, "'no winner' exactly when some row is stable")
        want = "no_winner" if line.startswith("no winner: ") else "no_stable_config"
        check(best.get("status") == want or not finished, label, f"best.json status {best.get('status')} with '{line[:30]}…'")
        sentence = re.sub(r" \(each config's reason: [^)]*\)$", "", line.split(": ", 1)[1])
        check(sentence in page.replace("\n", " ") or not finished, label, "report.html lacks the console's no-winner sentence")
        check(sentence in md or not finished, label, "report.md lacks the console's no-winner sentence")

    # The busy-host line from one tally over the journal's trials.
    bl = next((l for l in console if l.startswith("busy host: ")), None)
    if bl is None and not finished:  # an interrupted run's console is brief: its reports carry the busy line
        mb = re.search(r"^> \*\*Busy host:\*\* (.+)$", md, re.M)
        bl = "busy host: " + mb.group(1) if mb else None
    limit = lambda cpus: max(0.25, 0.10 * cpus)
    loads = [t["result"].get("host_load") for t in trials.values() if t["result"].get("host_load")]
    busy = [h for h in loads if h["other_cores"] > limit(h["cpus"])]
    check(bool(bl) == bool(busy), label, f"busy-host line {bool(bl)} with {len(busy)} busy trials in the journal")
    if bl:
        m = re.search(r"while (\d+) of the (\d+) trials", bl)
        check(m and (int(m.group(1)), int(m.group(2))) == (len(busy), len(loads)), label,
              f"busy-host counts {m and m.groups()} vs journal {(len(busy), len(loads))}")
        mo = re.search(r"— (\d+) of them timed once only", bl)
        if mo:  # rows rejected as busy with a single trial
            once = [r for r in rows if r["verdict"].startswith("rejected: host busy") and "," not in r["trials"]]
            check(int(mo.group(1)) == len(once), label, f"'timed once only' {mo.group(1)} vs {len(once)} busy rows of one trial")
    hn = best.get("search", {}).get("host_noise", {})
    if hn.get("trials", 0) > 0:  # the calibration read only quiet first trials
        firsts, seen = [], set()
        for tid in sorted(trials):
            t = trials[tid]
            if t["kind"] in ("baseline", "search") and t["config"] not in seen:
                seen.add(t["config"])
                firsts.append(t)
        quiet = [t for t in firsts if t["status"] == "ok" and not (t["result"].get("host_load") and
                 t["result"]["host_load"]["other_cores"] > limit(t["result"]["host_load"]["cpus"]))]
        check(hn["trials"] <= len(quiet), label, f"host noise read {hn['trials']} trials, only {len(quiet)} quiet first trials exist")

    # Confirmation rows: "not run" only without a confirm trial, with its real reason.
    confirms = {t["config"] for t in trials.values() if t["kind"] == "confirm"}
    for c in best.get("candidates", []):
        if c.get("detail", "").startswith("not run"):
            d = c["detail"]
            check("interrupted" not in d or not finished, label, f"'{d}' in a finished run")
            check("(budget" not in d or not confirms, label, f"'{d}' while confirm trials ran")
    conf = best.get("confirmation")
    if has_winner and conf is not None:
        check(conf.get("ran", True) or conf.get("detail", "").startswith("not run"), label, f"an unrun confirmation reads {conf}")
        if not conf.get("ran", True):
            check("| confirmation | FAIL |" not in md, label, "an unrun confirmation shows FAIL")

    # torch.compile: one sentence everywhere, its break-even from the table's two medians and the compile's seconds.
    comp = next((l for l in console if l.startswith("compile: ")), None)
    wc = best.get("winner", {}).get("compile") if has_winner else None
    check(bool(comp) == bool(wc), label, f"console compile line {bool(comp)} vs best.json winner.compile {bool(wc)}")
    if comp and wc:
        sentence = comp[len("compile: "):]
        check(sentence == wc["sentence"], label, "console and best.json compile sentences differ")
        check(f"**Compile:** {sentence}." in md, label, "report.md's Compile line differs from the console's")
        check(f"Compile: {sentence}." in page.replace("\n", " "), label, "report.html's Compile line differs from the console's")
        base_row = next((r for r in rows if "(baseline)" in r["verdict"]), None)
        win_row = next((r for r in rows if r["verdict"].startswith("**winner**")), None)
        if base_row and win_row and wc["break_even_steps"]:
            b, w = number(base_row["samples/s"]), number(win_row["samples/s"])
            want = wc["seconds"] / (1 / b - 1 / w) / int(win_row.get("global batch", best["winner"]["batch_size"]))
            check(abs(want - wc["break_even_steps"]) <= 0.02 * want, label, f"break-even {wc['break_even_steps']:.0f} steps vs {want:.0f} from the table")
        m = re.search(r"× ([\d.]+)", sentence.split("Priced over", 1)[1])
        check(m and abs(float(m.group(1)) - wc["priced_factor"]) < 0.0006, label, "the priced factor differs from best.json's")

    # (b) priced from the rounds: its samples/s ratio lies within the rounds' own ratios (paired round by round).
    cb = best.get("time_to_train", {}).get("changed_batch", {})
    if cb.get("ranked_by_time") and cb.get("throughput_ratio"):
        key = lambda cfg: " ".join(f"{k}={v}" for k, v in sorted(cfg.items()))
        a_cfg = best["time_to_train"]["at_your_batch"]["config"]
        runs_of = lambda cfg: [trials[t] for t in sorted(trials) if trials[t]["kind"] == "confirm" and trials[t]["config"] == key(cfg)]
        ra, rb = runs_of(a_cfg), runs_of(cb["config"])
        med = lambda t: statistics.median(w["samples_per_s"] for w in t["result"]["windows"])
        ratios = [med(x) / med(y) for x, y in zip(rb, ra) if x["status"] == "ok" and y["status"] == "ok"]
        if ratios:
            check(min(ratios) - 1e-9 <= cb["throughput_ratio"] <= max(ratios) + 1e-9, label,
                  f"(b)'s samples/s ratio {cb['throughput_ratio']:.3f} outside its rounds' ratios {[round(r, 3) for r in ratios]}")

    # The headline speedup, paired round by round: it lies among its rounds' ratios, and the ratios its basis prints are
    # the journal's (the winner's and the baseline's confirm runs, then effect runs, paired position by position).
    sp_basis = (best.get("speedup") or {}).get("basis", "")
    if has_winner and "paired round by round" in sp_basis:
        paired_checked.append(label)
        key = lambda cfg: " ".join(f"{k}={v}" for k, v in sorted(cfg.items()))
        med = lambda t: statistics.median(w["samples_per_s"] for w in t["result"]["windows"])
        runs_of = lambda kind, k: [trials[t] for t in sorted(trials) if trials[t]["kind"] == kind and trials[t]["config"] == k]
        wk, bk = key(best["config"]), key(best["baseline"]["config"])
        per = []
        for kind in ("confirm", "effect"):
            per += [med(x) / med(y) for x, y in zip(runs_of(kind, wk), runs_of(kind, bk))
                    if x["status"] == "ok" and y["status"] == "ok" and x["result"]["windows"] and y["result"]["windows"]]
        check(per and min(per) - 1e-9 <= best["speedup"]["median"] <= max(per) + 1e-9, label,
              f"headline {best['speedup']['median']:.3f} outside its rounds' ratios {[round(r, 3) for r in per]}")
        shown = [float(x) for x in re.findall(r"([\d.]+)×", sp_basis.split("÷ baseline", 1)[1].split(" in the ", 1)[0])]
        check(len(shown) == min(len(per), 6) and all(abs(a - b) < 0.0051 for a, b in zip(shown, per)), label,
              f"the basis prints {shown}, the journal's rounds give {[round(r, 3) for r in per]}")

    # A winner that changes one knob has one effect, the whole: from the effect rounds it is the headline itself.
    effects = best.get("knob_effects") or []
    if has_winner and len(effects) == 1 and effects[0].get("effect_rounds") and effects[0].get("at_default") \
            and "paired round by round" in sp_basis and "speedup" in effects[0]:
        check(abs(effects[0]["speedup"]["median"] - best["speedup"]["median"]) < 1e-9, label,
              f"the one knob's effect {effects[0]['speedup']['median']:.3f} vs the headline {best['speedup']['median']:.3f}")
        one_knob_checked.append(label)

    # (b) unpriced: its samples/s ratio is the table's.
    for l in console:
        m = re.match(r"\(b\) if you change the batch — global batch (\d+): (.+?) runs ([\d.]+)× \(a\)'s samples/s", l)
        if not m:
            continue
        a_line = next((x for x in console if x.startswith("(a) at your batch")), "")
        ma = re.match(r"\(a\) at your batch — global batch \d+: (.+?), [\d.]+× the baseline", a_line)
        key = lambda cfg: next((r for r in rows if r["config"].strip("`") == cfg), None)
        rb, ra = key(m.group(2)), key(ma.group(1)) if ma else None
        if rb and ra:
            ratio = number(rb["samples/s"]) / number(ra["samples/s"])
            check(abs(ratio - float(m.group(3))) < 0.02 * ratio + 0.006, label, f"(b) ratio {m.group(3)} vs table {ratio:.3f}")


paired_checked = []  # runs whose headline was checked against its rounds
one_knob_checked = []  # runs whose one knob effect was checked against the headline
runs = [(name, env, args) for name, env, args in RECIPES] + [random_recipe(s) for s in range(N_RANDOM)]
t0 = time.time()
for i, (name, env, args) in enumerate(runs):
    out, rc, stdout, stderr = run_one(i, name, env, args)
    label = f"run {i} ({name}; env {env}; {' '.join(args)})"
    if rc == 2:
        check(False, label, f"usage error: {stderr.strip()[-300:]}")
        continue
    check_run(label, out, rc, stdout, stderr)

uncovered = [n for n, who in covered.items() if not who]
for n in uncovered:
    failures.append(f"template never printed by a generated run: {n}")
print(f"first_screen: {len(runs)} runs ({len(RECIPES)} recipes, {N_RANDOM} random) in {time.time() - t0:.0f} s; "
      f"{len(TEMPLATES) - len(uncovered)} of {len(TEMPLATES)} templates printed; {len(paired_checked)} headlines checked "
      f"against their paired rounds, {len(one_knob_checked)} one-knob effects against theirs")
check(len(paired_checked) >= 5, "the whole test", f"only {len(paired_checked)} runs had a headline from paired rounds")
for n, who in covered.items():
    # A template only random runs print depends on their timing (a short budget's cut-off): worth a recipe of its own.
    only_random = who and all(w.startswith("run ") and "(random " in w for w in who)
    print(f"  {len(who):3d} runs  {n}" + ("   (random runs only)" if only_random else ""))
if failures:
    print(f"{len(failures)} disagreements:")
    for f in failures[:200]:
        print("  " + f)
    sys.exit(1)
if "--keep" not in sys.argv:
    shutil.rmtree(scratch, ignore_errors=True)
print("first_screen: every checked sentence agrees with its table and the journal")
