"""A batch of a user's model: inputs, target and loss, in the forms autotune's --model-input / --model-target and
the spec JSON use (knobs/model_spec.h is the C++ side of the same format)."""
import json

import torch

from .errors import Refused

DTYPES = ("float32", "float16", "bfloat16", "int64")


def parse_shape(text, what):
    dims = []
    for d in text.split(","):
        d = d.strip()
        if d == "B":
            dims.append("B")
        elif d.isdigit() and int(d) >= 1:
            dims.append(int(d))
        else:
            raise Refused(f"{what}: dimension '{d}' must be B or an integer ≥ 1")
    if not dims or dims[0] != "B" or dims.count("B") != 1:
        raise Refused(f"{what}: the shape must start with B (the batch dimension), once")
    return dims


def parse_input(text, i, flag="--input"):
    f = text.split(":")
    if len(f) not in (2, 3):
        raise Refused(f"{flag} {text}: allowed forms B,3,224,224:float32[:LO..HI] or B,128:int64:VOCAB")
    spec = {"name": f"input{i}", "shape": parse_shape(f[0], f"{flag} " + text), "dtype": f[1]}
    if f[1] == "int64":
        if len(f) != 3:
            raise Refused(f"{flag} {text}: an int64 input takes its vocabulary: B,128:int64:VOCAB")
        spec["vocab"] = int(f[2])
    elif len(f) == 3:
        lo, hi = f[2].split("..")
        spec["range"] = [float(lo), float(hi)]
    elif f[1] not in DTYPES:
        raise Refused(f"{flag} {text}: dtype {f[1]} is not allowed; allowed: float32, float16, bfloat16, int64")
    return spec


def parse_target(text, flag="--target"):
    f = text.split(":")
    if f[0] == "none" and len(f) == 1:
        return {"kind": "none"}
    if f[0] == "classes" and len(f) in (2, 3):
        t = {"kind": "classes", "classes": int(f[1])}
        if len(f) == 3:
            t["shape"] = parse_shape(f[2], f"{flag} " + text)
        return t
    if f[0] == "regression" and len(f) == 2:
        return {"kind": "regression", "shape": parse_shape(f[1], f"{flag} " + text)}
    raise Refused(f"{flag} {text}: allowed forms classes:N, classes:N:B,T, regression:B,D, none")


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
    if setup.get("model_input"):
        spec["inputs"] = [parse_input(t, i, "--model-input") for i, t in enumerate(setup["model_input"].split(";"))]
    if setup.get("model_target"):
        spec["target"] = parse_target(setup["model_target"], "--model-target")
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
