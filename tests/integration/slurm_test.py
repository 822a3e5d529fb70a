#!/usr/bin/env python3
"""autotune through a real Slurm: a single-node cluster on 127.0.0.1 (scripts/slurm-cluster.sh, two fake GPUs).

    slurm_test.py BUILD_DIR SOURCE_DIR

1. a tune whose trials run as srun steps of an allocation, two at a time (disjoint CPUs and GPUs, overlapping);
2. the same tune as sbatch jobs, the same winner, nothing left in the queue;
3. a hung trial stopped by the tuner's own timeout (Slurm's limits are whole minutes), its step cancelled;
4. a failing trial's exit code recorded (steps and jobs);
5. kill -9 of the tuner with jobs in flight, then --resume: the leftover jobs cancelled, no trial repeated,
   squeue empty; Ctrl-C with jobs in flight: exit 130, the jobs cancelled, no worker left;
6. a 2-rank data-parallel trial through srun (the real worker): ranks=2 applied, nothing contradicting it;
7. bad input: slurm-steps outside an allocation, an allocation smaller than the slots, no srun on PATH.
The cluster is the slurm_cluster fixture's, started once by CTest before this test and stopped after it however it
ends (tests/integration/slurm_cluster.py); when the daemons cannot start (not root, packages not installable) the
fixture FAILS with the reason, and so does this test: it never skips.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import cluster_env  # noqa: E402
from two_ranks import check, check_two_ranks, failures  # noqa: E402

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
autotune = os.path.join(build, "bin/autotune")
fake = os.path.join(build, "bin/fake-worker")
worker = os.path.join(build, "bin/autotune-worker")
work = os.path.join(build, "slurm-test")
cluster_dir = os.path.join(build, "slurm-cluster")


def sh(args, env=None, timeout=300, **kw):
    return subprocess.run(args, env=env, timeout=timeout, capture_output=True, text=True, **kw)


def trials(run):
    db = sqlite3.connect(os.path.join(run, "journal.sqlite"))
    rows = db.execute("SELECT id, kind, config_key, status, outcome, result_json FROM trials ORDER BY id").fetchall()
    db.close()
    return [dict(id=r[0], kind=r[1], key=r[2], status=r[3], outcome=r[4], result=json.loads(r[5])) for r in rows]


def queue(env, steps=False):
    out = sh(["squeue", "-h", "-s" if steps else "-a", "-o", "%i %j"], env=env).stdout.split("\n")
    return [l for l in out if "autotune-" in l]


# The cluster is the slurm_cluster fixture's (tests/integration/slurm_cluster.py, started and stopped by CTest).
subprocess.run(["rm", "-rf", work])
os.makedirs(work)
env = cluster_env(cluster_dir, 6917)

GRID = ["--knobs", "batch_size=32,64,128", "optimizer_impl=loop,fused", "--objective", "throughput", "--budget", "600"]
ALLOC = ["salloc", "--quiet", "-n1", "-c2", "--mem=2000", "--gres=gpu:2"]
# 1. srun steps, two at a time.
e1 = dict(env, FAKE_SLEEP="0.6", FAKE_RECORD_SLOT="1")
r1 = os.path.join(work, "steps")
p = sh(ALLOC + [autotune, "tune", "--worker", fake, "--out", r1, "--executor", "slurm-steps", "--parallel", "2"] + GRID, env=e1)
check(p.returncode == 0, f"tune as srun steps: exit {p.returncode} {p.stderr[-400:]}")
t1 = trials(r1)
search = [t for t in t1 if t["kind"] in ("baseline", "search")]
check(len(search) == len({t["key"] for t in search}) == 6, f"the 6 configs of the grid (the baseline one of them), each once ({len(search)} trials)")
check(all(t["result"].get("placement", {}).get("executor") == "slurm-steps" for t in t1), "every trial placed by slurm-steps")
where = {}
for t in t1:
    seq = t["result"]["placement"]["seq"]
    try:
        where[t["id"]] = json.load(open(os.path.join(r1, "trials", f"{seq:04d}", "result.json.slot")))
    except OSError:
        pass
overlapping = [(a, b) for a in where for b in where if a < b and where[a]["start"] < where[b]["end"] and where[b]["start"] < where[a]["end"]]
check(len(overlapping) >= 2, f"trials ran two at a time ({len(overlapping)} overlapping pairs)")
check(all(where[a]["cpus"] != where[b]["cpus"] and where[a]["cuda"] != where[b]["cuda"] for a, b in overlapping),
      "trials side by side had disjoint CPUs and different GPUs: " +
      "; ".join(f"{where[a]['cpus']}/{where[a]['cuda']} vs {where[b]['cpus']}/{where[b]['cuda']}" for a, b in overlapping[:3]))
check(all(where[i]["omp"] == "1" for i in where), "each trial's threads capped to its one CPU")
winner1 = json.load(open(os.path.join(r1, "best.json")))["config"]

# 2. sbatch jobs.
r2 = os.path.join(work, "jobs")
p = sh([autotune, "tune", "--worker", fake, "--out", r2, "--executor", "slurm-jobs", "--parallel", "2", "--trial-mem", "500"] + GRID,
       env=dict(env, FAKE_SLEEP="0.3"), timeout=600)
check(p.returncode == 0, f"tune as sbatch jobs: exit {p.returncode} {p.stderr[-400:]}")
t2 = trials(r2)
check(all(t["result"].get("placement", {}).get("executor") == "slurm-jobs" for t in t2), "every trial placed by slurm-jobs")
check(json.load(open(os.path.join(r2, "best.json")))["config"] == winner1, "the same winner as srun steps")
check(queue(env) == [], "nothing of the run left in squeue")

# 3. A hung trial: the tuner's timeout stops it and its step is cancelled.
r3 = os.path.join(work, "hang")
t0 = time.time()
p = sh(ALLOC + [autotune, "tune", "--worker", fake, "--out", r3, "--executor", "slurm-steps", "--parallel", "2",
                "--trial-timeout", "4"] + GRID, env=dict(env, FAKE_HANG="batch_size=128"), timeout=300)
hung = [t for t in trials(r3) if t["key"].find("batch_size=128") >= 0 and t["kind"] == "search"]
check(p.returncode == 0 and len(hung) == 2 and all(t["status"] == "timeout" for t in hung),
      f"the hung configs timed out after 4 s (statuses {[t['status'] for t in hung]}, {time.time() - t0:.0f} s in all)")
check(queue(env, steps=True) == [], "no step of the hung trials left")
check(sh(["pgrep", "-f", r3]).stdout.strip() == "", "no worker of the hung trials left")

# 4. A failing trial's exit code, as a step and as a job.
for mode, extra in (("slurm-steps", []), ("slurm-jobs", ["--trial-mem", "500"])):
    r4 = os.path.join(work, "fail-" + mode)
    cmd = [autotune, "tune", "--worker", fake, "--out", r4, "--executor", mode] + extra + GRID
    p = sh((ALLOC if mode == "slurm-steps" else []) + cmd, env=dict(env, FAKE_EXIT="optimizer_impl=fused"), timeout=600)
    bad = [t for t in trials(r4) if "optimizer_impl=fused" in t["key"] and t["kind"] == "search"]
    check(len(bad) == 3 and all(t["outcome"] == "exit 3" and "exiting with status 3" in t["result"]["message"] for t in bad),
          f"{mode}: the failing trials' exit code 3 and message recorded ({[(t['outcome'], t['result']['message'][:60]) for t in bad]})")

# 5. kill -9 of the tuner with sbatch jobs in flight, then --resume.
r5 = os.path.join(work, "kill")
e5 = dict(env, FAKE_SLEEP="3")
tuner = subprocess.Popen([autotune, "tune", "--worker", fake, "--out", r5, "--executor", "slurm-jobs", "--parallel", "2",
                          "--trial-mem", "500"] + GRID, env=e5, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 240
while time.time() < deadline:
    time.sleep(1)
    try:
        if len(trials(r5)) >= 3 and len(queue(env)) >= 1:
            break
    except sqlite3.Error:
        pass
in_queue = queue(env)
before = trials(r5)
tuner.send_signal(signal.SIGKILL)
tuner.wait()
check(len(in_queue) >= 1, f"jobs were in flight when the tuner was killed ({in_queue})")
p = sh([autotune, "tune", "--worker", fake, "--resume", r5], env=dict(env, FAKE_SLEEP="0.3"), timeout=600)
check(p.returncode == 0, f"--resume after kill -9: exit {p.returncode} {p.stderr[-300:]}")
check("cancelled" in p.stdout and "left in the queue" in p.stdout, "the resumed run cancelled the killed tuner's jobs: " +
      next((l.strip() for l in p.stdout.split("\n") if "cancelled" in l), "(no line)"))
after = trials(r5)
check([t["key"] for t in after[:len(before)]] == [t["key"] for t in before], "the journal's trials kept, in order")
measured = [t["key"] for t in after if t["kind"] in ("baseline", "search")]
check(len(measured) == len(set(measured)), f"no config measured twice ({len(measured)} trials, {len(set(measured))} configs)")
check(queue(env) == [], "squeue empty after the resumed run")

# 5b. Ctrl-C with sbatch jobs in flight: exit 130, the jobs cancelled, no worker left, nothing journaled twice.
r5b = os.path.join(work, "ctrlc")
tuner = subprocess.Popen([autotune, "tune", "--worker", fake, "--out", r5b, "--executor", "slurm-jobs", "--parallel", "2",
                          "--trial-mem", "500"] + GRID, env=dict(env, FAKE_SLEEP="20"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
while time.time() < deadline and len(queue(env)) < 1:
    time.sleep(0.5)
queued = queue(env)
tuner.send_signal(signal.SIGINT)
try:
    out, _ = tuner.communicate(timeout=60)
except subprocess.TimeoutExpired:
    tuner.kill()
    out, _ = tuner.communicate()
check(len(queued) >= 1 and tuner.returncode == 130, f"Ctrl-C with jobs {queued} in flight: exit {tuner.returncode}")
time.sleep(1)
check(queue(env) == [], f"the interrupted run's jobs cancelled ({queue(env)})")
check(sh(["pgrep", "-f", r5b]).stdout.strip() == "", "no worker of the interrupted run left")
check("continue with: autotune tune --resume" in out, "the interrupted run says how to resume")

# 6. Two data-parallel ranks through srun, the real worker.
r6 = os.path.join(work, "ranks")
p = sh(["salloc", "--quiet", "-n2", "-c1", "--mem=2000", autotune, "trial", "--workload", "mlp", "--set", "ranks=2",
        "--launcher", "srun --ntasks={ranks} {cmd}", "--windows", "3", "--window-seconds", "0.1", "--out", r6, "--json"],
       env=env, timeout=600)
check(p.returncode == 0, f"a 2-rank trial through srun: exit {p.returncode} {p.stderr[-400:]}")
try:
    check_two_ranks(json.load(open(os.path.join(r6, "0001", "result.json"))))
except (OSError, ValueError, KeyError) as e:
    check(False, f"the 2-rank trial's result: {e}")

# 7. Bad input: one line, exit 2, nothing created.
r7 = os.path.join(work, "bad")
for args, want, e7 in (
    (["--executor", "slurm-steps"], "in none (no SLURM_JOB_ID)", env),
    (["--executor", "slurm-jobs"], "must be on PATH", dict(env, PATH="/nonexistent")),
    (["--executor", "slurm-steps", "--parallel", "3"], "the allocation is smaller than the trials ask for", env),
):
    cmd = [autotune, "tune", "--worker", fake, "--out", r7] + args
    if "--parallel" in args:
        cmd = ALLOC + cmd
    p = sh(cmd, env=e7, timeout=120)
    lines = [l for l in p.stderr.strip().split("\n") if l and not l.startswith("salloc")]
    check(p.returncode == 2 and len(lines) == 1 and want in lines[0] and "allowed" in lines[0],
          f"{' '.join(args)}{' without srun' if e7 is not env else ''}: exit {p.returncode}: {lines}")
    check(not os.path.exists(r7), "nothing created for a refused run")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
