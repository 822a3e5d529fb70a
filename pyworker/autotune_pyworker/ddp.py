"""Data parallel in the Python worker, as a Python user runs it: torch.distributed's process group (Gloo on the CPU,
NCCL on CUDA) and torch.nn.parallel.DistributedDataParallel with the data-parallel knobs — bucket_mb (bucket_cap_mb),
first_bucket_mb (dist._DEFAULT_FIRST_BUCKET_BYTES, which DDP reads for its first bucket while bucket_cap_mb is left at
its default), grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook (DDP's default allreduce, or PyTorch's
fp16 / bf16 compression hooks) — no_sync for accumulation micro-steps, each rank its own data. The ranks meet as the
C++ worker's do (workloads/engine/dist/process_group.cpp): the torchrun environment, or Slurm's; under `autotune`,
rank 0's TCPStore takes over the listening socket the tuner bound (AUTOTUNE_STORE_FD), so no port is raced for.

Each bucket's collective is timed through a comm hook that wraps the one the config asks for (launch to completion of
its future, on the host), and a step's communication is summarised by the C++ worker's rule (workloads/engine/dist/
ddp.cpp, summarize_comm): the union of the intervals, and the part of it before the step's last bucket was launched
(hidden by backward). NCCL's futures complete on the GPU's stream, so on CUDA the host does not time them (the
traced profile's NCCL kernels do), as in the C++ worker."""
import json
import os
import re
import socket
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from .errors import Refused

TIMEOUT = timedelta(seconds=int(os.environ.get("AUTOTUNE_DIST_TIMEOUT", "300")))


def env_int(name, default):
    v = os.environ.get(name)
    try:
        return int(v) if v not in (None, "") else default
    except ValueError:
        raise Refused(f"{name}={v!r} is not an integer") from None


class DistEnv:
    """Who this process is among the ranks, from the launcher's environment (torchrun's contract, or Slurm's)."""

    def __init__(self):
        e = os.environ
        self.world, self.rank, self.local_rank, self.local_world, self.launcher = 1, 0, 0, 1, ""
        if e.get("WORLD_SIZE"):
            self.world = max(1, env_int("WORLD_SIZE", 1))
            self.rank = env_int("RANK", 0)
            self.local_rank = env_int("LOCAL_RANK", self.rank)
            self.local_world = max(1, env_int("LOCAL_WORLD_SIZE", self.world))
            self.launcher = ("autotune" if e.get("AUTOTUNE_STORE_FD") or e.get("AUTOTUNE_LAUNCHER")
                             else "torchrun" if e.get("TORCHELASTIC_RUN_ID") else "env")
        elif e.get("SLURM_NTASKS") and e.get("SLURM_PROCID"):
            self.world = max(1, env_int("SLURM_NTASKS", 1))
            self.rank = env_int("SLURM_PROCID", 0)
            self.local_rank = env_int("SLURM_LOCALID", 0)
            per_node = e.get("SLURM_STEP_TASKS_PER_NODE") or e.get("SLURM_TASKS_PER_NODE") or e.get("SLURM_NTASKS_PER_NODE")
            self.local_world = tasks_on_node(per_node, env_int("SLURM_NODEID", 0)) if per_node else self.world
            self.launcher = "slurm"
        if self.rank >= self.world:
            raise Refused(f"RANK={self.rank} is not below WORLD_SIZE={self.world}")
        # The rendezvous: MASTER_ADDR when set; in a Slurm step its first node (rank 0 runs there); else where the
        # tuner runs (AUTOTUNE_MASTER_ADDR) — workloads/engine/dist/process_group.cpp decides alike.
        nodes = e.get("SLURM_STEP_NODELIST") or e.get("SLURM_JOB_NODELIST")
        self.master_addr = (e.get("MASTER_ADDR") or (expand_hostlist(nodes)[0] if self.launcher == "slurm" and nodes else "")
                            or e.get("AUTOTUNE_MASTER_ADDR") or "127.0.0.1")
        self.master_port = env_int("MASTER_PORT", 0)
        self.listen_fd = env_int("AUTOTUNE_STORE_FD", -1)
        self.agent_store = e.get("TORCHELASTIC_USE_AGENT_STORE") in ("True", "1")
        if self.world > 1 and self.master_port == 0:
            raise Refused(f"WORLD_SIZE={self.world} but MASTER_PORT is not set: the ranks need a rendezvous address "
                          "(MASTER_ADDR, MASTER_PORT)")

    @property
    def distributed(self):
        return self.world > 1

    def check(self, ranks):
        """The config's ranks against the processes the launcher started."""
        if ranks != self.world:
            raise Refused(f"the config asks for ranks={ranks} but the launcher started WORLD_SIZE={self.world} processes"
                          if self.distributed else
                          f"ranks={ranks} needs {ranks} processes: run it through `autotune` (it starts the ranks), "
                          "torchrun or srun — this worker was started alone")


