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
- Bad input: hf: without --task, an unknown model type: one line each, exit 1, no traceback.
Exit 77 (skipped) without transformers (timm's case is skipped alone without timm).
"""
import json
import os
import subprocess
import sys
import tempfile

build, source = sys.argv[1], sys.argv[2]
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
if subprocess.run([py, "-c", "import transformers"], capture_output=True).returncode != 0:
    print("transformers not installed (scripts/setup-deps.sh installs it as an optional tool): skipped")
    sys.exit(77)
has_timm = subprocess.run([py, "-c", "import timm"], capture_output=True).returncode == 0
autotune = os.path.join(build, "bin/autotune")
export = os.path.join(source, "scripts/export_model.py")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run_export(args):
    return subprocess.run([py, export] + args, capture_output=True, text=True, timeout=300)


def one_line_error(r, what, needle):
    lines = [l for l in r.stderr.strip().splitlines() if l.startswith("export_model:")]
    check(r.returncode != 0 and "Traceback" not in r.stderr and len(lines) == 1 and needle in lines[0],
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
                 json.dumps(dict(small, image_size=16, patch_size=4, num_labels=5))],
         {"loss": "cross_entropy", "inputs": [["B", 3, 16, 16]], "target": {"kind": "classes", "classes": 5}},
         "model(pixel_values=x).logits"),
    ]
    if has_timm:
        cases.append(("convnext", ["timm:create_model", "--input", "B,3,32,32:float32", "--target", "classes:5", "--kwargs",
                                   json.dumps({"model_name": "convnext_atto", "num_classes": 5})],
                      {"loss": "cross_entropy", "inputs": [["B", 3, 32, 32]]}, None))
    else:
        print("timm not installed: its case is skipped")
    for name, args, want, forward in cases:
        out = os.path.join(tmp, name + ".pt")
        r = run_export([args[0], out] + args[1:])
        check(r.returncode == 0 and "checked against the Python forward" in r.stdout,
              f"{name}: exported in one command ({(r.stdout + r.stderr).strip()[-300:]})")
        if r.returncode != 0:
            continue
        if name == "gpt2_loss":
            check("equals HF causal-LM loss with labels=input_ids" in r.stdout, f"{name}: the shifted loss checked against HF's own")
        spec = json.load(open(os.path.join(tmp, name + ".json")))
        check(spec["loss"] == want["loss"], f"{name}: spec loss {spec['loss']}")
        check([i["shape"] for i in spec["inputs"]] == want["inputs"], f"{name}: spec inputs {[i['shape'] for i in spec['inputs']]}")
        if "target" in want:
            check(spec["target"] == want["target"], f"{name}: spec target {spec['target']}")
        if forward:
            check(forward in spec.get("python_forward", ""), f"{name}: python_forward {spec.get('python_forward')!r}")
        run = os.path.join(tmp, "run-" + name)
        # vit: the auto strategy (every knob that applies), whose report's first screen must carry the answer.
        space = ["--strategy", "auto"] if name == "vit" else ["--knobs", "batch_size=4,8"]
        # Behaviour, not speed: short windows, one confirmation round, and noise limits a tiny model's 0.15-s windows can
        # meet beside the suite's other tests (the report is whole either way; the limits' own tests are tune_fake's).
        t = subprocess.run([autotune, "tune", "--model", out] + space + ["--objective", "throughput", "--budget", "40s",
                            "--window-seconds", "0.15", "--confirm-rounds", "1", "--max-noise", "15", "--max-drift", "15",
                            "--out", run],
                           capture_output=True, text=True, timeout=600)
        verdicts = [l for l in t.stdout.splitlines() if l.startswith(("winner:", "no stable config"))]
        if t.returncode != 0 and os.path.exists(os.path.join(run, "report.md")):  # why each config was rejected
            verdicts += [l for l in open(os.path.join(run, "report.md")).read().splitlines() if "rejected:" in l]
        check(t.returncode == 0 and "winner:" in t.stdout,
              f"{name}: tuned (exit {t.returncode}; {' | '.join(verdicts)[:600]}; {t.stderr.strip()[-200:]})")
        if t.returncode == 0:
            report = open(os.path.join(run, "report.md")).read()
            check("**Winner:**" in report and "## How to apply" in report, f"{name}: report with a winner and how to apply")
            # The first screen: model, data, the change, the speedup with its interval, memory against the baseline,
            # in that order, before anything else (the search, the skipped knobs, the tables).
            first = report.split("**Search:**")[0]
            marks = ["**Model:**", "**Data:**", "**Winner:**", "**Speedup over the baseline:**", "**Memory:**"]
            pos = [first.find(m) for m in marks]
            speedup = next((l for l in first.splitlines() if l.startswith("**Speedup over the baseline:**")), "")
            check(all(p >= 0 for p in pos) and pos == sorted(pos) and "95% CI" in speedup and len(first.splitlines()) <= 40,
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
    dict_py = os.path.join(tmp, "dict_net.py")
    with open(dict_py, "w") as f:
        f.write("import torch\nfrom typing import Dict\n\n\nclass DictNet(torch.nn.Module):\n"
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

    # Bad input.
    one_line_error(run_export(["hf:gpt2", os.path.join(tmp, "x.pt")]), "hf: without --task", "needs --task; allowed: causal-lm")
    one_line_error(run_export(["hf:nosuchmodel", os.path.join(tmp, "x.pt"), "--task", "causal-lm"]), "unknown model type",
                   "unknown model type")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
