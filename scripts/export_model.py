#!/usr/bin/env python3
"""Export a PyTorch model for `autotune --model`: TorchScript file + batch spec, checked.

    scripts/export_model.py MODEL OUT.pt --input SPEC [--input SPEC …] [--target SPEC] [--loss LOSS]
                            [--kwargs JSON] [--output NAME] [--trace] [--batch N]
    scripts/export_model.py hf:MODEL_TYPE OUT.pt --task TASK [--kwargs JSON] [--seq T] [--output logits|loss]

MODEL is `package.module:factory` (e.g. torchvision.models:resnet18) or `path/to/file.py:ClassName`;
it is called (with --kwargs) to build the model. `hf:MODEL_TYPE` (gpt2, bert, vit, …, or a directory
holding a config.json) builds a Hugging Face transformers model from its config with random weights:
--kwargs override config fields, --task is causal-lm, sequence-classification or image-classification,
and the inputs, target and loss follow from the task (docs/models.md, "Hugging Face models").

A forward that returns a dict, a ModelOutput or a tuple is exported with the one tensor --output names
(a key, an attribute or an index): autotune trains on one tensor, logits or a loss. SPEC forms are those of autotune's --model-input /
--model-target (docs/models.md): an input `B,3,224,224:float32[:LO..HI]` or `B,128:int64:VOCAB`, a
target `classes:1000`, `classes:50257:B,128`, `regression:B,10` or `none`; LOSS is cross_entropy, mse
or model (forward(inputs…, target) returns the loss).

The model is scripted (torch.jit.script); when scripting fails, it is traced on an example batch
instead, and the message says so (tracing records one path through Python control flow). It is exported
in training mode, as autotune trains it: dropout, drop-path and batch statistics stay live (--mode eval
freezes them, as inference does). The saved file is loaded back and must reproduce the Python forward in
that mode, under the same random seed, at two batch sizes, and draw fresh randomness on each call where
the Python model does, before OUT.pt and OUT.json are kept. Run it with the torch autotune uses (2.11.0): scripts/setup-deps.sh puts one in
~/.cache/autotune/venv-torch-2.11.0.
"""
import argparse
import atexit
import difflib
import importlib
import importlib.util
import inspect
import json
import os
import sys

import traceback
import warnings

import torch


def refuse(line):
    """Bad input: one line on stderr, exit status 2 (autotune's own for a usage error)."""
    print(line, file=sys.stderr)
    sys.exit(2)


def load_factory(spec):
    if ":" not in spec:
        refuse(f"export_model: MODEL '{spec}' must be module:factory or file.py:Class")
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py"):
        if not os.path.exists(where):
            refuse(f"export_model: {where}: no such file")
        s = importlib.util.spec_from_file_location("user_model", where)
        mod = importlib.util.module_from_spec(s)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        s.loader.exec_module(mod)
    else:
        try:
            mod = importlib.import_module(where)
        except ImportError as e:
            refuse(f"export_model: cannot import {where}: {e}")
    if not hasattr(mod, name):
        refuse(f"export_model: {where} has no {name}")
    return getattr(mod, name)


def parse_shape(text, what):
    dims = []
    for d in text.split(","):
        d = d.strip()
        if d == "B":
            dims.append("B")
        elif d.isdigit() and int(d) >= 1:
            dims.append(int(d))
        else:
            refuse(f"export_model: {what}: dimension '{d}' must be B or an integer ≥ 1")
    if not dims or dims[0] != "B" or dims.count("B") != 1:
        refuse(f"export_model: {what}: the shape must start with B (the batch dimension), once")
    return dims


def parse_input(text, i):
    f = text.split(":")
    if len(f) not in (2, 3):
        refuse(f"export_model: --input {text}: allowed forms B,3,224,224:float32[:LO..HI] or B,128:int64:VOCAB")
    spec = {"name": f"input{i}", "shape": parse_shape(f[0], "--input " + text), "dtype": f[1]}
    if f[1] == "int64":
        if len(f) != 3:
            refuse(f"export_model: --input {text}: an int64 input takes its vocabulary: B,128:int64:VOCAB")
        spec["vocab"] = int(f[2])
    elif len(f) == 3:
        lo, hi = f[2].split("..")
        spec["range"] = [float(lo), float(hi)]
    elif f[1] not in ("float32", "float16", "bfloat16"):
        refuse(f"export_model: --input {text}: dtype {f[1]} is not allowed; allowed: float32, float16, bfloat16, int64")
    return spec


