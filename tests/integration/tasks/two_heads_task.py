"""A two-headed model on a map-style dataset of tuples; the loss is a weighted sum of the heads' losses."""
import torch

batch_size = 16


class Points(torch.utils.data.Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(2)
        self.x = torch.randn(n, 20, generator=g)
        self.cls = (self.x[:, 0] > 0).long()
        self.reg = self.x[:, 1:3] * 2

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.cls[i], self.reg[i]


class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU())
        self.cls = torch.nn.Linear(64, 2)
        self.reg = torch.nn.Linear(64, 2)

    def forward(self, x):
        h = self.trunk(x)
        return self.cls(h), self.reg(h)


def dataset():
    return Points()


def model():
    return TwoHeads()


def loss(model, batch):
    x, cls, reg = batch
    logits, value = model(x)
    return torch.nn.functional.cross_entropy(logits, cls) + 0.5 * torch.nn.functional.mse_loss(value, reg)


def optimizer(params):
    return torch.optim.SGD(params, lr=0.02, momentum=0.9, nesterov=True)
