"""A task with its own learning-rate schedule: SGD at 0.1 with a linear warm-up over 8 optimizer steps, then a cosine
decay over 20,000 (scheduler(optimizer), stepped after every optimizer step)."""
import math

import torch

batch_size = 8
WARMUP, TOTAL = 8, 20000  # a decay long enough that a trial's steps land on it, not past its end


def shape(step):
    if step < WARMUP:
        return (step + 1) / WARMUP
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - WARMUP) / (TOTAL - WARMUP))))


def dataset():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(128, 6, generator=g)
    return torch.utils.data.TensorDataset(x, (x.sum(1) > 0).long())


def model():
    return torch.nn.Linear(6, 2)


def optimizer(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def scheduler(opt):
    return torch.optim.lr_scheduler.LambdaLR(opt, shape)
