#!/usr/bin/env python3
"""What the Python noise logger (logger/autotune_noise_log.py) costs a training loop, and whether its sums hold on the
device and under autocast.

    scripts/autotune-python.sh bench/noise_logger.py [--device cuda] [--steps 60] [--out FILE.json]

A 4-layer MLP (1024 wide; 4.2 M parameters) trains with AdamW and gradient accumulation (4 micro-batches of 64) on
random data: without a logger, logging every step and every 10th, interleaved and repeated 3 times (the median of
each). On CUDA the step runs under bf16 autocast. Checked first: the logged sums of the first 3 steps against each
micro-batch's own gradient (autograd on each micro-batch alone; the relative error is printed, a bf16 step's within
1e-2, an fp32 one within 1e-4). Prints and writes JSON: steps/s of each arm and the logger's cost as a share of the step.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "logger"))
from autotune_noise_log import NoiseLog  # noqa: E402

K, B = 4, 64
WIDTH = 1024  # --width: the kit's CPU rehearsal checks the logger's sums on a narrower MLP


def model_on(device):
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(WIDTH, 10)).to(device)


def loss_of(model, x, y, device):
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        return torch.nn.functional.cross_entropy(model(x).float(), y)


def run(device, steps, every, check=False):
    """steps/s of `steps` optimizer steps (after 5 untimed), logging every `every` steps (0: no logger); with `check`,
    the worst relative error of the first 3 logged steps against each micro-batch's own gradient."""
    model = model_on(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cpu").manual_seed(1)
    data = [(torch.randn(B, WIDTH, generator=g).to(device), torch.randint(10, (B,), generator=g).to(device)) for _ in range(8)]
    scratch = tempfile.TemporaryDirectory(prefix="noise-logger-")  # removed when run() returns
    path = os.path.join(scratch.name, "log.jsonl")
    log = NoiseLog(path, model, micro_batch=B, micro_batches=K, every=every) if every else None
    worst, reference = 0.0, []
    t0 = None
    for step in range(steps + 5):
        if step == 5:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        batches = [data[(step * K + k) % len(data)] for k in range(K)]
        if check and step < 3:
            gs = [torch.autograd.grad(loss_of(model, x, y, device), list(model.parameters())) for x, y in batches]
            small = sum(sum(float(t.double().pow(2).sum()) for t in gk) for gk in gs) / K
            big = sum(float(sum(gk[j].double() for gk in gs).div(K).pow(2).sum()) for j in range(len(gs[0])))
            reference.append((small, big))
        opt.zero_grad(set_to_none=True)
        for x, y in batches:
            (loss_of(model, x, y, device) / K).backward()
            if log:
                log.micro_batch_done()
        if log:
            log.step()
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    rate = steps / (time.perf_counter() - t0)
    if log:
        log.close()
        if check:
            lines = [json.loads(line) for line in open(path)][1:4]
            for (small, big), rec in zip(reference, lines):
                worst = max(worst, abs(rec["small_sq"] - small) / small, abs(rec["big_sq"] - big) / big)
    scratch.cleanup()
    return rate, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", default="")
    ap.add_argument("--width", type=int, default=1024, help="the MLP's width (4 layers)")
    ap.add_argument("--reps", type=int, default=3, help="interleaved rounds of the three arms")
    a = ap.parse_args()
    global WIDTH
    WIDTH = a.width
    device = torch.device(a.device)
    _, err = run(device, 3, 1, check=True)
    rates = {"none": [], "every 1": [], "every 10": []}
    for rep in range(a.reps):
        for arm in (["none", "every 1", "every 10"] if rep % 2 == 0 else ["every 10", "every 1", "none"]):
            rates[arm].append(run(device, a.steps, {"none": 0, "every 1": 1, "every 10": 10}[arm])[0])
    med = {arm: statistics.median(r) for arm, r in rates.items()}
    out = {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
           "torch": torch.__version__, "model": f"MLP 4 × {WIDTH} ({(4 * (WIDTH * WIDTH + WIDTH) + 10 * WIDTH + 10) / 1e6:.2f} M parameters), "
                    "AdamW, 4 × 64 accumulated",
           "autocast": "bf16" if device.type == "cuda" else "off", "sums_rel_error": err,
           "steps_per_s": med, "cost_every_1": 1 - med["every 1"] / med["none"], "cost_every_10": 1 - med["every 10"] / med["none"]}
    text = json.dumps(out, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    tol = 1e-2 if device.type == "cuda" else 1e-4
    if err > tol:
        sys.exit(f"the logged sums are {err:.2e} off each micro-batch's own gradients (allowed {tol:g})")


if __name__ == "__main__":
    main()
