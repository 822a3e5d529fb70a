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
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or cin != planes:
            self.down = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (self.down(x) if self.down is not None else x))


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck (stride on the 3x3), as torchvision's resnet50."""

    def __init__(self, cin, planes, stride):
        super().__init__()
        out = planes * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, planes, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or cin != out:
            self.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000, depth=18):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        counts = [2, 2, 2, 2] if depth == 18 else [3, 4, 6, 3]
        for stage, planes in enumerate([64, 128, 256, 512]):
            for i in range(counts[stage]):
                stride = 2 if stage > 0 and i == 0 else 1
                if depth == 18:
                    blocks.append(Block(cin, planes, stride))
                    cin = planes
                else:
                    blocks.append(Bottleneck(cin, planes, stride))
                    cin = planes * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 3, 2, 1)
        x = self.blocks(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class Attn(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.qkv, self.proj, self.h = nn.Linear(c, 3 * c), nn.Linear(c, c), h

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, 2)
        heads = lambda t: t.view(B, T, self.h, C // self.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GptBlock(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(c), Attn(c, h), nn.LayerNorm(c)
        self.fc, self.fc_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GptMini(nn.Module):
    def __init__(self, vocab=512, T=64, L=4, H=4, C=128):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(GptBlock(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.t()


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
