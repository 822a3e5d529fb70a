"""The knobs this worker applies, as the knob rules resolve them — resolved by the rules' one home, not here.

The catalog (defaults, domains, PyTorch's defaults per frontend and device), which values apply on which device and
model, and what a value other knobs rule out falls back to, with its reason, are knobs/knob.cpp and knobs/resolve.cpp.
This worker builds the model, picks its device, and asks `autotune-resolve` (knobs/resolve_main.cpp) what the plan's
config means there; it applies the answer. What only Python can know — whether the user's optimizer class takes
foreach= or fused=, which torch.compile modes the installed torch has — it reports as a skip of its own, with the reason.
"""
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, fields

from .errors import Refused

# What this worker applies, through PyTorch's own Python API: its capability, reported by `describe` (WorkloadInfo
# knobs), which the rules read. A knob not listed here runs at its default, and the resolution says why.
APPLIED = ("batch_size", "threads", "precision", "optimizer_impl", "zero_grad", "grad_accum", "log_every",
           "checkpointing", "memory_format", "cudnn_benchmark", "compile", "num_workers", "prefetch", "pin_memory",
           "ranks", "bucket_mb", "first_bucket_mb", "grad_as_bucket_view", "static_graph", "broadcast_buffers", "comm_hook",
           "cuda_graphs")


@dataclass
class Settings:
    """Each applied knob's value as the resolution gives it (its types: the C++ `Settings`, knobs/resolve.h)."""
    batch_size: int
    threads: str
    precision: str
    optimizer_impl: str
    zero_grad: str
    grad_accum: int
    log_every: int
    memory_format: str
    cudnn_benchmark: bool
    compile: str
    checkpointing: str
    num_workers: int
    prefetch: int
    pin_memory: bool
    ranks: int
    bucket_mb: int
    first_bucket_mb: int
    grad_as_bucket_view: bool
    static_graph: bool
    broadcast_buffers: bool
    comm_hook: str
    cuda_graphs: bool


def resolver():
    """autotune-resolve: $AUTOTUNE_RESOLVER (the launcher next to `autotune` sets it), else on PATH."""
    tool = os.environ.get("AUTOTUNE_RESOLVER") or shutil.which("autotune-resolve")
    if not tool or not os.access(tool, os.X_OK):
        raise RuntimeError("autotune-resolve not found (the launcher next to `autotune` sets AUTOTUNE_RESOLVER; or put it "
                           "on PATH): the knob rules live there, and this worker keeps none of its own")
    return tool


def resolve(plan, workload, env, launcher_ranks=False):
    """The resolution of `plan`'s config for this worker's model (`workload`: describe's JSON) and device (`env`)."""
    query = json.dumps({"plan": plan, "workload": workload, "env": env, "launcher_ranks": launcher_ranks})
    r = subprocess.run([resolver()], input=query, capture_output=True, text=True, timeout=60)
    if r.returncode == 2:  # the plan itself is wrong: an unknown knob, a value out of its domain
        raise Refused((r.stderr.strip().splitlines() or ["autotune-resolve refused the plan"])[-1]
                      .removeprefix("autotune-resolve: "))
    if r.returncode != 0:
        raise RuntimeError(f"autotune-resolve failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout)


def settings_of(resolution):
    """(Settings, skipped[]) from a resolution: the values as resolved, typed as the resolution types them."""
    got = resolution["settings"]
    missing = [f.name for f in fields(Settings) if f.name not in got]
    if missing:
        raise RuntimeError(f"the resolution has no value for {', '.join(missing)}: autotune-resolve is older than this worker")
    return Settings(**{f.name: got[f.name] for f in fields(Settings)}), list(resolution["skipped"])
