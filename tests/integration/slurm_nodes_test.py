#!/usr/bin/env python3
"""autotune across two hosts: a real two-node Slurm (scripts/slurm-cluster.sh start --nodes 2), each slurmd in its own
network and UTS namespace on a bridge in 198.18.0.0/15, one cluster start for every check.

    slurm_nodes_test.py BUILD_DIR SOURCE_DIR

Checked: node counts the script cannot create are refused in one line (exit 2); a kernel that refuses namespaces is
said in one line and leaves nothing; the two nodes answer `srun -N2` with their own hostnames; a 2-rank trial through
`srun --nodes=2 --ntasks=2` runs one rank per node over Gloo on the bridge (each rank on the address its route to the
rendezvous leaves from, the rendezvous on the step's first node), beside the same trial with both ranks on one node;
GLOO_SOCKET_IFNAME naming an interface the nodes lack fails the trial in one line with no rank left waiting; after
stop no daemon, job, namespace, bridge or veth is left. It never skips: a machine that cannot run the cluster fails
the test with the reason.
"""
import json
import os
import subprocess
import sys

build, source = sys.argv[1], sys.argv[2]
autotune = os.path.join(build, "bin/autotune")
cluster = os.path.join(source, "scripts/slurm-cluster.sh")
work = os.path.join(build, "slurm-nodes-test")
port = "7117"
tag = f"at{port}"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def sh(args, env=None, timeout=300):
    return subprocess.run(args, env=env, timeout=timeout, capture_output=True, text=True)


def leftovers():
    """This cluster's namespaces and links, and daemons of its folder, still present."""
    left = [n for n in sh(["ip", "netns", "list"]).stdout.split() if n.startswith(tag)]
    left += [l.split(":")[1].strip().split("@")[0] for l in sh(["ip", "-o", "link"]).stdout.splitlines() if f" {tag}" in l]
    left += [l for l in sh(["pgrep", "-a", "slurm"]).stdout.splitlines() if work in l]
    return left


subprocess.run(["rm", "-rf", work])
os.makedirs(work)
env = dict(os.environ, AUTOTUNE_SLURM_PORT=port)
for k in [k for k in env if k.startswith("SLURM_") or k.startswith("FAKE_") or k in ("MASTER_ADDR", "MASTER_PORT")]:
    del env[k]
dir_ = os.path.join(work, "cluster")

# ---- node counts the script cannot create, and a kernel that refuses namespaces
for bad in ("0", "-1", str(os.cpu_count() + 1), "two"):
    r = sh([cluster, "start", "--nodes", bad, dir_], env=env)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "is not a node count this machine can hold" in r.stderr,
          f"--nodes {bad}: refused in one line, exit 2 ({r.stderr.strip()})")
stub = os.path.join(work, "stub")
os.makedirs(stub)
with open(os.path.join(stub, "ip"), "w") as f:  # an `ip` whose namespaces the sandbox refuses
    f.write('#!/bin/sh\n[ "$1 $2" = "netns add" ] && { echo "mount --make-shared /run/netns failed: Operation not permitted" >&2; '
            'exit 1; }\nexec /usr/sbin/ip "$@"\n')
os.chmod(os.path.join(stub, "ip"), 0o755)
r = sh([cluster, "start", "--nodes", "2", dir_], env=dict(env, PATH=stub + os.pathsep + env["PATH"]))
check(r.returncode == 1 and "network namespaces are refused here" in r.stderr and "Operation not permitted" in r.stderr
      and not leftovers(), f"namespaces refused: one line with the kernel's reason, nothing left ({r.stderr.strip()})")

# ---- the two-node cluster
r = sh([cluster, "start", "--nodes", "2", dir_], env=env, timeout=600)
if r.returncode != 0:
    print("FAIL the two-node Slurm did not start: " + (r.stderr.strip() or r.stdout.strip()))
    sh([cluster, "stop", dir_], env=env)
    sys.exit(1)
