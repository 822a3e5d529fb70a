"""A traced trial, as the C++ worker's (workloads/engine/traced_steps.cpp): after warm-up, `steps` untraced reference
steps, then as many under torch.profiler — each a "ProfilerStep#N" range holding its phases' ranges, CUDA activity
when the trial runs on a GPU — the Chrome trace written where the plan says, and the trace analysed by the
profiler's own analysis (`autotune-trace analyze`, profiler/trace_main.cpp), so the phase table, the kernels and the
verdict are the ones the C++ worker's CUPTI trace gives. Never a timed trial."""
import json
import os
import shutil
import subprocess
import time
import warnings

import torch


HOST_ONLY = "no CUDA device in this trial: host-only profile (phase times, no GPU timeline)"


def trace_tool():
    """autotune-trace: $AUTOTUNE_TRACE_TOOL (the launcher next to `autotune` sets it), else on PATH; None if neither."""
    tool = os.environ.get("AUTOTUNE_TRACE_TOOL") or shutil.which("autotune-trace")
    return tool if tool and os.access(tool, os.X_OK) else None


def profiler(cuda, steps):
    """torch.profiler over one warm-up step and `steps` recorded ones. The warm-up step runs with the profiler started
    but records nothing: the profiler's own start-up (CUPTI's subscription, its first buffers) falls there, not in the
    steps measured — without it the H200 lease of 2026-11-27 read 1.87-2.04× inflation where CUPTI read 1.05-1.21×."""
    from torch.profiler import ProfilerActivity, profile, schedule
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    # CUPTI's synchronisation records: the syncs table counts a sync whose API call was not seen (as the collector does)
    config = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True) if cuda else None
    return profile(activities=activities, experimental_config=config,
                   schedule=schedule(wait=0, warmup=1, active=steps, repeat=1))


def analyse(path, trial):
    """The profile autotune-trace gives of the trace, or an unanalysed one that says why."""
    tool = trace_tool()
    if not tool:
        return {"valid": False, "invalid_reason": "autotune-trace not found (set AUTOTUNE_TRACE_TOOL or put it on PATH): "
                                                  "the trace is written, not analysed"}
    s = trial.s
    knobs = trial.resolution["applicable"]  # the knob rules' answer for this model and device (settings.py)
    cmd = [tool, "analyze", path, "--flops-per-sample", repr(float(trial.result.get("flops_per_sample") or 0)),
           "--samples-per-step", str(s.batch_size * s.grad_accum), "--precision", s.precision, "--knobs", ",".join(knobs)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return {"valid": False, "invalid_reason": lines[-1] if lines else f"autotune-trace exited {done.returncode}"}
    return json.loads(done.stdout)


def rank_trace_path(trace, rank):
    """Where rank `rank` of a data-parallel traced trial writes its trace (knobs/protocol.h, rank_trace_path): one folder
    per trial, `rank<R>.json` in it — what HTA's multi-rank analysis loads (torch.profiler adds distributedInfo)."""
    stem = trace[:-5] if trace.endswith(".json") and len(trace) > 5 else trace
    return os.path.join(stem, f"rank{rank}.json")


def run_traced(trial, path, steps):
    """The profile of `steps` traced steps (result.json `profile`)."""
    cuda = trial.device.type == "cuda"
    if trial.group:
        path = rank_trace_path(path, trial.denv.rank)
    untraced = trial.timed_steps(steps)
    prof = profiler(cuda, steps)
    timer = trial.timer
    with warnings.catch_warnings():  # the profiler's note on clearing events between cycles: one cycle here
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with prof:
            timer.ranges = True
            trial.step()  # the warm-up step: profiler started, nothing recorded
            trial.sync()
            prof.step()  # recording starts; each prof.step() opens the next "ProfilerStep#N" range
            t0 = time.perf_counter()
            for i in range(steps):
                if i:
                    prof.step()
                trial.step()
            trial.flush()
            trial.sync()  # the last step's GPU work completes inside the traced window
            traced = (time.perf_counter() - t0) / steps
            prof.step()  # closes the last step's range and the recording (the trace is collected here, untimed)
            timer.ranges = False
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    prof.export_chrome_trace(path)
    p = analyse(path, trial)
    p.update(mode="torch.profiler", reason="" if cuda else HOST_ONLY, untraced_step_ms=untraced * 1e3,
             traced_step_ms=traced * 1e3, inflation=traced / untraced if untraced > 0 else 0.0, trace=path)
    return p
