"""A user's task with SGD + momentum on data no test trains on: next-byte prediction on Python's own standard library
sources (Debian's /usr/lib/python3.11/*.py), a small embedding + GRU model, SGD(lr=0.01, momentum=0.9) — the rate many
tutorials start SGD at. The held-out set is files the training set does not contain (every tenth file by name).

    autotune lr-sweep --task docs/lr-runs/2026-11-30-cpu-sgd-code/task.py --run-length 60000 …
"""
import glob
import os

import torch

batch_size = 32
SEQ = 64
SOURCES = os.environ.get("CODE_SOURCES", "/usr/lib/python3.11")


def files():
    return sorted(glob.glob(os.path.join(SOURCES, "*.py")))


class Bytes(torch.utils.data.Dataset):
    """Consecutive, non-overlapping windows of SEQ + 1 bytes from the concatenated files."""

    def __init__(self, paths):
        data = b"".join(open(p, "rb").read() for p in paths)
        self.data = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        self.n = (len(self.data) - 1) // SEQ

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        w = self.data[i * SEQ:i * SEQ + SEQ + 1].long()
        return w[:-1], w[1:]


def dataset():
    return Bytes([p for k, p in enumerate(files()) if k % 10 != 0])


def val_dataset():
    return Bytes([p for k, p in enumerate(files()) if k % 10 == 0])


class ByteGru(torch.nn.Module):
    def __init__(self, vocab=256, dim=64, hidden=128):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.gru = torch.nn.GRU(dim, hidden, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, x):
        h, _ = self.gru(self.embed(x))
        return self.head(h)


def model():
    return ByteGru()


def loss(model, batch):
    x, y = batch
    return torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())


def optimizer(params):
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)