def parse_target(text):
    f = text.split(":")
    if f[0] == "none" and len(f) == 1:
        return {"kind": "none"}
    if f[0] == "classes" and len(f) in (2, 3):
        t = {"kind": "classes", "classes": int(f[1])}
        if len(f) == 3:
            t["shape"] = parse_shape(f[2], "--target " + text)
        return t
    if f[0] == "regression" and len(f) == 2:
        return {"kind": "regression", "shape": parse_shape(f[1], "--target " + text)}
    refuse(f"export_model: --target {text}: allowed forms classes:N, classes:N:B,T, regression:B,D, none")


def example(spec, batch):
    shape = [batch if d == "B" else d for d in spec["shape"]]
    if spec["dtype"] == "int64":
        return torch.randint(spec["vocab"], shape)
    lo, hi = spec.get("range", [-1, 1])
    return (torch.rand(shape) * (hi - lo) + lo).to(getattr(torch, spec["dtype"]))


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


HF_TASKS = {  # task → (transformers Auto class, what autotune trains on)
    "causal-lm": "AutoModelForCausalLM",
    "sequence-classification": "AutoModelForSequenceClassification",
    "image-classification": "AutoModelForImageClassification",
}


class HfCausalLm(torch.nn.Module):
    """A causal LM as autotune trains it: token ids in; the logits (KV cache off), or with a target the loss
    Hugging Face's own loss computes. autotune's token target is already the next token (y[t] = x[t+1]:
    data/tokens.h); HF's loss shifts its `labels` itself (logits[:, t] against labels[:, t+1]), so the labels
    handed to it are y moved back by one: [x[:, 0], y[:, :-1]] — for a real token window exactly input_ids,
    which is what a Python training script passes."""

    def __init__(self, model, output):
        super().__init__()
        self.model = model
        self.output = output

    def forward(self, input_ids, target=None):
        if self.output == "loss":
            labels = torch.cat([input_ids[:, :1], target[:, :-1]], dim=1)
            return self.model(input_ids=input_ids, labels=labels, use_cache=False, return_dict=True)["loss"]
        return self.model(input_ids=input_ids, use_cache=False, return_dict=True)[self.output]


class HfClassifier(torch.nn.Module):
    """A sequence or image classifier: one input in (token ids or pixels); its logits, or with a target HF's loss."""

    def __init__(self, model, input_name, output):
        super().__init__()
        self.model = model
        self.input_name = input_name
        self.output = output

    def forward(self, x, target=None):
        kw = {self.input_name: x, "return_dict": True}
        if self.output == "loss":
            return self.model(labels=target, **kw)["loss"]
        return self.model(**kw)[self.output]


VERBOSE = False  # --verbose: a library's traceback goes to stderr before its one-line summary


def fail(message, exc=None):
    """Stop with one line `export_model: message`; with --verbose, the exception's traceback first."""
    if exc is not None and VERBOSE:
        traceback.print_exception(exc)
    refuse(f"export_model: {message}" + ("" if exc is None or VERBOSE else " (--verbose shows the traceback)"))


# Names other model families give a config field, and the field most configs call it: a did-you-mean that
# spelling distance alone misses (gpt2's n_layer is qwen2's num_hidden_layers).
CONFIG_SYNONYMS = {
    "n_layer": "num_hidden_layers", "n_layers": "num_hidden_layers", "num_layers": "num_hidden_layers",
    "n_embd": "hidden_size", "d_model": "hidden_size", "dim": "hidden_size", "n_embed": "hidden_size",
    "n_head": "num_attention_heads", "n_heads": "num_attention_heads", "num_heads": "num_attention_heads",
    "n_positions": "max_position_embeddings", "n_ctx": "max_position_embeddings", "max_seq_len": "max_position_embeddings",
    "n_inner": "intermediate_size", "ffn_dim": "intermediate_size", "hidden_dim": "intermediate_size", "d_ff": "intermediate_size",
    "dropout": "hidden_dropout_prob", "resid_pdrop": "hidden_dropout_prob",
}


