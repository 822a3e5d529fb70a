#!/usr/bin/env python3
"""PyTorch Python eager twin of autotune-worker's trial, for bench/compare_eager.sh (CPU) and the GPU
proof kit's eager_compare step (scripts/device_check.py).

Same architectures (mlp 512-1024-1024-10, ResNet-18/50 v1.5, nanoGPT-style gpt-mini / gpt2-124m), same
synthetic data stage (a fixed pool on the training device gathered with index_select each step), same
AdamW (lr 1e-3; loop, foreach or fused), same knobs where given (autocast bf16, channels_last, loss read
every --log-every steps, zero_grad to zeros or None), same protocol (warm-up until the step time
settles, then windows of >= --window-seconds). Prints {"windows": [samples/s, ...], "breakdown_ms":
{forward, backward, optimizer}} as JSON (optimizer includes zero_grad, as in the worker; on CUDA the
phases are not timed: without a sync per phase they would measure launches).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# The architectures are the Python worker's built-in workloads (pyworker/autotune_pyworker/builtin.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyworker"))
from autotune_pyworker.builtin import Attn, Block, Bottleneck, GptBlock, GptMini, ResNet18  # noqa: E402,F401


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", choices=["mlp", "resnet18", "resnet50", "gpt-mini", "gpt2-124m"], required=True)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--window-seconds", type=float, default=1.0)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--precision", choices=["fp32", "amp_bf16"], default="fp32")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--optimizer", choices=["loop", "foreach", "fused"], default="loop")
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--zero-grad", choices=["zeros", "none"], default="zeros")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    gd = torch.Generator(device=dev).manual_seed(1)  # batches are drawn on the training device, as the worker does
    if a.workload in ("resnet18", "resnet50", "mlp"):
        if a.workload == "mlp":
            model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
            images = torch.randn(256, 512, generator=g)
            labels = torch.randint(10, (256,), generator=g)
        else:
            model = ResNet18(depth=18 if a.workload == "resnet18" else 50)
            images = torch.randn(256, 3, a.image_size, a.image_size, generator=g)
            labels = torch.randint(1000, (256,), generator=g)
        images, labels = images.to(dev), labels.to(dev)
        if a.channels_last and images.dim() == 4:
            images = images.contiguous(memory_format=torch.channels_last)

        def batch():
            i = torch.randint(256, (a.batch_size,), generator=gd, device=dev)
            return images.index_select(0, i), labels.index_select(0, i)

        loss_fn = lambda out, y: F.cross_entropy(out, y)
    else:
        gpt = dict(vocab=50304, T=1024, L=12, H=12, C=768) if a.workload == "gpt2-124m" else dict(vocab=512, T=64)
        model = GptMini(**gpt)
        V, T = gpt["vocab"], gpt["T"]
        succ = torch.randint(V, (V, 4), generator=g)
        choice = torch.randint(4, (1 << 20,), generator=g)
        stream = torch.empty(1 << 20, dtype=torch.long)
        s, c, t = stream.numpy(), choice.numpy(), succ.numpy()
        s[0] = 0
        for i in range(1, len(s)):
            s[i] = t[s[i - 1], c[i]]
        stream = stream.to(dev)
        off = torch.arange(T + 1, device=dev)

        def batch():
            w = stream[torch.randint(len(stream) - T - 1, (a.batch_size, 1), generator=gd, device=dev) + off]
            return w[:, :T].contiguous(), w[:, 1:].contiguous()

        loss_fn = lambda out, y: F.cross_entropy(out.view(-1, out.shape[-1]), y.view(-1))
    model = model.to(dev)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=a.optimizer == "foreach",
                            fused=True if a.optimizer == "fused" else None)
    cuda = dev.type == "cuda"
    running = torch.zeros((), device=dev)
    count = [0]

    phase = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    timing = [False]

    def step():
        nonlocal running
        x, y = batch()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.precision == "amp_bf16"):
            loss = loss_fn(model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=a.zero_grad == "none")  # the C++ baseline's zero_grad=zeros
        t3 = time.perf_counter()
        if timing[0] and not cuda:
            phase["forward"] += t1 - t0
            phase["backward"] += t2 - t1
            phase["optimizer"] += t3 - t2
        running = running + loss.detach()
        count[0] += 1
        if count[0] % a.log_every == 0:  # the one host sync, as the worker's log_every
            return running.item()
        return None

    def sync():
        if cuda:
            torch.cuda.synchronize()

    # Warm-up: same rule as the worker (blocks of 2 steps until two agree within 10%, >= 5 steps, >= 0.3 s).
    prev, steps, t0 = -1.0, 0, time.perf_counter()
    while True:
        b0 = time.perf_counter()
        for _ in range(2):
            step()
        sync()
        steps += 2
        per = (time.perf_counter() - b0) / 2
        settled = prev > 0 and abs(per - prev) <= 0.1 * prev
        prev = per
        if (settled and steps >= 5 and time.perf_counter() - t0 >= 0.3) or steps >= 500:
            break
    windows, measured = [], 0
    timing[0] = True
    for _ in range(a.windows):
        n, s0 = 0, time.perf_counter()
        while n < 5 or time.perf_counter() - s0 < a.window_seconds:
            step()
            n += 1
        sync()
        windows.append(n * a.batch_size / (time.perf_counter() - s0))
        measured += n
    print(json.dumps({"windows": windows, "breakdown_ms": {k: v * 1e3 / measured for k, v in phase.items()}}))


if __name__ == "__main__":
    main()
