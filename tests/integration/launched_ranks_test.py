#!/usr/bin/env python3
"""A data-parallel trial whose ranks a launcher placed, each on one core, keeps ranks=2.

    launched_ranks_test.py BUILD_DIR

What `srun --ntasks=2 --exact -c1` does to a trial's two workers, without Slurm: each worker gets Slurm's
environment (SLURM_NTASKS=2, SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS_PER_NODE) and a CPU set of one core
(taskset). Such a worker once resolved `ranks` against its own CPU set ("2 ranks need 2 cores; this machine
has 1") and recorded ranks=2 as skipped while two Gloo ranks ran — a contradiction in its result. Now the
launcher's world decides: rank 0's result must record ranks=2 applied, nothing skipped, a world of 2 over
Gloo, one thread per rank, and samples from both ranks. Exit 77 (skipped) without taskset or 2 cores.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_ranks import check, check_two_ranks, failures, free_port, write_plan  # noqa: E402

build = os.path.abspath(sys.argv[1])
worker = os.path.join(build, "bin/autotune-worker")
if not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2:
    print("needs taskset and 2 CPUs: skipped")
    sys.exit(77)
port = free_port()
cpus = sorted(os.sched_getaffinity(0))[:2]
with tempfile.TemporaryDirectory() as tmp:
    plan_path = write_plan(tmp)
    procs = []
    for r in range(2):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "WORLD_SIZE", "RANK", "LOCAL_"))}
        env.update(SLURM_NTASKS="2", SLURM_PROCID=str(r), SLURM_LOCALID=str(r), SLURM_NTASKS_PER_NODE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(["taskset", "-c", str(cpus[r]), worker, "run", "--plan", plan_path, "--result",
                                       os.path.join(tmp, "result.json")], env=env, cwd=tmp,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=300) for p in procs]
    for r, (p, (o, e)) in enumerate(zip(procs, outs)):
        check(p.returncode == 0, f"rank {r} exit {p.returncode} {e[-500:]}")
    res = json.load(open(os.path.join(tmp, "result.json")))
    applied = check_two_ranks(res, launcher="slurm")
    check("torch::get_num_threads() = 1" in applied.get("threads", {}).get("observed", ""),
          f"one thread per rank on its one core: {applied.get('threads')}")
    w = res["windows"][0]
    check(w["samples"] == 2 * 64 * w["steps"], f"a window counts both ranks' samples: {w}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("launched ranks: ok")