def init_args(cls):
    """The named arguments of cls.__init__, in order."""
    return [k for k in inspect.signature(cls.__init__).parameters if k not in ("self", "kwargs")]


def config_keys(config):
    """Every field a config of this class takes: its values, its aliases (attribute_map), its constructor's arguments."""
    keys = set(config.to_dict()) | set(getattr(type(config), "attribute_map", {})) | set(init_args(type(config)))
    keys |= {k for k in dir(config) if not k.startswith("_") and not callable(getattr(config, k, None))}
    return keys


def refuse_unknown_keys(where, config, kwargs):
    """--kwargs that the config does not define are refused (transformers would keep them as unused attributes:
    gpt2's n_layer handed to qwen2 leaves its 32 default layers)."""
    keys = config_keys(config)
    from transformers import PretrainedConfig
    generic = set(init_args(PretrainedConfig))
    own = [k for k in init_args(type(config)) if k not in generic]
    for k in kwargs:
        if k in keys:
            continue
        near = [CONFIG_SYNONYMS[k]] if CONFIG_SYNONYMS.get(k) in keys else []
        near += [n for n in difflib.get_close_matches(k, sorted(keys), n=2, cutoff=0.75) if n not in near]
        fail(f"hf:{where}: --kwargs {k!r} is not a field of {type(config).__name__}"
             + (f"; did you mean {' or '.join(repr(n) for n in near[:3])}?" if near else "")
             + (f" (its own fields: {', '.join(own[:14])}{', …' if len(own) > 14 else ''})" if own else ""))


