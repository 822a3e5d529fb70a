"""What the Python worker's two integration tests share (python_worker_test.py measures, python_worker_parts_test.py
does not): the build's programs, the project's Python (exit 77 without torch and jsonschema), a fresh work folder, the
check/run helpers, the schema validation and a token model on this repository's docs."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import time

# The repository's scripts: has_modules (the GPU kit's, re-exported to the tests) and warm_server.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts"))
from device_check import has_modules  # noqa: E402,F401
import warm_server  # noqa: E402

failures = []
SHORT = ["--windows", "3", "--window-seconds", "0.2", "--warmup-seconds", "0.1"]


class Setup:
    def __init__(self, folder):
        self.build, self.source = sys.argv[1], sys.argv[2]
        self.py = subprocess.run([os.path.join(self.source, "scripts/autotune-python.sh")], capture_output=True,
                                 text=True).stdout.strip()
        if not has_modules(self.py, "torch", "jsonschema"):
            print("no Python with torch and jsonschema (scripts/setup-deps.sh): skipped")
            sys.exit(77)
        self.autotune = os.path.join(self.build, "bin/autotune")
        self.worker_py = os.path.join(self.build, "bin/autotune-worker-py")
        self.work = os.path.join(self.build, folder)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.here = os.path.join(self.source, "tests/integration")
        self.small_net = os.path.join(self.here, "small_net.py") + ":SmallNet"

    def validate(self, paths):
        """Each file against knobs/protocol.schema.json, in the venv (jsonschema): [(path, error or "")]."""
        code = ("import json, sys, jsonschema\n"
                "schema = json.load(open(sys.argv[1]))\n"
                "for p in sys.argv[2:]:\n"
                "    try:\n"
                "        jsonschema.validate(json.load(open(p)), schema)\n"
                "        print(p + '\\t')\n"
                "    except jsonschema.ValidationError as e:\n"
                "        print(p + '\\t' + e.message.replace('\\n', ' ')[:300] + ' at ' + '/'.join(map(str, e.absolute_path)))\n")
        out = run([self.py, "-c", code, os.path.join(self.source, "knobs/protocol.schema.json"), *paths]).stdout
        return [tuple(line.split("\t", 1)) for line in out.splitlines()]

    def token_model(self):
        """(token file, the model flags of GptMini on it): this repository's docs as byte tokens. The model is GptMini
        cut to width 32 (its 4 blocks kept) (--model-kwargs, after the first six flags, which `apply` is given alone and which
        build the same class): a step at batch 32 on one thread takes about 50 ms instead of 280 ms at the default
        L=4 C=128, and what these tests check (the worker's paths, not the model's speed) is the same."""
        tokens = os.path.abspath(os.path.join(self.work, "readme.bin"))
        run([self.autotune, "prepare-data", "--tokens-from",
             *(os.path.join(self.source, f) for f in ("README.md", "docs/design.md", "docs/models.md")), "--to", tokens])
        return tokens, ["--model", os.path.join(self.source, "bench/python_eager.py") + ":GptMini", "--model-input",
                        "B,64:int64:512", "--model-target", "classes:512:B,64", "--data", tokens,
                        "--model-kwargs", json.dumps({"H": 2, "C": 32})]


def tune_verdict(r):
    """(finished, verdict line) of an `autotune tune` run: a winner (exit 0), or — legitimate beside the suite's other
    tests on a shared 2-core machine — no stable config or no winner (exit 1), accepted only with its stated reason:
    every config rejected ("none stable: …"), or a stable one that nothing comparable ranks ("stable but none ranked")."""
    verdict = next((l for l in r.stdout.splitlines() if l.startswith(("winner:", "no stable config:", "no winner:"))), "")
    finished = (r.returncode == 0 and verdict.startswith("winner:")) or (r.returncode == 1 and (
        (verdict.startswith("no stable config: ") and "none stable: " in verdict) or
        (verdict.startswith("no winner: ") and "stable but none ranked" in verdict)))
    return finished, verdict


def share_warm_worker(build):
    """One warm Python worker and one warm C++ worker for every autotune command this test runs after this call
    (scripts/warm_server.py): named in this process's environment, autotune uses them instead of starting its own per
    process, so a test of many short commands imports torch, and loads LibTorch, once. Commands run with another
    environment start fresh. Stopped at exit, and by themselves if this process dies. Not for warm_worker_test or
    warm_cpp_worker_test, whose subject is the tuner's own servers."""
    started = warm_server.start(os.path.join(build, "bin"), dict(os.environ))
    if started:
        os.environ.update(started[0])
        atexit.register(started[1])


T0 = time.time()


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
    return r


def applied(result):
    return {a["knob"]: a["observed"] for a in result["applied"]}


def finish():
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
