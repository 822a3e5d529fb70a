#!/usr/bin/env python3
"""Hugging Face and timm models exported in one command each by scripts/export_model.py, then tuned.

    hf_export_test.py BUILD_DIR SOURCE_DIR

- hf:gpt2 (causal LM, logits; and --output loss, whose loss the exporter proves equal to HF's own
  labels=input_ids loss on a token window), hf:bert (sequence classification), hf:vit (image
  classification), timm's convnext_atto: each exported, its spec checked, then tuned by `autotune tune`
  (two batch sizes, short windows; vit with the auto strategy) to a report whose first screen shows the model,
  the data, the change, the speedup with its interval and the memory against the baseline, and a Python
  snippet that builds the model.
- A scripted model returning Dict[str, Tensor]: refused with one line naming its keys without --output;
  with --output logits exported and compared; a misspelt key names the allowed ones.
- Training mode kept: every hf: export is checked here independently of the exporter. The model its
  spec's python_build lines build, given the exported module's weights, gives the same output in
  train() under the same seed (dropout masks and all), and two seeds give different outputs; gpt2, bert,
  distilbert (dropout) and swin (drop-path) are checked; the spec says weights "random" and names what
  training mode keeps, and the report's Model line prints it.
- Time to train on an hf: export: the noise scale is labelled "early training from random weights",
  measured after a burn-in.
- Bad input: a traced random branch (refused; the file already
  there is kept): one line each, no traceback; a config transformers rejects shows its traceback only with
  --verbose. hf:deit (two classes for one config) exports. (The exporter's other refusals, wrong --task,
  hf: without --task, unknown types, foreign config keys, encoder-decoder models, are bad_inputs_test's cases 101–109.)
Exit 77 (skipped) without transformers (timm's case is skipped alone without timm).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from python_worker_common import has_modules, share_warm_worker, tune_verdict

build, source = sys.argv[1], sys.argv[2]
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
if not has_modules(py, "transformers"):
    print("transformers not installed (scripts/setup-deps.sh installs it as an optional tool): skipped")
    sys.exit(77)
has_timm = has_modules(py, "timm")
autotune = os.path.join(build, "bin/autotune")
export = os.path.join(source, "scripts/export_model.py")
failures = []
share_warm_worker(build)  # torch imported, and LibTorch loaded, once for the test's commands (python_worker_common.py)


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


def run_export(args):
    return subprocess.run([py, export] + args, capture_output=True, text=True, timeout=300)


# The model the spec's Python lines build, with the exported module's weights, against the exported module in
# train(): the same seed must give the same output, two seeds different ones (dropout/drop-path live in both).
FAITHFUL = r'''
import json, sys, torch
def faithful(pt, spec):
    torch.manual_seed(0)
    ns = {}
    exec("\n".join(spec["python_build"]), ns)
    model = ns["model"]
    loaded = torch.jit.load(pt)
    state = {k[len("model."):]: v for k, v in loaded.state_dict().items() if k.startswith("model.")}
    # The trace saves non-persistent buffers too (bert's position_ids): the Python model has them, outside its state_dict.
    buffers = {n for n, _ in model.named_buffers()}
    assert all(k in model.state_dict() or k in buffers for k in state), sorted(set(state) - set(model.state_dict()) - buffers)
    missing, _ = model.load_state_dict({k: v for k, v in state.items() if k in model.state_dict()}, strict=False)
    assert not missing, missing
    model.train(); loaded.train()
    x_spec = spec["inputs"][0]
    shape = [8 if d == "B" else d for d in x_spec["shape"]]
    x = torch.randint(x_spec["vocab"], shape) if x_spec["dtype"] == "int64" else torch.rand(shape) * 2 - 1
    def run(f, seed):
        torch.manual_seed(seed)
        with torch.no_grad():
            return f()
    ours = lambda: loaded(x)
    theirs = lambda: eval(spec["python_forward"], {"model": model, "x": x})
    same_seed = torch.allclose(run(ours, 7), run(theirs, 7), rtol=1e-4, atol=1e-5)
    fresh = not torch.allclose(run(ours, 7), run(ours, 8))
    fresh_py = not torch.allclose(run(theirs, 7), run(theirs, 8))
    return {"same_seed": same_seed, "fresh": fresh, "fresh_python": fresh_py, "missing": len(missing)}
out = {}
for name, pt, spec in json.loads(sys.argv[1]):
    try:
        out[name] = faithful(pt, json.load(open(spec)))
    except Exception as e:  # noqa: BLE001 - one model's failure is its own check's
        out[name] = {"error": f"{type(e).__name__}: {e}"[-300:]}
print(json.dumps(out))
'''


def faithful_all(items):
    """The faithfulness check of every (name, file, spec) in one Python process (one import of torch and transformers,
    not one per model): {name: its figures, or {"error": …}}."""
    r = subprocess.run([py, "-c", FAITHFUL, json.dumps(items)], capture_output=True, text=True, timeout=600)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {name: {"error": r.stderr.strip()[-300:]} for name, _, _ in items}


def check_faithful(name, f):
    if f.get("error"):
        check(False, f"{name}: the faithfulness check ran ({f['error']})")
        return
    check(f["same_seed"] and f["fresh"] and f["fresh_python"],
          f"{name}: in train() the export equals the Python model under one seed and draws afresh under another, as "
          f"the Python model does ({f})")


# The exports that must succeed, run by one Python process (scripts/export_model.py's own main, argv by argv, its
# stdout and stderr captured, its exit status read): the exporter is the same code either way, and torch with
# transformers is imported once instead of once per model. Its refusals run as commands (below), one line each.
EXPORTS = r'''
import contextlib, io, json, sys, traceback
sys.path.insert(0, sys.argv[1])
import export_model
results = {}
for name, argv in json.loads(sys.argv[2]):
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = ["export_model.py", *argv]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            export_model.main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:  # noqa: BLE001 - a crash is the case's failure, with its traceback
            code = 1
            traceback.print_exc()
    results[name] = {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
print(json.dumps(results))
'''


def export_all(cases):
    """[(name, export_model.py argv)] → {name: an object with returncode, stdout and stderr}, one process for all."""
    r = subprocess.run([py, "-c", EXPORTS, os.path.dirname(export), json.dumps(cases)], capture_output=True, text=True,
                       timeout=900)
    try:
        got = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        got = {name: {"returncode": 1, "stdout": "", "stderr": r.stderr[-600:]} for name, _ in cases}
    return {name: subprocess.CompletedProcess([], g["returncode"], g["stdout"], g["stderr"]) for name, g in got.items()}


def write_model(name, source):
    """A Python model file in the test's folder, for MODEL=path.py:Class; its path."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(source)
    return path


