#!/usr/bin/env python3
"""Fault study: the figures of docs/reliability.md, measured on this machine with the real binaries.

  fault_study.py --autotune build/bin/autotune --fake build/bin/fake-worker
                 [--worker build/bin/autotune-worker] [--rounds 20] [--seed 1] [--out fault-study.md]

1. Ctrl-C (SIGINT) at --rounds moments drawn uniformly over an uninterrupted run's length, then
   `autotune tune --resume`: workers left after the tuner exited, trials lost (a row journaled before the
   interrupt missing or changed after the resume) and repeated (a baseline/search config journaled twice;
   with the deterministic fake worker also: the resumed journal's trials against an uninterrupted run's).
   With --worker, the same with the real LibTorch worker (mlp), where noise may change what runs after the
   interrupt, so only the first two checks apply.
2. The tuner killed with SIGKILL while a worker runs: time until no process of the run is left.
3. A hung worker (sleeps forever; also one that ignores SIGTERM): time until `autotune trial` returns,
   against --trial-timeout and the 5 s grace.
4. Two runs on one folder: the second's exit status, message and time to refusal.
Exit status 1 if any guarantee was broken; the Markdown tables go to --out and stdout.
"""
import argparse
import collections
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

FAKE_KNOBS = ["--knobs", "batch_size=32,64,128", "optimizer_impl=loop,fused"]
REAL_KNOBS = ["--workload", "mlp", "--knobs", "batch_size=32,64", "threads=1,2", "--window-seconds", "0.1",
              "--windows", "5"]


def rows(run):
    db = sqlite3.connect(f"file:{run}/journal.sqlite?mode=ro", uri=True)
    r = db.execute("SELECT id, kind, config_key, result_json FROM trials ORDER BY id").fetchall()
    db.close()
    return r


