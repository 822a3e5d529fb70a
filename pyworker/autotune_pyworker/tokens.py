"""Real token data for a token model (--data FILE: a flat little-endian uint16 `.bin`, nanoGPT's format and
`autotune prepare-data`'s, data/tokens.h on the C++ side): each sample a random window of T+1 tokens, x the first T
and y the last T, drawn on the host from the data order's generator and copied to the training device."""
import os
import time

import numpy as np
import torch

from .errors import Refused


class TokenData:
    def __init__(self, path, block, vocab, seed):
        if not os.path.isfile(path):
            raise Refused(f"--data {path}: no such file (a token model reads a uint16 .bin: autotune prepare-data makes one)")
        size = os.path.getsize(path)
        if size % 2:
            raise Refused(f"token file {path}: {size} bytes is not a whole number of uint16 tokens")
        self.path, self.block = path, int(block)
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")
        if len(self.tokens) < self.block + 2:
            raise Refused(f"token file {path}: {len(self.tokens)} tokens; a window of the model's {self.block} needs "
                          f"{self.block + 2}")
        top = int(self.tokens.max())
        if top >= vocab:
            raise Refused(f"token file {path}: token id {top} is outside the model's vocabulary of {vocab}")
        self.gen = torch.Generator().manual_seed(int(seed) % (1 << 63))
        self.batches, self.wait = 0, 0.0
        self.offsets = torch.arange(self.block + 1)

    def next(self, n, device):
        t0 = time.perf_counter()
        starts = torch.randint(len(self.tokens) - self.block - 1, (n,), generator=self.gen)
        idx = (starts[:, None] + self.offsets[None, :]).numpy()
        w = torch.from_numpy(self.tokens[idx].astype(np.int64))
        self.batches += 1
        x, y = w[:, :-1].to(device, non_blocking=True), w[:, 1:].to(device, non_blocking=True)
        self.wait += time.perf_counter() - t0
        return [x], y

    def stats(self):
        return {"source": self.path, "decode": "tokens", "dataset_size": int(len(self.tokens)), "num_workers": 0,
                "prefetch": 0, "batches": self.batches, "images_ok": 0, "images_bad": 0, "bad_by_reason": {},
                "bad_example": "", "wait_seconds": self.wait, "worker_busy_seconds": 0.0}
