#!/usr/bin/env python3
"""Writes the TorchScript models (and the files that are not) the user-model tests load:

    make_models.py OUT_DIR

Good models: cnn.pt (scripted CNN, 10 classes, 32×32 images), tinygpt.pt (scripted GPT LM that makes
its own loss from (idx, targets)), regress.pt (traced MLP, mse), two_inputs.pt (forward(x, mask)).
Bad ones: state_dict.pt, pickled.pt (torch.save), empty.pt, program.pt2 (torch.export), frozen.pt,
no_params.pt, tuple.pt (returns a tuple, spec says cross_entropy), nan.pt (loss NaN at step 0), and
specs that do not fit (wrong rank, wrong dtype, wrong number of inputs).
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, module, spec):
    module.save(os.path.join(out, name + ".pt"))
    if spec is not None:
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(spec, f, indent=1)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.c2(F.relu(self.c1(x))))
        return self.fc(x.mean(dim=(2, 3)))


class Block(nn.Module):
    def __init__(self, c: int, h: int):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc1, self.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.h, c // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyGpt(nn.Module):
    def __init__(self, vocab: int = 64, t: int = 16, c: int = 32):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, c), nn.Embedding(t, c)
        self.blocks = nn.ModuleList([Block(c, 4), Block(c, 4)])
        self.ln, self.head = nn.LayerNorm(c), nn.Linear(c, vocab)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 5)

    def forward(self, x, mask):
        return self.l(x * mask)


class Tuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 5)

    def forward(self, x):
        y = self.l(x)
        return y, y.sum()


class NoParams(nn.Module):
    def forward(self, x):
        return x * 2


class Nan(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 5)

    def forward(self, x):
        return self.l(x) * float("nan")


torch.manual_seed(0)
image_spec = {"inputs": [{"name": "x", "shape": ["B", 3, 32, 32], "range": [-1, 1]}],
              "target": {"kind": "classes", "classes": 10}, "loss": "cross_entropy", "default_batch_size": 16,
              "description": "small CNN (test)"}
save("cnn", torch.jit.script(Cnn()), image_spec)
save("tinygpt", torch.jit.script(TinyGpt()),
     {"inputs": [{"name": "idx", "shape": ["B", 16], "dtype": "int64", "vocab": 64}],
      "target": {"kind": "classes", "classes": 64, "shape": ["B", 16]}, "loss": "model", "default_batch_size": 8})
mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
save("regress", torch.jit.trace(mlp, torch.randn(2, 8)),
     {"inputs": [{"name": "x", "shape": ["B", 8]}], "target": {"kind": "regression", "shape": ["B", 4]}, "loss": "mse"})
save("two_inputs", torch.jit.script(TwoInputs()),
     {"inputs": [{"name": "x", "shape": ["B", 8]}, {"name": "mask", "shape": ["B", 8], "range": [0, 1]}],
      "target": {"kind": "classes", "classes": 5}, "loss": "cross_entropy"})
flat = {"inputs": [{"name": "x", "shape": ["B", 8]}], "target": {"kind": "classes", "classes": 5}, "loss": "cross_entropy"}
save("tuple", torch.jit.script(Tuple()), flat)
save("no_params", torch.jit.script(NoParams()), flat)
save("nan", torch.jit.script(Nan()), flat)
frozen = torch.jit.script(Cnn())
for p in frozen.parameters():
    p.requires_grad_(False)
save("frozen", frozen, image_spec)
# Specs that do not fit cnn.pt.
with open(os.path.join(out, "rank.json"), "w") as f:
    json.dump(dict(image_spec, inputs=[{"name": "x", "shape": ["B", 3, 32]}]), f)
with open(os.path.join(out, "dtype.json"), "w") as f:
    json.dump(dict(image_spec, inputs=[{"name": "x", "shape": ["B", 3, 32, 32], "dtype": "int64", "vocab": 10}]), f)
with open(os.path.join(out, "count.json"), "w") as f:
    json.dump(dict(image_spec, inputs=[{"name": "x", "shape": ["B", 3, 32, 32]}, {"name": "y", "shape": ["B", 3]}]), f)
# Files that are not TorchScript.
plain = Cnn()
torch.save(plain.state_dict(), os.path.join(out, "state_dict.pt"))
torch.save(plain, os.path.join(out, "pickled.pt"))
open(os.path.join(out, "empty.pt"), "wb").close()
torch.export.save(torch.export.export(plain, (torch.randn(2, 3, 32, 32),)), os.path.join(out, "program.pt2"))
for name in ("state_dict", "pickled", "empty"):
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(image_spec, f)
with open(os.path.join(out, "program.json"), "w") as f:
    json.dump(image_spec, f)
print(f"wrote the test models into {out}")
