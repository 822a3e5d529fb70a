#!/usr/bin/env python3
"""A 2-rank data-parallel trial across two torchrun agents ("nodes") on this host, c10d rendezvous.

    torchrun_nodes_test.py BUILD_DIR SOURCE_DIR

What `torchrun --nnodes 2` on two machines does, with both agents on localhost: each agent is started on
its own (as on its own node), one CPU each (taskset), and they meet at a c10d rendezvous endpoint. Each
starts one worker (--nproc_per_node 1); the workers take rank, world size and the agent's store from
torchrun's environment. Rank 0's result must record ranks=2 applied, a world of 2 launched by torchrun,
nothing skipped about ranks, and samples from both ranks. Exit 77 (skipped) without a Python that runs
torch.distributed.run, taskset, or 2 CPUs.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_ranks import check, check_two_ranks, failures, free_port, write_plan  # noqa: E402
from python_worker_common import has_modules  # noqa: E402

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
worker = os.path.join(build, "bin/autotune-worker")
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
if (not py or not has_modules(py, "torch")
        or not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2):
    print("needs a Python with torch, taskset and 2 CPUs: skipped")
    sys.exit(77)
port = free_port()
cpus = sorted(os.sched_getaffinity(0))[:2]
with tempfile.TemporaryDirectory() as tmp:
    plan_path = write_plan(tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "WORLD_SIZE", "RANK", "LOCAL_", "MASTER_"))}
    agents = []
    for node in range(2):
        node_dir = os.path.join(tmp, f"node{node}")
        os.makedirs(node_dir)
        cmd = ["taskset", "-c", str(cpus[node]), py, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1",
               "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id", "autotune-nodes-test",
               "--max_restarts", "0", "--no-python", worker, "run", "--plan", plan_path,
               "--result", os.path.join(tmp, "result.json")]
        agents.append(subprocess.Popen(cmd, env=env, cwd=node_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for a in agents:
        try:
            outs.append(a.communicate(timeout=300))
        except subprocess.TimeoutExpired:
            a.kill()
            outs.append(a.communicate())
    for node, (a, (o, e)) in enumerate(zip(agents, outs)):
        check(a.returncode == 0, f"agent {node} exit {a.returncode} {e[-600:]}")
    try:
        res = json.load(open(os.path.join(tmp, "result.json")))
    except (OSError, ValueError) as e:
        res = {}
        check(False, f"rank 0's result: {e}")
    if res:
        check_two_ranks(res, launcher="torchrun")
        check(len(res.get("dist", {}).get("ranks", [])) == 2, f"both ranks reported ({len(res.get('dist', {}).get('ranks', []))})")

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
