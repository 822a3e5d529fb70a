#!/usr/bin/env python3
"""Hugging Face models as autotune trains them (exported in training mode) against PyTorch eager, side by side.

    bench/hf_train_mode.py BUILD_DIR [--reps 3] [--seconds 6] [--out FILE.md]

For distilbert (dropout 0.1/0.1/0.2) and swin (drop-path up to 0.1), small configs that train on 2 CPU
cores in seconds, four sides at one batch, interleaved round by round so that drift hits all alike:
- autotune, train-mode export: `autotune trial --model` on scripts/export_model.py's default export;
- autotune, eval-mode export: the same with `--mode eval` (dropout and drop-path frozen off, as the
  exporter did before it kept training mode);
- eager, dropout on: the same transformers model in model.train(), what the user trains;
- eager, dropout off: the same in model.eval() (what the old export timed).
Every side: random weights, synthetic inputs from the export's spec (a pool of 256 samples), cross
entropy on the logits, AdamW lr 1e-3 (for-loop on CPU, PyTorch's default there), zero_grad(set_to_none),
the machine's cores as threads. Samples/s is the median of 1-second windows after a 2-second warm-up
(autotune's own trial protocol for the autotune sides). Prints a Markdown table with the ratios.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)

MODELS = {  # name → (export arguments, batch)
    "distilbert": (["hf:distilbert", "--task", "sequence-classification", "--seq", "64", "--kwargs",
                    json.dumps({"n_layers": 2, "dim": 128, "hidden_dim": 512, "n_heads": 4, "vocab_size": 1000,
                                "num_labels": 4})], 32),
    "swin": (["hf:swin", "--task", "image-classification", "--kwargs",
              json.dumps({"image_size": 64, "patch_size": 4, "window_size": 4, "embed_dim": 32, "depths": [1, 1, 2],
                          "num_heads": [2, 4, 8], "num_labels": 10})], 32),
}

EAGER = r'''
import json, statistics, sys, time
import torch
import torch.nn.functional as F
spec, dropout, seconds, threads, batch = json.load(open(sys.argv[1])), sys.argv[2] == "on", float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
torch.manual_seed(0)
ns = {}
exec("\n".join(spec["python_build"]), ns)
model = ns["model"]
model.train(dropout)
x_spec = spec["inputs"][0]
shape = [256 if d == "B" else d for d in x_spec["shape"]]
if x_spec["dtype"] == "int64":
    pool = torch.randint(x_spec["vocab"], shape)
else:
    lo, hi = x_spec.get("range", [-1, 1])
    pool = torch.rand(shape) * (hi - lo) + lo
labels = torch.randint(spec["target"]["classes"], (256,))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
key = "input_ids" if x_spec["dtype"] == "int64" else "pixel_values"

def step():
    idx = torch.randint(256, (batch,))
    logits = model(**{key: pool.index_select(0, idx)}).logits
    loss = F.cross_entropy(logits, labels.index_select(0, idx))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

end = time.perf_counter() + 2.0
while time.perf_counter() < end:
    step()
windows = []
stop = time.perf_counter() + seconds
while time.perf_counter() < stop:
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < 1.0:
        step()
        n += batch
    windows.append(n / (time.perf_counter() - t0))
print(json.dumps({"samples_per_s": statistics.median(windows), "windows": len(windows)}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    py = subprocess.run([os.path.join(SOURCE, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
    autotune = os.path.join(a.build, "bin/autotune")
    threads = os.cpu_count()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        eager_py = os.path.join(tmp, "eager.py")
        open(eager_py, "w").write(EAGER)
        files = {}
        for name, (args, batch) in MODELS.items():
            for mode in ("train", "eval"):
                out = os.path.join(tmp, f"{name}-{mode}.pt")
                r = subprocess.run([py, os.path.join(SOURCE, "scripts/export_model.py"), args[0], out] + args[1:] +
                                   ["--mode", mode], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"export of {name} ({mode}) failed: {r.stderr.strip()[-400:]}")
                files[name, mode] = out
                print(r.stdout.strip(), file=sys.stderr)

        def autotune_side(name, mode, batch):
            r = subprocess.run([autotune, "trial", "--model", files[name, mode], "--set", f"batch_size={batch}",
                                "--set", f"threads={threads}", "--device", "cpu", "--window-seconds", "1",
                                "--json"], capture_output=True, text=True)
            j = json.loads(r.stdout)
            if j.get("status") != "ok":
                sys.exit(f"autotune trial {name} ({mode}): {j.get('message')}")
            return statistics.median(w["samples_per_s"] for w in j["windows"])

        def eager_side(name, dropout, batch):
            spec = os.path.splitext(files[name, "train"])[0] + ".json"
            r = subprocess.run([py, eager_py, spec, dropout, str(a.seconds), str(threads), str(batch)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"eager {name}: {r.stderr.strip()[-400:]}")
            return json.loads(r.stdout)["samples_per_s"]

        sides = [("autotune, train-mode export", lambda n, b: autotune_side(n, "train", b)),
                 ("eager, dropout on", lambda n, b: eager_side(n, "on", b)),
                 ("autotune, eval-mode export", lambda n, b: autotune_side(n, "eval", b)),
                 ("eager, dropout off", lambda n, b: eager_side(n, "off", b))]
        for rep in range(a.reps):
            order = sides if rep % 2 == 0 else sides[::-1]
            for name, (_, batch) in MODELS.items():
                for side, run in order:
                    v = run(name, batch)
                    rows.setdefault((name, side), []).append(v)
                    print(f"rep {rep + 1} {name:10s} {side:30s} {v:8.0f} samples/s", file=sys.stderr)
    lines = ["| model (batch) | side | samples/s, median [min–max] of " + str(a.reps) + " runs | vs eager, dropout on |",
             "|---|---|---|---|"]
    for name, (_, batch) in MODELS.items():
        ref = statistics.median(rows[name, "eager, dropout on"])
        for side, _ in sides:
            v = rows[name, side]
            lines.append(f"| {name} ({batch}) | {side} | {statistics.median(v):,.0f} [{min(v):,.0f}–{max(v):,.0f}] | "
                         f"{statistics.median(v) / ref:.2f}× |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        open(a.out, "w").write(text + "\n")


if __name__ == "__main__":
    main()
