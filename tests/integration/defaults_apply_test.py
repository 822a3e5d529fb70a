#!/usr/bin/env python3
"""One default per knob per frontend, and `apply --from-run`.

    defaults_apply_test.py BUILD_DIR

1. `autotune trial` with no --set trains PyTorch 2.11's defaults for a plain Python script, as a tune's baseline
   does: zero_grad set_to_none (the worker's proof: grads undefined after zero_grad), AdamW's per-parameter loop
   on the CPU; --set still wins.
2. `autotune apply --from-run DIR` prints the run's winner exactly as its report.md does (the Python block), and
   `--config N` another row of the report's table; a number beyond the table is one line, exit 2.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

build = sys.argv[1]
autotune = os.path.join(build, "bin", "autotune")
fake = os.path.join(build, "bin", "fake-worker")
failures = []


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


def applied(args):
    r = subprocess.run([autotune, "trial", "--json", "--windows", "3", "--window-seconds", "0.05"] + args,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    return {a["knob"]: (a["requested"], a["observed"]) for a in json.loads(r.stdout).get("applied", [])}


a = applied([])
check(a.get("zero_grad", ("",))[0] == "none" and "undefined" in a["zero_grad"][1],
      f"trial with no --set: zero_grad none, PyTorch's default since 2.0 ({a.get('zero_grad')})")
a = applied(["--set", "zero_grad=zeros"])
check(a.get("zero_grad", ("",))[0] == "zeros", f"--set zero_grad=zeros is what runs ({a.get('zero_grad')})")
a = applied(["--frontend", "libtorch"])
check(a.get("zero_grad", ("",))[0] == "none", f"--frontend libtorch: zero_grad none too (Optimizer::zero_grad(true)) ({a.get('zero_grad')})")

with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "run")
    r = subprocess.run([autotune, "tune", "--worker", fake, "--budget", "20s", "--knobs", "batch_size=64,256", "threads=default,2",
                        "--objective", "throughput", "--out", run], capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == 0, f"a fake-worker tune picks a winner ({r.stderr.strip()[-200:]})")
    md = open(os.path.join(run, "report.md")).read()
    rows = re.findall(r"^\| (\d+) \| `([^`]*)` \|", md, re.M)
    block = re.search(r"Python:\n\n```python\n(.*?)```", md, re.S)
    ap = subprocess.run([autotune, "apply", "--from-run", run], capture_output=True, text=True)
    if block is None:  # the winner is the baseline: both say there is nothing to change
        check(ap.returncode == 0 and "nothing to change" in ap.stdout and "nothing to change" in md,
              f"apply --from-run of a run won by the baseline: nothing to change, as the report says ({ap.stdout.strip()})")
    else:
        body = ap.stdout.split("\n", 1)[1] if "\n" in ap.stdout else ""
        check(ap.returncode == 0 and body == block.group(1),
              "apply --from-run prints the report's Python snippet of the winner, line for line")
    # the winner's row, by number: the same snippet again
    win_row = next((n for n, c in rows if "**winner**" in md.split(f"| {n} | `{c}`")[1].split("\n")[0]), None)
    if win_row:
        same = subprocess.run([autotune, "apply", "--from-run", run, "--config", win_row], capture_output=True, text=True)
        check(same.stdout == ap.stdout, f"apply --config {win_row} (the winner's row) prints what apply --from-run does")
    other = next((n for n, c in rows if c != "(baseline)" and "**winner**" not in md.split(f"| {n} | `{c}`")[1].split("\n")[0]), None)
    if other:
        ap2 = subprocess.run([autotune, "apply", "--from-run", run, "--config", other, "--lang", "cpp"], capture_output=True, text=True)
        want = dict(x.split("=") for x in dict(rows)[other].split())
        check(ap2.returncode == 0 and all(f"{k}={v}" in ap2.stdout.splitlines()[0] for k, v in want.items()),
              f"apply --config {other}: that row's config ({dict(rows)[other]}): {ap2.stdout.splitlines()[:1]}")
    bad = subprocess.run([autotune, "apply", "--from-run", run, "--config", str(len(rows) + 5)], capture_output=True, text=True)
    check(bad.returncode == 2 and bad.stderr.count("\n") == 1 and f"allowed: 1..{len(rows)}" in bad.stderr,
          f"--config beyond the table: one line, exit 2 ({bad.stderr.strip()})")
    both = subprocess.run([autotune, "apply", "--from-run", run, "--set", "threads=1"], capture_output=True, text=True)
    check(both.returncode == 2 and "give the config once" in both.stderr, f"--from-run with --set: refused ({both.stderr.strip()})")
    h = subprocess.run([autotune, "apply", "--help"], capture_output=True, text=True).stdout
    check("--window-seconds" not in h and "--trial-timeout" not in h and "--from-run" in h and "--model" in h,
          "apply --help lists what changes a snippet, not how a trial is measured")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
