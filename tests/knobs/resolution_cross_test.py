#!/usr/bin/env python3
"""The knob rules have one home (knobs/resolve.cpp) and both workers apply its answer.

    resolution_cross_test.py BUILD_DIR SOURCE_DIR

For every catalog knob (`autotune knobs --json`) and each of its values, set alone (and, for the data-parallel knobs,
beside ranks=2), on a CPU and on a CUDA target, for a convolutional model of blocks on real data and for a plain model
on synthetic data, and for both workers (the Python worker's knobs as it reports them, the C++ worker's: all of the
catalog): autotune-resolve answers, and

  - the Python worker's settings (pyworker/autotune_pyworker/settings.py) are exactly the resolution's, knob by knob
    and type by type, with the resolution's skips as its own;
  - a knob the Python worker does not apply falls back to the catalog's value with a reason, never silently;
  - each answer is consistent: an unskipped knob runs at the value asked, a skipped one at its default, and resolving
    the effective config again skips nothing.

And the Python worker keeps no rule of its own: settings.py holds no knob default, domain value or refusal reason
(none of the catalog's choice values appears in it as a literal). Needs no torch: the settings module imports none.
"""
import itertools
import json
import os
import re
import subprocess
import sys

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(source, "pyworker"))
from autotune_pyworker import settings  # noqa: E402

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
        w.update(trainer="python", knobs=list(settings.APPLIED))
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
                mine = {f: getattr(s, f) for f in s.__dataclass_fields__}
                for f, v in mine.items():
                    if got[f] != v or type(got[f]) is not type(v):
                        fail(f"{where}: the Python worker's {f} is {v!r}, the resolution's {got[f]!r}")
                if their_skipped != r["skipped"]:
                    fail(f"{where}: the Python worker's skips differ from the resolution's")
                if name not in settings.APPLIED and value != str(got[name]).lower() and name not in skipped:
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

print(f"{cases} cases over {len(catalog)} knobs, 2 workers, CPU and CUDA, 2 kinds of model: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
