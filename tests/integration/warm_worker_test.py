#!/usr/bin/env python3
"""The warm Python worker (pyworker/autotune_pyworker/warm.py, tuner/exec/warm_worker.cpp): a process that imported torch
once forks one child per worker command. Not a measuring test: what it asserts holds whatever the timings.

    warm_worker_test.py BUILD_DIR SOURCE_DIR

Checked: a tuner run's trials and describe are forked (result `started`), each in a process of its own whose parent is
the server, and the server and its folder are gone when the tuner exits; AUTOTUNE_WARM=0 starts every trial fresh; a
forked command prints, refuses (exit 2, the same one line) and exits as a cold one does; a command whose environment
differs in a variable read at import time runs cold; a tuner given a server in its environment uses it and leaves it
running, and starts its own when the given one is gone; the signals the tuner sends reach the child (SIGTERM: the client
dies of it too; SIGKILL of the client: the server kills the child's group); a server whose parent dies stops.
Exit 77 without a Python with torch.
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_worker_common import SHORT as short, Setup, check, finish, run  # noqa: E402
from warm_common import check_server_ends, check_signals, orphaned_server, results, wait_gone  # noqa: E402

S = Setup("warm-worker-test")
autotune, worker_py, work = S.autotune, S.worker_py, S.work
tmp = os.path.join(work, "tmp")  # the tuner's TMPDIR: where its warm worker's folder goes
os.makedirs(tmp)
base_env = dict(os.environ, TMPDIR=tmp)
for k in ("AUTOTUNE_WARM", "AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID"):
    base_env.pop(k, None)


# ---- a tuner run: describe and every trial forked by one server, which is gone with the tuner
out = os.path.join(work, "tune")
r = run([autotune, "tune", "--trainer", "python", "--workload", "mlp", "--knobs", "batch_size=32,64", "--budget", "60s",
         *short, "--confirm-rounds", "1", "--out", out], env=base_env)
rs = results(out)
check(r.returncode in (0, 1) and len(rs) >= 2 and all(x.get("started") == "forked" for x in rs),
      f"a tune's trials forked by the warm worker ({[x.get('started') for x in rs]}; exit {r.returncode})")
check(not glob.glob(os.path.join(tmp, "autotune-warm-*")), "after the tune: the warm worker's folder removed")
trial = os.path.join(work, "trial")
r = run([autotune, "trial", "--trainer", "python", "--workload", "mlp", "--set", "batch_size=32", *short, "--json"],
        env=dict(base_env, AUTOTUNE_WARM="0"))
rec = json.loads(r.stdout) if r.returncode == 0 else {}
check(rec.get("status") == "ok" and rec.get("started") == "fresh",
      f"AUTOTUNE_WARM=0: the trial starts in a fresh interpreter ({rec.get('started')})")

# ---- a server of this test's own, and commands sent to it as the tuner sends them
sock = os.path.join(work, "w.sock")
server = subprocess.Popen([worker_py, "serve", "--socket", sock], env=base_env, stdout=subprocess.DEVNULL,
                          stderr=open(os.path.join(work, "serve.log"), "w"))
warm_env = dict(base_env, AUTOTUNE_WARM_SOCKET=sock, AUTOTUNE_WARM_PID=str(server.pid))
plan = json.load(open(os.path.join(out, "trials/0001/plan.json")))
plan_path = os.path.join(work, "plan.json")
json.dump(plan, open(plan_path, "w"))

r = run([worker_py, "run", "--plan", plan_path, "--result", os.path.join(work, "r1.json")], env=warm_env)
r1 = json.load(open(os.path.join(work, "r1.json"))) if r.returncode == 0 else {}
check(r1.get("status") == "ok" and r1.get("started") == "forked" and os.path.exists(sock),
      f"a run sent to the server: forked, ok, exit 0 ({r1.get('started')}, {r1.get('status')}, exit {r.returncode})")
info_w = run([worker_py, "info"], env=warm_env)
info_c = run([worker_py, "info"], env=base_env)
iw = json.loads(info_w.stdout) if info_w.returncode == 0 else {}
ic = json.loads(info_c.stdout) if info_c.returncode == 0 else {"x": 1}
check(iw == ic, "`info` forked prints what a cold one prints")
bad = os.path.join(work, "bad.json")
open(bad, "w").write('{"schema": "autotune.plan/0"}')
rw = run([worker_py, "run", "--plan", bad, "--result", os.path.join(work, "rb.json")], env=warm_env)
rc = run([worker_py, "run", "--plan", bad, "--result", os.path.join(work, "rb.json")], env=base_env)
check(rw.returncode == rc.returncode == 2 and rw.stderr.strip().splitlines()[-1:] == rc.stderr.strip().splitlines()[-1:]
      and "autotune-worker: error:" in rw.stderr, f"a refusal forked: exit 2 and the same line ({rw.stderr.strip()[-160:]})")
r = run([worker_py, "run", "--plan", plan_path, "--result", os.path.join(work, "r2.json")],
        env=dict(warm_env, TORCH_LOGS="-all"))
r2 = json.load(open(os.path.join(work, "r2.json"))) if r.returncode == 0 else {}
check(r2.get("status") == "ok" and r2.get("started") == "fresh",
      f"an environment that differs in a variable read at import (TORCH_LOGS): run cold ({r2.get('started')})")
# the tuner given this server in its environment (scripts/warm_server.py: the tests' shared one) forks from
# it, starts none of its own and leaves it running; given one that is gone, it starts its own as before
r = run([autotune, "trial", "--trainer", "python", "--workload", "mlp", "--set", "batch_size=32", *short, "--json"], env=warm_env)
rec = json.loads(r.stdout) if r.returncode == 0 else {}
check(rec.get("started") == "forked" and not glob.glob(os.path.join(tmp, "autotune-warm-*")) and server.poll() is None
      and os.path.exists(sock), f"a tuner given a server uses it, starts none and leaves it running ({rec.get('started')})")
r = run([autotune, "trial", "--trainer", "python", "--workload", "mlp", "--set", "batch_size=32", *short, "--json"],
        env=dict(warm_env, AUTOTUNE_WARM="0"))
rec = json.loads(r.stdout) if r.returncode == 0 else {}
check(rec.get("started") == "fresh", f"AUTOTUNE_WARM=0 beside a given server: fresh ({rec.get('started')})")
gone = subprocess.Popen(["true"])
gone.wait()
r = run([autotune, "trial", "--trainer", "python", "--workload", "mlp", "--set", "batch_size=32", *short, "--json"],
        env=dict(warm_env, AUTOTUNE_WARM_PID=str(gone.pid)))
rec = json.loads(r.stdout) if r.returncode == 0 else {}
check(rec.get("started") == "forked" and not glob.glob(os.path.join(tmp, "autotune-warm-*")),
      f"a tuner given a server that is gone starts its own, and removes it after ({rec.get('started')})")

# signals: a long trial, its client sent SIGTERM (the tuner's timeout), then another sent SIGKILL (after the grace)
long_plan = dict(plan, measure=dict(plan["measure"], windows=1000, window_min_seconds=5.0))
long_path = os.path.join(work, "long.json")
json.dump(long_plan, open(long_path, "w"))
check_signals(check, server.pid, [worker_py, "run", "--plan", long_path, "--result", os.path.join(work, "rl.json")], warm_env)

# the server stops when its parent is gone: while it was still importing, and after it became ready
early, early_orphan = orphaned_server(worker_py, sock + ".3", base_env)
early.kill()  # at once: the server is still importing torch
early.wait()
check_server_ends(check, worker_py, server, sock, base_env, ready_seconds=120)
check(wait_gone(early_orphan, 60), "a server whose parent died while it was importing stops too")
finish()
