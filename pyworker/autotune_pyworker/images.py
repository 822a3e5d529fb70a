"""An image folder for an image model (--data DIR: DIR/<class>/<image>.jpg, torchvision's ImageFolder layout and order,
as data/image_source.h scans it): each JPEG decoded whole by torchvision.io.decode_jpeg (decode=jpeg_full), cropped and
resized by RandomResizedCrop (scale 0.08–1, ratio 3/4–4/3, antialiased), flipped half the time and normalised with
ImageNet's mean and std — the C++ worker's augmentation — through torch's own DataLoader with the input-pipeline knobs
(num_workers, prefetch, pin_memory). A bad file (empty, not a JPEG, truncated, corrupt, unreadable) is skipped and
counted by its reason, never a crash; more than --max-bad-share of them fails the trial, as in the C++ worker. Each
rank reads its own share of each epoch's order, each loader worker its own part of that."""
import os

import torch

from .errors import Refused
from .feed import Feed

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1) * 255
JPEG = (".jpg", ".jpeg")


class Folder:
    """The classes (sorted sub-folders) and their JPEG files (sorted), scanned once; one-line refusals for a folder that
    is not one (the C++ worker's words, data/image_source.cpp)."""

    def __init__(self, root):
        if not os.path.exists(root):
            raise Refused(f"image folder {root} does not exist")
        if not os.path.isdir(root):
            raise Refused(f"{root} is not a folder; expected an image folder with one sub-folder per class")
        entries = sorted(os.listdir(root))
        self.root = root
        self.classes = [e for e in entries if os.path.isdir(os.path.join(root, e))]
        if not self.classes:
            loose = any(os.path.isfile(os.path.join(root, e)) for e in entries)
            raise Refused(f"{root} has no class sub-folders{' (only loose files)' if loose else ' (it is empty)'}; "
                          "expected ImageNet layout: ROOT/<class>/<image>.jpg")
        self.files, self.labels = [], []
        for c, name in enumerate(self.classes):
            found = []
            for d, _, names in os.walk(os.path.join(root, name)):
                found += [os.path.join(d, n) for n in names if n.lower().endswith(JPEG)]
            for f in sorted(found):
                self.files.append(f)
                self.labels.append(c)
        if not self.files:
            raise Refused(f"{root} has {len(self.classes)} class sub-folders but no .jpg/.jpeg files in them")


def decode(path):
    """(uint8 CHW RGB, None) or (None, (reason, what)) for a file that cannot be a training image."""
    from torchvision.io import ImageReadMode, decode_jpeg
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        return None, ("unreadable", e.strerror or str(e))
    if not raw:
        return None, ("empty", "0 bytes")
    if raw[:2] != b"\xff\xd8":
        return None, ("not_jpeg", "no JPEG start-of-image marker")
    try:
        return decode_jpeg(torch.frombuffer(bytearray(raw), dtype=torch.uint8), mode=ImageReadMode.RGB), None
    except RuntimeError as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else "decode failed"
        truncated = b"\xff\xd9" not in raw[-2:] or "premature" in text.lower()
        return None, ("truncated" if truncated else "corrupt", text[:160])


class Batches(torch.utils.data.IterableDataset):
    """Endless batches of `batch` augmented images and their labels, each with the bad files met making it."""

    def __init__(self, files, labels, size, batch, seed, rank=0, world=1):
        super().__init__()
        self.files, self.labels, self.size, self.batch = files, labels, int(size), int(batch)
        self.seed, self.rank, self.world = int(seed), int(rank), int(world)

    def __iter__(self):
        from torchvision.transforms import v2
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        crop = v2.RandomResizedCrop(self.size, antialias=True)
        flip = v2.RandomHorizontalFlip()
        torch.manual_seed((self.seed * 1000003 + self.rank * 7919 + wid) % (1 << 63))
        if len(self.files) < self.world * nw:
            raise RuntimeError(f"{len(self.files)} images are too few for {self.world} rank(s) × {nw} loader worker(s)")
        epoch, xs, ys, bad = 0, [], [], []
        while True:
            order = torch.randperm(len(self.files), generator=torch.Generator().manual_seed(self.seed + epoch)).tolist()
            mine = order[self.rank::self.world][wid::nw]  # this rank's share of the epoch, this worker's part of it
            good = 0
            for i in mine:
                img, why = decode(self.files[i])
                if img is None:
                    bad.append((why[0], f"{self.files[i]}: {why[1]}"))
                    continue
                good += 1
                xs.append((flip(crop(img)).float() - MEAN) / STD)
                ys.append(self.labels[i])
                if len(xs) == self.batch:
                    yield torch.stack(xs), torch.tensor(ys), bad
                    xs, ys, bad = [], [], []
            if not good:  # not one image of this share decodes: say so rather than loop for ever
                raise RuntimeError(f"none of this loader's {len(mine)} images decodes ({bad[-1][1] if bad else ''})")
            epoch += 1


class ImageData(Feed):
    def __init__(self, folder, size, seed, batch, num_workers=0, prefetch=2, pin_memory=False, rank=0, world=1):
        self.folder, self.ok, self.bad, self.example = folder, 0, {}, ""
        super().__init__(Batches(folder.files, folder.labels, size, batch, seed, rank, world), num_workers, prefetch,
                         pin_memory)

    def next(self, n, device):
        x, y, bad = self.fetch()
        self.ok += len(y)
        for reason, what in bad:
            self.bad[reason] = self.bad.get(reason, 0) + 1
            self.example = self.example or what
        return self.to_device(x, y, device)

    def check(self, max_share):
        """The trial fails when more than `max_share` of the images met were bad (the C++ worker's rule)."""
        bad = sum(self.bad.values())
        total = bad + self.ok
        if total and bad / total > max_share:
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.bad.items()))
            raise Refused(f"too much bad data: {bad} of {total} images bad ({reasons}; e.g. {self.example}) — more than the "
                          f"allowed {100 * max_share:g}%")

    def stats(self):
        return self.record(self.folder.root, "jpeg_full", len(self.folder.files), self.ok, self.bad, self.example)