def run_processes(needle):
    """pids (other than ours) whose command line mentions needle."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if needle.encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def start(argv, env, log):
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def ctrl_c_rounds(a, worker, knobs, env, rounds, rng, base, exact):
    ref = os.path.join(base, "ref-" + os.path.basename(worker))
    t = time.monotonic()
    r = subprocess.run([a.autotune, "tune", "--worker", worker, *knobs, "--out", ref], env=env, capture_output=True, text=True)
    length = time.monotonic() - t
    if r.returncode != 0:
        sys.exit(f"reference run failed: {r.stdout}{r.stderr}")
    want = collections.Counter((k, c) for _, k, c, _ in rows(ref))
    results, broken = [], []
    for i in range(rounds):
        run = os.path.join(base, f"{os.path.basename(worker)}-r{i:02d}")
        at = rng.uniform(0.05, 0.95) * length
        with open(run + ".log", "w") as log:
            p = start([a.autotune, "tune", "--worker", worker, *knobs, "--out", run], env, log)
            time.sleep(at)
            p.send_signal(signal.SIGINT)
            code = p.wait(timeout=60)
        time.sleep(0.2)  # the kernel reaps what was killed
        left = len(run_processes(run))
        before = rows(run) if os.path.exists(os.path.join(run, "journal.sqlite")) else []
        # Do what the interrupted tuner said: its "continue with:" line, else the same command again.
        said = open(run + ".log").read()
        again = ([a.autotune, "tune", "--worker", worker, "--resume", run] if f"continue with: autotune tune --resume {run}" in said
                 else [a.autotune, "tune", "--worker", worker, *knobs, "--out", run])
        resumed = subprocess.run(again, env=env, capture_output=True, text=True)
        after = rows(run)
        kept = {r[0]: r for r in after}
        lost = sum(1 for r in before if kept.get(r[0]) != r)
        measured = collections.Counter((k, c) for _, k, c, _ in after if k in ("baseline", "search"))
        repeated = sum(n - 1 for n in measured.values() if n > 1)
        if exact:
            got = collections.Counter((k, c) for _, k, c, _ in after)
            lost += sum((want - got).values())
            repeated = max(repeated, sum((got - want).values()))
        ok = code in (130, 0) and left == 0 and resumed.returncode == 0 and lost == 0 and repeated == 0
        if not ok:
            broken.append(f"round {i + 1}: SIGINT at {at:.2f} s → exit {code}, {left} left, resume exit "
                          f"{resumed.returncode}, lost {lost}, repeated {repeated}: {resumed.stderr.strip()[-300:]}")
        results.append((at, code, left, len(before), len(after), lost, repeated))
        shutil.rmtree(run, ignore_errors=True)
    return length, len(rows(ref)), results, broken


def sigkill_rounds(a, env, base, n=10):
    times, broken = [], []
    env = dict(env, FAKE_SLEEP="30")
    for i in range(n):
        run = os.path.join(base, f"k{i:02d}")
        with open(run + ".log", "w") as log:
            p = subprocess.Popen([a.autotune, "tune", "--worker", a.fake, *FAKE_KNOBS, "--out", run], env=env, stdout=log,
                                 stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(run_processes(run)) < 2:  # the tuner and its worker
            time.sleep(0.02)
        p.kill()  # the tuner only: its worker must follow
        t = time.monotonic()
        p.wait()
        while run_processes(run) and time.monotonic() - t < 10:
            time.sleep(0.005)
        gone = time.monotonic() - t
        times.append(gone)
        if gone > 1.0:
            broken.append(f"SIGKILL round {i + 1}: workers still there after {gone:.2f} s")
        shutil.rmtree(run, ignore_errors=True)
    return times, broken


def hang_rounds(a, env, base):
    out, broken = [], []
    for label, extra in (("sleeps forever", {}), ("sleeps forever, ignores SIGTERM", {"FAKE_IGNORE_TERM": "1"})):
        e = dict(env, FAKE_HANG="batch_size=64", **extra)
        t = time.monotonic()
        r = subprocess.run([a.autotune, "trial", "--worker", a.fake, "--set", "batch_size=64", "--trial-timeout", "3",
                            "--out", os.path.join(base, "hang-" + str(len(out)))], env=e, capture_output=True, text=True,
                           timeout=60)
        took = time.monotonic() - t
        bound = 3 + (5 if extra else 0) + 3  # timeout (+ grace when SIGTERM is ignored) + start-up and reporting
        if took > bound or "timeout" not in (r.stdout + r.stderr):
            broken.append(f"hung worker ({label}): {took:.2f} s (bound {bound} s): {(r.stdout + r.stderr).strip()[-300:]}")
        out.append((label, took, r.returncode))
    return out, broken


def busy_folder(a, env, base):
    run = os.path.join(base, "busy")
    e = dict(env, FAKE_SLEEP="2")
    with open(run + ".log", "w") as log:
        p = subprocess.Popen([a.autotune, "tune", "--worker", a.fake, *FAKE_KNOBS, "--out", run], env=e, stdout=log,
                             stderr=subprocess.STDOUT)
    while not os.path.exists(os.path.join(run, "journal.sqlite")):
        time.sleep(0.02)
    t = time.monotonic()
    r = subprocess.run([a.autotune, "tune", "--worker", a.fake, "--resume", run], env=e, capture_output=True, text=True)
    took = time.monotonic() - t
    p.send_signal(signal.SIGINT)
    p.wait()
    msg = r.stderr.strip()
    broken = [] if r.returncode == 2 and "is in use by another autotune run" in msg and "\n" not in msg else [
        f"second run on a busy folder: exit {r.returncode}: {msg!r}"]
    return (r.returncode, took, msg.replace(run, "DIR")), broken


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autotune", required=True)
    ap.add_argument("--fake", required=True, help="build/bin/fake-worker")
    ap.add_argument("--worker", help="build/bin/autotune-worker: also interrupt tunes of the real worker")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
    base = tempfile.mkdtemp(prefix="autotune-fault-study-")
    md, broken = [], []
    try:
        for name, worker, knobs, e, exact in (
                ("fake worker (deterministic, 0.2 s per trial)", a.fake, FAKE_KNOBS, dict(env, FAKE_SLEEP="0.2"), True),
                ("real worker (mlp, LibTorch)", a.worker, REAL_KNOBS, env, False)):
            if not worker:
                continue
            length, n_ref, res, b = ctrl_c_rounds(a, worker, knobs, e, a.rounds, rng, base, exact)
            broken += b
            md += [f"### Ctrl-C at {a.rounds} random moments — {name}", "",
                   f"An uninterrupted run: {length:.1f} s, {n_ref} trials. Seed {a.seed}.", "",
                   "| round | SIGINT at | exit | workers left | trials kept | after --resume | lost | repeated |",
                   "|---:|---:|---:|---:|---:|---:|---:|---:|"]
            md += [f"| {i + 1} | {at:.2f} s | {c} | {l} | {kb} | {ka} | {lo} | {rp} |"
                   for i, (at, c, l, kb, ka, lo, rp) in enumerate(res)]
            md += ["", f"Totals: {sum(r[2] for r in res)} workers left, {sum(r[5] for r in res)} trials lost, "
                       f"{sum(r[6] for r in res)} repeated, {sum(1 for r in res if r[1] == 130)} of {len(res)} runs "
                       f"stopped by the signal (exit 130)"
                       + ("." if all(r[1] == 130 for r in res) else ", the others had finished first."), ""]
        times, b = sigkill_rounds(a, env, base)
        broken += b
        md += ["### Tuner killed with SIGKILL while its worker runs (10 times)", "",
               f"Workers gone after: median {sorted(times)[len(times) // 2] * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
               "(bound: 1 s).", ""]
        hangs, b = hang_rounds(a, env, base)
        broken += b
        md += ["### A hung worker, `--trial-timeout 3` (grace 5 s)", "", "| worker | `autotune trial` returned after | exit |",
               "|---|---:|---:|"]
        md += [f"| {l} | {t:.2f} s | {c} |" for l, t, c in hangs]
        md += [""]
        busy, b = busy_folder(a, env, base)
        broken += b
        md += ["### Two runs on one folder", "",
               f"The second (`--resume` while the first runs): exit {busy[0]} after {busy[1] * 1000:.0f} ms: `{busy[2]}`", ""]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    text = "\n".join(md)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    for x in broken:
        print("BROKEN:", x)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
