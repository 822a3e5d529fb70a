#!/usr/bin/env python3
"""The peer for bench/data_bench.sh: torchvision ImageFolder + DataLoader with the same work as our
loader benchmark (decode with PIL, RandomResizedCrop(224) with torchvision's defaults — scale 0.08–1,
ratio 3/4–4/3, bilinear, antialiased — RandomHorizontalFlip, uint8 tensor out, batches of 64).

usage: torchvision_loader.py FOLDER WORKERS [BATCHES=40] [SIZE=224]   → one JSON line (images/s)
torchvision is installed into autotune's venv only for this benchmark (pip install torchvision==0.26.0).
"""
import json
import sys
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    folder, workers = sys.argv[1], int(sys.argv[2])
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 224
    torch.set_num_threads(1)
    tf = transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(), transforms.PILToTensor()])
    ds = datasets.ImageFolder(folder, transform=tf)
    dl = DataLoader(ds, batch_size=64, shuffle=True, num_workers=workers, prefetch_factor=2 if workers else None,
                    persistent_workers=workers > 0, drop_last=True)
    it = iter(dl)
    n = 0
    for _ in range(3):  # warm-up: worker start-up, page cache
        try:
            next(it)
        except StopIteration:
            it = iter(dl)
            next(it)
    t0 = time.perf_counter()
    while n < batches:
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(dl)
            continue
        n += 1
    dt = time.perf_counter() - t0
    print(json.dumps({"peer": "torchvision", "workers": workers, "size": size, "images": n * 64, "seconds": dt,
                      "images_per_s": n * 64 / dt}))


if __name__ == "__main__":
    main()
