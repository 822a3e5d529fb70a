"""Warm workers for many autotune commands (tuner/exec/warm_worker.h): `autotune-worker-py serve` and `autotune-worker
serve` started here and named in the environment the commands get (AUTOTUNE_WARM_SOCKET / AUTOTUNE_WARM_PID, and
AUTOTUNE_WARM_CPP_SOCKET / AUTOTUNE_WARM_CPP_PID), which autotune then uses instead of starting servers of its own per
process. The tests of many short commands start them (tests/integration/python_worker_common.py): torch is imported,
and LibTorch loaded, once, not once per command. A command run with an environment other than `env` starts fresh (a
server forks only for its own environment)."""
import os
import shutil
import signal
import subprocess
import tempfile

# Each worker beside autotune, and the variables that name its server.
WORKERS = (("autotune-worker-py", "AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID"),
           ("autotune-worker", "AUTOTUNE_WARM_CPP_SOCKET", "AUTOTUNE_WARM_CPP_PID"))


def start(bin_dir, env, parent=None, only=None):
    """Starts a server for each worker there is (or each named in `only`) with `env` (less any AUTOTUNE_WARM_* of its
    own); returns (the variables to add to the commands' environment, a function that stops them), or None when
    AUTOTUNE_WARM=0 or there is no worker. A server stops by itself when `parent` (default: this process) is gone."""
    workers = [w for w in WORKERS if os.path.exists(os.path.join(bin_dir, w[0])) and (only is None or w[0] in only)]
    if env.get("AUTOTUNE_WARM") == "0" or not workers:
        return None
    folder = tempfile.mkdtemp(prefix="autotune-shared-warm-")
    env = {k: v for k, v in env.items() if not k.startswith("AUTOTUNE_WARM_")}
    servers, names = [], {}
    for name, socket_var, pid_var in workers:
        sock = os.path.join(folder, name + ".sock")
        with open(os.path.join(folder, name + ".log"), "w") as log:
            server = subprocess.Popen([os.path.join(bin_dir, name), "serve", "--socket", sock, "--parent",
                                       str(parent or os.getpid())], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        servers.append(server)
        names.update({socket_var: sock, pid_var: str(server.pid)})

    def stop():
        for server in servers:
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)  # it kills what it still runs and removes its socket
        for server in servers:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return names, stop
