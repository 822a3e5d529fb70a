"""Variable-length token sequences as dicts, padded to the batch's longest by its own collate; a model returning its
own loss (as Hugging Face causal LMs do) trained with Adam at a non-default beta2."""
import torch

batch_size = 8
VOCAB, PAD = 97, 0


class Lines(torch.utils.data.Dataset):
    def __init__(self, n=256):
        g = torch.Generator().manual_seed(1)
        self.items = [torch.randint(1, VOCAB, (int(torch.randint(8, 33, (1,), generator=g)),), generator=g) for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        ids = self.items[i]
        return {"input_ids": ids, "labels": ids.clone()}


def dataset():
    return Lines()


def collate(samples):
    """Pads each field to the longest sequence in the batch; padded labels are -100 (ignored by the loss)."""
    n = max(len(s["input_ids"]) for s in samples)
    ids = torch.full((len(samples), n), PAD, dtype=torch.long)
    labels = torch.full((len(samples), n), -100, dtype=torch.long)
    mask = torch.zeros((len(samples), n), dtype=torch.long)
    for i, s in enumerate(samples):
        k = len(s["input_ids"])
        ids[i, :k], labels[i, :k], mask[i, :k] = s["input_ids"], s["labels"], 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


class TinyLM(torch.nn.Module):
    """A GRU language model whose forward takes keyword arguments and returns {"loss", "logits"}."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, 64)
        self.rnn = torch.nn.GRU(64, 64, batch_first=True)
        self.head = torch.nn.Linear(64, VOCAB)

    def forward(self, input_ids, attention_mask=None, labels=None):
        h, _ = self.rnn(self.emb(input_ids))
        logits = self.head(h)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1),
                                                            ignore_index=-100)
        return out


def model():
    return TinyLM()


def optimizer(params):
    return torch.optim.Adam(params, lr=3e-3, betas=(0.9, 0.98))
