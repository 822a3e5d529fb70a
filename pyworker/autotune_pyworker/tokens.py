"""Real token data for a token model (--data FILE: a flat little-endian uint16 `.bin`, nanoGPT's format and
`autotune prepare-data`'s, data/tokens.h on the C++ side): each sample a random window of T+1 tokens, x the first T
and y the last T. Batches come through torch's own DataLoader with the input-pipeline knobs (feed.py), each worker drawing
from its own generator (the data order's seed + its id)."""
import os

import numpy as np
import torch

from .errors import Refused
from .feed import Feed


def looks_like_text(path):
    """Whether the file's first 4 KiB read as text (the rule of data/tokens.cpp, looks_like_text): printable ASCII, tabs,
    newlines and well-formed UTF-8. Real uint16 token data breaks one of them within its first 2,048 tokens."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if len(head) < 16 or any((b < 0x20 and b not in (9, 10, 13)) or b == 0x7F for b in head):
        return False
    for cut in range(4):  # a UTF-8 sequence cut at the 4-KiB edge
        try:
            head[:len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def check_token_file(path, block, vocab):
    """The file's token count; refused in one line when it is missing, ragged, too short or outside the vocabulary."""
    if not os.path.isfile(path):
        raise Refused(f"--data {path}: no such file (a token model reads a uint16 .bin: autotune prepare-data makes one)")
    size = os.path.getsize(path)
    if looks_like_text(path):
        raise Refused(f"token file {path}: this is text, not uint16 tokens; make a token file of it with: autotune prepare-data "
                      f"--tokens-from {path} --to {path}.tokens (then --data {path}.tokens)")
    if size % 2:
        raise Refused(f"token file {path}: {size} bytes is not a whole number of uint16 tokens")
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    if len(tokens) < block + 2:
        raise Refused(f"token file {path}: {len(tokens)} tokens; a window of the model's {block} needs {block + 2}")
    top = int(tokens.max())
    if top >= vocab:
        raise Refused(f"token file {path}: token id {top} is outside the model's vocabulary of {vocab}")
    return len(tokens)


class TokenBatches(torch.utils.data.IterableDataset):
    """Endless batches of `batch` windows; the file is mapped in each process that iterates (workers included)."""

    def __init__(self, path, block, batch, seed, rank=0, world=1):
        super().__init__()
        self.path, self.block, self.batch, self.seed = path, int(block), int(batch), int(seed)
        self.rank, self.world = int(rank), int(world)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        tokens = np.memmap(self.path, dtype=np.uint16, mode="r")
        gen = torch.Generator().manual_seed((self.seed + (info.id if info else 0) * 7919) % (1 << 63))
        offsets = torch.arange(self.block + 1)
        # data parallel: each rank its own slice of the file (its windows start there), as the C++ worker shards
        span = len(tokens) // self.world
        lo = self.rank * span
        hi = max(lo + 1, min(len(tokens), lo + span) - self.block - 1)
        while True:
            starts = lo + torch.randint(hi - lo, (self.batch,), generator=gen)
            w = torch.from_numpy(tokens[(starts[:, None] + offsets[None, :]).numpy()].astype(np.int64))
            yield w[:, :-1], w[:, 1:]


class TokenData(Feed):
    def __init__(self, path, size, block, seed, batch, num_workers=0, prefetch=2, pin_memory=False, rank=0, world=1):
        """`size`: the file's tokens, as check_token_file counted them (the file is scanned once)."""
        self.path, self.size = path, size
        super().__init__(TokenBatches(path, block, batch, seed, rank, world), num_workers, prefetch, pin_memory)

    def next(self, n, device):
        x, y = self.fetch()
        return self.to_device(x, y, device)

    def stats(self):
        return self.record(self.path, "tokens", self.size)