def one_line_error(r, what, needle, notes=0):
    """Exit non-zero, no traceback, one error line naming `needle` (after `notes` lines of notes, e.g. the trace's)."""
    lines = [l for l in r.stderr.strip().splitlines() if l.startswith("export_model:")]
    check(r.returncode != 0 and "Traceback" not in r.stderr and len(lines) == 1 + notes and needle in lines[-1],
          f"{what}: one line naming {needle!r} ({r.stderr.strip()[-300:]})")


with tempfile.TemporaryDirectory() as tmp:
    small = {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64}
    cases = [
        ("gpt2", ["hf:gpt2", "--task", "causal-lm", "--seq", "16", "--kwargs",
                  json.dumps({"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 256, "n_positions": 32})],
         {"loss": "cross_entropy", "inputs": [["B", 16]], "target": {"kind": "classes", "classes": 256, "shape": ["B", 16]}},
         "model(input_ids=x, use_cache=False).logits"),
        ("gpt2_loss", ["hf:gpt2", "--task", "causal-lm", "--seq", "16", "--output", "loss", "--kwargs",
                       json.dumps({"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 256, "n_positions": 32})],
         {"loss": "model", "inputs": [["B", 16]]}, "labels=x"),
        ("bert", ["hf:bert", "--task", "sequence-classification", "--seq", "16", "--kwargs",
                  json.dumps(dict(small, vocab_size=256, num_labels=3))],
         {"loss": "cross_entropy", "inputs": [["B", 16]], "target": {"kind": "classes", "classes": 3}}, "model(input_ids=x).logits"),
        ("vit", ["hf:vit", "--task", "image-classification", "--kwargs",
                 json.dumps(dict(small, image_size=16, patch_size=4, num_labels=5, hidden_dropout_prob=0.1))],
         {"loss": "cross_entropy", "inputs": [["B", 3, 16, 16]], "target": {"kind": "classes", "classes": 5}},
         "model(pixel_values=x).logits"),
    ]
    # Export only, then the faithfulness check: the dropout (distilbert) and drop-path (swin) models.
    exports_only = [
        ("distilbert", ["hf:distilbert", "--task", "sequence-classification", "--seq", "16", "--kwargs",
                        json.dumps({"n_layers": 1, "dim": 32, "hidden_dim": 64, "n_heads": 2, "vocab_size": 256})],
         "dropout in"),
        ("swin", ["hf:swin", "--task", "image-classification", "--kwargs",
                  json.dumps({"image_size": 32, "patch_size": 4, "window_size": 4, "embed_dim": 16, "depths": [1, 2],
                              "num_heads": [2, 4], "num_labels": 3, "drop_path_rate": 0.5})], "drop-path in"),
        ("deit", ["hf:deit", "--task", "image-classification", "--kwargs",
                  json.dumps(dict(small, image_size=16, patch_size=4, num_labels=3, hidden_dropout_prob=0.1))], "dropout in"),
    ]
    if has_timm:
        cases.append(("convnext", ["timm:create_model", "--input", "B,3,32,32:float32", "--target", "classes:5", "--kwargs",
                                   json.dumps({"model_name": "convnext_atto", "num_classes": 5})],
                      {"loss": "cross_entropy", "inputs": [["B", 3, 32, 32]]}, None))
    else:
        print("timm not installed: its case is skipped")
    exported = export_all([(name, [args[0], os.path.join(tmp, name + ".pt")] + args[1:])
                           for name, args, *_ in exports_only + cases])
    # the faithfulness of every hf: export that trains on its logits (the loss output has no logits to compare)
    faithful_of = faithful_all([(name, os.path.join(tmp, name + ".pt"), os.path.join(tmp, name + ".json"))
                                for name, args, *rest in exports_only + cases
                                if exported[name].returncode == 0 and args[0].startswith("hf:")
                                and json.load(open(os.path.join(tmp, name + ".json"))).get("loss") != "model"])
    for name, args, kept in exports_only:
        r = exported[name]
        check(r.returncode == 0 and "Traceback" not in r.stderr and kept in r.stdout,
              f"{name}: exported in training mode with {kept!r} live ({(r.stdout + r.stderr).strip()[-300:]})")
        if r.returncode == 0:
            spec = json.load(open(os.path.join(tmp, name + ".json")))
            check(spec.get("weights") == "random" and kept in spec.get("train_mode", ""),
                  f"{name}: spec weights {spec.get('weights')!r}, train_mode {spec.get('train_mode')!r}")
            check_faithful(name, faithful_of.get(name, {"error": "not checked"}))

    for name, args, want, forward in cases:
        out = os.path.join(tmp, name + ".pt")
        r = exported[name]
        check(r.returncode == 0 and "checked against the Python forward" in r.stdout,
              f"{name}: exported in one command ({(r.stdout + r.stderr).strip()[-300:]})")
        if r.returncode != 0:
            continue
        if name == "gpt2_loss":
            check("equals HF causal-LM loss with labels=input_ids" in r.stdout, f"{name}: the shifted loss checked against HF's own")
        spec = json.load(open(os.path.join(tmp, name + ".json")))
        check(spec["loss"] == want["loss"], f"{name}: spec loss {spec['loss']}")
        if args[0].startswith("hf:"):
            check(spec.get("weights") == "random" and spec.get("train_mode", "").startswith("training mode: dropout in"),
                  f"{name}: spec weights {spec.get('weights')!r}, train_mode {spec.get('train_mode')!r}")
            if spec["loss"] != "model":
                check_faithful(name, faithful_of.get(name, {"error": "not checked"}))
        check([i["shape"] for i in spec["inputs"]] == want["inputs"], f"{name}: spec inputs {[i['shape'] for i in spec['inputs']]}")
        if "target" in want:
            check(spec["target"] == want["target"], f"{name}: spec target {spec['target']}")
        if forward:
            check(forward in spec.get("python_forward", ""), f"{name}: python_forward {spec.get('python_forward')!r}")
        run = os.path.join(tmp, "run-" + name)
        # vit: the auto strategy (every knob that applies), whose report's first screen must carry the answer.
        space = ["--strategy", "auto"] if name == "vit" else ["--knobs", "batch_size=4,8"]
        # Behaviour, not speed: short windows, no warm-up minimum, a 20-s budget, one confirmation round, and noise limits a tiny
        # model's 0.15-s windows can meet beside the suite's other tests (the report is whole either way; the limits' own tests
        # are tune_fake's).
        t = subprocess.run([autotune, "tune", "--model", out] + space + ["--objective", "throughput", "--budget", "20s",
                            "--window-seconds", "0.15", "--warmup-seconds", "0", "--confirm-rounds", "1", "--max-noise", "15",
                            "--max-drift", "15",
                            "--out", run],
                           capture_output=True, text=True, timeout=600)
        verdicts = [l for l in t.stdout.splitlines() if l.startswith(("winner:", "no stable config", "no winner"))]
        if t.returncode != 0 and os.path.exists(os.path.join(run, "report.md")):  # why each config was rejected
            verdicts += [l for l in open(os.path.join(run, "report.md")).read().splitlines() if "rejected:" in l]
        # A winner, or — beside the suite's other tests, in windows this short — "no stable config" with its reason.
        won = t.returncode == 0 and "winner:" in t.stdout
        tuned = won or tune_verdict(t)[0]
        check(tuned, f"{name}: tuned (exit {t.returncode}; {' | '.join(verdicts)[:600]}; {t.stderr.strip()[-200:]})")
        if tuned:
            report = open(os.path.join(run, "report.md")).read()
            check(("**Winner:**" in report) == ("## How to apply" in report) == won,
                  f"{name}: report with {'a winner and how to apply' if won else 'no winner and nothing to apply'}")
            # The first screen: model, data, the change, the speedup with its interval, memory against the baseline,
            # in that order, before anything else (the search, the skipped knobs, the tables).
            first = report.split("**Search:**")[0]
            if args[0].startswith("hf:"):
                model_line = next((l for l in first.splitlines() if l.startswith("**Model:**")), "")
                check("training mode: dropout in" in model_line and "weights drawn at export (random)" in model_line,
                      f"{name}: the report's Model line names the training-mode behaviour kept ({model_line[-300:]})")
            marks = (["**Model:**", "**Data:**", "**Winner:**", "**Speedup over the baseline:**", "**Memory:**"] if won
                     else ["**Model:**", "**Data:**", "**No winner:**" if "**No winner:**" in report else "**No stable config:**",
                           "**Baseline:**"])
            pos = [first.find(m) for m in marks]
            speedup = next((l for l in first.splitlines() if l.startswith("**Speedup over the baseline:**")), "")
            check(all(p >= 0 for p in pos) and pos == sorted(pos) and ("95% CI" in speedup or not won) and len(first.splitlines()) <= 40,
                  f"{name}: first screen has {', '.join(marks)} in order ({pos}, {len(first.splitlines())} lines)")
        if forward and spec.get("python_build"):
            # The report's snippets for a config (`autotune apply` prints them for any one): transformers builds
            # the model, and the loss line calls it the way the export did.
            a = subprocess.run([autotune, "apply", "--model", out, "--set", "batch_size=8", "--set", "optimizer_impl=foreach",
                                "--device", "cpu"], capture_output=True, text=True)
            check(a.returncode == 0 and "from transformers import AutoConfig" in a.stdout
                  and "foreach=True" in a.stdout and a.stdout.count("optimizer = ") == 1,
                  f"{name}: the Python snippet builds the model with transformers, one optimizer line ({a.stdout[-300:]})")

    # A scripted model with a dict output.
    dict_py = write_model("dict_net.py",
                          "import torch\nfrom typing import Dict\n\n\nclass DictNet(torch.nn.Module):\n"
                          "    def __init__(self):\n        super().__init__()\n        self.l = torch.nn.Linear(8, 4)\n\n"
                          "    def forward(self, x) -> Dict[str, torch.Tensor]:\n        y = self.l(x)\n"
                          "        return {'logits': y, 'probs': y.softmax(-1)}\n")
    base = [dict_py + ":DictNet", os.path.join(tmp, "dict.pt"), "--input", "B,8:float32", "--target", "classes:4"]
    r = run_export(base)
    one_line_error(r, "dict output without --output", "dict with keys logits, probs")
    check(not os.path.exists(os.path.join(tmp, "dict.pt")), "dict output refused: nothing written")
    r = run_export(base + ["--output", "logit"])
    one_line_error(r, "dict output, misspelt key", "allowed: logits, probs")
    r = run_export(base + ["--output", "logits"])
    check(r.returncode == 0 and "scripted" in r.stdout and "1 output checked" in r.stdout,
          f"dict output --output logits: scripted, the output compared ({(r.stdout + r.stderr).strip()[-200:]})")

    # Time to train on an hf: export (random weights): a burn-in, and the label says so.
    if os.path.exists(os.path.join(tmp, "gpt2.pt")):
        tokens = os.path.join(tmp, "tokens.bin")
        p = subprocess.run([autotune, "prepare-data", "--tokens-from", os.path.join(source, "docs"), "--to", tokens],
                           capture_output=True, text=True)
        run = os.path.join(tmp, "run-gpt2-time")
        t = subprocess.run([autotune, "tune", "--model", os.path.join(tmp, "gpt2.pt"), "--data", tokens, "--knobs",
                            "batch_size=4,8", "--objective", "time", "--budget", "40s", "--window-seconds", "0.15",
                            "--confirm-rounds", "1", "--max-noise", "15", "--max-drift", "15", "--out", run],
                           capture_output=True, text=True, timeout=600)
        report = open(os.path.join(run, "report.md")).read() if os.path.exists(os.path.join(run, "report.md")) else ""
        # along the run (docs/time-to-train.md): "… over your run: … Measured from random weights after N s (K steps) …",
        # or the trial's own value when it is not priced over the run
        noise = next((l for l in report.splitlines() if l.startswith("Gradient noise scale")), "")
        check(p.returncode == 0 and ("Measured from random weights after" in noise
                                     or "measured in early training from random weights after" in noise)
              and "from your weights" not in report,
              f"gpt2 time to train: the noise scale is labelled random weights, after a burn-in "
              f"(exit {t.returncode}; {noise[:400] or t.stdout[-300:] + t.stderr[-300:]})")

    # Bad input.
    bad_cfg = ["hf:bert", os.path.join(tmp, "x.pt"), "--task", "sequence-classification", "--kwargs",
               json.dumps({"hidden_size": 30})]
    r = run_export(bad_cfg + ["--verbose"])
    check(r.returncode != 0 and "Traceback" in r.stderr and r.stderr.strip().splitlines()[-1].startswith("export_model:"),
          f"--verbose: the traceback, then the one line ({r.stderr.strip()[-200:]})")
    # A Python branch on a random draw (LayerDrop-like), traced: the trace freezes it, so it is refused, and the
    # file the user already had at that path stays as it was.
    drop_py = write_model("layer_drop.py",
                          "import torch\n\n\nclass LayerDrop(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                          "        self.a = torch.nn.Linear(8, 8)\n        self.b = torch.nn.Linear(8, 4)\n\n"
                          "    def forward(self, x):\n        if self.training and float(torch.rand(())) < 0.5:\n"
                          "            x = x + self.a(x)\n        return self.b(x)\n")
    kept_file = os.path.join(tmp, "kept.pt")
    open(kept_file, "w").write("the user's file\n")
    drop_args = [drop_py + ":LayerDrop", kept_file, "--input", "B,8:float32", "--target", "classes:4"]
    one_line_error(run_export(drop_args + ["--trace"]), "a traced random branch", "fixed at export", notes=1)
    check(open(kept_file).read() == "the user's file\n" and not os.path.exists(kept_file + ".partial"),
          "a refused export leaves the file already at OUT as it was, and no partial file")
    r = run_export(drop_args)
    check(r.returncode == 0 and "scripted" in r.stdout and "random draws in the forward" in r.stdout,
          f"the same model scripted keeps its random branch ({(r.stdout + r.stderr).strip()[-200:]})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
