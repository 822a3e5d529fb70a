"""autotune-worker-py: the Python worker's commands, the C++ worker's contract (docs/protocol.md).

    autotune-worker-py run --plan plan.json --result result.json   one trial
    autotune-worker-py info [--json]                               torch, CUDA and the machine
    autotune-worker-py workloads [--json]                          the built-in workloads' Python twins
    autotune-worker-py describe --setup setup.json [--parameters]  the model a trial setup names, built and probed
    autotune-worker-py serve --socket PATH [--parent PID]          the warm worker: imports once, forks a child per
                                                                   command (warm.py; AUTOTUNE_WARM_SOCKET picks it)

Exit 0 when result.json was written (whatever the trial's status), 2 with one line "autotune-worker: error: …"
for bad input (a model that does not build, a Python without a usable torch), 75 when a file could not be
written for lack of room. --verbose (or AUTOTUNE_VERBOSE=1 in the environment, which `autotune` passes on and
then shows the worker's stderr) prints the library's traceback behind a refusal.
"""
import argparse
import errno
import json
import os
import platform
import sys
import time
import traceback

from . import MIN_TORCH

STARTED = time.perf_counter()
PARENT_AT_START = os.getppid()  # the warm worker stops when its parent is gone, even one gone while it imported
ENV_AT_START = dict(os.environ)  # before torch is imported (it sets variables of its own): what the warm worker serves
STARTED_WARM = False  # True in a child of the warm worker (warm.py), which sets STARTED at the fork
PREFIX = "autotune-worker: error: "


def refuse(message, cause=None, verbose=False):
    if cause is not None and verbose:
        traceback.print_exception(cause)
    hint = " (AUTOTUNE_VERBOSE=1 shows the traceback)" if cause is not None and not verbose else ""
    print(PREFIX + message + hint, file=sys.stderr)
    sys.exit(2)


def check_torch():
    """A Python without torch, or with one older than MIN_TORCH: one line naming the Python and what it has."""
    where = f"{sys.executable} (Python {platform.python_version()})"
    try:
        import torch
    except ImportError as e:
        refuse(f"{where} has no torch ({e}); the Python worker needs torch ≥ {'.'.join(map(str, MIN_TORCH))}: "
               "pip install torch, or set AUTOTUNE_PYTHON to a Python that has it")
    parts = []
    for p in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) < MIN_TORCH:
        refuse(f"{where} has torch {torch.__version__}; the Python worker needs torch ≥ {'.'.join(map(str, MIN_TORCH))}")


def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        refuse(f"{what} {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        refuse(f"{what} {path}: not JSON ({e.msg}, line {e.lineno})")


def write_json(path, obj):
    """Written beside `path` and renamed: a reader never sees half a file. No room: exit 75 (EX_TEMPFAIL)."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            print(f"autotune-worker: {path}: {e.strerror}", file=sys.stderr)
            sys.exit(75)
        raise


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("AUTOTUNE_WARM_SOCKET") and not STARTED_WARM and argv[:1] != ["serve"]:
        from .warm import client  # the command runs in a child of the warm worker, or cold when it cannot
        return client(argv)
    ap = argparse.ArgumentParser(prog="autotune-worker-py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--verbose", action="store_true")
    sub = ap.add_subparsers(dest="command")
    run = sub.add_parser("run")
    run.add_argument("--plan", required=True)
    run.add_argument("--result", required=True)
    run.add_argument("--verbose", action="store_true")
    for name in ("info", "workloads"):
        p = sub.add_parser(name)
        p.add_argument("--json", action="store_true")
        p.add_argument("--plugin", default="")
    d = sub.add_parser("describe")
    d.add_argument("--setup", required=True)
    d.add_argument("--parameters", action="store_true")
    d.add_argument("--json", action="store_true")
    d.add_argument("--verbose", action="store_true")
    sv = sub.add_parser("serve")
    sv.add_argument("--socket", required=True)
    sv.add_argument("--parent", type=int, default=0, help="stop when this process is gone (default: the parent at start)")
    a = ap.parse_args(argv)
    verbose = a.verbose or os.environ.get("AUTOTUNE_VERBOSE") == "1"
    if a.command is None:
        refuse("a command is required; commands: run, info, workloads, describe, serve (--help)")
    check_torch()
    if a.command == "serve":
        from .warm import serve
        return serve(a.socket, ENV_AT_START, a.parent or PARENT_AT_START)
    from .errors import Refused

    if a.command == "info":
        from .environment import environment
        print(json.dumps(environment()))
        return 0
    if a.command == "workloads":
        if a.plugin:
            refuse(f"--plugin {a.plugin}: plugins are C++ workloads; run them in the C++ worker (--trainer cpp)")
        # The built-in workloads' Python twins, named without building them (`describe` builds one and counts its FLOPs).
        from .builtin import BUILTINS
        print(json.dumps([{"name": n, "description": b[5], "default_batch_size": b[4], "flops_per_sample": 0,
                           "loss": "cross_entropy", "data": "synthetic batches from the spec", "trainer": "python",
                           "conv_model": n.startswith("resnet"), "image_data": n.startswith("resnet"),
                           "block_model": n != "mlp", "default_image_size": 224 if n.startswith("resnet") else 0}
                          for n, b in BUILTINS.items()]))
        return 0
    if a.command == "describe":
        from .build import Built
        setup = read_json(a.setup, "--setup")
        try:
            built = Built(setup)
            built.probe()
            print(json.dumps(built.info(parameters=a.parameters)))
        except Refused as e:
            refuse(str(e), e.cause, verbose)
        return 0
    plan = read_json(a.plan, "--plan")
    if plan.get("schema") != "autotune.plan/1":
        refuse(f"--plan {a.plan}: schema {plan.get('schema')!r} is not one this worker reads; allowed: autotune.plan/1")
    if plan.get("memory_probe"):
        refuse(f"--plan {a.plan}: a memory probe (the memory model's phase peaks) is not in the Python worker yet; "
               "run it in the C++ worker (--trainer cpp)")
    from .trainer import Trial
    trial = Trial(plan, STARTED, verbose, os.path.dirname(os.path.abspath(a.result)))
    result = trial.run()
    result["started"] = "forked" if STARTED_WARM else "fresh"
    rank = trial.denv.rank if getattr(trial, "denv", None) else 0
    write_json(a.result if rank == 0 else f"{a.result}.rank{rank}", result)  # rank 0's is the trial's (protocol.md)
    if trial.refused is not None:  # the input itself refused (what `describe` refuses): a usage error, exit 2, one line
        refuse(str(trial.refused), trial.refused.cause, verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
