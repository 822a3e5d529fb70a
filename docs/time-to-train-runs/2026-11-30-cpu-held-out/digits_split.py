"""make tune's digits (examples/digits/task.py) with a held-out split: the first 1,497 of the 1,797 scans train, the
last 300 are held out (val_dataset()). The same CNN, SGD with momentum at 0.02 and batch 32."""
import importlib.util
import os

import torch

_spec = importlib.util.spec_from_file_location(
    "digits_task", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../examples/digits/task.py"))
_digits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_digits)

batch_size = _digits.batch_size
model = _digits.model
optimizer = _digits.optimizer
TRAIN = 1497


def dataset():
    return torch.utils.data.Subset(_digits.dataset(), range(TRAIN))


def val_dataset():
    full = _digits.dataset()
    return torch.utils.data.Subset(full, range(TRAIN, len(full)))
