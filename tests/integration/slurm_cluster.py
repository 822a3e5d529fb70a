#!/usr/bin/env python3
"""The Slurm tests' clusters as CTest fixtures (tests/CMakeLists.txt): one start serves every check of a test, and the
stop runs however the tests end — a failure, an exception, ctest's timeout (CTest runs a FIXTURES_CLEANUP test after
every test that needs the fixture, whatever became of them) — then checks that nothing of the cluster is left.

    slurm_cluster.py start|stop SOURCE_DIR CLUSTER_DIR PORT NODES

Also the helpers the Slurm tests share: where a fixture's cluster is, its environment, and what of a cluster is left.
"""
import os
import subprocess
import sys


def sh(args, env=None, timeout=300):
    return subprocess.run(args, env=env, timeout=timeout, capture_output=True, text=True)


def clean_env(port):
    """This process's environment without a Slurm job's or the fake worker's variables, for a cluster on `port`."""
    env = dict(os.environ, AUTOTUNE_SLURM_PORT=str(port))
    for k in [k for k in env if k.startswith(("SLURM_", "FAKE_")) or k in ("MASTER_ADDR", "MASTER_PORT")]:
        del env[k]
    return env


def cluster_env(cluster_dir, port):
    """The environment a test talks to the fixture's cluster with; exits 1 with the reason when it is not up."""
    env = clean_env(port)
    env["SLURM_CONF"] = os.path.join(cluster_dir, "slurm.conf")
    up = sh(["sinfo", "-h", "-N", "-o", "%T"], env=env, timeout=30) if os.path.exists(env["SLURM_CONF"]) else None
    if up is None or up.returncode != 0:
        print(f"FAIL no Slurm cluster answers in {cluster_dir} (its fixture's start failed, or the test runs without "
              f"its fixture: ctest -R starts it): {up.stderr.strip() if up else 'no slurm.conf'}")
        sys.exit(1)
    return env


def leftovers(cluster_dir, port):
    """What of the cluster in `cluster_dir` (namespaces and links tagged at<PORT>) is still here: daemons started from
    its folder, job steps it left (slurmstepd keeps slurmd's working folder), its munged, its namespaces and links,
    its munge socket folder."""
    tag = f"at{port}"
    left = [n for n in sh(["ip", "netns", "list"]).stdout.split() if n.startswith(tag)]
    left += [l.split(":")[1].strip().split("@")[0] for l in sh(["ip", "-o", "link"]).stdout.splitlines() if f" {tag}" in l]
    # A daemon of this cluster names a file inside its folder; another folder whose name starts with this one's
    # (slurm-cluster-script-test beside slurm-cluster) is another cluster.
    left += [l for l in sh(["pgrep", "-a", "slurm|munged"]).stdout.splitlines() if cluster_dir + "/" in l]
    for pid in sh(["pgrep", "-x", "slurmstepd"]).stdout.split():
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(cluster_dir + "/"):
                left.append(f"slurmstepd {pid}")
        except OSError:
            pass
    sock = sh(["sh", "-c", f"printf '%s' '{cluster_dir}' | sha1sum | cut -c1-12"]).stdout.strip()
    if sock and os.path.exists(f"/run/autotune-munge/{sock}"):
        left.append(f"/run/autotune-munge/{sock}")
    return left


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ("start", "stop"):
        sys.exit("usage: slurm_cluster.py start|stop SOURCE_DIR CLUSTER_DIR PORT NODES")
    what, source, cluster_dir, port, nodes = sys.argv[1:]
    cluster_dir = os.path.abspath(cluster_dir)
    script = os.path.join(source, "scripts/slurm-cluster.sh")
    env = clean_env(port)
    if what == "start":
        sh(["rm", "-rf", cluster_dir])
        r = sh([script, "start", "--nodes", nodes, cluster_dir], env=env, timeout=600)
        print(r.stderr.strip())
        if r.returncode != 0:
            print(f"FAIL the {nodes}-node Slurm did not start (this test never skips: a machine that cannot run the "
                  f"cluster fails it)")
            sys.exit(1)
        return
    r = sh([script, "stop", cluster_dir], env=env)
    print(r.stderr.strip())
    left = leftovers(cluster_dir, port)
    print(("ok   " if r.returncode == 0 and not left else "FAIL ") +
          f"stop: no daemon, job step, munged, namespace, bridge or veth of {cluster_dir} left ({left})")
    sys.exit(0 if r.returncode == 0 and not left else 1)


if __name__ == "__main__":
    main()
