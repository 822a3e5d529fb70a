"""What the tests of a 2-rank data-parallel trial started by a launcher share (launched_ranks_test,
torchrun_nodes_test, slurm_test): the checks' bookkeeping, a free port, the plan, and what rank 0's result must
say — status ok, ranks=2 applied over Gloo, ranks not skipped, a world of 2 (launched by `launcher` when given).
"""
import json
import os
import socket

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_plan(folder):
    """An mlp trial with ranks=2 on the CPU, 3 short windows; its plan.json path."""
    plan = {"schema": "autotune.plan/1", "workload": "mlp", "device": "cpu", "seed": 0, "config": {"ranks": "2"},
            "measure": {"windows": 3, "window_min_seconds": 0.1, "warmup_min_seconds": 0, "warmup_min_steps": 2}}
    path = os.path.join(folder, "plan.json")
    json.dump(plan, open(path, "w"))
    return path


def check_two_ranks(res, launcher=None):
    """Rank 0's result of a ranks=2 trial: ok, ranks applied as 2 Gloo processes and not skipped, a world of 2."""
    print(json.dumps({k: res.get(k) for k in ("status", "message", "skipped")}, indent=1))
    check(res["status"] == "ok", f"status {res['status']}: {res.get('message')}")
    check(not any(s["knob"] == "ranks" for s in res.get("skipped", [])), f"ranks not skipped: {res.get('skipped')}")
    applied = {a["knob"]: a for a in res.get("applied", [])}
    check(applied.get("ranks", {}).get("observed", "").startswith("2 processes over gloo"),
          f"ranks=2 applied: {applied.get('ranks')}")
    dist = res.get("dist", {})
    check(dist.get("world") == 2 and (launcher is None or dist.get("launcher") == launcher),
          f"a world of 2{' launched by ' + launcher if launcher else ''}: {dist.get('world')}, {dist.get('launcher')}")
    return applied
