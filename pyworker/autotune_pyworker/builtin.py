"""The built-in workloads in Python (`--trainer python --workload NAME`): the same architectures as the C++ worker's
(workloads/models/: mlp 512-1024-1024-10, ResNet-18/50 v1.5, nanoGPT-style gpt-mini and gpt2-124m), so that the C++ and
the Python frontends can be measured side by side, same knobs. Batches are synthetic from each one's spec (the C++
mlp's linear teacher is not reproduced: random labels). bench/python_eager.py trains the same classes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


class Block(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or cin != planes:
            self.down = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (self.down(x) if self.down is not None else x))


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck (stride on the 3x3), as torchvision's resnet50."""

    def __init__(self, cin, planes, stride):
        super().__init__()
        out = planes * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, planes, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or cin != out:
            self.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000, depth=18):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        counts = [2, 2, 2, 2] if depth == 18 else [3, 4, 6, 3]
        for stage, planes in enumerate([64, 128, 256, 512]):
            for i in range(counts[stage]):
                stride = 2 if stage > 0 and i == 0 else 1
                if depth == 18:
                    blocks.append(Block(cin, planes, stride))
                    cin = planes
                else:
                    blocks.append(Bottleneck(cin, planes, stride))
                    cin = planes * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 3, 2, 1)
        x = self.blocks(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class Attn(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.qkv, self.proj, self.h = nn.Linear(c, 3 * c), nn.Linear(c, c), h

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, 2)
        heads = lambda t: t.view(B, T, self.h, C // self.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GptBlock(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(c), Attn(c, h), nn.LayerNorm(c)
        self.fc, self.fc_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GptMini(nn.Module):
    def __init__(self, vocab=512, T=64, L=4, H=4, C=128):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(GptBlock(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.t()


GPT2 = {"vocab": 50304, "T": 1024, "L": 12, "H": 12, "C": 768}

# name: (factory, kwargs, inputs, target, default batch, description) — the C++ worker's defaults (autotune workloads).
BUILTINS = {  # factory, its kwargs, the input at an image size (the spec JSON's form, knobs/model_spec.h), target, batch
    "mlp": (mlp, {}, lambda s: {"shape": ["B", 512], "dtype": "float32"}, {"kind": "classes", "classes": 10}, 64,
            "MLP 512-1024-1024-10, AdamW (Python)"),
    "resnet18": (ResNet18, {"depth": 18}, lambda s: {"shape": ["B", 3, s, s], "dtype": "float32"},
                 {"kind": "classes", "classes": 1000}, 32, "resnet18 (v1.5), 1000 classes, AdamW (Python)"),
    "resnet50": (ResNet18, {"depth": 50}, lambda s: {"shape": ["B", 3, s, s], "dtype": "float32"},
                 {"kind": "classes", "classes": 1000}, 32, "resnet50 (v1.5), 1000 classes, AdamW (Python)"),
    "gpt-mini": (GptMini, {"vocab": 512, "T": 64}, lambda s: {"shape": ["B", 64], "dtype": "int64", "vocab": 512},
                 {"kind": "classes", "classes": 512, "shape": ["B", 64]}, 32,
                 "nanoGPT-style decoder L=4 H=4 C=128 T=64 vocab=512, causal SDPA, AdamW (Python)"),
    "gpt2-124m": (GptMini, GPT2, lambda s: {"shape": ["B", 1024], "dtype": "int64", "vocab": 50304},
                  {"kind": "classes", "classes": 50304, "shape": ["B", 1024]}, 8,
                  "nanoGPT-style decoder L=12 H=12 C=768 T=1024 vocab=50304, causal SDPA, AdamW (Python)"),
}
