"""The loss on held-out data during a converge trial (knobs/held_out.h, docs/time-to-train.md "A held-out target"): the
first `val_samples` samples of a held-out set, in its own order — the same samples in every run and at every
evaluation —, through the training's own loss in eval mode without gradients (dropout off, batch norm on its running
statistics), under the trial's autocast. The set is the task's val_dataset() (or a Lightning task's val_dataloader()),
or --val-data in --data's form: an image folder (each image resized and centre-cropped, no augmentation) or a token
file (consecutive windows from its start). A bad image is skipped and counted, as in training."""
import itertools

import numpy as np
import torch

from .errors import Refused
from .feed import first_tensor
from .task import to_device


class HeldOut:
    """What evaluate() reads: `batches` yields (inputs, target) in the trainer's form; `source` and `samples` say it."""

    def __init__(self, source, samples, batches):
        self.source, self.samples, self._batches = source, samples, batches
        self.bad = 0

    def evaluate(self, trial):
        """The mean held-out loss (weighted by each batch's samples), the model put back in training mode after."""
        model = trial.model
        self.bad = 0  # counted afresh: the same samples every time
        was = model.training
        model.eval()
        total, count = None, 0
        try:
            with torch.no_grad():
                for inputs, target in self._batches(trial):
                    n = int(first_tensor(inputs).shape[0])
                    loss = trial.forward_loss(inputs, target).float() * n
                    total = loss if total is None else total + loss
                    count += n
        finally:
            model.train(was)
        if not count:
            raise Refused(f"the held-out set ({self.source}) gave no sample to evaluate")
        return float(total) / count


def _task_held_out(trial, n, batch):
    task = trial.built.task
    found = task.held_out()
    if found is None:
        return None
    dataset, collate, words = found
    iterable = isinstance(dataset, torch.utils.data.IterableDataset)
    if iterable:
        source = list(itertools.islice(iter(dataset), n))  # the first n samples, read once (an iterable has no index)
        if not source:
            raise Refused(f"--task {task.path}: {words} yields no sample")
    else:
        source = torch.utils.data.Subset(dataset, range(min(n, len(dataset))))

    def batches(t):
        loader = torch.utils.data.DataLoader(source, batch_size=batch, shuffle=False, drop_last=False, collate_fn=collate)
        for b in loader:
            yield [to_device(b, t.device)], None
    return HeldOut(words, len(source), batches)


class CentreCrops(torch.utils.data.Dataset):
    """An image folder's first images in its order, each resized to `size` on its shorter side and centre-cropped; a
    file that is not a training image gives None (skipped and counted by the collate)."""

    def __init__(self, folder, size, n):
        self.files, self.labels, self.size = folder.files[:n], folder.labels[:n], int(size)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from torchvision.transforms import v2
        from .images import MEAN, STD, decode
        img, _ = decode(self.files[i])
        if img is None:
            return None
        img = v2.CenterCrop(self.size)(v2.Resize(self.size, antialias=True)(img))
        return (img.float() - MEAN) / STD, self.labels[i]


def _image_held_out(trial, path, n, batch):
    from .images import Folder
    folder = Folder(path)
    built = trial.built
    if folder.classes != built.folder.classes:
        raise Refused(f"--val-data {path}: its classes ({len(folder.classes)}) are not --data's ({len(built.folder.classes)}): "
                      "held-out images are labelled by the same class sub-folders")
    data = CentreCrops(folder, built.spec["inputs"][0]["shape"][2], n)
    held = HeldOut(f"image folder {path} (the first {len(data):,} of {len(folder.files):,} images, centre-cropped)",
                   len(data), None)

    def collate(items):
        good = [x for x in items if x is not None]
        held.bad += len(items) - len(good)
        if not good:
            return None
        return torch.stack([x for x, _ in good]), torch.tensor([y for _, y in good])

    def batches(t):
        for b in torch.utils.data.DataLoader(data, batch_size=batch, shuffle=False, collate_fn=collate):
            if b is not None:
                yield [b[0].to(t.device)], b[1].to(t.device)
    held._batches = batches
    return held


def _token_held_out(trial, path, n, batch):
    from .tokens import check_token_file
    x = trial.built.spec["inputs"][0]
    block = int(x["shape"][1])
    size = check_token_file(path, block, x["vocab"])
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    windows = min(n, (size - 1) // block)
    offsets = np.arange(block + 1)

    def batches(t):
        for lo in range(0, windows, batch):
            starts = np.arange(lo, min(windows, lo + batch)) * block
            w = torch.from_numpy(tokens[starts[:, None] + offsets[None, :]].astype(np.int64)).to(t.device)
            yield [w[:, :-1]], w[:, 1:]
    return HeldOut(f"token file {path} (its first {windows:,} windows of {block} tokens)", windows, batches)


def held_out_of(trial, plan):
    """The trial's held-out set for a converge plan (knobs/converge.h ConvergePlan), or None when the plan asks for
    none or — not `val_needed` — the trial has none. Refused in one line when one is asked for and cannot be had."""
    if int(plan.get("val_every", 0)) <= 0:
        return None
    n, batch, path = int(plan.get("val_samples", 1024)), trial.s.batch_size, plan.get("val_data", "")
    built = trial.built
    if path:
        if built.dataset is not None:
            raise Refused(f"--val-data {path}: the task's dataset() is the data, so its held-out samples come from the task: "
                          "define val_dataset() in it instead")
        if built.folder:
            return _image_held_out(trial, path, n, batch)
        if built.data:
            return _token_held_out(trial, path, n, batch)
        raise Refused(f"--val-data {path}: held-out data in --data's form needs --data (an image folder or a token file)")
    held = _task_held_out(trial, n, batch) if built.task is not None else None
    if held is None and plan.get("val_needed"):
        raise Refused("a held-out loss was asked for (--val-every) but there is no held-out data: give --val-data, or a "
                      "task with val_dataset() (a LightningModule: val_dataloader())")
    return held
