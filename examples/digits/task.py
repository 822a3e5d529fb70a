"""`make tune`'s default training: handwritten digits, as a user's task file would describe them.

The data are the UCI optical-recognition digits (1,797 scans of 8×8 pixels, values 0–16, ten classes) in the copy
that Debian's python3-sklearn ships; `make deps` keeps it at $AUTOTUNE_CACHE/test-images/digits.csv.gz
(scripts/fetch-test-images.sh). Each sample is decoded from the CSV text when it is read, as a user's Dataset
decodes its files, so the loader knobs have real work to move; the model is a small CNN trained with SGD and
momentum at a batch of 32. Point $AUTOTUNE_DIGITS at another copy of the file to use it instead.

    autotune tune --task examples/digits/task.py
"""
import gzip
import os

import torch

batch_size = 32


def digits_file():
    given = os.environ.get("AUTOTUNE_DIGITS")
    if given:
        return given
    cache = os.environ.get("AUTOTUNE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "autotune")
    return os.path.join(cache, "test-images", "digits.csv.gz")


class Digits(torch.utils.data.Dataset):
    """One CSV line per sample: 64 pixel values, then the class. Lines stay text until a sample is read."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: `make deps` fetches it (scripts/fetch-test-images.sh), "
                                    "or set AUTOTUNE_DIGITS to a copy of sklearn's digits.csv.gz")
        with gzip.open(path, "rt") as f:
            self.lines = [line for line in f.read().splitlines() if line.strip()]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        values = [float(v) for v in self.lines[i].split(",")]
        x = torch.tensor(values[:64], dtype=torch.float32).view(1, 8, 8) / 16.0
        return (x - 0.5) / 0.5, int(values[64])


def dataset():
    return Digits(digits_file())


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 4 * 4, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


def optimizer(params):
    return torch.optim.SGD(params, lr=0.02, momentum=0.9)
