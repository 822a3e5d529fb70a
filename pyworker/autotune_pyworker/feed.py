"""Real data through torch's own DataLoader, whatever the batches are (tokens.py's token windows, images.py's
augmented images): the loader knobs applied — num_workers (persistent worker processes), prefetch (prefetch_factor),
pin_memory (page-locked batches, copied non-blocking) — the training thread's wait for each batch, and the record
result.json `data` holds."""
import time

import torch


def first_tensor(item):
    """The first tensor of a nested batch (tuples, lists, dicts in their order), None when it holds none."""
    if isinstance(item, torch.Tensor):
        return item
    for v in item.values() if isinstance(item, dict) else item if isinstance(item, (tuple, list)) else []:
        t = first_tensor(v)
        if t is not None:
            return t
    return None


class Feed:
    """`loader`: DataLoader's other arguments (batch_size None: the dataset yields whole batches)."""

    def __init__(self, dataset, num_workers, prefetch, pin_memory, **loader):
        self.num_workers, self.prefetch, self.pin = int(num_workers), int(prefetch), bool(pin_memory)
        kw = {"num_workers": self.num_workers, "pin_memory": self.pin, "batch_size": None, **loader}
        if self.num_workers > 0:
            kw.update(prefetch_factor=self.prefetch, persistent_workers=True)
        self.loader = torch.utils.data.DataLoader(dataset, **kw)
        self.it = iter(self.loader)
        self.batches, self.wait, self.pinned = 0, 0.0, None

    def fetch(self):
        """The loader's next item (its first tensor the input batch's), the wait for it counted."""
        t0 = time.perf_counter()
        item = self._next()
        self.wait += time.perf_counter() - t0
        self.batches += 1
        if self.pinned is None:
            t = first_tensor(item)
            self.pinned = bool(t is not None and t.is_pinned())
        return item

    def _next(self):
        return next(self.it)

    def to_device(self, x, y, device):
        return [x.to(device, non_blocking=self.pin)], y.to(device, non_blocking=self.pin)

    def record(self, source, decode, size, ok=0, bad=None, example=""):
        bad = bad or {}
        return {"source": source, "decode": decode, "dataset_size": int(size), "num_workers": self.num_workers,
                "prefetch": self.prefetch if self.num_workers else 0, "batches": self.batches, "images_ok": ok,
                "images_bad": sum(bad.values()), "bad_by_reason": dict(bad), "bad_example": example,
                "wait_seconds": self.wait, "worker_busy_seconds": 0.0}