def hf_model(where, task, kwargs, seq, output):
    """(wrapper module, inputs, target, loss, python build lines, python loss expression) for `hf:where`."""
    try:
        import transformers
    except ImportError:
        refuse("export_model: hf:… needs the transformers package (scripts/setup-deps.sh installs it into "
                 "~/.cache/autotune/venv-torch-2.11.0; or pip install transformers)")
    if task is None:
        refuse(f"export_model: hf:{where} needs --task; allowed: {', '.join(HF_TASKS)}")
    if task not in HF_TASKS:
        refuse(f"export_model: --task {task} is not a task autotune exports; allowed: {', '.join(HF_TASKS)}")
    if output not in ("logits", "loss"):
        refuse(f"export_model: --output {output}: a Hugging Face model is exported with logits or loss")
    from transformers import AutoConfig
    transformers.logging.set_verbosity_error()  # config notes about unused tokens etc. are not the user's concern here
    try:
        if os.path.isdir(where):
            config = AutoConfig.from_pretrained(where)
            config_src = f"AutoConfig.from_pretrained({where!r}{''.join(f', {k}={v!r}' for k, v in kwargs.items())})"
        else:
            config = AutoConfig.for_model(where)
            config_src = f"AutoConfig.for_model({where!r}{''.join(f', {k}={v!r}' for k, v in kwargs.items())})"
    except (ValueError, OSError, TypeError, KeyError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if "Unrecognized model identifier" in msg:
            from transformers import CONFIG_MAPPING
            close = difflib.get_close_matches(where, list(CONFIG_MAPPING), n=3, cutoff=0.6)
            near = [t for t in CONFIG_MAPPING if t.startswith(where[:3])][:8] or ["gpt2", "bert", "vit", "llama"]
            msg = ((f"unknown model type; did you mean {' or '.join(close)}? " if close else "unknown model type ") +
                   f"(transformers {transformers.__version__} knows {len(list(CONFIG_MAPPING))} types"
                   f"{'' if close else ', e.g. ' + ', '.join(near)}; or give a directory with a config.json)")
        refuse(f"export_model: hf:{where}: {msg[:300]}")
    refuse_unknown_keys(where, config, kwargs)
    try:  # built again with the overrides: a config derives some fields from others (head_dim from hidden_size)
        config = AutoConfig.from_pretrained(where, **kwargs) if os.path.isdir(where) else AutoConfig.for_model(where, **kwargs)
    except Exception as e:  # noqa: BLE001 - a config that rejects a value: one line
        fail(f"hf:{where}: --kwargs {json.dumps(kwargs)}: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", e)
    if getattr(config, "is_encoder_decoder", False):
        refuse(f"export_model: hf:{where} is an encoder-decoder model (its decoder takes inputs and labels of its own); "
                 "not supported yet: export an encoder-only or decoder-only model (bert, vit, gpt2, llama, …)")
    if hasattr(config, "use_cache"):
        config.use_cache = False  # no KV cache: training never reuses it, and a cache object cannot be traced
    auto = getattr(transformers, HF_TASKS[task])
    try:
        model_cls = auto._model_mapping[type(config)]
    except KeyError:
        tasks = [t for t, c in HF_TASKS.items() if type(config) in getattr(transformers, c)._model_mapping]
        refuse(f"export_model: hf:{where} has no {task} model in transformers {transformers.__version__}; "
                 f"allowed for {where}: {', '.join(tasks) if tasks else 'none of ' + ', '.join(HF_TASKS)}")
    # One class per config, or several (deit: with and without a distillation teacher): the first is the plain head.
    model_cls = model_cls[0] if isinstance(model_cls, (tuple, list)) else model_cls
    try:
        model = model_cls._from_config(config)
    except Exception as e:  # noqa: BLE001 - transformers' own error, in one line
        fail(f"hf:{where} --task {task}: {model_cls.__name__} cannot be built from this config: {type(e).__name__}: "
             f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}", e)
    if isinstance(auto._model_mapping[type(config)], (tuple, list)):  # the class by name: the auto class cannot choose
        cls, make = model_cls.__name__, f"{model_cls.__name__}({config_src})"
    else:
        cls, make = HF_TASKS[task], f"{HF_TASKS[task]}.from_config({config_src})"
    build = [f"from transformers import AutoConfig, {cls}", f"model = {make}  # random weights, as tuned"]
    if task == "causal-lm":
        vocab, t = config.vocab_size, seq
        limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
        if limit and t > limit:
            refuse(f"export_model: --seq {t} is longer than the model's {limit} positions")
        inputs = [{"name": "input_ids", "shape": ["B", t], "dtype": "int64", "vocab": vocab}]
        target = {"kind": "classes", "classes": vocab, "shape": ["B", t]}
        wrapper = HfCausalLm(model, output)
        py_loss = ("model(input_ids=x, labels=x, use_cache=False).loss  # HF shifts the labels itself"
                   if output == "loss" else None)
        py_logits = "model(input_ids=x, use_cache=False).logits"
    else:
        n = config.num_labels
        if task == "sequence-classification":
            inputs = [{"name": "input_ids", "shape": ["B", seq], "dtype": "int64", "vocab": config.vocab_size}]
            name = "input_ids"
        else:
            size = config.image_size if isinstance(config.image_size, int) else config.image_size[0]
            inputs = [{"name": "pixel_values", "shape": ["B", getattr(config, "num_channels", 3), size, size],
                       "dtype": "float32", "range": [-1.0, 1.0]}]
            name = "pixel_values"
        target = {"kind": "classes", "classes": n}
        wrapper = HfClassifier(model, name, output)
        py_loss = f"model({name}=x, labels=y).loss" if output == "loss" else None
        py_logits = f"model({name}=x).logits"
    loss = "model" if output == "loss" else "cross_entropy"
    return wrapper, inputs, target, loss, build, py_loss or py_logits


def same(a, b):
    """Two forward results equal tensor by tensor (paths, shapes and values)."""
    la, lb = leaves(a), leaves(b)
    return [p for p, _ in la] == [p for p, _ in lb] and all(
        x.shape == y.shape and torch.allclose(x.float(), y.float(), rtol=1e-4, atol=1e-5) for (_, x), (_, y) in zip(la, lb))


def seeded(f, args, seed=1234):
    """f(*args) without gradients, after torch.manual_seed(seed): the same seed draws the same dropout masks."""
    torch.manual_seed(seed)
    with torch.no_grad():
        return f(*args)


def train_behaviour(model, random_forward):
    """What training mode keeps live in the model, in words (the report prints it)."""
    drop = [m.p for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]
    path = [float(getattr(m, "drop_prob", getattr(m, "p", 0)) or 0) for m in model.modules()
            if "droppath" in type(m).__name__.lower() or "stochasticdepth" in type(m).__name__.lower()]
    path = [p for p in path if p > 0]
    norms = sum(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())

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


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--input", action="append")
    ap.add_argument("--target", default="none")
    ap.add_argument("--loss", default=None, choices=["cross_entropy", "mse", "model"])
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("--trace", action="store_true", help="trace instead of trying to script first")
    ap.add_argument("--batch", type=int, default=2, help="batch of the example and the check")
    ap.add_argument("--output", default=None,
                    help="the output autotune trains on when forward returns a dict, ModelOutput or tuple: a key, "
                         "attribute or index (logits, loss, 0); hf: models: logits (default) or loss")
    ap.add_argument("--task", default=None, help="hf: models: " + ", ".join(HF_TASKS))
    ap.add_argument("--seq", type=int, default=128, help="hf: text models: tokens per sample (default 128)")
    ap.add_argument("--mode", default="train", choices=["train", "eval"],
                    help="train (default): dropout, drop-path and batch statistics live, as training runs them; "
                         "eval: frozen, as inference runs them (a different model to time)")
    ap.add_argument("--verbose", action="store_true", help="a library's traceback before its one-line error")
    a = ap.parse_args()
    VERBOSE = a.verbose
    try:
        kwargs = json.loads(a.kwargs)
    except json.JSONDecodeError as e:
        refuse(f"export_model: --kwargs is not JSON ({e.msg}); e.g. '{{\"n_layer\": 2}}'")
    if not isinstance(kwargs, dict):
        refuse("export_model: --kwargs must be a JSON object of keyword arguments")
    torch.manual_seed(0)
    hf = a.model.startswith("hf:")
    python_build = python_loss = None
    if hf:
        if a.seq < 1:
            refuse("export_model: --seq must be ≥ 1")
        model, inputs, target, loss, python_build, python_loss = hf_model(a.model[3:], a.task, kwargs, a.seq,
                                                                          a.output or "logits")
        if a.input:
            inputs = [parse_input(t, i) for i, t in enumerate(a.input)]
        if a.target != "none":
            target = parse_target(a.target)
        a.trace = True  # transformers models do not script; a trace at fixed sequence length is what runs
        weights = "random"  # from_config: no checkpoint is read
    else:
        if not a.input:
            refuse("export_model: --input is required (e.g. --input B,3,224,224:float32), except for hf: models")
        if a.task:
            refuse("export_model: --task is for hf: models only")
        inputs = [parse_input(t, i) for i, t in enumerate(a.input)]
        target = parse_target(a.target)
        loss = a.loss or ("cross_entropy" if target["kind"] == "classes" else "mse" if target["kind"] == "regression" else "model")
        factory = load_factory(a.model)
        model = factory(**kwargs)
        if not isinstance(model, torch.nn.Module):
            refuse(f"export_model: {a.model} returned {type(model).__name__}, not a torch.nn.Module")
        weights = weights_of(lambda: factory(**kwargs), model)
    if a.loss and hf and a.loss != loss:
        refuse(f"export_model: hf: models take their loss from --output (logits → cross_entropy, loss → model)")
    torch.manual_seed(0)
    def batch_of(n):
        torch.manual_seed(n)
        args = [example(s, n) for s in inputs]
        if loss == "model" and target["kind"] != "none":
            t = target
            shape = [n if d == "B" else d for d in t.get("shape", ["B"])]
            args.append(torch.randint(t["classes"], shape) if t["kind"] == "classes" else torch.randn(shape))
        return args

    train = a.mode == "train"
    model.train(train)
    # Batch norm's running statistics as built: the forwards below (train mode) move them; the file keeps these.
    built_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    args = batch_of(a.batch)
    try:
        first = seeded(model, args)
    except Exception as e:  # noqa: BLE001 - the model's own error on the example batch, in one line
        fail(f"{a.model}: the forward fails on the example batch ({type(e).__name__}: "
             f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else ''})", e)
    if not isinstance(first, torch.Tensor):
        if a.output is None:
            kind = structure(first)
            hint = ("a key" if isinstance(first, dict) else "an index")
            refuse(f"export_model: {a.model}'s forward returns a {kind}; autotune trains on one tensor: name it "
                     f"with --output ({hint}, e.g. --output {'logits' if isinstance(first, dict) and 'logits' in first else sorted(first)[0] if isinstance(first, dict) else 0})")
        if not hf:
            try:
                pick(first, a.output)
            except KeyError:
                refuse(f"export_model: --output {a.output}: {a.model}'s forward returns a {structure(first)}; "
                         f"allowed: {', '.join(map(str, sorted(first) if isinstance(first, dict) else range(len(first))))}")
    # Does the Python forward draw randomness in this mode (dropout, drop-path, a random branch)? Four seeds tell.
    if train:
        first_seed = seeded(model, args, 1)
        random_forward = any(not same(first_seed, seeded(model, args, k)) for k in (2, 3, 4))
    else:
        random_forward = False
    select = not isinstance(first, torch.Tensor) and not hf
    how = "traced"
    if not a.trace:
        try:
            scripted = torch.jit.script(model)
            how = "scripted"
        except Exception as e:  # noqa: BLE001 - any scripting failure falls back to tracing
            print(f"export_model: torch.jit.script failed ({str(e).splitlines()[0]}); tracing on the example batch instead "
                  "(one path through Python control flow is recorded)", file=sys.stderr)
    if select:
        # The selection is traced around the model (scripted when it scripts: its control flow stays its own).
        model = Select(model, a.output)
        if how == "scripted":
            scripted = torch.jit.trace(Select(scripted, a.output).train(train), tuple(args), check_trace=False, strict=False)
    if how == "traced":
        # strict=False: a forward that returns a dict (or any container) traces; the check below compares it all.
        # In training mode the trace records dropout as it runs in training (the masks are drawn at run time).
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", torch.jit.TracerWarning)
                scripted = torch.jit.trace(model.train(train), tuple(args), check_trace=False, strict=False)
            branches = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
            if branches:
                print(f"export_model: the trace fixed {len(branches)} Python value(s) as constants (e.g. "
                      f"{str(branches[0].message).split(chr(10))[0][:100]!r}); the check below runs a second batch "
                      "size to catch a fixed batch", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - one line, not the tracer's traceback
            fail(f"torch.jit.trace failed: {type(e).__name__}: {str(e).strip().splitlines()[0][:300]}", e)
    with torch.no_grad():  # the file keeps the statistics as built (script and trace share the model's tensors)
        for k, v in scripted.state_dict().items():
            key = k[len("model."):] if select and k.startswith("model.") else k
            if key in built_state and v.shape == built_state[key].shape:
                v.copy_(built_state[key])
    # Written beside OUT.pt and renamed once every check passed: a refused export leaves what was there as it was.
    partial = a.out + ".partial"
    atexit.register(lambda: os.path.exists(partial) and os.remove(partial))
    scripted.save(partial)
    # The saved file must reproduce the Python forward in the exported mode, output by output, at the example's
    # batch and at another (a trace records shapes; autotune varies the batch), under one seed: the same seed
    # draws the same dropout masks in both, so a mask the trace froze, or a train-only branch it dropped, shows.
    loaded = torch.jit.load(partial)
    loaded.train(train)
    mode_words = "in training mode" if train else "in eval mode"
    refuse_hint = ("; --mode eval exports it with dropout and drop-path frozen off (a different model to time)"
                   if train else "")
    compared, shift_checked = 0, False
    # Three seeds at the example's batch (a Python branch on a random draw, like LayerDrop, is frozen by a trace and
    # parts from the Python forward on some seed), one at another batch.
    for n, seed in ((a.batch, 1234), (a.batch, 1235), (a.batch, 1236), (a.batch + 3, 1234)):
        if not random_forward and seed != 1234:
            continue
        check_args = batch_of(n)
        try:
            want, got = seeded(model, check_args, seed), seeded(loaded, check_args, seed)
        except Exception as e:  # noqa: BLE001 - the exported module fails where the Python one runs
            fail(f"the {how} module fails {mode_words} at batch {n} where the Python forward runs ({type(e).__name__}: "
                 f"{str(e).strip().splitlines()[-1][:200] if str(e).strip() else ''}){refuse_hint}; nothing written", e)
        wl, gl = leaves(want), leaves(got)
        if [p for p, _ in wl] != [p for p, _ in gl] or not wl:
            refuse(f"export_model: the {how} module returns a {structure(got)} where the Python forward returns a "
                     f"{structure(want)}; nothing written")
        for (path, w), (_, g) in zip(wl, gl):
            if w.shape != g.shape or not torch.allclose(w.float(), g.float(), rtol=1e-4, atol=1e-5):
                diff = "shape " + str(tuple(g.shape)) + " vs " + str(tuple(w.shape)) if w.shape != g.shape else \
                    f"max difference {(w.float() - g.float()).abs().max().item():.3g}"
                refuse(f"export_model: the {how} module does not reproduce the Python forward {mode_words} at batch {n}, "
                         f"seed {seed} "
                         f"({path}: {diff}){refuse_hint}; nothing written")
        compared = len(wl)
    if random_forward:  # the same four seeds as the Python forward's: where those differed, these must too
        loaded_first = seeded(loaded, args, 1)
        if all(same(loaded_first, seeded(loaded, args, k)) for k in (2, 3, 4)):
            refuse(f"export_model: the {how} module is deterministic in training mode where the Python forward draws "
                   f"fresh randomness each call (a mask or a branch fixed at export){refuse_hint}; nothing written")
    if hf and loss == "model" and a.task == "causal-lm":
        # The shift: on a real token window (x = w[:, :T], autotune's target y = w[:, 1:]) the exported loss must be
        # HF's own loss with labels=input_ids, what a Python training script computes (same seed: same dropout).
        torch.manual_seed(1)
        w = torch.randint(inputs[0]["vocab"], (a.batch, inputs[0]["shape"][1] + 1))
        x, y = w[:, :-1], w[:, 1:]
        ours = seeded(loaded, (x, y))
        theirs = seeded(lambda: model.model(input_ids=x, labels=x, use_cache=False).loss, ())
        if not torch.allclose(ours, theirs, rtol=1e-4, atol=1e-5):
            refuse(f"export_model: the exported loss ({ours.item():.6g}) is not HF's own causal-LM loss on the same "
                     f"window ({theirs.item():.6g}); nothing written")
        shift_checked = True
    if not isinstance(got, torch.Tensor) and loss != "model":
        refuse(f"export_model: the exported forward returns a {structure(got)}, autotune needs one tensor of logits "
                 "(or --loss model with a loss first); name it with --output; nothing written")
    behaviour = train_behaviour(model, random_forward) if train else \
        "eval mode (--mode eval): dropout and drop-path off, batch norm on its running statistics"
    spec = {"inputs": inputs, "target": target, "loss": loss,
            "description": f"{a.model} ({how} with torch {torch.__version__.split('+')[0]})",
            "python": a.model, "weights": weights, "train_mode": behaviour}
    if kwargs:
        spec["python_kwargs"] = kwargs
    if hf:
        spec["python_build"] = python_build
        spec["python_forward"] = python_loss
    with open(os.path.splitext(a.out)[0] + ".json.partial", "w") as f:
        json.dump(spec, f, indent=1)
        f.write("\n")
    os.replace(partial, a.out)
    os.replace(os.path.splitext(a.out)[0] + ".json.partial", os.path.splitext(a.out)[0] + ".json")
    params = sum(p.numel() for p in model.parameters())
    print(f"export_model: wrote {a.out} ({how}, {params:,} parameters; {behaviour}; {compared} output{'s' if compared > 1 else ''} "
          f"checked against the Python forward {mode_words}, same seed, at batch {a.batch} and {a.batch + 3}"
          f"{'; the loss equals HF causal-LM loss with labels=input_ids on a token window' if shift_checked else ''}) and "
          f"{os.path.splitext(a.out)[0]}.json")


if __name__ == "__main__":
    main()
