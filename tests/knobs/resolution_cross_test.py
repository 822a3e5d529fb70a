#!/usr/bin/env python3
"""The knob rules have one home (knobs/resolve.cpp) and both workers apply its answer.

    resolution_cross_test.py BUILD_DIR SOURCE_DIR

For every catalog knob (`autotune knobs --json`) and each of its values, set alone (and, for the data-parallel knobs,
beside ranks=2), on a CPU and on a CUDA target, for a convolutional model of blocks on real data and for a plain model
on synthetic data, and for both workers (which knobs each applies is the catalog's): autotune-resolve answers, and

  - the Python worker's settings (pyworker/autotune_pyworker/settings.py) hold every catalog knob, exactly the
    resolution's value and type, with the resolution's skips as its own;
  - a knob the Python worker does not apply falls back to the catalog's value with a reason, never silently;
  - each answer is consistent: an unskipped knob runs at the value asked, a skipped one at its default, and resolving
    the effective config again skips nothing.

And the Python worker keeps no rule of its own: settings.py holds no knob default, domain value or refusal reason
(none of the catalog's choice values appears in it as a literal); it parses no --model-input / --model-target (their
grammar is knobs/model_spec.h's, asked through autotune-resolve); and its converge stopping rule (curve.py, the one
piece of arithmetic it must run itself, at every loss read) gives the C++ rule's numbers on random curves. Needs no
torch: the modules it imports import none.
"""
import itertools
import json
import math
import os
import random
import re
import subprocess
import sys

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(source, "pyworker"))
from autotune_pyworker import curve, settings  # noqa: E402

os.environ["AUTOTUNE_RESOLVER"] = os.path.join(build, "bin", "autotune-resolve")
catalog = json.loads(subprocess.run([os.path.join(build, "bin", "autotune"), "knobs", "--json"], capture_output=True,
                                    text=True, check=True).stdout)
failures, cases = [], 0


def fail(msg):
    if len(failures) < 30:
        print("FAIL:", msg)
    failures.append(msg)


def workload(trainer, conv):
    w = {"name": "m", "default_batch_size": 32, "conv_model": conv, "block_model": conv, "image_data": False,
         "task_data": conv, "loss": "cross_entropy"}
    if trainer == "python":
        w.update(trainer="python")  # it names no knobs: which it applies is the catalog's
    return w


def env(cuda):
    return {"torch_version": "2.11.0", "cuda_compiled": "13.0", "cuda_available": cuda, "device_count": 2 if cuda else 0,
            "device_name": "GPU" if cuda else "CPU", "cpu_cores": 16, "hostname": "h"}


def plan(config):
    return {"schema": "autotune.plan/1", "workload": "m", "device": "auto", "seed": 0, "defaults_of": "python",
            "config": config}


values_of = {k["name"]: [str(v) for v in k.get("values", [])] for k in catalog}
# The data-parallel knobs, as the catalog says where each applies ("ranks > 1 …"): also resolved beside ranks=2.
data_parallel = {k["name"] for k in catalog if k["applies"].startswith("ranks > 1")}
if not data_parallel:
    fail("the catalog names no knob that applies at ranks > 1: the data-parallel cases would not run")
for k in catalog:
    name = k["name"]
    for value, trainer, cuda, conv in itertools.product(values_of[name], ("python", "cpp"), (False, True), (True, False)):
        configs = [{name: value}]
        if name in data_parallel:
            configs.append({name: value, "ranks": "2"})
        for config in configs:
            cases += 1
            where = f"{name}={value} {trainer} {'cuda' if cuda else 'cpu'} {'conv+data' if conv else 'plain'} {config}"
            try:
                r = settings.resolve(plan(config), workload(trainer, conv), env(cuda))
            except Exception as e:  # noqa: BLE001 — every case must resolve
                fail(f"{where}: autotune-resolve: {e}")
                continue
            got, skipped = r["settings"], {s["knob"]: s["reason"] for s in r["skipped"]}
            if trainer == "python":
                s, their_skipped = settings.settings_of(r)
                for f in values_of:
                    v = vars(s).get(f)
                    if f not in got or got[f] != v or type(got[f]) is not type(v):
                        fail(f"{where}: the Python worker's {f} is {v!r}, the resolution's {got.get(f)!r}")
                if their_skipped != r["skipped"]:
                    fail(f"{where}: the Python worker's skips differ from the resolution's")
                if name not in r["applicable"] and value != str(got[name]).lower() and name not in skipped:
                    fail(f"{where}: a knob the Python worker does not apply ran at {got[name]!r} without a reason")
            asked = str(got[name]).lower() if not isinstance(got[name], bool) else ("true" if got[name] else "false")
            ran_as_asked = asked == value or (value in ("on", "off") and asked == {"on": "true", "off": "false"}[value])
            # (a knob that does not apply here, set to its own default, is reported as skipped and runs at it: fine)
            if name in skipped and ran_as_asked and not skipped[name].endswith(f"; ran with {value}"):
                fail(f"{where}: skipped ({skipped[name]}) but ran at the value asked")
            if name not in skipped and not ran_as_asked:
                fail(f"{where}: not skipped, but runs at {got[name]!r}")
            again = settings.resolve(plan(r["effective"]), workload(trainer, conv), env(cuda))
            if again["skipped"]:
                fail(f"{where}: resolving the effective config {r['effective']} again skips {again['skipped']}")

