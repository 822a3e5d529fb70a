"""A converge trial, as the C++ worker's (workloads/engine/trainer.cpp, converge): no warm-up and no windows — train
from the first step to a target loss, or for max_seconds / max_samples, recording every optimizer step's samples,
wall seconds and loss (result.json `converge`), with a batch ramp's phases switched after the step that reaches each
one (grad_accum and the learning rate), and, where the plan asks for it and the trial has held-out data (held_out.py),
the held-out loss every val_every samples — at the start, at the first read past each multiple, and at the end —, its
time kept off the training clock. The stopping rule is knobs/converge.cpp's (curve.py, held to it by a test):
the loss smoothed over the last smooth_samples samples, weighted by the samples each step trained, at or below the
target once the window is full.
With ranks > 1 every rank trains the same steps and the ranks decide together at loss reads. The trained weights go
to save_checkpoint (torch.save of the model's state_dict; `--init-from` of the Python worker reads it back)."""
import math
import os
import time

import torch

from .curve import reached_target
from .errors import Refused
from .held_out import held_out_of


class HeldOutClock:
    """The held-out evaluations of one run: each at a training time, its own time taken off the training clock."""

    def __init__(self, trial, held, every):
        self.trial, self.held, self.every = trial, held, every
        self.points, self.seconds, self.next = [], 0.0, 0

    def due(self, samples, stopped=False):
        """At `samples` trained: a multiple of the cadence passed, or the run `stopped` past its last evaluation."""
        return self.held is not None and (samples >= self.next or (stopped and self.points[-1][0] < samples))

    def evaluate(self, samples, now):
        """Evaluates at `samples` trained, `now` seconds of training; returns the seconds it took."""
        self.trial.sync()
        a = time.perf_counter()
        loss = self.held.evaluate(self.trial)
        self.trial.sync()
        took = time.perf_counter() - a
        self.points.append([samples, now, loss if math.isfinite(loss) else None])
        self.seconds += took
        while self.next <= samples:
            self.next += self.every
        return took

    def record(self, rec):
        if self.held is not None:
            bad = f"; {self.held.bad} bad image(s) skipped at each evaluation" if self.held.bad else ""
            rec.update(val_points=self.points, val_samples=self.held.samples, val_seconds=self.seconds,
                       val_source=self.held.source + bad)


def run_converge(trial, p):
    """result.json `converge`, and the trial's losses and one window (the whole run, for its samples/s)."""
    save = p.get("save_checkpoint", "")
    if save and os.path.exists(save):
        raise Refused(f"{save}: already exists; a weights file is never overwritten (choose another path)")
    max_seconds, max_samples = float(p.get("max_seconds", 60)), int(p.get("max_samples", 0))
    target, window = float(p.get("target_loss", 0)), int(p.get("smooth_samples", 2048))
    ramp = [tuple(x) for x in p.get("ramp", [])]  # [from_samples, grad_accum, lr]
    if ramp and trial.graphed:
        raise Refused("a batch ramp changes grad_accum mid-run, which a captured CUDA graph cannot: use cuda_graphs=off")
    rec = {"points": [], "stopped": "", "lr": trial.opt.param_groups[0]["lr"], "smooth_samples": window, "checkpoint": ""}
    switched, phase = [], 0
    world = trial.denv.world

    task = trial.built.task
    scheduled = task is not None and task.scheduler is not None

    def switch_phases(trained):
        nonlocal phase
        while phase < len(ramp) and trained >= ramp[phase][0]:
            start, accum, lr = ramp[phase]
            trial.s.grad_accum = int(accum)
            if scheduled:  # the user's schedule goes on, its rates × the phase's change (the first phase is the run's)
                if phase > 0:
                    task.scale_rate(trial.opt, float(lr) / float(ramp[phase - 1][2]))
            else:
                for g in trial.opt.param_groups:
                    g["lr"] = float(lr)
            phase += 1
            if start > 0:
                switched.append(trained)

    switch_phases(0)
    if ramp:
        rec["lr"] = float(ramp[0][2])
    step_samples, samples, last_read = [], 0, 0.0
    held = HeldOutClock(trial, held_out_of(trial, p), int(p.get("val_every", 0)))
    if held.due(0):
        held.evaluate(0, 0.0)
    trial.sync()
    t0 = time.perf_counter()
    pts = rec["points"]
    while not rec["stopped"]:
        trial.step()
        samples += trial.s.batch_size * trial.s.grad_accum * world
        step_samples.append(samples)
        switch_phases(samples)
        have = len(trial.losses)
        if have == len(pts):  # not read yet (log_every > 1): decide at the next read; ranks only at reads
            if trial.group or (time.perf_counter() - t0 < max_seconds and (max_samples == 0 or samples < max_samples)):
                continue
            trial.flush()
        now = time.perf_counter() - t0
        if trial.group:
            now = trial.group.max(now)
        before, got = len(pts), len(trial.losses)
        for i in range(before, got):  # the steps read together share the time since the last read evenly
            frac = (i + 1 - before) / (got - before)
            pts.append([step_samples[i], last_read + frac * (now - last_read), trial.losses[i]])
        last_read = now
        last = pts[-1]
        if not math.isfinite(last[2]):
            rec["stopped"] = "non_finite"
        elif reached_target(pts, len(pts) - 1, target, window):
            rec["stopped"] = "target"
        elif now >= max_seconds:
            rec["stopped"] = "max_seconds"
        elif max_samples > 0 and samples >= max_samples:
            rec["stopped"] = "max_samples"
        if held.due(samples, bool(rec["stopped"])):
            t0 += held.evaluate(samples, now)  # at the same read on every rank: the ranks evaluate together
    trial.flush()
    if save and trial.denv.rank == 0:
        model = trial.model.module if trial.group else trial.model
        torch.save(model.state_dict(), save)
        rec["checkpoint"] = save
    if switched:
        rec["switched_at"] = switched
    held.record(rec)
    rec["points"] = [[s, t, loss if math.isfinite(loss) else None] for s, t, loss in pts]
    return rec, samples, last_read
