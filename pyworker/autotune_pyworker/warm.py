"""The warm worker: one process that has imported torch (and dynamo, which the first optimizer imports) forks one child
per worker command, so a trial does not pay the ~5 s of imports again (docs/design.md, "The warm Python worker").

    autotune-worker-py serve --socket PATH     the server: imports, listens on PATH, forks a child per request
    AUTOTUNE_WARM_SOCKET=PATH autotune-worker-py run …    a client (the launcher's choice): the command runs in a
                                               child of the server, with this process's stdin/stdout/stderr, working
                                               folder, environment and CPUs; this process forwards the signals it gets
                                               to that child and exits as the child did (its code, or its signal)

Each command still runs in a process of its own, started from a state where nothing but imports happened: the server
never builds a model, opens a device or runs a thread pool, and refuses to serve once CUDA is initialised in it. A
request the server cannot serve as a cold start would have run it — another host or network namespace, another user,
an environment that differs in a variable read at import time — is answered "cold", and the client runs the command
in a fresh interpreter instead (the result's `started` says which). A client that dies (SIGKILL from the tuner's
timeout) takes its child's process group with it; a server whose parent is gone stops, and its children die with it.
"""
import json
import os
import select
import signal
import socket
import struct
import sys
import time

# Variables a command may set differently from the server's environment: read by the worker or torch after the fork
# (ranks, thread counts applied in the child, the visible GPUs — CUDA is never initialised in the server), or by nothing.
PER_COMMAND = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "RANK", "LOCAL_RANK", "WORLD_SIZE",
               "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_NTASKS", "SLURM_PROCID", "PWD", "OLDPWD",
               "SHLVL", "_", "AUTOTUNE_VERBOSE", "AUTOTUNE_LAUNCHER", "AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID",
               "AUTOTUNE_WARM_CPP_SOCKET", "AUTOTUNE_WARM_CPP_PID"}
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
HEADER = struct.Struct("!I")


def netns():
    try:
        return os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return 0


def identity():
    """What must match between client and server for a fork to be the same as a cold start on the client's side."""
    return {"host": socket.gethostname(), "netns": netns(), "uid": os.getuid(), "python": sys.executable}


def env_difference(server_env, command_env):
    """The variables outside PER_COMMAND that differ (set, unset or changed), sorted; [] when the fork is faithful."""
    keys = set(server_env) | set(command_env)
    return sorted(k for k in keys if k not in PER_COMMAND and server_env.get(k) != command_env.get(k))


# ---------------------------------------------------------------------------------------------------------- client --

def run_cold(args):
    """The command in a fresh interpreter, as the launcher runs it without a server."""
    sys.stdout.flush()
    sys.stderr.flush()
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID")}
    os.execve(sys.executable, [sys.executable, "-m", "autotune_pyworker"] + args, env)


def running(pid):
    """Whether `pid` runs: a server that refused to start (a Python without torch) stays a zombie until the tuner reaps
    it, and a zombie answers kill(pid, 0)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def connect(path, server_pid, wait_seconds=120.0):
    """A connection to the server at `path`, waiting while it is still importing (its socket appears when it is ready);
    None when it is gone or never became ready."""
    deadline = time.monotonic() + wait_seconds
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
        if server_pid <= 0 or time.monotonic() > deadline or not running(server_pid):
            return None
        time.sleep(0.02)


def read_message(s, buf):
    """One newline-terminated JSON message from `s` (bytes kept in `buf` between calls); None at the end."""
    while b"\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            return None
        buf.extend(chunk)
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return json.loads(line)


def client(args):
    path = os.environ.get("AUTOTUNE_WARM_SOCKET", "")
    try:
        pid = int(os.environ.get("AUTOTUNE_WARM_PID", "0"))
    except ValueError:
        pid = 0
    s = connect(path, pid) if path else None
    if s is None:
        run_cold(args)
    request = dict(identity(), argv=args, env=dict(os.environ), cwd=os.getcwd(),
                   cpus=sorted(os.sched_getaffinity(0)))
    body = json.dumps(request).encode()
    try:
        s.sendmsg([HEADER.pack(len(body)) + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
        buf = bytearray()
        first = read_message(s, buf)
    except OSError:
        first = None
    if first is None or "pid" not in first:
        s.close()
        if os.environ.get("AUTOTUNE_VERBOSE") == "1":
            why = (first or {}).get("cold", "the warm worker went away")
            print(f"autotune-worker: started cold: {why}", file=sys.stderr)
        run_cold(args)  # refused ("cold": the reason) or the server went away before forking
    child = first["pid"]

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        end = read_message(s, buf)
    except OSError:
        end = None
    if end is None:  # the server died: its children die with it (PR_SET_PDEATHSIG)
        print("autotune-worker: the warm worker that ran this command stopped before it finished", file=sys.stderr)
        return 70
    if "signal" in end:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), end["signal"])
        time.sleep(1)
        return 128 + end["signal"]
    return end["exit"]


# ---------------------------------------------------------------------------------------------------------- server --

def die_with_parent():
    """SIGKILL when the server (the process that forked this one) dies."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def receive(conn):
    """The request and the three descriptors it carries; None when malformed."""
    fds = []
    data = bytearray()
    want = None
    while want is None or len(data) < want:
        msg, anc, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(struct.unpack(f"{len(payload) // 4}i", payload[:len(payload) - len(payload) % 4]))
        if not msg:
            break
        data.extend(msg)
        if want is None and len(data) >= HEADER.size:
            want = HEADER.size + HEADER.unpack(data[:HEADER.size])[0]
    if want is None or len(data) < want or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(bytes(data[HEADER.size:want])), fds