def expand_hostlist(text):
    """Slurm's hostlist syntax: "atnode[1-2],login1" → ["atnode1", "atnode2", "login1"] (zero-padding kept)."""
    out = []
    for prefix, inside, suffix, plain in re.findall(r"([^,\[]*)\[([^\]]+)\]([^,]*)|([^,]+)", text):
        if plain:
            out.append(plain)
            continue
        for part in inside.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or not (hi or lo).isdigit() or int(hi or lo) < int(lo):
                raise Refused(f"'{text}' is not a Slurm hostlist (e.g. node[1-4],login1)")
            out += [f"{prefix}{str(n).zfill(len(lo))}{suffix}" for n in range(int(lo), int(hi or lo) + 1)]
    if not out:
        raise Refused(f"'{text}' is not a Slurm hostlist (e.g. node[1-4],login1)")
    return out


def tasks_on_node(text, node_id):
    """This node's task count in Slurm's "2(x3),1"."""
    node = 0
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not m:
            raise Refused(f"tasks per node '{text}' is not Slurm's form (e.g. 2(x3),1)")
        node += int(m.group(2) or 1)
        if node_id < node:
            return int(m.group(1))
    raise Refused(f"tasks per node '{text}' names {node} node(s); this is node {node_id}")


def route_interface(host):
    """(address, interface) this host sends from to reach `host`: what a rank on another node binds Gloo to."""
    import fcntl
    import struct
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))  # a datagram connect sends nothing: the kernel picks the route and its source
            addr = s.getsockname()[0]
    except OSError as e:
        raise Refused(f"MASTER_ADDR '{host}': no route from this host ({e.strerror or e})") from None
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:  # SIOCGIFADDR: the interface's IPv4 address
                got = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))[20:24])
            except OSError:
                continue
        if got == addr:
            return addr, name
    raise Refused(f"MASTER_ADDR '{host}': the route leaves from {addr}, which no interface of this host holds")


