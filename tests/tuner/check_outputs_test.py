#!/usr/bin/env python3
"""Every output of `autotune check` read by the reader it is for: JUnit by xml.etree, results.json the
way Google Benchmark's tools/compare.py pairs a baseline and a contender, the github-action-benchmark
and Bencher inputs by their documented shapes, check.html by html.parser, the GitHub annotations and
job summary as GitHub reads them — with a candidate whose worker path is hostile (<, >, &, quotes, |).

    check_outputs_test.py AUTOTUNE FAKE_WORKER SCRATCH_DIR
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

autotune, fake, scratch = sys.argv[1:4]
shutil.rmtree(scratch, ignore_errors=True)
hostile_dir = os.path.join(scratch, 'a<b>&"c\'|d')
os.makedirs(hostile_dir)
slow = os.path.join(hostile_dir, 'slow "<x>"&.sh')
with open(slow, "w") as f:
    f.write(f"#!/bin/sh\nFAKE_SCALE=0.9 exec '{fake}' \"$@\"\n")
os.chmod(slow, 0o755)
summary_file = os.path.join(scratch, "step-summary.md")
out = os.path.join(scratch, "check")
env = dict(os.environ, FAKE_SLEEP="0", FAKE_CV="0.005", GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=summary_file)
p = subprocess.run([autotune, "check", "--worker", fake, "--candidate-worker", slow, "--reps", "6", "--out", out, "--summary"],
                   env=env, capture_output=True, text=True)
failures = []
def expect(cond, what):
    if not cond:
        failures.append(what)

expect(p.returncode == 1, f"exit status {p.returncode} (want 1: regression)\n{p.stdout}\n{p.stderr}")

# JUnit: xml.etree parses it; the regression is a <failure>; properties only on the testsuite.
suite = ET.parse(os.path.join(out, "junit.xml")).getroot().find("testsuite")
expect(suite is not None and suite.get("name") == "autotune.check", "junit: testsuite autotune.check")
cases = {c.get("name"): c for c in suite.findall("testcase")}
expect("throughput" in cases and cases["throughput"].find("failure") is not None, "junit: throughput testcase has a <failure>")
expect(suite.get("failures") == "1", f"junit: failures={suite.get('failures')}")
props = {q.get("name"): q.get("value") for q in suite.find("properties")}
expect(props.get("candidate") == "worker " + slow, f"junit: the hostile path round-trips: {props.get('candidate')!r}")
expect(all(c.find("properties") is None for c in cases.values()), "junit: no testcase-level properties")

# results.json as compare.py reads it: iterations of the baseline and contender names, real_time (lower is better).
res = json.load(open(os.path.join(out, "results.json")))
runs = {}
for b in res["benchmarks"]:
    if b["run_type"] == "iteration":
        runs.setdefault(b["name"], []).append(b["real_time"])
# Both sides train mlp with nothing set: the worker's own defaults, whose zero_grad is not PyTorch's (the name says so).
a, bb = runs.get("check/A/mlp/zero_grad=zeros", []), runs.get("check/B/mlp/zero_grad=zeros", [])
expect(a and bb, f"results.json: names {sorted(runs)}")
expect(len(a) == 6 and len(bb) == 6, f"results.json: 6 repetitions per side, got {len(a)} and {len(bb)}")
if a and bb:
    change = statistics.median(bb) / statistics.median(a) - 1  # compare.py's relative time difference
    expect(0.08 < change < 0.15, f"results.json: contender ~11% more time per sample, got {change:.3f}")
aggs = {b["aggregate_name"] for b in res["benchmarks"] if b["run_type"] == "aggregate"}
expect(aggs == {"mean", "median", "stddev", "cv"}, f"results.json: aggregates {aggs}")
expect("context" in res and res["context"].get("autotune_verdict") == "regression", "results.json: context")

# github-action-benchmark: arrays of {name, unit, value, range?, extra?}.
for name in ("gab-throughput.json", "gab-memory.json"):
    data = json.load(open(os.path.join(out, name)))
    expect(isinstance(data, list) and data and all({"name", "unit", "value"} <= set(d) for d in data), f"{name}: shape")
    expect(all(isinstance(d["value"], (int, float)) for d in data), f"{name}: numeric values")

# Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}.
bmf = json.load(open(os.path.join(out, "bmf.json")))
for bench, measures in bmf.items():
    for slug, m in measures.items():
        expect(m["lower_value"] <= m["value"] <= m["upper_value"] or slug == "peak-memory",
               f"bmf: {bench}/{slug} value within its bounds: {m}")
expect({"throughput", "peak-memory"} <= set(next(iter(bmf.values()))), "bmf: both measures")

# check.html: well-formed enough for html.parser, the hostile path only as text, no script anywhere.
class Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
    def handle_data(self, data):
        self.text.append(data)
page = open(os.path.join(out, "check.html")).read()
c = Collect()
c.feed(page)
expect("x" not in c.tags and "b" not in c.tags, "html: the hostile name made no element")
expect("script" not in c.tags, "html: no scripts")
expect(any(slow in t for t in c.text) or slow in "".join(c.text), "html: the hostile path shows as text")
expect("svg" in c.tags and "circle" in c.tags, "html: the distributions are drawn")

# Annotations: one line each, GitHub's escaping; the job summary under 1 MiB.
notes = [l for l in p.stdout.splitlines() if l.startswith("::")]
expect(any(l.startswith("::error title=autotune check%3A throughput regression") for l in notes), f"annotations: {notes}")
md = open(summary_file).read()
expect(md.startswith("# autotune check — mlp: ❌ regression") and len(md.encode()) < 1 << 20, "step summary: check.md appended")
import re
rows = [l for l in md.split("## Sides")[1].splitlines() if l.startswith("| A (") or l.startswith("| B (")]
expect(len(rows) == 2 and all(len(re.findall(r"(?<!\\)\|", r)) == 7 for r in rows), f"md: the hostile | is escaped in table cells: {rows}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"check outputs: every reader agrees ({len(notes)} annotation(s), {len(a)}+{len(bb)} repetitions)")
