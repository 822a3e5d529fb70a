#!/usr/bin/env python3
"""Export a PyTorch model for `autotune --model`: TorchScript file + batch spec, checked.

    scripts/export_model.py MODEL OUT.pt --input SPEC [--input SPEC …] [--target SPEC] [--loss LOSS]
                            [--kwargs JSON] [--trace] [--batch N]

MODEL is `package.module:factory` (e.g. torchvision.models:resnet18) or `path/to/file.py:ClassName`;
it is called (with --kwargs) to build the model. SPEC forms are those of autotune's --model-input /
--model-target (docs/models.md): an input `B,3,224,224:float32[:LO..HI]` or `B,128:int64:VOCAB`, a
target `classes:1000`, `classes:50257:B,128`, `regression:B,10` or `none`; LOSS is cross_entropy, mse
or model (forward(inputs…, target) returns the loss).

The model is scripted (torch.jit.script); when scripting fails, it is traced on an example batch
instead, and the message says so (tracing records one path through Python control flow). The saved file
is loaded back and must reproduce the Python forward on a sample batch (eval mode) before OUT.pt and
OUT.json are kept. Run it with the torch autotune uses (2.11.0): scripts/setup-deps.sh puts one in
~/.cache/autotune/venv-torch-2.11.0.
"""
import argparse
import importlib
import importlib.util
import json
import os
import sys

import torch


def load_factory(spec):
    if ":" not in spec:
        sys.exit(f"export_model: MODEL '{spec}' must be module:factory or file.py:Class")
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py"):
        if not os.path.exists(where):
            sys.exit(f"export_model: {where}: no such file")
        s = importlib.util.spec_from_file_location("user_model", where)
        mod = importlib.util.module_from_spec(s)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        s.loader.exec_module(mod)
    else:
        try:
            mod = importlib.import_module(where)
        except ImportError as e:
            sys.exit(f"export_model: cannot import {where}: {e}")
    if not hasattr(mod, name):
        sys.exit(f"export_model: {where} has no {name}")
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
            sys.exit(f"export_model: {what}: dimension '{d}' must be B or an integer ≥ 1")
    if not dims or dims[0] != "B" or dims.count("B") != 1:
        sys.exit(f"export_model: {what}: the shape must start with B (the batch dimension), once")
    return dims


def parse_input(text, i):
    f = text.split(":")
    if len(f) not in (2, 3):
        sys.exit(f"export_model: --input {text}: allowed forms B,3,224,224:float32[:LO..HI] or B,128:int64:VOCAB")
    spec = {"name": f"input{i}", "shape": parse_shape(f[0], "--input " + text), "dtype": f[1]}
    if f[1] == "int64":
        if len(f) != 3:
            sys.exit(f"export_model: --input {text}: an int64 input takes its vocabulary: B,128:int64:VOCAB")
        spec["vocab"] = int(f[2])
    elif len(f) == 3:
        lo, hi = f[2].split("..")
        spec["range"] = [float(lo), float(hi)]
    elif f[1] not in ("float32", "float16", "bfloat16"):
        sys.exit(f"export_model: --input {text}: dtype {f[1]} is not allowed; allowed: float32, float16, bfloat16, int64")
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
    sys.exit(f"export_model: --target {text}: allowed forms classes:N, classes:N:B,T, regression:B,D, none")


def example(spec, batch):
    shape = [batch if d == "B" else d for d in spec["shape"]]
    if spec["dtype"] == "int64":
        return torch.randint(spec["vocab"], shape)
    lo, hi = spec.get("range", [-1, 1])
    return (torch.rand(shape) * (hi - lo) + lo).to(getattr(torch, spec["dtype"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--input", action="append", required=True)
    ap.add_argument("--target", default="none")
    ap.add_argument("--loss", default=None, choices=["cross_entropy", "mse", "model"])
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("--trace", action="store_true", help="trace instead of trying to script first")
    ap.add_argument("--batch", type=int, default=2, help="batch of the example and the check")
    a = ap.parse_args()
    inputs = [parse_input(t, i) for i, t in enumerate(a.input)]
    target = parse_target(a.target)
    loss = a.loss or ("cross_entropy" if target["kind"] == "classes" else "mse" if target["kind"] == "regression" else "model")
    model = load_factory(a.model)(**json.loads(a.kwargs))
    if not isinstance(model, torch.nn.Module):
        sys.exit(f"export_model: {a.model} returned {type(model).__name__}, not a torch.nn.Module")
    torch.manual_seed(0)
    args = [example(s, a.batch) for s in inputs]
    if loss == "model" and target["kind"] != "none":
        t = target
        args.append(torch.randint(t["classes"], [a.batch if d == "B" else d for d in t.get("shape", ["B"])])
                    if t["kind"] == "classes" else torch.randn([a.batch if d == "B" else d for d in t["shape"]]))
    how = "traced"
    if not a.trace:
        try:
            scripted = torch.jit.script(model)
            how = "scripted"
        except Exception as e:  # noqa: BLE001 - any scripting failure falls back to tracing
            print(f"export_model: torch.jit.script failed ({str(e).splitlines()[0]}); tracing on the example batch instead "
                  "(one path through Python control flow is recorded)", file=sys.stderr)
    if how == "traced":
        scripted = torch.jit.trace(model.eval(), tuple(args), check_trace=False)
    scripted.save(a.out)
    # The saved file must reproduce the Python forward (eval mode: no dropout, running BN statistics).
    loaded = torch.jit.load(a.out)
    model.eval()
    loaded.eval()
    with torch.no_grad():
        want, got = model(*args), loaded(*args)
    flat = lambda o: [x for x in (o if isinstance(o, (tuple, list)) else [o]) if isinstance(x, torch.Tensor)]
    for w, g in zip(flat(want), flat(got)):
        if w.shape != g.shape or not torch.allclose(w.float(), g.float(), rtol=1e-4, atol=1e-5):
            os.remove(a.out)
            sys.exit(f"export_model: the {how} module does not reproduce the Python forward (max difference "
                     f"{(w.float() - g.float()).abs().max().item():.3g}); nothing written")
    spec = {"inputs": inputs, "target": target, "loss": loss,
            "description": f"{a.model} ({how} with torch {torch.__version__.split('+')[0]})",
            "python": a.model}
    if json.loads(a.kwargs):
        spec["python_kwargs"] = json.loads(a.kwargs)
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(spec, f, indent=1)
        f.write("\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"export_model: wrote {a.out} ({how}, {params:,} parameters, checked against the Python forward) and "
          f"{os.path.splitext(a.out)[0]}.json")


if __name__ == "__main__":
    main()
