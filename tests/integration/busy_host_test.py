#!/usr/bin/env python3
"""A tune beside a CPU burner: the busy-host guard names the busy host, and the winner is not decided by it.

    busy_host_test.py BUILD_DIR

The real worker (mlp, threads=1 vs 2, the threads count being the knob a busy core fakes a win for: with one
of two cores taken, one thread beats two) tunes while a burner process spins on one core for its first
seconds. Each trial records other processes' CPU time over its measured windows; those above the limit are
re-measured once the host is quiet again. Checked: the trials the burner overlapped are marked busy (others
≥ 0.5 of 2 CPUs), the console and report.md name the busy host with its figures, a re-measure follows the
burner's end, and the winner is not threads=1 (on the quiet host it runs at about half the speed of two
threads here). Takes every core (a measuring test), but the Slurm and fake-worker tests, which take none, still run
beside it: "no stable config" with every config's reason ("none stable: …") is a legitimate verdict there (the rule of
every test with real workers, python_worker_common.tune_verdict), and then no config won, falsely or not; everything
else is checked all the same.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_worker_common import tune_verdict  # noqa: E402

build = sys.argv[1]
autotune = os.path.join(build, "bin", "autotune")
if os.cpu_count() < 2:
    print("one CPU: a burner cannot share the host with a trial here: skipped")
    sys.exit(77)
failures = []


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "run")
    env = {k: v for k, v in os.environ.items() if k != "AUTOTUNE_MAX_HOST_LOAD"}
    burner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 14\nwhile time.time() < end: pass"])
    start = time.time()
    t = subprocess.run([autotune, "tune", "--workload", "mlp", "--knobs", "threads=1,2", "--budget", "70s",
                        "--window-seconds", "0.5", "--out", run], capture_output=True, text=True, env=env, timeout=300)
    burner.wait()
    print(t.stdout[-3000:], t.stderr[-500:])
    finished, verdict = tune_verdict(t)
    check(finished, f"the tune finishes: a winner, or no stable config with each config's reason (exit {t.returncode}: {verdict})")
    db = sqlite3.connect(os.path.join(run, "journal.sqlite"))
    loads = []
    for (result,) in db.execute("SELECT result_json FROM trials ORDER BY id"):
        r = json.loads(result)
        if "host_load" in r:
            loads.append(r["host_load"]["other_cores"])
    db.close()
    check(len(loads) >= 3 and max(loads) >= 0.5, f"trials beside the burner recorded its load ({[round(x, 2) for x in loads]})")
    # Beside another program that stays (a burner of the suite's own), the host is never quiet again: then the guard's
    # answer is no winner, every config named as timed beside other programs.
    check(sum(1 for x in loads if x < 0.25) >= 2 or "none stable: " in verdict and "timed while other programs used the host" in verdict,
          f"trials after it recorded a quiet host, or the host stayed busy and no config won for it ({[round(x, 2) for x in loads]})")
    check("busy host: other programs used up to" in t.stdout, "the console names the busy host")
    report = open(os.path.join(run, "report.md")).read() if os.path.exists(os.path.join(run, "report.md")) else ""
    first = report.split("**Search:**")[0]
    check("> **Busy host:** other programs used up to" in first, "the report's first screen names the busy host")
    check("remeasure" in t.stdout, "a busy config was timed again")
    winner = verdict if verdict.startswith("winner:") else ""
    check(finished and "threads=1" not in winner, f"no false win: the winner, if any, is not the busy core's threads=1 ({verdict})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
