"""A small MLP for sklearn's 8×8 digits (64 inputs, 10 classes): the model of noise_log_test.py's own training loop."""
import torch.nn as nn


class DigitsMlp(nn.Module):
    def __init__(self, hidden: int = 64, classes: int = 10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)
