"""Photos decoded with PIL through torchvision transforms, a small CNN (or with TASK_RESNET=1 torchvision's resnet18 at
224 pixels, as the GPU kit trains it) trained with SGD + momentum."""
import glob
import os

import torch
from PIL import Image
from torchvision import transforms

PHOTOS = os.environ.get("TASK_PHOTOS", os.path.expanduser("~/.cache/autotune/test-images/photos"))
RESNET = os.environ.get("TASK_RESNET") == "1"
REPEAT = int(os.environ.get("TASK_REPEAT", "1"))  # each photo this many times per epoch (decoded and cropped afresh)
batch_size = int(os.environ.get("TASK_BATCH", "64" if RESNET else "8"))  # the GPU kit sets 16: a step at 0 workers in 1 s


class Photos(torch.utils.data.Dataset):
    """Every JPEG under PHOTOS, decoded whole and augmented per sample; the class is the file's index parity."""

    def __init__(self, root, size=64):
        self.files = sorted(glob.glob(os.path.join(root, "**", "*.jpg"), recursive=True))
        self.tf = transforms.Compose([transforms.RandomResizedCrop(size, antialias=True), transforms.RandomHorizontalFlip(),
                                      transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return len(self.files) * REPEAT

    def __getitem__(self, i):
        i %= len(self.files)
        with Image.open(self.files[i]) as im:
            return self.tf(im.convert("RGB")), i % 2


def dataset():
    return Photos(PHOTOS, 224 if RESNET else 64)


def model():
    if RESNET:
        import torchvision
        return torchvision.models.resnet18(num_classes=2)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 2))


def optimizer(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)
