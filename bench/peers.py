#!/usr/bin/env python3
"""What a Python user would reach for instead of autotune, side by side on one model, one machine, one run
(the GPU proof kit's `peers` step, scripts/device_check.py):

  lightning_power      Lightning's Tuner.scale_batch_size(mode="power"): doubles until a trial fails
  lightning_binsearch  the same with mode="binsearch": doubles, then bisects between the last good and bad
  accelerate           Accelerate's find_executable_batch_size: halves from --start-batch on OOM
  compile              torch.compile of the same model with the seed recipe, at --compile-batch

Each batch finder only picks a batch size (fits in memory; none measures speed); every pick is then
measured by one eager loop, the same for all — bench/python_eager.py's model and data stage with the seed
recipe (bf16 autocast, channels_last, fused AdamW on CUDA, cudnn.benchmark) — so only the batch differs.
torch.compile is measured by that loop too, at --compile-batch, with the eager model at the same batch
beside it. Prints one JSON object: per tool the batch it picked, what it tried, its tuning wall time and
the measured samples/s. The kit puts autotune's tuned winner (C++) beside these numbers. Exits 77 when a
requested tool's package is not importable.

  peers.py --device cuda --workload resnet50 --image-size 224 --compile-batch 256 --out peers.json
  peers.py --device cpu --workload resnet18 --image-size 16 --precision fp32 --max-trials 2 --start-batch 16   (rehearsal)
"""
import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
import traceback

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # exit 77: CTest's and the GPU kit's "skipped"
    print(f"SKIP: {e} ({sys.executable})", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_eager import ResNet18  # noqa: E402  (the worker's ResNet-18/50 v1.5, in Python)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def free(dev):
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()


def make_model(a, dev):
    torch.manual_seed(0)
    m = ResNet18(depth=50 if a.workload == "resnet50" else 18).to(dev)
    return m.to(memory_format=torch.channels_last).train()


def make_opt(model, dev):
    return torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True if dev.type == "cuda" else None)


class Pool:
    """A fixed pool of synthetic images on the device, batches gathered from it (python_eager's data stage)."""

    def __init__(self, a, dev):
        g = torch.Generator().manual_seed(1)
        self.images = torch.randn(256, 3, a.image_size, a.image_size, generator=g).to(dev)
        self.images = self.images.contiguous(memory_format=torch.channels_last)
        self.labels = torch.randint(1000, (256,), generator=g).to(dev)
        self.gen = torch.Generator(device=dev).manual_seed(1)
        self.dev = dev

    def batch(self, b):
        i = torch.randint(256, (b,), generator=self.gen, device=self.dev)
        return self.images.index_select(0, i), self.labels.index_select(0, i)


PRECISION = "bf16"  # the recipe's; --precision fp32 for a CPU rehearsal (bf16 has no native kernels on most CPUs)


def autocast(dev):
    return torch.autocast(dev.type, dtype=torch.bfloat16) if PRECISION == "bf16" else contextlib.nullcontext()


def train_step(model, opt, x, y, dev):
    with autocast(dev):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def measure(a, dev, pool, batch, model=None, windows=3):
    """samples/s of the recipe's eager loop at `batch`: warm-up steps, then `windows` windows of at least
    --window-seconds each (synchronised at both ends); the median window."""
    if model is None:  # (not `model or …`: a compiled module has no truth value)
        model = make_model(a, dev)
    opt = make_opt(model, dev)
    for _ in range(a.warmup_steps):
        train_step(model, opt, *pool.batch(batch), dev)
    sync(dev)
    rates = []
    for _ in range(windows):
        t0, n = time.perf_counter(), 0
        while True:
            train_step(model, opt, *pool.batch(batch), dev)
            n += 1
            if n % 5 == 0:
                sync(dev)
                if time.perf_counter() - t0 >= a.window_seconds:
                    break
        rates.append(n * batch / (time.perf_counter() - t0))
    del model, opt
    free(dev)
    return round(statistics.median(rates), 1)


def lightning_modules():
    try:
        import lightning.pytorch as pl
        from lightning.pytorch.tuner import Tuner
    except ImportError:
        import pytorch_lightning as pl  # the GPU machine has the older package name
        from pytorch_lightning.tuner import Tuner
    return pl, Tuner


def importable(name):
    try:
        lightning_modules() if name == "Lightning" else __import__("accelerate")
        return True
    except ImportError:
        return False


