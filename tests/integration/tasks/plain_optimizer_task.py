"""A task whose optimizer's class takes neither foreach= nor fused= (optimizer_impl is skipped with its reason)."""
import torch

batch_size = 8


class PlainSGD(torch.optim.Optimizer):
    """SGD without momentum, one parameter at a time: no foreach or fused argument."""

    def __init__(self, params, lr=0.01):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-g["lr"])


def dataset():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 6, generator=g)
    return torch.utils.data.TensorDataset(x, (x.sum(1) > 0).long())


def model():
    return torch.nn.Linear(6, 2)


def optimizer(params):
    return PlainSGD(params, lr=0.05)
