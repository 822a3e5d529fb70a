#!/usr/bin/env python3
"""The test suite run N times back to back, the way `make test` runs it, and what each test did: passes, failures and
its median time; the suite's wall time per run. For finding tests whose verdict depends on load or order, and for the
suite's measured time in docs/testing.md.

    scripts/suite-runs.py [--runs 3] [--build build] [--label REGEX | --tier fast] [--burner] [--out FILE.md]
                          [--json FILE.json] [-- CTEST_ARGS...]

Each run is `ctest --output-on-failure --no-tests=error -j 2×cores --resource-spec-file test-resources.json
--timeout 900` in the build folder (make test's own line, read from the Makefile so the two cannot drift apart),
with --output-junit for the per-test figures. --tier fast runs `make check-fast`'s selection instead. --burner keeps
one core busy with a spinning process for the whole of every run (what a shared CI machine does to the suite). The
table is Markdown: every test that failed at least once first, then the rest by median time, longest first.
"""
import argparse
import json
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_line(target):
    """The ctest arguments of a Makefile target's ctest line (its $(...) expanded for this machine)."""
    text = open(os.path.join(ROOT, "Makefile")).read()
    m = re.search(rf"^{re.escape(target)}:.*?\n((?:\t.*\n)+)", text, re.M)
    if not m:
        sys.exit(f"suite-runs: no '{target}' target in the Makefile")
    line = next((l for l in m.group(1).splitlines() if "ctest" in l), "")
    jobs = os.cpu_count() or 1
    line = line.replace("$$(( 2 * $(JOBS) ))", str(2 * jobs)).replace("$(JOBS)", str(jobs))
    args = line[line.index("ctest") + len("ctest"):].split()
    if any("$" in a for a in args):
        sys.exit(f"suite-runs: cannot read the Makefile's '{target}' line: {line.strip()}")
    return args


def spin(stop_at):
    while time.time() < stop_at:
        pass


def leftovers():
    """What a run left on the machine that only its tests start: Slurm daemons and job steps, munged, the test
    clusters' network namespaces and links (at<PORT>…)."""
    def out(args):
        try:
            return subprocess.run(args, capture_output=True, text=True).stdout
        except OSError:
            return ""
    left = [l.strip() for l in out(["pgrep", "-a", "slurmctld|slurmd|slurmstepd|munged"]).splitlines()]
    left += [n for n in out(["ip", "netns", "list"]).split() if re.fullmatch(r"at\d+n\d+", n)]
    left += [l.split(":")[1].strip().split("@")[0] for l in out(["ip", "-o", "link"]).splitlines()
             if re.search(r"^\d+: at\d+", l)]
    return left


def run_once(build, ctest_args, junit, burner):
    burn = None
    if burner:
        burn = multiprocessing.Process(target=spin, args=(time.time() + 24 * 3600,), daemon=True)
        burn.start()
    t0 = time.time()
    p = subprocess.run(["ctest", *ctest_args, "--output-junit", junit], cwd=build, capture_output=True, text=True)
    wall = time.time() - t0
    if burn:
        burn.terminate()
        burn.join()
    total = re.search(r"Total Test time \(real\) =\s*([\d.]+) sec", p.stdout)
    tests = {}
    try:
        for case in ET.parse(junit).getroot().iter("testcase"):
            status = case.get("status", "")
            failed = status == "fail" or case.find("failure") is not None
            skipped = status in ("notrun", "disabled") or case.find("skipped") is not None
            tests[case.get("name")] = {"time": float(case.get("time", 0)), "status": "fail" if failed else "skip" if skipped else "pass"}
    except (OSError, ET.ParseError) as e:
        print(f"suite-runs: no JUnit output ({e})", file=sys.stderr)
    return {"rc": p.returncode, "wall": wall, "total": float(total.group(1)) if total else wall, "tests": tests,
            "left": leftovers(),
            "failed_output": p.stdout[-6000:] if p.returncode else ""}


