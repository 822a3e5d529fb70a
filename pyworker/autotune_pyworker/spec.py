"""A batch of a user's model: inputs, target and loss, in the form of the spec JSON (knobs/model_spec.h). The compact
--model-input / --model-target flags are parsed there, through autotune-resolve (settings.model_flags), not here."""
import json

import torch

from .errors import Refused
from .settings import model_flags


def default_loss(target):
    return "cross_entropy" if target["kind"] == "classes" else "mse" if target["kind"] == "regression" else "model"


def output_loss(out, target, kind, who):
    """MSE (kind "mse") or cross-entropy of one output tensor against its target, the shapes checked first; `who`
    begins the refusal ("--model m.py:Net: forward")."""
    import torch.nn.functional as F
    if kind == "mse":
        if out.shape != target.shape:
            raise Refused(f"{who} returned {tuple(out.shape)} but the regression target is {tuple(target.shape)}")
        return F.mse_loss(out, target)
    if out.dim() != target.dim() + 1 or out.shape[:target.dim()] != target.shape:
        raise Refused(f"{who} returned logits {tuple(out.shape)} but the class target is {tuple(target.shape)}: "
                      "cross_entropy needs logits (target's shape…, classes)")
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def example(spec, batch, generator=None, device="cpu"):
    """A random input of `spec` at `batch`: token ids below its vocabulary, or floats uniform in its range."""
    shape = [batch if d == "B" else d for d in spec["shape"]]
    if spec["dtype"] == "int64":
        return torch.randint(spec["vocab"], shape, generator=generator, device=device)
    lo, hi = spec.get("range", [-1, 1])
    x = torch.rand(shape, generator=generator, device=device) * (hi - lo) + lo
    return x.to(getattr(torch, spec["dtype"]))


def target_example(target, batch, generator=None, device="cpu"):
    """A random target: class indices, or regression values; None for a target of kind none."""
    if target["kind"] == "none":
        return None
    shape = [batch if d == "B" else d for d in target.get("shape", ["B"])]
    if target["kind"] == "classes":
        return torch.randint(target["classes"], shape, generator=generator, device=device)
    return torch.randn(shape, generator=generator, device=device)


def load_spec_file(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise Refused(f"--model-spec {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise Refused(f"--model-spec {path}: not JSON ({e.msg}, line {e.lineno})") from None


def with_overrides(spec, setup):
    """The spec with the plan's --model-* overrides on top (each replaces its field)."""
    spec = dict(spec)
    if setup.get("model_input") or setup.get("model_target"):
        spec.update(model_flags(setup.get("model_input"), setup.get("model_target")))
    if setup.get("model_loss"):
        spec["loss"] = setup["model_loss"]
    if setup.get("model_flops"):
        spec["flops_per_sample"] = float(setup["model_flops"])
    spec.setdefault("target", {"kind": "none"})
    spec.setdefault("loss", default_loss(spec["target"]))
    return spec


def text(spec):
    """The spec in words, as the C++ ModelSpec::text() writes it: "x: (B, 3, 224, 224) float32 in [-1, 1); …"."""
    parts = []
    for s in spec["inputs"]:
        dims = ", ".join(str(d) for d in s["shape"])
        what = f"ids < {s['vocab']}" if s["dtype"] == "int64" else "in [{:g}, {:g})".format(*s.get("range", [-1, 1]))
        parts.append(f"{s['name']}: ({dims}) {s['dtype']} {what}")
    t = spec["target"]
    if t["kind"] == "classes":
        dims = ", ".join(str(d) for d in t.get("shape", ["B"]))
        parts.append(f"target: classes 0..{t['classes'] - 1} ({dims})")
    elif t["kind"] == "regression":
        parts.append(f"target: regression ({', '.join(str(d) for d in t['shape'])})")
    return "; ".join(parts + [f"loss {spec['loss']}"])
