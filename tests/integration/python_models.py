"""Small models for the Python worker's tests: ones that fail to build or run in the ways users' do, and one whose
forward breaks torch.compile's graph (a Python branch on a tensor's value)."""
import torch


def not_a_module():
    return 42


def boom():
    raise RuntimeError("factory exploded\nsecond line")


class TakesTwo(torch.nn.Module):
    """forward(x, mask): the spec gives one input."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 2)

    def forward(self, x, mask):
        return self.l(x) * mask


class Breaks(torch.nn.Module):
    """A data-dependent branch: dynamo stops its graph there and resumes after (a graph break)."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.l(x)
        if y.sum() > 0:
            y = y * 2
        return y
