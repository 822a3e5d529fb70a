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
import json
import os
import sys

import traceback
import warnings

# The model-building half is shared with autotune's Python worker (pyworker/autotune_pyworker).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyworker"))
from autotune_pyworker.errors import Refused  # noqa: E402
from autotune_pyworker.hf_tasks import HF_TASKS, check_hf_flags  # noqa: E402 — torch-free: the flags are checked first


def refuse(line):
    """Bad input: one line on stderr, exit status 2 (autotune's own for a usage error)."""
    print(line, file=sys.stderr)
    sys.exit(2)


def parse_flags():
    """(the parsed flags, --kwargs as a dict), or a one-line refusal: every check that needs no model, made before
    torch is imported, so a mistyped flag is answered at once rather than after seconds of imports."""
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
    try:
        kwargs = json.loads(a.kwargs)
    except json.JSONDecodeError as e:
        refuse(f"export_model: --kwargs is not JSON ({e.msg}); e.g. '{{\"n_layer\": 2}}'")
    if not isinstance(kwargs, dict):
        refuse("export_model: --kwargs must be a JSON object of keyword arguments")
    if a.model.startswith("hf:"):
        if a.seq < 1:
            refuse("export_model: --seq must be ≥ 1")
        try:
            check_hf_flags(a.model[3:], a.task, a.output or "logits")
        except Refused as e:
            refuse(f"export_model: {e}")
    else:
        if not a.input:
            refuse("export_model: --input is required (e.g. --input B,3,224,224:float32), except for hf: models")
        if a.task:
            refuse("export_model: --task is for hf: models only")
    return a, kwargs


if __name__ == "__main__":
    parse_flags()  # refused here, if at all, before the imports below

import torch  # noqa: E402

from autotune_pyworker.hf import hf_model  # noqa: E402
from autotune_pyworker.models import Select, leaves, load_factory, pick, structure, train_behaviour, weights_of  # noqa: E402
from autotune_pyworker.settings import model_flags  # noqa: E402
from autotune_pyworker.spec import default_loss, example  # noqa: E402


VERBOSE = False  # --verbose: a library's traceback goes to stderr before its one-line summary


def fail(message, exc=None):
    """Stop with one line `export_model: message`; with --verbose, the exception's traceback first."""
    if exc is not None and VERBOSE:
        traceback.print_exception(exc)
    refuse(f"export_model: {message}" + ("" if exc is None or VERBOSE else " (--verbose shows the traceback)"))


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


def main():
    try:
        export()
    except Refused as e:
        fail(str(e), e.cause)


def export():
    global VERBOSE
    # torch.jit.script and torch.jit.trace warn that they are deprecated (PyTorch 2.10+): shown, never hidden.
    warnings.simplefilter("default", DeprecationWarning)
    a, kwargs = parse_flags()
    VERBOSE = a.verbose
    torch.manual_seed(0)
    hf = a.model.startswith("hf:")
    python_build = python_loss = None
    if hf:
        model, inputs, target, loss, python_build, python_loss = hf_model(a.model[3:], a.task, kwargs, a.seq,
                                                                          a.output or "logits")
        if a.input or a.target != "none":  # the flags' grammar is autotune's (knobs/model_spec.h, autotune-resolve)
            flags = model_flags(";".join(a.input or []), "" if a.target == "none" else a.target)
            inputs, target = flags.get("inputs", inputs), flags.get("target", target)
        a.trace = True  # transformers models do not script; a trace at fixed sequence length is what runs
        weights = "random"  # from_config: no checkpoint is read
    else:
        flags = model_flags(";".join(a.input), a.target)  # the flags' grammar is autotune's (knobs/model_spec.h)
        inputs, target = flags["inputs"], flags["target"]
        loss = a.loss or default_loss(target)
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
            for w in caught:  # the rest (torch.jit.trace's DeprecationWarning among them) as Python would show them
                if not issubclass(w.category, torch.jit.TracerWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
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
    print("export_model: torch.jit is deprecated (PyTorch 2.10+); a model you train in Python can be tuned as it is, "
          "without this file: autotune tune --model MODULE:FACTORY (docs/models.md, \"Two workers\")")


if __name__ == "__main__":
    main()
