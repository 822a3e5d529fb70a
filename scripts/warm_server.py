"""One warm Python worker for many autotune commands (tuner/exec/warm_worker.h): `autotune-worker-py serve` started
here and named in the environment the commands get (AUTOTUNE_WARM_SOCKET, AUTOTUNE_WARM_PID), which autotune then uses
instead of starting a server of its own per process. The tests of many short commands start one
(tests/integration/python_worker_common.py): torch is imported once, not once per command. A command run with an
environment other than `env` starts cold (the server forks only for its own environment)."""
import os
import shutil
import signal
import subprocess
import tempfile


def start(bin_dir, env, parent=None):
    """Starts the server with `env` (less any AUTOTUNE_WARM_* of its own); returns (the variables to add to the
    commands' environment, a function that stops it), or None when AUTOTUNE_WARM=0 or there is no Python worker. The
    server stops by itself when `parent` (default: this process) is gone."""
    worker = os.path.join(bin_dir, "autotune-worker-py")
    if env.get("AUTOTUNE_WARM") == "0" or not os.path.exists(worker):
        return None
    folder = tempfile.mkdtemp(prefix="autotune-shared-warm-")
    sock = os.path.join(folder, "worker.sock")
    env = {k: v for k, v in env.items() if not k.startswith("AUTOTUNE_WARM_")}
    with open(os.path.join(folder, "serve.log"), "w") as log:
        server = subprocess.Popen([worker, "serve", "--socket", sock, "--parent", str(parent or os.getpid())], env=env,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop():
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)  # it kills what it still runs and removes its socket
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return {"AUTOTUNE_WARM_SOCKET": sock, "AUTOTUNE_WARM_PID": str(server.pid)}, stop