def run_lightning(a, dev, mode):
    pl, Tuner = lightning_modules()

    class Images(torch.utils.data.Dataset):  # a few fixed CPU samples: the finder tests memory, not input speed
        def __init__(self, n):
            g = torch.Generator().manual_seed(1)
            self.x = torch.randn(16, 3, a.image_size, a.image_size, generator=g)
            self.y = torch.randint(1000, (16,), generator=g)
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return self.x[i % 16], self.y[i % 16]

    tried = []

    class Lit(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.batch_size = a.init_batch
            self.net = make_model(a, torch.device("cpu"))

        def train_dataloader(self):
            tried.append(self.batch_size)
            return torch.utils.data.DataLoader(Images(self.batch_size * 8), batch_size=self.batch_size)

        def training_step(self, batch, _):
            x, y = batch
            return F.cross_entropy(self.net(x.contiguous(memory_format=torch.channels_last)), y)

        def configure_optimizers(self):
            return make_opt(self.net, dev)

    lit = Lit()
    trainer = pl.Trainer(accelerator="gpu" if dev.type == "cuda" else "cpu", devices=1, precision="bf16-mixed" if PRECISION == "bf16" else "32-true",
                         max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, default_root_dir=a.work)
    t0 = time.perf_counter()
    picked = Tuner(trainer).scale_batch_size(lit, mode=mode, steps_per_trial=3, init_val=a.init_batch,
                                             max_trials=a.max_trials)
    wall = time.perf_counter() - t0
    del lit, trainer
    free(dev)
    return {"batch": picked, "tried": tried, "tuning_s": round(wall, 1)}


def run_accelerate(a, dev):
    from accelerate import Accelerator
    from accelerate.utils import find_executable_batch_size

    acc = Accelerator(mixed_precision="bf16" if dev.type == "cuda" and PRECISION == "bf16" else "no", cpu=dev.type != "cuda")
    pool = Pool(a, acc.device)
    tried = []

    @find_executable_batch_size(starting_batch_size=a.start_batch)
    def fit(batch_size):
        tried.append(batch_size)
        acc.free_memory()
        model = make_model(a, acc.device)
        opt = make_opt(model, acc.device)
        model, opt = acc.prepare(model, opt)
        for _ in range(3):
            x, y = pool.batch(batch_size)
            with acc.autocast():
                loss = F.cross_entropy(model(x), y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad(set_to_none=True)
        sync(acc.device)
        return batch_size

    t0 = time.perf_counter()
    picked = fit()
    wall = time.perf_counter() - t0
    del pool
    acc.free_memory()
    free(dev)
    return {"batch": picked, "tried": tried, "tuning_s": round(wall, 1)}


def run_compile(a, dev, pool):
    model = make_model(a, dev)
    compiled = torch.compile(model)
    opt = make_opt(model, dev)
    t0 = time.perf_counter()
    for _ in range(3):  # the first steps compile
        train_step(compiled, opt, *pool.batch(a.compile_batch), dev)
    sync(dev)
    compile_s = time.perf_counter() - t0
    del opt
    rate = measure(a, dev, pool, a.compile_batch, model=compiled, windows=a.windows)
    eager = measure(a, dev, pool, a.compile_batch, windows=a.windows)
    return {"batch": a.compile_batch, "compile_s": round(compile_s, 1), "samples_per_s": rate,
            "eager_samples_per_s": eager, "compiled_over_eager": round(rate / eager, 3) if eager else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--workload", choices=["resnet18", "resnet50"], default="resnet50")
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--init-batch", type=int, default=32, help="Lightning's starting batch size")
    ap.add_argument("--max-trials", type=int, default=8, help="Lightning's doublings at most")
    ap.add_argument("--start-batch", type=int, default=4096, help="Accelerate's starting batch size")
    ap.add_argument("--compile-batch", type=int, default=256)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--window-seconds", type=float, default=0.5)
    ap.add_argument("--windows", type=int, default=3, help="windows per measurement, the median kept (1 for a CPU rehearsal)")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16",
                    help="the recipe's bf16 autocast, or fp32 (a CPU rehearsal: the finders' logic, not their speed)")
    ap.add_argument("--tools", nargs="+", default=["lightning_power", "lightning_binsearch", "accelerate", "compile"])
    ap.add_argument("--work", default="/tmp/autotune-peers", help="Lightning's scratch folder")
    ap.add_argument("--out", help="also write the JSON here")
    a = ap.parse_args()
    global PRECISION
    PRECISION = a.precision
    missing = [name for name, needed in (("Lightning", any(t.startswith("lightning_") for t in a.tools)),
                                         ("Accelerate", "accelerate" in a.tools)) if needed and not importable(name)]
    if missing:  # exit 77: CTest's and the GPU kit's "skipped"
        print(f"SKIP: {' and '.join(missing)} not importable by {sys.executable}", file=sys.stderr)
        return 77
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    os.makedirs(a.work, exist_ok=True)
    out = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu", "torch": torch.__version__,
           "workload": a.workload, "image_size": a.image_size,
           "recipe": f"{'bf16 autocast' if PRECISION == 'bf16' else 'fp32'}, channels_last, AdamW (fused on CUDA), cudnn.benchmark",
           "tools": {}}
    pool = Pool(a, dev)
    for tool in a.tools:
        t0 = time.perf_counter()
        try:
            if tool.startswith("lightning_"):
                r = run_lightning(a, dev, tool.split("_", 1)[1])
            elif tool == "accelerate":
                r = run_accelerate(a, dev)
            elif tool == "compile":
                r = run_compile(a, dev, pool)
            else:
                raise ValueError(f"unknown tool {tool}")
            if tool != "compile" and r.get("batch"):
                try:
                    r["samples_per_s"] = measure(a, dev, pool, int(r["batch"]), windows=a.windows)
                except torch.OutOfMemoryError as e:  # the finder's pick fit its own loop, not this one
                    r["samples_per_s"] = None
                    r["measure_error"] = f"out of memory at batch {r['batch']} in the measuring loop: {e}"[:300]
                    free(dev)
            r["status"] = "ok"
        except Exception as e:  # noqa: BLE001 - a tool that fails is a figure too (what failed, where)
            r = {"status": "error", "message": f"{type(e).__name__}: {e}"[:500],
                 "where": traceback.format_exc().strip().splitlines()[-3:]}
            free(dev)
        r["wall_s"] = round(time.perf_counter() - t0, 1)
        out["tools"][tool] = r
        print(f"{tool}: {json.dumps(r)}", file=sys.stderr, flush=True)
    text = json.dumps(out, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if all(t["status"] == "ok" for t in out["tools"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
