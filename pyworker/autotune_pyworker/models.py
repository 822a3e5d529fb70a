"""A user's PyTorch model as the worker and the exporter build it: a factory (`module:factory` or `file.py:Class`)
called with keyword arguments, its output narrowed to the one tensor autotune trains on, and what training mode
keeps live in it."""
import hashlib
import importlib
import importlib.util
import os
import sys

import torch

from .errors import Refused


def load_module(where):
    """The module `where` names: a file path ending in .py (loaded, its folder put on sys.path) or a dotted module
    name (imported)."""
    if where.endswith(".py"):
        if not os.path.exists(where):
            raise Refused(f"{where}: no such file")
        # Registered under its file's name: torch.compile re-imports a module its code refers to by that name.
        stem = os.path.splitext(os.path.basename(where))[0]
        name_in_sys = stem if stem.isidentifier() and stem not in sys.modules else "autotune_user_model"
        s = importlib.util.spec_from_file_location(name_in_sys, where)
        mod = importlib.util.module_from_spec(s)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        sys.modules[name_in_sys] = mod
        try:
            s.loader.exec_module(mod)
        except Exception as e:  # noqa: BLE001 - the user's file fails to run: one line
            raise Refused(f"{where}: cannot load it: {type(e).__name__}: {first_line(e)}", e) from None
        return mod
    try:
        return importlib.import_module(where)
    except ImportError as e:
        raise Refused(f"cannot import {where}: {e}") from None


def file_digest(where):
    """" (sha256 ab12…)" of a .py file the reports name by its content, "" for a module on the path."""
    if not (where.endswith(".py") and os.path.exists(where)):
        return ""
    with open(where, "rb") as f:
        return f" (sha256 {hashlib.sha256(f.read()).hexdigest()[:12]})"


def load_factory(spec):
    """The callable `spec` names: `package.module:factory` (imported) or `path/to/file.py:Class` (loaded)."""
    if ":" not in spec:
        raise Refused(f"MODEL '{spec}' must be module:factory or file.py:Class")
    where, name = spec.rsplit(":", 1)
    mod = load_module(where)
    if not hasattr(mod, name):
        raise Refused(f"{where} has no {name}")
    return getattr(mod, name)


def first_line(e, limit=200):
    text = str(e).strip()
    return text.splitlines()[0][:limit] if text else ""


class Select(torch.nn.Module):
    """The model with its output reduced to one tensor: `key` of a dict or ModelOutput, or index of a tuple."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, *args):
        return pick(self.model(*args), self.key)


def pick(out, key):
    if isinstance(out, dict):  # a ModelOutput is a dict too (transformers.utils.ModelOutput subclasses OrderedDict)
        if key not in out:
            raise KeyError(key)
        return out[key]
    if isinstance(out, (tuple, list)) and key.isdigit() and int(key) < len(out):
        return out[int(key)]
    raise KeyError(key)


def leaves(out, path="output"):
    """[(path, tensor)] of every tensor in a nested output, in a fixed order (dict keys sorted)."""
    if isinstance(out, torch.Tensor):
        return [(path, out)]
    if isinstance(out, dict):
        return [l for k in sorted(out) for l in leaves(out[k], f"{path}[{k!r}]")]
    if isinstance(out, (tuple, list)):
        return [l for i, o in enumerate(out) for l in leaves(o, f"{path}[{i}]")]
    return []


def structure(out):
    if isinstance(out, torch.Tensor):
        return "tensor"
    if isinstance(out, dict):
        return "dict with keys " + ", ".join(sorted(map(str, out)))
    if isinstance(out, (tuple, list)):
        return f"{type(out).__name__} of {len(out)}"
    return type(out).__name__



def batch_norm_count(model):
    """The layers that normalize by each forward's own batch statistics in training mode (BatchNorm1d/2d/3d,
    SyncBatchNorm, the lazy ones): the model's training loss then depends on the batch a forward sees."""
    return sum(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())


def train_behaviour(model, random_forward):
    """What training mode keeps live in the model, in words (the report prints it)."""
    drop = [m.p for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]
    path = [float(getattr(m, "drop_prob", getattr(m, "p", 0)) or 0) for m in model.modules()
            if "droppath" in type(m).__name__.lower() or "stochasticdepth" in type(m).__name__.lower()]
    path = [p for p in path if p > 0]
    norms = batch_norm_count(model)

    def span(ps):
        return f"p {min(ps):.3g}" if min(ps) == max(ps) else f"p {min(ps):.3g}–{max(ps):.3g}"
    kept = ([f"dropout in {len(drop)} layer{'s' * (len(drop) > 1)} ({span(drop)})"] if drop else []) + \
           ([f"drop-path in {len(path)} block{'s' * (len(path) > 1)} ({span(path)})"] if path else []) + \
           ([f"batch statistics in {norms} batch norm{'s' * (norms > 1)}"] if norms else [])
    if random_forward and not drop and not path:
        kept.append("random draws in the forward")
    if not kept:
        return "training mode (nothing in this model behaves differently in training)"
    return "training mode: " + ", ".join(kept) + (
        " live, fresh draws each step" if random_forward else " live")


def weights_of(make, model):
    """'random' when the factory draws its weights from torch's generator (a second build from another seed
    differs), 'given' when it loads them (a checkpoint, pretrained=True): time to train labels its
    noise scale by it."""
    torch.manual_seed(12345)
    try:
        other = make()
    except Exception:  # noqa: BLE001 - it built once; a second build failing says nothing about the weights
        return "given"
    for p, q in zip(model.parameters(), other.parameters()):
        if p.shape == q.shape and not torch.equal(p.detach(), q.detach()):
            return "random"
    return "given"