# No rule of its own: no catalog choice value as a literal in settings.py.
text = open(os.path.join(source, "pyworker", "autotune_pyworker", "settings.py"), encoding="utf-8").read()
literals = set(re.findall(r"\"([^\"\n]*)\"|'([^'\n]*)'", text))
literals = {a or b for a, b in literals}
domain = {v for k in catalog if not str(k.get("domain", "")).startswith("integer") for v in values_of[k["name"]]} - {k["name"] for k in catalog}
found = sorted(domain & literals)
if found:
    fail(f"settings.py spells knob values itself: {found} (the rules' one home is knobs/knob.cpp and knobs/resolve.cpp)")

# The model flags' grammar has one home too (knobs/model_spec.h): the Python worker asks autotune-resolve for the spec
# JSON of --model-input / --model-target, and parses neither itself.
flags = settings.model_flags("B,64:int64:512;B,3,8,8:float32:0..1", "classes:512:B,64")
want = {"inputs": [{"name": "input0", "shape": ["B", 64], "dtype": "int64", "vocab": 512},
                   {"name": "input1", "shape": ["B", 3, 8, 8], "dtype": "float32", "range": [0.0, 1.0]}],
        "target": {"kind": "classes", "classes": 512, "shape": ["B", 64]}}
if flags != want:
    fail(f"model_flags: {flags} (want {want})")
if settings.model_flags("", "regression:B,10") != {"target": {"kind": "regression", "shape": ["B", 10]}}:
    fail("model_flags: a target alone")
for bad, says in (("B,3:float8", "float8"), ("3,B:float32", "B"), ("B,128:int64", "vocabulary")):
    try:
        settings.model_flags(bad, "")
        fail(f"model_flags {bad}: accepted")
    except settings.Refused as e:
        if "--model-input" not in str(e) or says not in str(e) or "\n" in str(e):
            fail(f"model_flags {bad}: refused as {e!r}, not in one line naming the flag and '{says}'")
# The converge stopping rule: written twice (the Python worker decides at every loss read, too often to ask another
# program), so held to the C++ arithmetic here on random curves — steps of changing size (a batch ramp), a loss that
# falls with noise, a non-finite step in some.
rng = random.Random(7)
curves = 0
for trial in range(60):
    points, samples, seconds = [], 0, 0.0
    for step in range(rng.randint(1, 80)):
        samples += rng.choice((8, 16, 16, 32, 64))
        seconds += rng.uniform(0.01, 0.1)
        points.append([samples, seconds, 3.0 * math.exp(-samples / 400) + rng.uniform(-0.3, 0.3)])
    if trial % 7 == 3:
        points[rng.randrange(len(points))][2] = float("nan")
    window, target = rng.choice((16, 64, 200, 1000)), rng.uniform(0.5, 3.0)
    cpp = settings.ask({"loss_curve": {"points": [[s, t, None if math.isnan(v) else v] for s, t, v in points],
                                        "window": window, "target": target}})
    mine = [curve.smoothed_loss(points, i, window) for i in range(len(points))]
    for i, (a, b) in enumerate(zip(mine, cpp["smoothed"])):
        if (b is None) != math.isnan(a) or (b is not None and abs(a - b) > 1e-9 * max(1.0, abs(b))):
            fail(f"curve {trial}: smoothed loss at point {i} (window {window}): Python {a}, C++ {b}")
            break
    first = next((p[0] for i, p in enumerate(points) if curve.reached_target(points, i, target, window)), -1)
    if first != cpp["reached_samples"]:
        fail(f"curve {trial}: the target {target:.3f} (window {window}) is reached at {first} samples in Python, "
             f"{cpp['reached_samples']} in C++")
    curves += 1

package = os.path.join(source, "pyworker", "autotune_pyworker")
for f in [os.path.join(package, f) for f in sorted(os.listdir(package)) if f.endswith(".py")] + [
        os.path.join(source, "scripts", "export_model.py")]:
    if re.search(r"def parse_(input|target|shape)\b|\.split\(\"\.\.\"\)", open(f).read()):
        fail(f"{f} parses the model flags itself (their grammar's one home is knobs/model_spec.h)")

print(f"{cases} cases over {len(catalog)} knobs, 2 workers, CPU and CUDA, 2 kinds of model; the model flags' grammar; "
      f"{curves} loss curves against the C++ stopping rule: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