class Group:
    """The default process group, joined: its backend and how the ranks met."""

    def __init__(self, env, cuda):
        self.env = env
        server = env.rank == 0 and not env.agent_store
        kw = {"master_listen_fd": env.listen_fd} if server and env.listen_fd >= 0 else {}
        self.store = dist.TCPStore(env.master_addr, env.master_port, env.world, server, TIMEOUT, **kw)
        self.store_kind = (f"TCPStore server on port {env.master_port} (rank 0)" if server
                           else f"TCPStore client of {env.master_addr}:{env.master_port}")
        self.backend = "nccl" if cuda else "gloo"
        # Gloo's interface: GLOO_SOCKET_IFNAME when the user set it (torch reads it); across hosts, the one the route to
        # the rendezvous leaves from (a host name may resolve to loopback or another network); loopback otherwise.
        if os.environ.get("GLOO_SOCKET_IFNAME"):
            self.interface = f"{os.environ['GLOO_SOCKET_IFNAME']} (GLOO_SOCKET_IFNAME)"
        elif env.local_world < env.world:
            addr, name = route_interface(env.master_addr)
            os.environ["GLOO_SOCKET_IFNAME"] = name
            self.interface = f"{addr} on {name} (the route to {env.master_addr})"
        else:
            self.interface = "loopback (all ranks on this host)"
        dist.init_process_group(self.backend, store=self.store, rank=env.rank, world_size=env.world, timeout=TIMEOUT)
        self.version = (".".join(map(str, torch.cuda.nccl.version())) if cuda
                        else "gloo built into torch " + torch.__version__.split("+")[0])

    def max(self, value):
        t = torch.tensor([float(value)], device="cuda" if self.backend == "nccl" else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def close(self):
        if dist.is_initialized():
            dist.destroy_process_group()


class CommRecorder:
    """Each bucket's collective while on: launch and completion on the host clock, its payload."""

    def __init__(self):
        self.on = False
        self.lock = threading.Lock()
        self.v = []  # [start, end, bytes]

    def launched(self, nbytes):
        if not self.on:
            return None
        rec = [time.perf_counter(), 0.0, nbytes]
        with self.lock:
            self.v.append(rec)
        return rec

    def take(self, settle=1.0):
        """The intervals recorded since the last take, waiting up to `settle` s for ones still in flight."""
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < settle:
            with self.lock:
                if all(r[1] > 0 for r in self.v):
                    break
            time.sleep(0.001)
        with self.lock:
            out, self.v = self.v, []
        return out


def union_and_hidden(intervals):
    """(union of the intervals, the part of it before the last launch) in seconds: what backward hid."""
    spans = sorted((a, b) for a, b, _ in intervals if b > a)
    cutoff = max((a for a, _, _ in intervals), default=0.0)
    total = hidden = 0.0
    cur = None
    for a, b in spans + [(float("inf"), float("inf"))]:
        if cur and a <= cur[1]:
            cur[1] = max(cur[1], b)
            continue
        if cur:
            total += cur[1] - cur[0]
            hidden += max(0.0, min(cur[1], cutoff) - cur[0])
        cur = [a, b]
    return total, hidden


HOOKS = {"allreduce": "allreduce_hook", "fp16": "fp16_compress_hook", "bf16": "bf16_compress_hook"}


def wrap(model, s, group, cuda, device):
    """The model under DDP with the config's knobs, its collectives timed; (ddp_model, recorder, proof words)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    default_bucket = s.bucket_mb == 25
    if default_bucket:
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(s.first_bucket_mb * 1024 * 1024)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if cuda else None, bucket_cap_mb=None if default_bucket else s.bucket_mb,
        gradient_as_bucket_view=s.grad_as_bucket_view, static_graph=s.static_graph,
        broadcast_buffers=s.broadcast_buffers)
    rec = CommRecorder()
    inner = getattr(default_hooks, HOOKS[s.comm_hook])
    shrink = 0.5 if s.comm_hook in ("fp16", "bf16") else 1.0

    def timed(state, bucket):
        buf = bucket.buffer()
        r = rec.launched(int(buf.numel() * buf.element_size() * shrink))
        fut = inner(state, bucket)
        if r is None:
            return fut

        def done(f):
            r[1] = time.perf_counter()
            return f.value()
        return fut.then(done)

    ddp.register_comm_hook(None, timed)  # state None: the default group
    return ddp, rec


def bucket_bytes(ddp):
    data = ddp._get_ddp_logging_data()
    sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or ""
    return [int(x) for x in str(sizes).split(",") if x.strip()]


def proofs(trial, ddp, s):
    """Each data-parallel knob read back from DDP and its Reducer (DDP's own logging data)."""
    data = ddp._get_ddp_logging_data()
    sizes = bucket_bytes(ddp)
    desc = (f"{len(sizes)} buckets ({', '.join(f'{b / 1e6:.1f}' for b in sizes)} MB), "
            f"{'rebuilt after step 1' if data.get('has_rebuilt_buckets') else 'not rebuilt'}; bucket_cap {data.get('bucket_cap_bytes', 0) / 2**20:.0f} MiB")
    trial.applied("bucket_mb", s.bucket_mb, desc)
    trial.applied("first_bucket_mb", s.first_bucket_mb,
                  f"dist._DEFAULT_FIRST_BUCKET_BYTES = {dist._DEFAULT_FIRST_BUCKET_BYTES}; " + desc)
    p = next(x for x in ddp.module.parameters() if x.requires_grad)
    g = p.grad
    trial.applied("grad_as_bucket_view", str(s.grad_as_bucket_view).lower(),
                  f"first parameter's .grad shares a bucket's storage = "
                  f"{str(g.untyped_storage().nbytes() > g.nbytes).lower()}" if g is not None
                  else "grads released by zero_grad=none before they could be checked")
    trial.applied("static_graph", str(s.static_graph).lower(), f"DDP static_graph = {bool(data.get('static_graph'))}")
    bufs = list(ddp.module.buffers())
    trial.applied("broadcast_buffers", str(s.broadcast_buffers).lower(),
                  "the model has no buffers: nothing to broadcast" if not bufs else
                  f"{len(bufs)} buffers; DDP broadcast_buffers = {ddp.broadcast_buffers}")
    trial.applied("comm_hook", s.comm_hook, f"default_hooks.{HOOKS[s.comm_hook]}, timed per bucket")
    return sizes


def gather(group, me):
    """Every rank's figures to rank 0 through the store; rank 0 gets them all (others: None)."""
    env = group.env
    group.store.set(f"autotune/rank/{env.rank}", json.dumps(me))
    if env.rank != 0:
        return None
    return [json.loads(group.store.get(f"autotune/rank/{r}")) for r in range(env.world)]


def host_name():
    return socket.gethostname()