print(r.stderr.strip())
env["SLURM_CONF"] = os.path.join(dir_, "slurm.conf")
try:
    r = sh(["srun", "-N2", "-n2", "hostname"], env=env, timeout=120)
    check(r.returncode == 0 and sorted(r.stdout.split()) == ["atnode1", "atnode2"],
          f"srun -N2 -n2 hostname: one task per node, each with its node's hostname ({r.stdout.split()})")

    trials = {}
    # one node holds one core here: its two ranks need srun's --overcommit (the cores are shared by both nodes anyway)
    for name, nodes in (("two nodes", "--nodes=2"), ("one node", "--nodes=1 --overcommit")):
        # threads=1 on both sides: a node sees every core of this machine, and two ranks of 2 threads on 2 cores would
        # measure oversubscription, not the network
        r = sh([autotune, "trial", "--workload", "mlp", "--set", "ranks=2", "--set", "batch_size=32", "--set", "threads=1",
                "--launcher", f"srun {nodes} --ntasks={{ranks}} {{cmd}}", "--windows", "3", "--window-seconds", "0.5",
                "--trial-timeout", "120", "--json"], env=env, timeout=300)
        trials[name] = json.loads(r.stdout) if r.returncode == 0 else {}
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:])
    t2, t1 = trials["two nodes"], trials["one node"]
    hosts2 = sorted(x["host"] for x in t2.get("dist", {}).get("ranks", []))
    hosts1 = sorted(x["host"] for x in t1.get("dist", {}).get("ranks", []))
    ranks_proof = next((a["observed"] for a in t2.get("applied", []) if a["knob"] == "ranks"), "")
    check(t2.get("status") == "ok" and hosts2 == ["atnode1", "atnode2"] and t2["dist"]["launcher"] == "slurm"
          and "(the route to atnode1)" in ranks_proof and "TCPStore server" in ranks_proof,
          f"a 2-rank trial across the two nodes: one rank per host, Gloo on the route to the first node ({ranks_proof})")
    check(t1.get("status") == "ok" and hosts1 == ["atnode1", "atnode1"],
          f"the same trial with both ranks on one node ({hosts1})")

    r = sh([autotune, "trial", "--trainer", "python", "--workload", "mlp", "--set", "ranks=2", "--set", "batch_size=32",
            "--launcher", "srun --nodes=2 --ntasks={ranks} {cmd}", "--windows", "3", "--window-seconds", "0.3",
            "--trial-timeout", "180", "--json"], env=env, timeout=300)
    tp = json.loads(r.stdout) if r.returncode == 0 else {}
    proof = next((a["observed"] for a in tp.get("applied", []) if a["knob"] == "ranks"), "")
    check(tp.get("status") == "ok" and sorted(x["host"] for x in tp.get("dist", {}).get("ranks", [])) == ["atnode1", "atnode2"]
          and "on eth0 (the route to atnode1)" in proof,
          f"the Python worker across the two nodes: torch.distributed over Gloo on the route's interface ({proof})")

    def figures(t):
        w = [x["samples_per_s"] for x in t.get("windows", [])]
        d = t.get("dist", {})
        return (sorted(w)[len(w) // 2] if w else 0, d.get("comm_ms_per_step", 0), d.get("overlap_share", 0))
    (s2, c2, h2), (s1, c1, h1) = figures(t2), figures(t1)
    print(f"     two nodes: {s2:.0f} samples/s, communication {c2:.2f} ms/step ({h2:.0%} hidden); "
          f"one node: {s1:.0f} samples/s, {c1:.2f} ms/step ({h1:.0%} hidden)")

    r = sh([autotune, "trial", "--workload", "mlp", "--set", "ranks=2", "--launcher", "srun --nodes=2 --ntasks={ranks} {cmd}",
            "--windows", "3", "--window-seconds", "0.2", "--trial-timeout", "120"],
           env=dict(env, GLOO_SOCKET_IFNAME="eth9"), timeout=300)
    queue = sh(["squeue", "-h"], env=env).stdout.strip()
    pids = [p for n in (1, 2) for p in sh(["ip", "netns", "pids", f"{tag}n{n}"]).stdout.split()
            if "slurmd" not in sh(["ps", "-o", "args=", "-p", p]).stdout]
    check(r.returncode != 0 and "GLOO_SOCKET_IFNAME=eth9: this host has no interface 'eth9'; it has: lo, eth0" in r.stderr
          and not queue and not pids,
          f"GLOO_SOCKET_IFNAME naming no interface: the trial fails in one line naming the node's interfaces; no job, "
          f"no rank left ({r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''})")
finally:
    r = sh([cluster, "stop", dir_], env=env)
    check(r.returncode == 0 and not leftovers(), f"stop: no daemon, namespace, bridge or veth left ({leftovers()})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
