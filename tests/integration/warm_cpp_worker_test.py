#!/usr/bin/env python3
"""The warm C++ worker (workloads/warm_server.cpp, tuner/exec/warm_client.cpp, knobs/warm_protocol.cpp): a worker that
loaded LibTorch once forks one child per command. Not a measuring test: what it asserts holds whatever the timings.

    warm_cpp_worker_test.py BUILD_DIR

Checked: a tuner run's describe and trials are forked (result `started`), in processes whose parent is the server, and
the server and its folder are gone when the tuner exits; AUTOTUNE_WARM=0 starts every trial fresh; a forked trial
measures what a fresh one measures (the same steps, losses and applied knobs on a seeded mlp); a forked command prints,
refuses (exit 2, the same one line) and exits as a fresh one does; a command whose environment differs in a variable
not read per command, or from another binary, runs fresh (and says why under AUTOTUNE_VERBOSE=1); a server with the
CUDA driver loaded but not initialised forks (LibTorch on a host with a driver), one where it was initialised does
not; the signals the tuner sends reach the child (SIGTERM: the client dies of it too; SIGKILL of the client: the
server kills the child's group); a server whose parent dies stops; SIGTERM stops a server and removes its socket.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_worker_common import check, finish, run  # noqa: E402
from warm_common import check_server_ends, check_signals, results  # noqa: E402

build = os.path.abspath(sys.argv[1])
autotune, worker = os.path.join(build, "bin/autotune"), os.path.join(build, "bin/autotune-worker")
work = os.path.join(build, "warm-cpp-worker-test")
shutil.rmtree(work, ignore_errors=True)
tmp = os.path.join(work, "tmp")  # the tuner's TMPDIR: where its warm worker's folder goes
os.makedirs(tmp)
base_env = dict(os.environ, TMPDIR=tmp)
for k in ("AUTOTUNE_WARM", "AUTOTUNE_WARM_CPP_SOCKET", "AUTOTUNE_WARM_CPP_PID", "AUTOTUNE_VERBOSE"):
    base_env.pop(k, None)
SHORT = ["--device", "cpu", "--windows", "3", "--window-seconds", "0.05", "--warmup-seconds", "0"]

# ---- a tuner run: every trial forked by one server, which is gone with the tuner
out = os.path.join(work, "tune")
r = run([autotune, "tune", "--workload", "mlp", "--knobs", "batch_size=32,64", "--budget", "60s", *SHORT,
         "--confirm-rounds", "1", "--out", out], env=base_env)
rs = results(out)
check(r.returncode in (0, 1) and len(rs) >= 2 and all(x.get("started") == "forked" for x in rs),
      f"a tune's trials forked by the warm C++ worker ({[x.get('started') for x in rs]}; exit {r.returncode})")
check(not glob.glob(os.path.join(tmp, "autotune-warm-*")), "after the tune: the warm worker's folder removed")

# ---- the same seeded trial, forked and fresh: the same steps, losses and knobs read back
seeded = ["trial", "--workload", "mlp", "--set", "batch_size=32", *SHORT, "--json"]
fresh = run([autotune, *seeded], env=dict(base_env, AUTOTUNE_WARM="0"))
forked = run([autotune, *seeded], env=base_env)
f0 = json.loads(fresh.stdout) if fresh.returncode == 0 else {}
f1 = json.loads(forked.stdout) if forked.returncode == 0 else {}
check(f0.get("started") == "fresh" and f1.get("started") == "forked", f"AUTOTUNE_WARM=0: fresh; otherwise forked "
      f"({f0.get('started')}, {f1.get('started')})")
# every step's loss from the first (warm-up and measured: how many of each is the clock's business)
l0, l1 = (f.get("warmup_losses", []) + f.get("losses", []) for f in (f0, f1))
n = min(len(l0), len(l1))
# what each knob read back, its counts aside (log_every's "N loss reads for N measured steps": the clock's business)
knobs0, knobs1 = ([(a["knob"], re.sub(r"\d+", "N", a["observed"])) for a in f.get("applied", [])] for f in (f0, f1))
check(n > 0 and l0[:n] == l1[:n] and knobs0 == knobs1 and knobs0,
      f"forked and fresh train the same: the first {n} losses equal, the same knobs read back")

# ---- a server of this test's own, and commands sent to it as the tuner sends them
sock = os.path.join(work, "w.sock")
server = subprocess.Popen([worker, "serve", "--socket", sock, "--parent", str(os.getpid())], env=base_env,
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))
warm_env = dict(base_env, AUTOTUNE_WARM_CPP_SOCKET=sock, AUTOTUNE_WARM_CPP_PID=str(server.pid), AUTOTUNE_VERBOSE="1")
client = [autotune, "--warm-client", worker]
plan = json.load(open(os.path.join(out, "trials/0001/plan.json")))
plan_path = os.path.join(work, "plan.json")
json.dump(plan, open(plan_path, "w"))
r = run(client + ["run", "--plan", plan_path, "--result", os.path.join(work, "r1.json")], env=warm_env)
r1 = json.load(open(os.path.join(work, "r1.json"))) if r.returncode == 0 else {}
check(r1.get("status") == "ok" and r1.get("started") == "forked" and "started cold" not in r.stderr,
      f"a run sent to the server: forked, ok, exit 0 ({r1.get('started')}, {r1.get('status')}, exit {r.returncode})")
info_w, info_c = run(client + ["info", "--json"], env=warm_env), run([worker, "info", "--json"], env=base_env)
check(info_w.returncode == 0 and info_w.stdout == info_c.stdout and "started cold" not in info_w.stderr,
      "`info` forked prints what a fresh one prints")
bad = os.path.join(work, "bad.json")
open(bad, "w").write('{"schema": "autotune.plan/0"}')
rw = run(client + ["run", "--plan", bad, "--result", os.path.join(work, "rb.json")], env=warm_env)
rc = run([worker, "run", "--plan", bad, "--result", os.path.join(work, "rb.json")], env=base_env)
check(rw.returncode == rc.returncode == 2 and rw.stderr == rc.stderr and "autotune-worker: error:" in rw.stderr,
      f"a refusal forked: exit 2 and the same line ({rw.stderr.strip()[-160:]})")
r = run(client + ["run", "--plan", plan_path, "--result", os.path.join(work, "r2.json")], env=dict(warm_env, MALLOC_ARENA_MAX="2"))
r2 = json.load(open(os.path.join(work, "r2.json"))) if r.returncode == 0 else {}
check(r2.get("started") == "fresh" and "started cold: environment differs in MALLOC_ARENA_MAX" in r.stderr,
      f"an environment that differs in a variable read before the fork: fresh, and it says why ({r2.get('started')}; "
      f"{r.stderr.strip()[-120:]})")
copy = os.path.join(work, "autotune-worker")
shutil.copy(worker, copy)
r = run([autotune, "--warm-client", copy, "info", "--json"], env=warm_env)
check(r.returncode == 0 and "started cold: another worker binary" in r.stderr,
      f"another worker binary: fresh ({r.stderr.strip()[-120:]})")

# ---- the CUDA driver in the server (tests/support/fake_cuda_driver.cpp preloaded as libcuda.so.1): loaded but not
# initialised, as LibTorch leaves every process on a host with a driver, forks; initialised, refuses
fake = os.path.join(build, "fake-cuda", "libcuda.so.1")
for init, want in (("0", "forked"), ("1", "fresh")):
    env = dict(base_env, LD_PRELOAD=fake, FAKE_CUDA_INIT_AT_LOAD=init)
    path = os.path.join(work, f"cuda-{init}.sock")
    srv = subprocess.Popen([worker, "serve", "--socket", path, "--parent", str(os.getpid())], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = os.path.join(work, f"r-cuda-{init}.json")
    r = run(client + ["run", "--plan", plan_path, "--result", res],
            env=dict(env, AUTOTUNE_WARM_CPP_SOCKET=path, AUTOTUNE_WARM_CPP_PID=str(srv.pid), AUTOTUNE_VERBOSE="1"))
    mapped = "/libcuda.so.1" in open(f"/proc/{srv.pid}/maps").read()
    rr = json.load(open(res)) if r.returncode == 0 else {}
    said = "started cold: CUDA was initialised in the warm worker" in r.stderr
    check(mapped and rr.get("status") == "ok" and rr.get("started") == want and said == (init == "1"),
          f"the driver mapped in the server, {'initialised' if init == '1' else 'not initialised'}: {want} "
          f"(mapped {mapped}; {rr.get('started')}, {rr.get('status')}; {r.stderr.strip()[-120:]})")
    srv.terminate()
    srv.wait(timeout=30)
gone = subprocess.Popen(["true"])
gone.wait()
r = run(client + ["info", "--json"], env=dict(warm_env, AUTOTUNE_WARM_CPP_PID=str(gone.pid), AUTOTUNE_WARM_CPP_SOCKET=sock + ".none"))
check(r.returncode == 0 and r.stdout == info_c.stdout, "a server that is gone: the command runs fresh")

# ---- signals: a long trial, its client sent SIGTERM (the tuner's timeout), then another sent SIGKILL (after the grace)
long_plan = dict(plan, measure=dict(plan["measure"], windows=1000, window_min_seconds=5.0))
long_path = os.path.join(work, "long.json")
json.dump(long_plan, open(long_path, "w"))
check_signals(check, server.pid, client + ["run", "--plan", long_path, "--result", os.path.join(work, "rl.json")], warm_env)

# ---- the server stops when its parent is gone; SIGTERM stops it and removes its socket
check_server_ends(check, worker, server, sock, base_env, ready_seconds=60)

finish()
