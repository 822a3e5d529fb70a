"""Real data through torch's own DataLoader, whatever the batches are (tokens.py's token windows, images.py's
augmented images): the loader knobs applied — num_workers (persistent worker processes), prefetch (prefetch_factor),
pin_memory (page-locked batches, copied non-blocking) — the training thread's wait for each batch, and the record
result.json `data` holds."""
import time

import torch


class Feed:
    def __init__(self, dataset, num_workers, prefetch, pin_memory):
        self.num_workers, self.prefetch, self.pin = int(num_workers), int(prefetch), bool(pin_memory)
        kw = {"num_workers": self.num_workers, "pin_memory": self.pin, "batch_size": None}
        if self.num_workers > 0:
            kw.update(prefetch_factor=self.prefetch, persistent_workers=True)
        self.loader = torch.utils.data.DataLoader(dataset, **kw)
        self.it = iter(self.loader)
        self.batches, self.wait, self.pinned = 0, 0.0, None

    def fetch(self):
        """The loader's next item (its first element the input batch), the wait for it counted."""
        t0 = time.perf_counter()
        item = next(self.it)
        self.wait += time.perf_counter() - t0
        self.batches += 1
        if self.pinned is None:
            self.pinned = item[0].is_pinned()
        return item

    def to_device(self, x, y, device):
        return [x.to(device, non_blocking=self.pin)], y.to(device, non_blocking=self.pin)

    def record(self, source, decode, size, ok=0, bad=None, example=""):
        bad = bad or {}
        return {"source": source, "decode": decode, "dataset_size": int(size), "num_workers": self.num_workers,
                "prefetch": self.prefetch if self.num_workers else 0, "batches": self.batches, "images_ok": ok,
                "images_bad": sum(bad.values()), "bad_by_reason": dict(bad), "bad_example": example,
                "wait_seconds": self.wait, "worker_busy_seconds": 0.0}