def costed_tests():
    """The tests tests/CMakeLists.txt gives a COST (its `foreach(cost name:seconds …)` list): the order of a fresh build."""
    text = open(os.path.join(ROOT, "tests/CMakeLists.txt")).read()
    block = re.search(r"foreach\(cost (.*?)\)", text, re.S)
    return set(re.findall(r"([A-Za-z0-9_-]+):[0-9]+", block.group(1))) if block else set()


def table(runs, args):
    names = sorted({n for r in runs for n in r["tests"]})
    rows = []
    for n in names:
        seen = [r["tests"][n] for r in runs if n in r["tests"]]
        rows.append((n, sum(s["status"] == "pass" for s in seen), sum(s["status"] == "fail" for s in seen),
                     sum(s["status"] == "skip" for s in seen), statistics.median(s["time"] for s in seen)))
    rows.sort(key=lambda r: (-r[2], -r[4]))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    out = [f"{len(runs)} run(s) of `{'make check-fast' if args.tier == 'fast' else 'make test'}`'s ctest line"
           f"{' beside a CPU burner on one core' if args.burner else ''}, {time.strftime('%Y-%m-%d')}, "
           f"{os.cpu_count()} cores ({cpu}), {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB",
           "",
           (f"ctest arguments added: `{' '.join(args.extra)}`" if args.extra else "the whole suite"), "",
           "| run | exit | tests | failed | Total Test time (s) | left behind (Slurm, munged, test namespaces) |",
           "|---:|---:|---:|---:|---:|---|"]
    for i, r in enumerate(runs, 1):
        out.append(f"| {i} | {r['rc']} | {len(r['tests'])} | {sum(t['status'] == 'fail' for t in r['tests'].values())} | "
                   f"{r['total']:.0f} | {', '.join(r.get('left') or []) or 'nothing'} |")
    out += ["", f"Median Total Test time: {statistics.median(r['total'] for r in runs):.0f} s", "",
            "| test | passed | failed | skipped | median s |", "|---|---:|---:|---:|---:|"]
    out += [f"| {n} | {p} | {f} | {s} | {t:.1f} |" for n, p, f, s, t in rows]
    # A long test without a COST starts last on a fresh build folder (CI's clean clone) and becomes the suite's tail.
    uncosted = [f"{n} ({t:.0f} s)" for n, _, _, _, t in rows if t >= 30 and n not in costed_tests()]
    if uncosted:
        out += ["", "Tests of 30 s or more without a `COST` in tests/CMakeLists.txt (a fresh build starts them last): "
                + ", ".join(uncosted)]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tier", choices=["all", "fast"], default="all", help="fast: make check-fast's selection")
    ap.add_argument("--burner", action="store_true", help="keep one core busy during every run")
    ap.add_argument("--out", help="write the Markdown table here too")
    ap.add_argument("--json", help="write every run's per-test figures here")
    ap.add_argument("extra", nargs="*", help="more ctest arguments (after --), e.g. -R slurm")
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit(f"suite-runs: --runs {a.runs}: allowed: 1 or more")
    if not os.path.isfile(os.path.join(a.build, "CTestTestfile.cmake")):
        sys.exit(f"suite-runs: {a.build} is not a configured build folder (make build)")
    ctest_args = make_line("check-fast" if a.tier == "fast" else "test") + a.extra
    runs = []
    for i in range(a.runs):
        r = run_once(a.build, ctest_args, os.path.join(a.build, f"suite-run-{i + 1}.xml"), a.burner)
        failed = sorted(n for n, t in r["tests"].items() if t["status"] == "fail")
        print(f"suite-runs: run {i + 1}/{a.runs}: exit {r['rc']}, {len(r['tests'])} tests, Total Test time {r['total']:.0f} s"
              f"{', failed: ' + ', '.join(failed) if failed else ''}; left behind: {r['left'] or 'nothing'}", flush=True)
        if r["failed_output"]:
            print(r["failed_output"], flush=True)
        runs.append(r)
    text = table(runs, a)
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    if a.json:
        json.dump([{k: v for k, v in r.items() if k != "failed_output"} for r in runs], open(a.json, "w"), indent=1)
    sys.exit(0 if all(r["rc"] == 0 for r in runs) else 1)


if __name__ == "__main__":
    main()
