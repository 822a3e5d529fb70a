#!/usr/bin/env python3
"""scripts/slurm-cluster.sh itself: its refusals, two clusters side by side started and stopped in interleaved order,
and a stop after the test that used the cluster was killed with work in flight (what ctest's timeout does).

    slurm_cluster_script_test.py BUILD_DIR SOURCE_DIR

Checked: node counts the script cannot create are refused in one line (exit 2); a kernel that refuses namespaces is
said in one line and leaves nothing; a one-node cluster A and a two-node cluster B up at once, each with its own munged
(each slurm.conf names its own socket), both answering srun; A stopped while B runs — B still authenticates and runs
jobs; A started again, B stopped, A still answers; a client killed -9 (with SIGKILL to its process group, as ctest's
timeout kills a test) with a batch job and an interactive step running, then stop: the jobs' processes, slurmstepd,
the daemons, munged, the namespaces, bridge and veths and the munge socket folder are all gone, for both clusters. It
never skips: a machine that cannot run the clusters fails the test with the reason.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import clean_env, leftovers, sh  # noqa: E402

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
script = os.path.join(source, "scripts/slurm-cluster.sh")
work = os.path.join(build, "slurm-cluster-script-test")
failures = []


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


subprocess.run(["rm", "-rf", work])
os.makedirs(work)
A = {"dir": os.path.join(work, "a"), "port": 7317, "nodes": "1"}
B = {"dir": os.path.join(work, "b"), "port": 7417, "nodes": "2"}
for c in (A, B):
    c["env"] = dict(clean_env(c["port"]), SLURM_CONF=os.path.join(c["dir"], "slurm.conf"))


def start(c):
    r = sh([script, "start", "--nodes", c["nodes"], c["dir"]], env=c["env"], timeout=600)
    if r.returncode != 0:
        print(r.stderr)
    return r.returncode == 0


def stop(c):
    return sh([script, "stop", c["dir"]], env=c["env"]).returncode == 0


def answers(c):
    """srun on every node of the cluster: the hostnames it answers with, or its error."""
    r = sh(["srun", "-N", c["nodes"], "-n", c["nodes"], "hostname"], env=c["env"], timeout=120)
    return r.stdout.split() if r.returncode == 0 else [r.stderr.strip()[-200:]]


# ---- node counts the script cannot create, and a kernel that refuses namespaces
for bad in ("0", "-1", str(os.cpu_count() + 1), "two"):
    r = sh([script, "start", "--nodes", bad, B["dir"]], env=B["env"])
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "is not a node count this machine can hold" in r.stderr,
          f"--nodes {bad}: refused in one line, exit 2 ({r.stderr.strip()})")
stub = os.path.join(work, "stub")
os.makedirs(stub)
with open(os.path.join(stub, "ip"), "w") as f:  # an `ip` whose namespaces the sandbox refuses
    f.write('#!/bin/sh\n[ "$1 $2" = "netns add" ] && { echo "mount --make-shared /run/netns failed: Operation not permitted" >&2; '
            'exit 1; }\nexec /usr/sbin/ip "$@"\n')
os.chmod(os.path.join(stub, "ip"), 0o755)
r = sh([script, "start", "--nodes", "2", B["dir"]], env=dict(B["env"], PATH=stub + os.pathsep + B["env"]["PATH"]))
check(r.returncode == 1 and "network namespaces are refused here" in r.stderr and "Operation not permitted" in r.stderr
      and not leftovers(B["dir"], B["port"]), f"namespaces refused: one line with the kernel's reason, nothing left ({r.stderr.strip()})")

try:
    # ---- two clusters at once, stopped and started in interleaved order
    up = start(A) and start(B)
    check(up, "a one-node and a two-node cluster started side by side")
    socks = [next((l for l in open(os.path.join(c["dir"], "slurm.conf")) if l.startswith("AuthInfo=")), "").strip()
             for c in (A, B)] if up else ["", ""]
    check(all(s.startswith("AuthInfo=socket=/run/autotune-munge/") for s in socks) and socks[0] != socks[1],
          f"each cluster names its own munged's socket ({socks})")
    a1, b1 = answers(A), answers(B)
    check(len(a1) == 1 and sorted(b1) == ["atnode1", "atnode2"], f"both answer srun ({a1}, {b1})")
    check(stop(A) and not leftovers(A["dir"], A["port"]), f"A stopped: nothing of it left ({leftovers(A['dir'], A['port'])})")
    b2 = answers(B)
    check(sorted(b2) == ["atnode1", "atnode2"], f"B still authenticates and runs jobs after A's stop ({b2})")
    check(start(A) and len(answers(A)) == 1, "A started again beside B")
    check(stop(B) and not leftovers(B["dir"], B["port"]), f"B stopped: nothing of it left ({leftovers(B['dir'], B['port'])})")
    a2 = answers(A)
    check(len(a2) == 1 and "error" not in a2[0], f"A still answers after B's stop ({a2})")

    # ---- a client killed with its jobs in flight (ctest's timeout: SIGKILL to the test's processes), then stop
    check(start(B), "B started again")
    marker = "(/usr/bin/)?sleep 61[37]"  # the jobs' processes, by their command lines
    for c in (A, B):
        job = os.path.join(work, f"job-{c['port']}.sh")
        with open(job, "w") as f:
            f.write("#!/bin/sh\nexec sleep 613\n")
        os.chmod(job, 0o755)
        sh(["sbatch", "--quiet", "--mem=100", "-o", "/dev/null", job], env=c["env"])
        client = subprocess.Popen(["srun", "-N1", "-n1", "--mem=100", "sleep", "617"], env=c["env"],
                                  start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c["client"] = client
    deadline = time.time() + 60
    while time.time() < deadline and len(sh(["pgrep", "-xf", marker]).stdout.split()) < 4:
        time.sleep(0.3)
    running = len(sh(["pgrep", "-xf", marker]).stdout.split())
    check(running >= 4, f"a batch job and an srun step running in each cluster ({running} processes)")
    for c in (A, B):
        os.killpg(c["client"].pid, signal.SIGKILL)
        c["client"].wait()
    for c in (A, B):
        check(stop(c) and not leftovers(c["dir"], c["port"]), f"stop after its client was killed: nothing of port {c['port']} "
              f"left ({leftovers(c['dir'], c['port'])})")
    left = sh(["pgrep", "-axf", marker]).stdout.strip()
    check(not left, f"no job's process left on the host or in a node's namespace ({left})")
finally:
    for c in (A, B):
        stop(c)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
