"""What the two warm-worker tests share (warm_worker_test.py: the Python worker's; warm_cpp_worker_test.py: the C++
worker's): a tune's trial results, whether a process runs, its children, the signal checks — a long command sent to
a server, its client's process group sent SIGTERM (the tuner's timeout) and then SIGKILL (after the grace) — and how a
server ends (its parent gone, or SIGTERM)."""
import glob
import json
import os
import signal
import subprocess
import time


def results(out):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "trials/*/result.json")))]


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie is gone for these tests' purpose
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, seconds=10.0):
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


def children_of(pid):
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
    except OSError:
        return []


def check_signals(check, server_pid, command, env):
    """`command` (a long trial through the server `server_pid`) twice: its client's group sent SIGTERM, then SIGKILL;
    each time the client dies of the signal and the forked trial is gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        before = set(children_of(server_pid))
        c = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.monotonic() + 60
        kids = []
        while not kids and time.monotonic() < end:
            kids = [k for k in children_of(server_pid) if k not in before]
            time.sleep(0.05)
        time.sleep(1.0)
        os.killpg(c.pid, sig)
        code = c.wait(timeout=30)
        gone = bool(kids) and wait_gone(kids[0])
        check(code == -sig and gone, f"{signal.Signals(sig).name} to the client's group: it dies of it (exit {code}) and "
              f"the forked trial is gone ({kids}, gone: {gone})")


def orphaned_server(worker, path, env):
    """`worker serve --socket path` under a shell that is its parent: (the shell, the server's pid)."""
    holder = subprocess.Popen(["/bin/sh", "-c", f"'{worker}' serve --socket '{path}' --parent $$ & echo $!; wait"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return holder, int(holder.stdout.readline())


def check_server_ends(check, worker, server, sock, env, ready_seconds):
    """A server at sock.2 whose parent dies once it is ready (within `ready_seconds`) stops and removes its socket; then
    `server` (at sock) sent SIGTERM removes its socket and exits."""
    holder, orphan = orphaned_server(worker, sock + ".2", env)
    end = time.monotonic() + ready_seconds
    while not os.path.exists(sock + ".2") and time.monotonic() < end:
        time.sleep(0.05)
    ready = os.path.exists(sock + ".2")
    holder.kill()
    holder.wait()
    check(ready and wait_gone(orphan, 10) and not os.path.exists(sock + ".2"),
          "a server whose parent died stops and removes its socket")
    server.terminate()
    server.wait(timeout=30)
    check(not os.path.exists(sock), "SIGTERM: the server removes its socket and exits")
