"""A task with held-out samples (val_dataset()): a small classifier of 16 features whose labels follow a fixed rule with
a tenth of them flipped; the held-out samples follow the same rule. With
HELD_OUT_DELAY set (seconds per held-out sample) an evaluation is slow on purpose: converge keeps it off the clock."""
import os
import time

import torch

batch_size = 16


def _data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = ((x @ torch.linspace(-1, 1, 16)) > 0).long()
    return x, torch.where(torch.rand(n, generator=g) < 0.1, 1 - y, y)


class Slow(torch.utils.data.Dataset):
    def __init__(self, x, y, delay):
        self.x, self.y, self.delay = x, y, delay

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return self.x[i], self.y[i]


def dataset():
    return torch.utils.data.TensorDataset(*_data(4096, 1))


def val_dataset():
    return Slow(*_data(256, 2), float(os.environ.get("HELD_OUT_DELAY", "0")))


def model():
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(64, 2))


def optimizer(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)
