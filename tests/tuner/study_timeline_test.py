#!/usr/bin/env python3
"""bench/search_study.py's timeline step and its report section, end to end on the fake worker replaying
the committed gpt-mini landscape (no real training): the step writes a run per config and repetition with
the host's counters, resumes without re-running what it has, and `report` prints the long-run table and
the tau ceiling. A smoke test of the study's code paths; the figures themselves come from real runs.
  study_timeline_test.py AUTOTUNE FAKE_WORKER SOURCE_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

autotune, fake, src, work = sys.argv[1:5]
study = os.path.join(src, "bench", "search_study.py")
real = os.path.join(src, "docs", "search-runs", "study", "gpt-mini")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
for f in ("grid.json", "landscape.json", "fidelity.json"):
    shutil.copy(os.path.join(real, f), work)
env = dict(os.environ, AUTOTUNE_WORKER=fake, FAKE_LANDSCAPE=os.path.join(work, "landscape.json"))
cmd = [sys.executable, study, "timeline", "--autotune", autotune, "--out", work, "--reps", "2", "--windows", "12"]
failures = []
r = subprocess.run(cmd, env=env, capture_output=True, text=True)
print(r.stderr[-2000:])
if r.returncode != 0:
    sys.exit(f"FAIL timeline exited {r.returncode}")
t = json.load(open(os.path.join(work, "timeline.json")))
if len(t["runs"]) != 6:  # best two, a middle one, 2 repetitions each
    failures.append(f"{len(t['runs'])} runs, expected 6")
for run in t["runs"]:
    if run["status"] != "ok" or len(run["windows"]) != 12:
        failures.append(f"{run['key']} rep {run['rep']}: {run['status']}, {len(run['windows'])} windows")
    if run["host"] is not None and not 0 <= run["host"]["steal_share"] <= 1:
        failures.append(f"steal share {run['host']['steal_share']}")
before = open(os.path.join(work, "timeline.json")).read()
r = subprocess.run(cmd, env=env, capture_output=True, text=True)  # resumes: nothing left to run
if r.returncode != 0 or open(os.path.join(work, "timeline.json")).read() != before:
    failures.append("a second timeline run changed timeline.json (it should resume with nothing to do)")
rep = subprocess.run([sys.executable, study, "report", work], capture_output=True, text=True)
if rep.returncode != 0:
    failures.append(f"report exited {rep.returncode}: {rep.stderr[-1000:]}")
for needle in ("Long runs (6 fresh trials of 12 windows", "τ-b against single 10× runs", "| config | run | first 3 windows"):
    if needle not in rep.stdout:
        failures.append(f"report lacks {needle!r}")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
