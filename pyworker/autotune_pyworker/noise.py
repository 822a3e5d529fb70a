"""A noise-scale trial in the Python worker (plan.json "noise", knobs/noise_scale.h): train `burn_in_seconds`
recording nothing, then record each optimizer step's micro-batch and step gradient norms until the relative standard
error reaches its target, the windows along the run are complete, or max_steps / max_seconds run out. The norms are
taken by the noise logger users put in their own loops (logger/autotune_noise_log.py), so a trial and a user's log
are the same measurement; the tuner makes the estimate from the steps."""
import json
import math
import os
import sys
import time

# The logger lives at the repository's top (logger/): users copy it into their loops.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "logger"))
from autotune_noise_log import NoiseLog  # noqa: E402

BLOCKS = 16  # knobs/noise_scale.h kNoiseBlocks
MIN_WINDOW_STEPS = 4  # knobs/noise_trajectory.h kMinWindowSteps


def rel_se(steps, b, B, max_blocks=BLOCKS):
    """The relative standard error of ΣS/ΣG over contiguous blocks (the delta method): the stopping rule of
    knobs/noise_scale.cpp estimate_noise_scale, on [small_sq, big_sq] pairs; ∞ without an estimate."""
    terms = [((B * big - b * small) / (B - b), (small - big) / (1 / b - 1 / B))
             for small, big in steps if small is not None and big is not None]
    sum_g, sum_s = sum(g for g, _ in terms), sum(s for _, s in terms)
    if not terms or sum_g <= 0 or sum_s <= 0:
        return math.inf
    r = sum_s / sum_g
    m = min(max_blocks, len(terms) // 2)
    if m < 2:
        return math.inf
    bs, bg = [0.0] * m, [0.0] * m
    for j in range(m):
        for g, s in terms[j * len(terms) // m:(j + 1) * len(terms) // m]:
            bs[j] += s
            bg[j] += g
    sbar, gbar = sum(bs) / m, sum(bg) / m
    vss = sum((x - sbar) ** 2 for x in bs) / ((m - 1) * m)
    vgg = sum((x - gbar) ** 2 for x in bg) / ((m - 1) * m)
    vsg = sum((x - sbar) * (y - gbar) for x, y in zip(bs, bg)) / ((m - 1) * m)
    return math.sqrt(max(0.0, vss - 2 * r * vsg + r * r * vgg) / (gbar * gbar)) / r


class LogSteps:
    """The steps the logger has written so far, each line parsed once (`update` reads what was appended)."""

    def __init__(self, path):
        self.path, self.offset, self.header_read, self.steps = path, 0, False, []

    def update(self):
        with open(self.path) as f:
            f.seek(self.offset)
            for line in f:
                if not line.endswith("\n"):  # a line still being written: read it next time
                    break
                self.offset += len(line.encode())
                if not self.header_read:
                    self.header_read = True
                    continue
                rec = json.loads(line)
                self.steps.append([rec["small_sq"], rec["big_sq"]])
        return self.steps


def noise_trial(trial, plan, log_path):
    """Runs the noise trial on `trial` (a built trainer.Trial) and returns the result's `noise` record."""
    s = trial.s
    if s.grad_accum < 2:
        raise ValueError("a noise-scale trial needs grad_accum ≥ 2")
    p = {"burn_in_seconds": 0.0, "target_rel_se": 0.25, "min_steps": 32, "max_steps": 400, "max_seconds": 60.0,
         "windows": 0, **plan}
    rec = {"micro_batch": s.batch_size, "micro_batches": s.grad_accum, "weights": "random init", "burn_in_steps": 0,
           "dropped": 0, "stopped": "max_steps"}
    b0 = time.perf_counter()
    # With windows, at least a window's worth of steps: the first window is as long as the burn-in
    # (knobs/noise_trajectory.h, kMinWindowSteps).
    min_burn_in = MIN_WINDOW_STEPS if int(p["windows"]) > 0 and p["burn_in_seconds"] > 0 else 0
    while time.perf_counter() - b0 < p["burn_in_seconds"] or rec["burn_in_steps"] < min_burn_in:
        trial.step()
        rec["burn_in_steps"] += 1
    trial.flush()
    rec["burn_in_seconds"] = time.perf_counter() - b0
    burnt = len(trial.losses)
    b, B = float(s.batch_size), float(s.batch_size * s.grad_accum)
    n0 = rec["burn_in_steps"] if rec["burn_in_steps"] > 0 else int(p["min_steps"])
    windows = int(p["windows"])
    if windows > 0:
        rec["windows"] = windows
        rec["first_window_end"] = 2 * n0 * s.batch_size * s.grad_accum
    t0 = time.perf_counter()
    logged = LogSteps(log_path)
    with NoiseLog(log_path, trial.model, s.batch_size, s.grad_accum, loss_divided=True) as log:
        trial.noise_log = log
        for i in range(1, int(p["max_steps"]) + 1):
            trial.step()
            trial.flush()
            if windows > 0 and rec["burn_in_steps"] + i >= (n0 << windows):
                rec["stopped"] = "windows"
                break
            if windows == 0 and i >= int(p["min_steps"]) and rel_se(logged.update(), b, B) <= p["target_rel_se"]:
                rec["stopped"] = "target"
                break
            if time.perf_counter() - t0 >= p["max_seconds"]:
                rec["stopped"] = "max_seconds"
                break
        trial.noise_log = None
    rec["seconds"] = time.perf_counter() - t0
    rec["steps"] = list(logged.update())
    rec["dropped"] = sum(1 for st in rec["steps"] if st[0] is None or st[1] is None)
    losses = trial.losses[burnt:]
    trial.result["warmup_losses"] = trial.losses[:burnt]
    trial.result["losses"] = [x if math.isfinite(x) else None for x in losses]
    tenth = max(1, len(losses) // 10)
    if losses:
        rec["loss_first"] = sum(losses[:tenth]) / len(losses[:tenth])
        rec["loss_last"] = sum(losses[-tenth:]) / len(losses[-tenth:])
    return rec