def refusal(request, mine, server_env):
    """Why this request cannot be a fork (then the client starts cold), or ""."""
    for key in ("host", "netns", "uid", "python"):
        if request.get(key) != mine[key]:
            return f"another {key} ({request.get(key)} here {mine[key]})"
    differ = env_difference(server_env, request.get("env", {}))
    return "environment differs in " + ", ".join(differ[:5]) if differ else ""


def child(request, fds, keep_closed, set_by_import):
    """In the fork: become the command's process and run it; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        die_with_parent()
        signal.set_wakeup_fd(-1)
        for sig in FORWARDED + (signal.SIGCHLD,):
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
        for fd in keep_closed:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for k, v in set_by_import.items():  # what importing torch set in the server, as it would in a cold start
            os.environ.setdefault(k, v)
        if request.get("cpus"):
            os.sched_setaffinity(0, request["cpus"])
        import torch
        n = os.environ.get("OMP_NUM_THREADS", "")
        if n.isdigit() and int(n) > 0:  # read by OpenMP when torch was imported: the server's, not this command's
            torch.set_num_threads(int(n))
        from . import __main__ as entry
        entry.STARTED = time.perf_counter()
        entry.STARTED_WARM = True
        sys.argv = [sys.argv[0]] + request["argv"]
        try:
            code = entry.main(request["argv"]) or 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
    except BaseException:  # what an uncaught exception does in a cold interpreter: the traceback, exit 1
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit
            import threading
            threading._shutdown()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


class Server:
    """The serving loop's state: the listening socket, the wake-up pipe SIGCHLD and SIGTERM write to, and each running
    child's client connection."""

    def __init__(self, path, env_at_start):
        self.path = path
        self.mine = identity()
        self.server_env = dict(env_at_start)
        self.set_by_import = {k: v for k, v in os.environ.items() if k not in env_at_start}
        self.running = {}  # child pid -> its client's connection (None once that client is gone)
        self.stopping = False
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self.stop)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tmp = f"{path}.{os.getpid()}"
        self.listener.bind(tmp)
        self.listener.listen(64)
        os.rename(tmp, path)  # the socket appears only once the server is ready

    def stop(self, *_):
        self.stopping = True

    def drop_gone_clients(self, ready):
        """A client that went away (SIGKILLed by the tuner's timeout): its command goes with it."""
        for pid, c in self.running.items():
            if c is not None and c in ready:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
                c.close()
                self.running[pid] = None

    def reap(self):
        """Each child that ended: its end (exit code or signal) to its client."""
        while self.running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            c = self.running.pop(pid, None)
            if c is None:  # not a command's, or its client is gone
                continue
            end = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.waitstatus_to_exitcode(status)}
            try:
                c.sendall((json.dumps(end) + "\n").encode())
            except OSError:
                pass
            c.close()

    @staticmethod
    def refuse(conn, fds, why):
        """The client starts the command cold: `why` is what it says under AUTOTUNE_VERBOSE=1."""
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall((json.dumps({"cold": why}) + "\n").encode())
        except OSError:
            pass
        conn.close()

    def accept(self):
        """One request: refused ("cold" and the reason) or forked."""
        conn, _ = self.listener.accept()
        try:
            request, fds = receive(conn)
        except (OSError, ValueError):
            request, fds = None, []
        why = "a malformed request" if request is None else refusal(request, self.mine, self.server_env)
        if why:
            self.refuse(conn, fds, why)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as e:  # no room for another process: this command starts cold, the running ones go on
            self.refuse(conn, fds, f"fork failed: {e.strerror}")
            return
        if pid == 0:
            others = [self.listener.fileno(), self.wake_r, self.wake_w, conn.fileno()]
            clients = [c.fileno() for c in self.running.values() if c is not None]
            child(request, fds, others + clients, self.set_by_import)
        for fd in fds:
            os.close(fd)
        self.running[pid] = conn
        try:
            conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
        except OSError:  # the client died meanwhile: its closed connection takes the child next time round
            pass

    def loop(self, parent):
        while not self.stopping and os.getppid() == parent:
            clients = [c for c in self.running.values() if c is not None]
            ready, _, _ = select.select([self.listener, self.wake_r] + clients, [], [], 0.5)
            if self.wake_r in ready:
                os.read(self.wake_r, 512)
            self.drop_gone_clients(ready)
            self.reap()
            if self.listener in ready:
                self.accept()

    def close(self):
        for pid in self.running:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.unlink(self.path)
        except OSError:
            pass


def serve(path, env_at_start, parent):
    """Imports, then serves until its parent is gone or it is sent SIGTERM; returns the exit code. `env_at_start`: the
    environment before anything was imported (importing torch sets variables of its own); `parent`: the parent's pid
    then (a parent that died during the imports leaves this process another one)."""
    import torch
    import torch._dynamo  # noqa: F401 — what the first optimizer constructor imports
    from . import __main__ as entry  # noqa: F401
    from . import build, trainer  # noqa: F401 — the worker's own modules, imported once
    if torch.cuda.is_initialized():
        print("autotune-worker: error: CUDA was initialised while importing; the warm worker cannot fork", file=sys.stderr)
        return 2
    if os.getppid() != parent:  # the tuner died while this imported: nobody to serve
        return 0
    server = Server(path, env_at_start)
    try:
        server.loop(parent)
    finally:
        server.close()
    return 0
