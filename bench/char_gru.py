"""A byte-level GRU language model (256 → 64 → GRU 128 → 256): the user TorchScript model of the time-to-train
comparisons on other data (docs/time-to-train.md, "On other data"), exported with scripts/export_model.py."""
import torch
import torch.nn as nn


class CharGru(nn.Module):
    def __init__(self, vocab: int = 256, embed: int = 64, hidden: int = 128):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(self.embed(x))
        return self.head(h)
