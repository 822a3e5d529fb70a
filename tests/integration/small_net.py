"""A small CNN with BatchNorm (so DDP has buffers to broadcast), exported by snippet_torchrun_test."""
import torch
import torch.nn as nn


class SmallNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.c1(x))).mean(dim=(2, 3)))
