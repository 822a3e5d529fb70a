#!/usr/bin/env python3
"""docs/lr-runs/2026-12-01-cpu-bn: the training loss of the same weights read at two forward batches. torchvision's
resnet18 (1000 outputs, as the workload's) trained at batch 32 with AdamW 1e-3 on the photo crops at 32²; after every
STEPS steps, its training-mode loss (batch norms on each forward's own statistics, no gradient, running statistics
untouched) over the same 1,024 crops read in forwards of 32 and of 128, and its eval-mode loss (running statistics).
    python3 same_weights.py CROPS_DIR [STEPS=100] [ROUNDS=4]
"""
import copy
import os
import sys

import numpy as np
import torch
import torchvision
from PIL import Image

torch.manual_seed(0)
torch.set_num_threads(1)
root = sys.argv[1]
steps, rounds = (int(sys.argv[2]) if len(sys.argv) > 2 else 100), (int(sys.argv[3]) if len(sys.argv) > 3 else 4)
classes = sorted(os.listdir(root))
files = [(os.path.join(root, c, f), i) for i, c in enumerate(classes) for f in sorted(os.listdir(os.path.join(root, c)))]
mean, std = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1), torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
x = torch.stack([(torch.from_numpy(np.asarray(Image.open(p).convert("RGB").resize((32, 32)), dtype=np.float32) / 255)
                  .permute(2, 0, 1) - mean) / std for p, _ in files])
y = torch.tensor([c for _, c in files])
model = torchvision.models.resnet18()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
probe = torch.randperm(len(x), generator=torch.Generator().manual_seed(1))[:1024]
loss_fn = torch.nn.CrossEntropyLoss()


def read(m, batch, train):
    m = copy.deepcopy(m).train(train)  # a copy: its running statistics may move, the model's do not
    with torch.no_grad():
        return sum(loss_fn(m(x[probe[i:i + batch]]), y[probe[i:i + batch]]).item() * batch
                   for i in range(0, len(probe), batch)) / len(probe)


print("| steps at batch 32 | train mode, forward 32 | train mode, forward 128 | 128 over 32 | eval mode |")
print("|---:|---:|---:|---:|---:|")
g = torch.Generator().manual_seed(2)
for r in range(1, rounds + 1):
    model.train()
    for _ in range(steps):
        idx = torch.randint(len(x), (32,), generator=g)
        opt.zero_grad()
        loss_fn(model(x[idx]), y[idx]).backward()
        opt.step()
    a, b = read(model, 32, True), read(model, 128, True)
    print(f"| {r * steps} | {a:.4f} | {b:.4f} | {b / a:.3f} | {read(model, 128, False):.4f} |", flush=True)
