#!/usr/bin/env python3
"""The Python snippet of a data-parallel config runs under torchrun and trains with DDP.

    snippet_torchrun_test.py BUILD_DIR SOURCE_DIR

A model is exported with scripts/export_model.py; `autotune apply` prints the snippet the report gives for
ranks=2 (plus Reducer settings, an optimizer implementation and threads); the test checks it is whole (one
optimizer line, the process group, DDP, a DistributedSampler, the launch lines), puts the names a user's
script has in front of it (torch, lr, epochs, dataset) and runs it with `torchrun --nproc_per_node=2`. Both
ranks must finish, each with its half of the data (len(loader)), and with the same trained parameters (DDP
averaged the gradients) that differ from the initial ones. With transformers installed, the same for a
Hugging Face causal LM exported with hf:gpt2 (the snippet's forward is HF's, logits flattened per token).
Exit 77 (skipped) without a Python that imports torch.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

from python_worker_common import has_modules  # noqa: E402

build, source = sys.argv[1], sys.argv[2]
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
if not has_modules(py, "torch"):
    print("no Python with torch: skipped")
    sys.exit(77)
autotune = os.path.join(build, "bin/autotune")
export = os.path.join(source, "scripts/export_model.py")
failures = []


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


def run_case(tmp, name, export_args, sets, dataset_lines, pythonpath, global_batch="the global batch is 8 × 2 = 16",
             batches=4, steps=None):
    model = os.path.join(tmp, name + ".pt")
    e = subprocess.run([py, export] + export_args[:1] + [model] + export_args[1:], capture_output=True, text=True)
    if e.returncode != 0:
        sys.exit(f"export failed: {e.stderr.strip()}")
    a = subprocess.run([autotune, "apply", "--model", model, "--device", "cpu"] + [x for s in sets for x in ("--set", s)],
                       capture_output=True, text=True)
    check(a.returncode == 0, f"{name}: autotune apply exits 0 ({a.stderr.strip()[:200]})")
    snippet = a.stdout
    check(len(re.findall(r"^optimizer = ", snippet, re.M)) == 1, f"{name}: one optimizer line")
    for needle in ("dist.init_process_group(\"gloo\"", "model = DDP(model", "DistributedSampler(dataset",
                   "sampler.set_epoch(epoch)", "torchrun --standalone --nproc_per_node=2 train.py", "srun --ntasks=2",
                   global_batch):
        check(needle in snippet, f"{name}: the snippet has {needle!r}")
    script = os.path.join(tmp, name + "_train.py")
    with open(script, "w") as f:
        f.write("import torch\ntorch.manual_seed(0)\nlr = 1e-2\nepochs = 2\n" + "\n".join(dataset_lines) + "\n")
        f.write(snippet)
        # One file per rank: torchrun interleaves the ranks' stdout, even inside a line.
        f.write("\nopen(os.path.join(os.environ['RESULT_DIR'], f'rank{rank}.txt'), 'w').write("
                "f'RANK {rank} BATCHES {len(loader)} STEPS {int(next(iter(optimizer.state.values()))[\"step\"])} CHECKSUM '"
                " + repr(sum(p.detach().double().sum().item() for p in model.module.parameters())))\n")
    results = os.path.join(tmp, name + "_ranks")
    os.makedirs(results, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=pythonpath, OMP_NUM_THREADS="1", RESULT_DIR=results)
    r = subprocess.run([py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", script],
                       capture_output=True, text=True, env=env, timeout=300)
    out = r.stdout + r.stderr
    check(r.returncode == 0, f"{name}: torchrun exits 0" + ("" if r.returncode == 0 else ":\n" + out[-2000:]))
    lines = "\n".join(open(os.path.join(results, f)).read() for f in sorted(os.listdir(results)))
    got = dict((int(m[0]), (int(m[1]), m[3], int(m[2])))
               for m in re.findall(r"RANK (\d) BATCHES (\d+) STEPS (\d+) CHECKSUM (\S+)", lines))
    check(sorted(got) == [0, 1], f"{name}: both ranks finished ({sorted(got)})")
    if sorted(got) == [0, 1]:
        check(got[0][0] == got[1][0] == batches,
              f"{name}: each rank had half the data: {batches} batches of 64 samples ({got[0][0]}, {got[1][0]})")
        if steps is not None:
            check(got[0][2] == got[1][2] == steps, f"{name}: {steps} optimizer steps over 2 epochs ({got[0][2]}, {got[1][2]})")
        check(got[0][1] == got[1][1], f"{name}: both ranks hold the same trained parameters ({got[0][1]} vs {got[1][1]})")
    return got


with tempfile.TemporaryDirectory() as tmp:
    here = os.path.join(source, "tests/integration")
    sets = ["ranks=2", "batch_size=8", "bucket_mb=1", "grad_as_bucket_view=true", "optimizer_impl=foreach", "threads=1"]
    got = run_case(tmp, "small_net", [os.path.join(here, "small_net.py:SmallNet"), "--input", "B,3,16,16:float32",
                                      "--target", "classes:10"], sets,
                   ["dataset = torch.utils.data.TensorDataset(torch.randn(64, 3, 16, 16), torch.randint(10, (64,)))"], here)
    # The untrained checksum: the same factory, the same seed, no training.
    init = subprocess.run([py, "-c", "import sys, torch; sys.path.insert(0, sys.argv[1]); from small_net import SmallNet; "
                           "torch.manual_seed(0); print(repr(sum(p.double().sum().item() for p in SmallNet().parameters())))",
                           here], capture_output=True, text=True).stdout.strip()
    if got.get(0):
        check(init and init != got[0][1], f"small_net: training changed the parameters ({init} → {got[0][1]})")
    # grad_accum and autocast inside the data-parallel loop: one optimizer step (and one all-reduce, no_sync on the
    # others) per 2 micro-batches, so 4 batches an epoch are 2 steps; the global batch counts the micro-batches.
    got = run_case(tmp, "accumulating", [os.path.join(here, "small_net.py:SmallNet"), "--input", "B,3,16,16:float32",
                                         "--target", "classes:10"],
                   ["ranks=2", "batch_size=8", "grad_accum=2", "precision=amp_bf16"],
                   ["dataset = torch.utils.data.TensorDataset(torch.randn(64, 3, 16, 16), torch.randint(10, (64,)))"], here,
                   global_batch="the global batch is 8 per process × 2 processes × 2 micro-batches = 32", steps=4)
    if has_modules(py, "transformers"):
        run_case(tmp, "gpt2", ["hf:gpt2", "--task", "causal-lm", "--seq", "16", "--kwargs",
                               '{"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 128, "n_positions": 16}'],
                 ["ranks=2", "batch_size=8", "static_graph=true"],
                 ["tokens = torch.randint(128, (64, 17))",
                  "dataset = torch.utils.data.TensorDataset(tokens[:, :-1], tokens[:, 1:])"], here)
    else:
        print("transformers not installed: the Hugging Face case is skipped")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
