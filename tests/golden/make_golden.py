#!/usr/bin/env python3
"""Writes tests/golden/engine_golden.json from PyTorch's own Python API (torch==2.11.0, CPU).

Run once, commit the output; the C++ engine tests compare against it:
    $AUTOTUNE_CACHE/venv-torch-2.11.0/bin/python tests/golden/make_golden.py
Every input (weights, batches) is stored in the file, so the C++ side needs no matching RNG.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

assert torch.__version__.split("+")[0] == "2.11.0", f"golden values must come from torch 2.11.0, not {torch.__version__}"
torch.manual_seed(1234)
out = {"torch_version": torch.__version__}


def tl(t):
    return t.detach().double().flatten().tolist()


# ---- AdamW: loop (foreach=False), foreach, fused after N steps on a fixed 2-layer MLP --------------
shapes = {"w1": (8, 6), "b1": (8,), "w2": (3, 8), "b2": (3,)}
init = {k: torch.randn(s) * 0.3 for k, s in shapes.items()}
x = torch.randn(16, 6)
y = torch.randint(0, 3, (16,))
hp = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
steps = 5


def run_adamw(**impl):
    ps = {k: v.clone().requires_grad_(True) for k, v in init.items()}
    opt = torch.optim.AdamW(list(ps.values()), **hp, **impl)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        h = F.relu(x @ ps["w1"].T + ps["b1"])
        loss = F.cross_entropy(h @ ps["w2"].T + ps["b2"], y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {k: tl(v) for k, v in ps.items()}, losses


loop, losses = run_adamw(foreach=False, fused=False)
foreach, _ = run_adamw(foreach=True)
fused, _ = run_adamw(fused=True)
out["adamw"] = {
    "shapes": {k: list(s) for k, s in shapes.items()},
    "init": {k: tl(v) for k, v in init.items()},
    "x": tl(x), "x_shape": list(x.shape), "y": y.tolist(),
    "lr": hp["lr"], "beta1": 0.9, "beta2": 0.999, "eps": hp["eps"], "weight_decay": hp["weight_decay"],
    "steps": steps, "losses": losses, "loop": loop, "foreach": foreach, "fused": fused,
}

# ---- GradScaler: scale and skip sequence with injected inf grads --------------------------------
gs_opts = dict(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
inf_steps = [2, 6, 7]
p0 = torch.randn(4)
c = torch.randn(4)
for fused_flag in (False, True):
    p = p0.clone().requires_grad_(True)
    opt = torch.optim.AdamW([p], lr=1e-2, fused=fused_flag, foreach=False)
    scaler = torch.amp.GradScaler("cpu", **gs_opts)
    scales, skipped = [], []
    for step in range(12):
        opt.zero_grad()
        scaler.scale((p * c).sum()).backward()
        if step in inf_steps:
            p.grad[1] = float("inf")
        before = p.detach().clone()
        scaler.step(opt)
        scaler.update()
        skipped.append(bool(torch.equal(before, p.detach())))
        scales.append(scaler.get_scale())
    out["grad_scaler" + ("_fused" if fused_flag else "")] = {
        **gs_opts, "inf_steps": inf_steps, "p0": tl(p0), "c": tl(c), "scales": scales, "skipped": skipped, "final": tl(p)}

# ---- Checkpointing: block gradients with recompute equal the plain ones ----------------------------
blk = {"w1": torch.randn(16, 6) * 0.4, "b1": torch.randn(16) * 0.1, "w2": torch.randn(6, 16) * 0.4, "b2": torch.randn(6) * 0.1}
xin = torch.randn(5, 6)


def block(h, w):
    h = F.gelu(h @ w["w1"].T + w["b1"])
    return h @ w["w2"].T + w["b2"]


def grads(use_ckpt):
    w = {k: v.clone().requires_grad_(True) for k, v in blk.items()}
    xi = xin.clone().requires_grad_(True)
    h = xi
    for _ in range(2):  # the same block applied twice, each a checkpointed segment
        h = checkpoint(block, h, w, use_reentrant=False) if use_ckpt else block(h, w)
    (h.pow(2).mean()).backward()
    return {**{k: tl(v.grad) for k, v in w.items()}, "x": tl(xi.grad)}


plain, ckpt = grads(False), grads(True)
assert all(torch.allclose(torch.tensor(plain[k]), torch.tensor(ckpt[k]), atol=1e-6) for k in plain)
out["checkpoint"] = {"weights": {k: tl(v) for k, v in blk.items()}, "shapes": {k: list(v.shape) for k, v in blk.items()},
                     "x": tl(xin), "x_shape": list(xin.shape), "grads": plain}

# ---- Autocast (CPU, bfloat16): output dtypes of representative ops -------------------------------
a = torch.randn(4, 8)
w = torch.randn(5, 8)
img = torch.randn(2, 3, 8, 8)
k = torch.randn(4, 3, 3, 3)
with torch.autocast("cpu", dtype=torch.bfloat16):
    lin = F.linear(a, w)
    dtypes = {
        "linear": lin.dtype, "matmul": (a @ w.T).dtype, "conv2d": F.conv2d(img, k).dtype, "relu_of_linear": F.relu(lin).dtype,
        "log_softmax_of_linear": F.log_softmax(lin, -1).dtype, "layer_norm_of_linear": F.layer_norm(lin, (5,)).dtype,
        "cross_entropy_of_linear": F.cross_entropy(lin, torch.zeros(4, dtype=torch.long)).dtype,
        "sdpa": F.scaled_dot_product_attention(torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), is_causal=True).dtype,
    }
out["autocast_cpu_bf16"] = {k: str(v).replace("torch.", "") for k, v in dtypes.items()}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine_golden.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path, file=sys.stderr)
