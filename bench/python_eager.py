#!/usr/bin/env python3
"""PyTorch Python eager twin of autotune-worker's CPU trial, for bench/compare_eager.sh.

Same architecture (ResNet-18 v1.5 / nanoGPT-style gpt-mini), same synthetic data stage (a fixed pool
gathered with index_select each step), same AdamW (for-loop, torch defaults, lr 1e-3), same loss read
every step, same protocol (warm-up until the step time settles, then windows of >= --window-seconds).
Prints {"windows": [samples/s, ...], "breakdown_ms": {forward, backward, optimizer}} as JSON
(optimizer includes zero_grad, as in the worker).
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


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for stage, planes in enumerate([64, 128, 256, 512]):
            for i in range(2):
                blocks.append(Block(cin, planes, 2 if stage > 0 and i == 0 else 1))
                cin = planes
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

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
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", choices=["resnet18", "gpt-mini"], required=True)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--window-seconds", type=float, default=1.0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if a.workload == "resnet18":
        model = ResNet18()
        images = torch.randn(256, 3, a.image_size, a.image_size, generator=g)
        labels = torch.randint(1000, (256,), generator=g)

        def batch():
            i = torch.randint(256, (a.batch_size,), generator=g)
            return images.index_select(0, i), labels.index_select(0, i)

        loss_fn = lambda out, y: F.cross_entropy(out, y)
    else:
        model = GptMini()
        succ = torch.randint(512, (512, 4), generator=g)
        choice = torch.randint(4, (1 << 20,), generator=g)
        stream = torch.empty(1 << 20, dtype=torch.long)
        s, c, t = stream.numpy(), choice.numpy(), succ.numpy()
        s[0] = 0
        for i in range(1, len(s)):
            s[i] = t[s[i - 1], c[i]]
        off = torch.arange(65)

        def batch():
            w = stream[torch.randint(len(stream) - 65, (a.batch_size, 1), generator=g) + off]
            return w[:, :64].contiguous(), w[:, 1:].contiguous()

        loss_fn = lambda out, y: F.cross_entropy(out.view(-1, out.shape[-1]), y.view(-1))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)

    phase = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    timing = [False]

    def step():
        x, y = batch()
        t0 = time.perf_counter()
        loss = loss_fn(model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=False)  # the C++ baseline's zero_grad=zeros
        t3 = time.perf_counter()
        if timing[0]:
            phase["forward"] += t1 - t0
            phase["backward"] += t2 - t1
            phase["optimizer"] += t3 - t2
        return loss.item()

    # Warm-up: same rule as the worker (blocks of 2 steps until two agree within 10%, >= 5 steps, >= 0.3 s).
    prev, steps, t0 = -1.0, 0, time.perf_counter()
    while True:
        b0 = time.perf_counter()
        for _ in range(2):
            step()
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
        windows.append(n * a.batch_size / (time.perf_counter() - s0))
        measured += n
    print(json.dumps({"windows": windows, "breakdown_ms": {k: v * 1e3 / measured for k, v in phase.items()}}))


if __name__ == "__main__":
    main()
