#!/usr/bin/env python3
"""The test suite run N times back to back, the way `make test` runs it, and what each test did: passes, failures and
its median time; the suite's wall time per run. For finding tests whose verdict depends on load or order, and for the
suite's measured time in docs/testing.md.

    scripts/suite-runs.py [--runs 3] [--build build] [--tier fast] [--burner] [--cpu] [--out FILE.md]
                          [--json FILE.json] [-- CTEST_ARGS...]

Each run is `ctest --output-on-failure --no-tests=error -j 3×cores --resource-spec-file test-resources.json
--timeout 900` in the build folder (make test's own line, read from the Makefile so the two cannot drift apart),
with --output-junit for the per-test figures. --tier fast runs `make check-fast`'s selection instead. --burner keeps
one core busy with a spinning process for the whole of every run (what a shared CI machine does to the suite). --cpu
adds each test's CPU seconds (sampled from /proc, its process tree) and the suite's total: on a machine the suite saturates, the suite's
time is its CPU over the cores, and this says where that CPU goes. The
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
import threading
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
    line = re.sub(r"\$\$\(\( *(\d+) *\* *\$\(JOBS\) *\)\)", lambda k: str(int(k.group(1)) * jobs), line).replace("$(JOBS)", str(jobs))
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


class CpuSampler(threading.Thread):
    """The CPU seconds each test used: every second, each process ctest started (a test's own command) and every live
    process below it are read from /proc: their user + system time and that of the children they have reaped (utime,
    stime, cutime, cstime), summed over the tree (a reaped child's time has moved into its parent's: nothing is counted
    twice). A test's figure is the largest sum seen, so it misses at most its last second and what left its tree
    (daemons that detached, e.g. a Slurm cluster's). Sampling, not exact: for finding where the suite's CPU goes on a
    machine it saturates."""

    def __init__(self, ctest_pid):
        super().__init__(daemon=True)
        self.ctest_pid, self.stop, self.seen = ctest_pid, threading.Event(), {}
        self.tick = os.sysconf("SC_CLK_TCK")

    @staticmethod
    def stat(pid):
        """(ppid, CPU ticks of it and its reaped children, start time) from /proc/PID/stat; None when it is gone."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # fields[0] is the state, stat's third field
            return int(fields[1]), sum(int(x) for x in fields[11:15]), fields[19]
        except (OSError, IndexError, ValueError):
            return None

    def sample(self):
        procs = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                st = self.stat(d)
                if st:
                    procs[int(d)] = st
        children = {}
        for pid, (ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        for root in children.get(self.ctest_pid, []):
            total, todo = 0, [root]
            while todo:
                pid = todo.pop()
                total += procs[pid][1]
                todo.extend(children.get(pid, []))
            key = (root, procs[root][2])
            prev = self.seen.get(key)
            if prev is None:
                try:
                    with open(f"/proc/{root}/cmdline", "rb") as f:
                        argv = tuple(a.decode(errors="replace") for a in f.read().split(b"\0") if a)
                except OSError:
                    argv = ()
                prev = (0.0, argv)
            self.seen[key] = (max(prev[0], total / self.tick), prev[1])

    def run(self):
        while not self.stop.wait(1.0):
            self.sample()

    def by_test(self, commands):
        """CPU seconds per test name, matching each process's argv to the test's command (ctest --show-only)."""
        out = {}
        for cpu, argv in self.seen.values():
            name = commands.get(argv) or "unmatched: " + " ".join(argv)[:80]
            out[name] = out.get(name, 0.0) + cpu
        return out


def test_commands(build, ctest_args):
    """argv -> test name for the tests these ctest arguments select."""
    keep = [a for a in ctest_args if not a.startswith("--output") and a not in ("--no-tests=error",)]
    p = subprocess.run(["ctest", "--show-only=json-v1", *keep], cwd=build, capture_output=True, text=True)
    try:
        return {tuple(t["command"]): t["name"] for t in json.loads(p.stdout)["tests"] if t.get("command")}
    except (ValueError, KeyError):
        return {}


def run_once(build, ctest_args, junit, burner, cpu=False):
    burn = None
    if burner:
        burn = multiprocessing.Process(target=spin, args=(time.time() + 24 * 3600,), daemon=True)
        burn.start()
    commands = test_commands(build, ctest_args) if cpu else {}  # before the run: ctest rewrites Testing/Temporary's log
    t0, times0 = time.time(), os.times()
    proc = subprocess.Popen(["ctest", *ctest_args, "--output-junit", junit], cwd=build, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    sampler = CpuSampler(proc.pid) if cpu else None
    if sampler:
        sampler.start()
    stdout = proc.communicate()[0]
    p = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, "")
    wall = time.time() - t0
    times1 = os.times()
    if sampler:
        sampler.stop.set()
        sampler.join()
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
    if sampler:
        for name, secs in sampler.by_test(commands).items():
            tests.setdefault(name, {"time": 0.0, "status": "other"})["cpu"] = secs
    return {"rc": p.returncode, "wall": wall, "total": float(total.group(1)) if total else wall, "tests": tests,
            "left": leftovers(),
            # ctest's own reaped children: every test's process tree that was waited for (the burner is not one)
            "cpu": (times1.children_user + times1.children_system) - (times0.children_user + times0.children_system)
            if not burner else None,
            "failed_output": p.stdout[-6000:] if p.returncode else ""}


def tests_run(r):
    """How many tests a run ran (not the CPU sampler's rows for processes no test claims)."""
    return sum(t["status"] != "other" for t in r["tests"].values())


def costed_tests():
    """The tests tests/CMakeLists.txt gives a COST (its `foreach(cost name:seconds …)` list): the order of a fresh build."""
    text = open(os.path.join(ROOT, "tests/CMakeLists.txt")).read()
    block = re.search(r"foreach\(cost (.*?)\)", text, re.S)
    return set(re.findall(r"([A-Za-z0-9_-]+):[0-9]+", block.group(1))) if block else set()


def table(runs, args):
    names = sorted({n for r in runs for n in r["tests"]})
    rows = []
    has_cpu = any("cpu" in t for r in runs for t in r["tests"].values())
    for n in names:
        seen = [r["tests"][n] for r in runs if n in r["tests"]]
        cpus = [s["cpu"] for s in seen if "cpu" in s]
        rows.append((n, sum(s["status"] == "pass" for s in seen), sum(s["status"] == "fail" for s in seen),
                     sum(s["status"] == "skip" for s in seen), statistics.median(s["time"] for s in seen),
                     statistics.median(cpus) if cpus else None))
    rows.sort(key=lambda r: (-r[2], -r[4], -(r[5] or 0)))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    out = [f"{len(runs)} run(s) of `{'make check-fast' if args.tier == 'fast' else 'make test'}`'s ctest line"
           f"{' beside a CPU burner on one core' if args.burner else ''}, {time.strftime('%Y-%m-%d')}, "
           f"{os.cpu_count()} cores ({cpu}), {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB",
           "",
           (f"ctest arguments added: `{' '.join(args.extra)}`" if args.extra else "the whole suite"), "",
           "| run | exit | tests | failed | Total Test time (s) | left behind (Slurm, munged, test namespaces) |",
           "|---:|---:|---:|---:|---:|---|"]
    for i, r in enumerate(runs, 1):
        out.append(f"| {i} | {r['rc']} | {tests_run(r)} | {sum(t['status'] == 'fail' for t in r['tests'].values())} | "
                   f"{r['total']:.0f} | {', '.join(r.get('left') or []) or 'nothing'} |")
    out += ["", f"Median Total Test time: {statistics.median(r['total'] for r in runs):.0f} s"]
    cpu_runs = [r["cpu"] for r in runs if r.get("cpu") is not None]
    if has_cpu and cpu_runs:
        out += ["", f"CPU seconds the tests used (ctest's waited-for children, user + system), median of runs: "
                    f"{statistics.median(cpu_runs):.0f} s on {os.cpu_count()} cores; per test, sampled each second "
                    "from /proc over its process tree (daemons that left the tree are not counted)"]
    out += ["", "| test | passed | failed | skipped | median s |" + (" median CPU s |" if has_cpu else ""),
            "|---|---:|---:|---:|---:|" + ("---:|" if has_cpu else "")]
    out += [f"| {n} | {p} | {f} | {s} | {t:.1f} |" + (f" {c:.0f} |" if c is not None else " |" if has_cpu else "")
            for n, p, f, s, t, c in rows]
    # A long test without a COST starts last on a fresh build folder (CI's clean clone) and becomes the suite's tail.
    uncosted = [f"{n} ({t:.0f} s)" for n, _, _, _, t, _ in rows if t >= 30 and n not in costed_tests()]
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
    ap.add_argument("--cpu", action="store_true", help="also measure each test's CPU seconds (sampled from /proc)")
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
        r = run_once(a.build, ctest_args, os.path.join(a.build, f"suite-run-{i + 1}.xml"), a.burner, a.cpu)
        failed = sorted(n for n, t in r["tests"].items() if t["status"] == "fail")
        print(f"suite-runs: run {i + 1}/{a.runs}: exit {r['rc']}, {tests_run(r)} tests, Total Test time {r['total']:.0f} s"
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
