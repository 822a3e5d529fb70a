#!/usr/bin/env python3
"""The one-process snippets run as printed: the whole loop in Python (the project's venv) and in C++ (built).

    snippet_loop_test.py BUILD_DIR SOURCE_DIR

A small CNN is exported with scripts/export_model.py; for each config `autotune apply --model M --device cpu`
prints the snippet the report gives (batch, grad_accum, autocast bf16 and fp16, loop / foreach / fused AdamW,
zero_grad, log_every, threads; channels_last in both, and the DataLoader's workers and prefetch in Python, which train
the same steps and losses as without them). Python: the names a user's script has (torch, lr, epochs, dataset) go in front of
the snippet, unchanged, and it runs. C++: each snippet is saved, unchanged, as a header included into its own
namespace of one harness program, compiled against the project's LibTorch and run on one tensor dataset. Checked:
each loop takes the optimizer steps its batch and accumulation make; every logged loss is finite; what log_every=4
logs is the mean of the four steps log_every=1 logs (the same seed, the same steps); the foreach and fused AdamW the
C++ snippet spells out train as LibTorch's own AdamW does (the same losses step by step); the fp32 loop learns. The
built-in workloads' C++ loop (a torch::nn::Module holder) is compiled and run too. Data parallel in C++: one rank's
loop (process group, rank 0's weights broadcast, c10d::Reducer with the DDP knobs) compiled as printed and run as 2
processes over Gloo: the ranks end with the same weights, and train as one rank of the global batch does (plain,
with grad_accum, with the bucket / view / static-graph knobs; the fp16 and bf16 hooks within their precision). The
CUDA loops (one process; one NCCL rank) are compiled only. The learning-rate line of a changed batch (a fake-worker
tune's answer (b), printed by `apply --from-run`) sets the optimizer's lr in Python and compiles with the C++ loop.
Exit 77 without a Python with torch.
"""
import math
import os
import re
import shutil
import subprocess
import sys
import time

from python_worker_common import has_modules  # noqa: E402

build, source = sys.argv[1], sys.argv[2]
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
if not has_modules(py, "torch"):
    print("no Python with torch: skipped")
    sys.exit(77)
autotune = os.path.join(build, "bin/autotune")
here = os.path.join(source, "tests/integration")
failures = []


T0 = time.time()  # each check line ends with the seconds since the start


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what + f"  [{time.time() - T0:.0f} s]")
    if not cond:
        failures.append(what)


def apply(model, sets, lang):
    args = [autotune, "apply", "--device", "cpu", "--lang", lang] + (["--model", model] if model else [])
    # "--flag=value" entries are options of their own (--ramp-phases), the rest knob settings
    a = subprocess.run(args + [x for s in sets for x in (s.split("=", 1) if s.startswith("--") else ("--set", s))],
                       capture_output=True, text=True)
    if a.returncode != 0:
        sys.exit(f"autotune apply {' '.join(sets)} failed: {a.stderr.strip()}")
    return a.stdout


def losses(text):
    return [float(m) for m in re.findall(r"^step \d+: loss (\S+)$", text, re.M)]


def window_means(xs, n):
    return [sum(xs[i:i + n]) / n for i in range(0, len(xs) - n + 1, n)]


def close(a, b, rel):
    return len(a) == len(b) and all(abs(x - y) <= rel * max(1.0, abs(y)) for x, y in zip(a, b))


# 64 samples, 2 epochs: batch 8 → 16 steps; batch 16 with grad_accum 2 → 32 samples a step (batch_size is the
# micro-batch, as in the tuner's global batch = batch × grad_accum × ranks) → 4 steps.
CASES = {
    "plain": (["batch_size=8"], 16),
    "logged": (["batch_size=8", "log_every=4"], 4),
    "foreach": (["batch_size=8", "optimizer_impl=foreach"], 16),
    "fused": (["batch_size=8", "optimizer_impl=fused"], 16),
    "bf16": (["batch_size=16", "grad_accum=2", "precision=amp_bf16", "optimizer_impl=fused", "zero_grad=zeros", "threads=1"], 4),
    "fp16": (["batch_size=16", "grad_accum=2", "precision=amp_fp16", "optimizer_impl=foreach", "log_every=2"], 2),
    # a batch ramp (answer c): micro-batches of 8, one per step up to 96 samples (12 steps, the plain loop's own), then
    # two per step at a higher learning rate: the last 32 samples of epoch 2 in 2 steps
    "ramp": (["batch_size=8", "--ramp-phases=0:1:1e-2,96:2:1.4e-2"], 14),
}
# Knobs the loop carries beyond the step's (same steps, same losses as the case named): Python's DataLoader settings
# with channels_last, and channels_last in C++ (whose loop trains on tensors in memory: no DataLoader).
# (With workers the DataLoader draws its workers' base seed from the global generator before the shuffle: the same
# steps, another order — so the loader case is held to the step count and to learning, not to equal losses.)
PY_EXTRA = {"loader": (["batch_size=8", "optimizer_impl=foreach", "num_workers=2", "prefetch=4", "memory_format=channels_last"],
                       "foreach", False)}
CPP_EXTRA = {"channels_last": (["batch_size=8", "memory_format=channels_last"], "plain", True)}
# One rank's C++ loop of a data-parallel config (the built-in workload's form: a torch::nn::Module holder), run as
# WORLD ranks. Global batch 16 everywhere: 64 samples, 2 epochs → 8 optimizer steps. (sets, world, logged lines, tolerance
# against the one-rank reference)
DDP_CASES = {
    "ddp1": (["ranks=2", "batch_size=16"], 1, 8, 0),  # the reference: one rank training the global batch
    "ddp2": (["ranks=2", "batch_size=8"], 2, 8, 1e-4),
    "ddp_accum": (["ranks=2", "batch_size=4", "grad_accum=2"], 2, 8, 1e-4),
    "ddp_knobs": (["ranks=2", "batch_size=8", "bucket_mb=1", "first_bucket_mb=4", "grad_as_bucket_view=true",
                   "static_graph=true", "broadcast_buffers=false"], 2, 8, 1e-4),
    # gradients sent as 16-bit floats: the same training within their precision (Adam's normalised steps move single
    # weights by more; the weights' L1 and L2 norms are compared)
    "ddp_fp16hook": (["ranks=2", "batch_size=8", "comm_hook=fp16"], 2, 8, 1e-3),
    "ddp_bf16hook": (["ranks=2", "batch_size=8", "comm_hook=bf16"], 2, 8, 1e-3),
    "ddp_amp": (["ranks=2", "batch_size=8", "precision=amp_bf16", "optimizer_impl=foreach", "zero_grad=zeros", "log_every=2"],
                2, 4, None),
}


def common_checks(lang, got):
    for name, (sets, n) in CASES.items():
        ls = got.get(name, [])
        check(len(ls) == n and all(math.isfinite(x) for x in ls),
              f"{lang} {name} ({' '.join(sets)}): {n} finite losses logged ({len(ls)}: {ls[:3]}…)")
    plain, logged = got.get("plain", []), got.get("logged", [])
    check(close(logged, window_means(plain, 4), 1e-4),
          f"{lang}: log_every=4 logs the mean of each 4 steps ({logged} vs {window_means(plain, 4)})")
    check(len(plain) == 16 and sum(plain[-4:]) < sum(plain[:4]), f"{lang}: the fp32 loop learns ({plain[:4]} → {plain[-4:]})")
    ramp = got.get("ramp", [])
    check(close(ramp[:12], plain[:12], 1e-5),
          f"{lang}: the ramp's first phase trains as the plain loop does (the same 12 steps: {ramp[10:12]} vs {plain[10:12]})")


def extra_checks(lang, extra, got):
    for name, (sets, same_as, same_losses) in extra.items():
        a, b = got.get(name, []), got.get(same_as, [])
        ok = len(a) == len(b) == 16 and all(math.isfinite(x) for x in a) and sum(a[-4:]) < sum(a[:4])
        check(ok and (close(a, b, 1e-4) or not same_losses),
              f"{lang} {name} ({' '.join(sets)}): the loop carries them: {len(a)} steps as {same_as}'s, learning" +
              (", the same losses" if same_losses else "") + f" ({a[:2]} → {a[-2:]}; {same_as}: {b[-2:]})")


def python_cases(tmp, model):
    scripts = {}
    for name, sets in [(n, c[0]) for n, c in list(CASES.items()) + list(PY_EXTRA.items())]:
        snippet = apply(model, sets, "python")
        check(snippet.count("\noptimizer = ") + snippet.startswith("optimizer = ") == 1, f"python {name}: one optimizer line")
        scripts[name] = os.path.join(tmp, f"py_{name}.py")
        with open(scripts[name], "w") as f:
            f.write("import torch\ntorch.manual_seed(0)\nlr = 1e-2\nepochs = 2\n"
                    "g = torch.Generator().manual_seed(1)\n"
                    "dataset = torch.utils.data.TensorDataset(torch.randn(64, 3, 16, 16, generator=g), "
                    "torch.randint(10, (64,), generator=g))\n")
            f.write(snippet)
    # One interpreter runs every script, each as a whole file in fresh globals (torch is imported once, not six times).
    runner = os.path.join(tmp, "run_all.py")
    with open(runner, "w") as f:
        f.write("import contextlib, io, sys, traceback\n"
                "for path in sys.argv[1:]:\n"
                "    out = io.StringIO()\n"
                "    try:\n"
                "        with contextlib.redirect_stdout(out):\n"
                "            exec(compile(open(path).read(), path, 'exec'), {'__name__': '__main__'})\n"
                "        status = 'OK'\n"
                "    except Exception:\n"
                "        status = 'FAILED ' + traceback.format_exc()[-1200:].replace('\\n', ' | ')\n"
                "    print('=== ' + path + ' ' + status)\n"
                "    print(out.getvalue())\n")
    r = subprocess.run([py, runner] + list(scripts.values()), capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=here, OMP_NUM_THREADS="1"))
    check(r.returncode == 0, "python: the runner ran" + ("" if r.returncode == 0 else ":\n" + r.stderr[-1500:]))
    parts = dict((m[0], (m[1], m[2])) for m in re.findall(r"^=== (\S+) (OK|FAILED[^\n]*)\n(.*?)(?=^=== |\Z)", r.stdout, re.M | re.S))
    got = {}
    for name, path in scripts.items():
        status, text = parts.get(path, ("missing", ""))
        check(status == "OK", f"python {name}: runs as printed" + ("" if status == "OK" else f": {status}"))
        got[name] = losses(text)
    common_checks("python", got)
    extra_checks("python", PY_EXTRA, got)


# Both harnesses' start of main(): the same 64 samples, and which case argv names.
MAIN_DATA = """int main(int argc, char** argv) {
  torch::manual_seed(1);
  const auto inputs = torch::randn({64, 3, 16, 16});
  const auto targets = torch::randint(10, {64});
  const std::string which = argc > 1 ? argv[1] : "";
"""

HARNESS = """#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

{namespaces}

{data}  torch::manual_seed(0);
{calls}
  return 0;
}}
"""


def cpp_cases(tmp, model):
    names = list(CASES) + list(CPP_EXTRA) + ["builtin"]
    includes = []  # every header a snippet names, first in the harness (inside a namespace they are then no-ops)
    for name in names:
        sets = CASES[name][0] if name in CASES else CPP_EXTRA[name][0] if name in CPP_EXTRA else ["batch_size=8"]
        snippet = apply(None if name == "builtin" else model, sets, "cpp")
        includes += [line for line in snippet.splitlines() if line.startswith("#include") and line not in includes]
        with open(os.path.join(tmp, f"case_{name}.h"), "w") as f:
            f.write(snippet)
    namespaces = "\n".join(includes) + "\n\n" + "\n".join(f"namespace case_{n} {{\n#include \"case_{n}.h\"\n}}" for n in names)
    calls = "\n".join(f"  if (which == \"{n}\") case_{n}::train(inputs, targets, 1e-2, 2);" for n in list(CASES) + list(CPP_EXTRA))
    calls += ("\n  if (which == \"builtin\") {\n"
              "    torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(3 * 16 * 16, 10));\n"
              "    case_builtin::train(model, inputs, targets, 1e-2, 2);\n  }")
    main = os.path.join(tmp, "snippets.cpp")
    with open(main, "w") as f:
        f.write(HARNESS.format(namespaces=namespaces, calls=calls, data=MAIN_DATA))
    paths = subprocess.run([py, "-c", "import torch.utils.cpp_extension as c; print('\\n'.join(c.include_paths())); "
                            "print('--'); print('\\n'.join(c.library_paths()))"],
                           capture_output=True, text=True, env=dict(os.environ, CUDA_HOME="/nonexistent")).stdout
    inc, lib = paths.split("--\n")
    lib_dir = lib.strip().splitlines()[0]
    cxx = (["ccache"] if shutil.which("ccache") else []) + [os.environ.get("CXX", "g++")]
    exe, obj = os.path.join(tmp, "snippets"), os.path.join(tmp, "snippets.o")
    flags = cxx + ["-std=c++17", "-O1", "-D_GLIBCXX_USE_CXX11_ABI=1", "-I", tmp] + \
        [x for d in inc.split() for x in ("-isystem", d)]
    compile_cmd = flags + ["-c", main, "-o", obj]  # compile apart: ccache caches it

    def link_cmd_of(o, x):
        return [os.environ.get("CXX", "g++"), o, "-o", x, "-L", lib_dir, "-Wl,-rpath," + lib_dir, "-Wl,--no-as-needed",
                "-ltorch_cpu", "-lc10", "-ltorch"]
    link_cmd = link_cmd_of(obj, exe)
    env = dict(os.environ)
    env.setdefault("CCACHE_DIR", os.path.expanduser("~/.cache/ccache"))  # the build's cache (.ci/run), kept between runs
    c = subprocess.run(compile_cmd, capture_output=True, text=True, timeout=900, env=env)
    if c.returncode == 0:
        c = subprocess.run(link_cmd, capture_output=True, text=True, timeout=300)
    check(c.returncode == 0, "cpp: every snippet compiles as printed, in one harness" +
          ("" if c.returncode == 0 else ":\n" + c.stderr[-3000:]))
    if c.returncode != 0:
        return
    got = {}
    for name in names:
        r = subprocess.run([exe, name], capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))
        check(r.returncode == 0, f"cpp {name}: runs" + ("" if r.returncode == 0 else ":\n" + (r.stdout + r.stderr)[-1500:]))
        got[name] = losses(r.stdout)
    common_checks("cpp", got)
    extra_checks("cpp", CPP_EXTRA, got)
    for impl in ("foreach", "fused"):
        check(close(got.get(impl, []), got.get("plain", []), 1e-4),
              f"cpp: the {impl} AdamW spelt out trains as torch::optim::AdamW ({got.get(impl, [])[-2:]} vs {got.get('plain', [])[-2:]})")
    check(len(got.get("builtin", [])) == 16, f"cpp builtin: a torch::nn::Module holder trains ({len(got.get('builtin', []))} steps)")
    ddp_cases(tmp, flags, link_cmd_of, env)
    lr_line_cases(tmp, flags, link_cmd_of, env)
    cuda_compile_check(tmp, flags, env)


DDP_HARNESS = """{includes}
#include <cstdio>
#include <cstdlib>

{namespaces}

{data}  // Each rank draws its own initial weights: the loop must start every rank from rank 0's.
  torch::manual_seed(100 + std::atoi(std::getenv("RANK") ? std::getenv("RANK") : "0"));
  torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(3 * 16 * 16, 32), torch::nn::ReLU(),
                              torch::nn::Linear(32, 10));
{calls}
  double l1 = 0, l2 = 0;
  for (const auto& p : model->parameters()) {{
    l1 += p.abs().sum().item<double>();
    l2 += p.pow(2).sum().item<double>();
  }}
  const auto first = model->parameters()[0].flatten().slice(0, 0, 4);
  std::printf("PARAMS %.12g %.12g %.9g %.9g %.9g %.9g\\n", l1, l2, first[0].item<double>(), first[1].item<double>(),
              first[2].item<double>(), first[3].item<double>());
  return 0;
}}
"""


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def ddp_cases(tmp, compile_flags, link_cmd_of, env):
    """One rank's C++ loop for data-parallel configs, compiled as printed and run as 1 or 2 processes (Gloo over
    loopback, the launcher's variables set as torchrun sets them). Checked: the ranks end with the same weights (each
    began from its own draw: rank 0's were broadcast), and 2 ranks of batch 8 (or 4 × grad_accum 2, or with the DDP
    knobs) train as 1 rank of batch 16 does; the compression hooks within their precision; rank 0 logs every step."""
    includes, parts = [], []
    for name, (sets, _, _, _) in DDP_CASES.items():
        snippet = apply(None, sets, "cpp")
        includes += [line for line in snippet.splitlines() if line.startswith("#include") and line not in includes]
        with open(os.path.join(tmp, f"ddp_{name}.h"), "w") as f:
            f.write(snippet)
        parts.append(f"namespace {name} {{\n#include \"ddp_{name}.h\"\n}}")
    calls = "\n".join(f"  if (which == \"{n}\") {n}::train(model, inputs, targets, 1e-2, 2);" for n in DDP_CASES)
    main = os.path.join(tmp, "ddp_snippets.cpp")
    with open(main, "w") as f:
        f.write(DDP_HARNESS.format(includes="\n".join(includes), namespaces="\n".join(parts), calls=calls, data=MAIN_DATA))
    exe, obj = os.path.join(tmp, "ddp_snippets"), os.path.join(tmp, "ddp_snippets.o")
    # torch's CMake config defines these for every target that links it (find_package(Torch)), as the snippet says.
    c = subprocess.run(compile_flags + ["-DUSE_DISTRIBUTED", "-DUSE_C10D_GLOO", "-c", main, "-o", obj], capture_output=True,
                       text=True, timeout=900, env=env)
    if c.returncode == 0:
        c = subprocess.run(link_cmd_of(obj, exe), capture_output=True, text=True, timeout=300)
    check(c.returncode == 0, "cpp ddp: every data-parallel snippet compiles as printed, in one harness" +
          ("" if c.returncode == 0 else ":\n" + c.stderr[-3000:]))
    if c.returncode != 0:
        return
    params = {}
    for name, (sets, world, logged, _) in DDP_CASES.items():
        port = str(free_port())
        procs = [subprocess.Popen([exe, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                                           MASTER_PORT=port, OMP_NUM_THREADS="1"))
                 for r in range(world)]
        outs = []
        for p in procs:
            try:
                o, e = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
            outs.append((p.returncode, o, e))
        ok = all(rc == 0 for rc, _, _ in outs)
        check(ok, f"cpp {name} ({' '.join(sets)}) as {world} rank(s): runs" +
              ("" if ok else ":\n" + "\n".join((o + e)[-1200:] for _, o, e in outs)))
        if not ok:
            continue
        ranks = [[float(v) for v in re.search(r"^PARAMS (.*)$", o, re.M).group(1).split()] for _, o, _ in outs]
        ls = losses(outs[0][1])
        check(len(ls) == logged and all(math.isfinite(x) for x in ls), f"cpp {name}: rank 0 logs {logged} finite losses ({ls[:3]}…)")
        check(all(len(o.strip().splitlines()) == 1 for _, o, _ in outs[1:]), f"cpp {name}: only rank 0 logs")
        check(all(r == ranks[0] for r in ranks), f"cpp {name}: every rank ends with the same weights ({ranks})")
        params[name] = ranks[0]
    ref = params.get("ddp1")
    for name, (sets, _, _, tol) in DDP_CASES.items():
        if not tol or name not in params or not ref:
            continue
        got = params[name]
        compared = 2 if "hook" in name else len(ref)  # the norms, then (exact cases) four single weights
        check(all(abs(a - b) <= tol * max(abs(b), 1e-3 if i >= 2 else 1.0) for i, (a, b) in enumerate(zip(got[:compared], ref))),
              f"cpp {name}: 2 ranks train as 1 rank of the global batch (within {tol:g}): {got[:2]} vs {ref[:2]}")


def lr_line_cases(tmp, compile_flags, link_cmd_of, env):
    """The learning-rate line a changed batch gets (answer (b) of the time objective), from a run's folder as
    `apply --from-run` prints it: a tune on the fake worker (its noise scale large, so batch 256 beats the user's 64
    across the band) with --lr 3e-4. Python: the script gives the model and data but no lr — the snippet's line sets it,
    and the optimizer trains with it. C++: the line and the loop compile together, and train() takes the constant."""
    run = os.path.join(tmp, "lr-run")
    tokens = os.path.join(tmp, "tokens.bin")
    with open(tokens, "wb") as f:
        f.write(b"\x01" * 4096)
    # A noise scale far above both batches, measured precisely along the trial (±1% norms): batch 256 wins across the band.
    t = subprocess.run([autotune, "tune", "--workload", "mlp", "--worker", os.path.join(build, "bin/fake-worker"), "--data", tokens,
                        "--objective", "time", "--knobs", "batch_size=64,256", "optimizer_impl=loop,fused", "--lr", "3e-4",
                        "--budget", "60s", "--out", run],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, FAKE_TOKENS="1", FAKE_NOISE_SCALE="5000", FAKE_NOISE_JITTER="0.01"))
    check(t.returncode == 0, "lr: the fake tune with a changed-batch answer ran" + ("" if t.returncode == 0 else ":\n" + t.stdout[-1500:] + t.stderr[-800:]))
    if t.returncode != 0:
        return
    py_snip = subprocess.run([autotune, "apply", "--from-run", run, "--lang", "python"], capture_output=True, text=True).stdout
    cpp_snip = subprocess.run([autotune, "apply", "--from-run", run, "--lang", "cpp"], capture_output=True, text=True).stdout
    m = re.search(r"^lr = (\S+)  # a starting point for the new batch", py_snip, re.M)
    check(m is not None and "batch_size=256" in py_snip.splitlines()[0], f"lr: the Python snippet's first lines set lr for batch 256:\n{py_snip[:600]}")
    if m is None:
        return
    script = os.path.join(tmp, "py_lr.py")
    with open(script, "w") as f:
        # the fake run's workload reads tokens (FAKE_TOKENS): a token model, the loss over every position
        f.write("import torch\ntorch.manual_seed(0)\nepochs = 1\n"
                "model = torch.nn.Sequential(torch.nn.Embedding(64, 16), torch.nn.Linear(16, 64))\n"
                "dataset = torch.utils.data.TensorDataset(torch.randint(64, (512, 8)), torch.randint(64, (512, 8)))\n")
        f.write(py_snip)
        f.write("\nprint('LR', optimizer.param_groups[0]['lr'], 'STEPS', step)\n")
    r = subprocess.run([py, script], capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))
    got = re.search(r"^LR (\S+) STEPS (\d+)$", r.stdout, re.M)
    check(r.returncode == 0 and got is not None and abs(float(got.group(1)) - float(m.group(1))) < 1e-12 and got.group(2) == "2",
          f"lr: the Python snippet runs as printed, its optimizer at the printed lr {m.group(1)}, 2 steps of 256 "
          f"({got.groups() if got else (r.stdout + r.stderr)[-800:]})")
    cm = re.search(r"^const double lr = (\S+);", cpp_snip, re.M)
    check(cm is not None and cm.group(1) == m.group(1), f"lr: the C++ snippet's first line is the same lr ({cm.group(1) if cm else cpp_snip[:300]})")
    with open(os.path.join(tmp, "case_lr.h"), "w") as f:
        f.write(cpp_snip)
    main = os.path.join(tmp, "lr_snippet.cpp")
    with open(main, "w") as f:
        # the snippet's includes first (inside the namespace they are then no-ops), as the other harnesses do
        f.write("\n".join(line for line in cpp_snip.splitlines() if line.startswith("#include")) + "\n"
                "namespace case_lr {\n#include \"case_lr.h\"\n}\n"
                "int main() {\n  torch::manual_seed(0);\n"
                "  torch::nn::Sequential model(torch::nn::Embedding(64, 16), torch::nn::Linear(16, 64));\n"
                "  case_lr::train(model, torch::randint(64, {512, 8}), torch::randint(64, {512, 8}), case_lr::lr, 1);\n}\n")
    exe, obj = os.path.join(tmp, "lr_snippet"), os.path.join(tmp, "lr_snippet.o")
    c = subprocess.run(compile_flags + ["-c", main, "-o", obj], capture_output=True, text=True, timeout=900, env=env)
    if c.returncode == 0:
        c = subprocess.run(link_cmd_of(obj, exe), capture_output=True, text=True, timeout=300)
    if c.returncode == 0:
        c = subprocess.run([exe], capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))
    ok = c.returncode == 0 and len(losses(c.stdout)) == 2
    check(ok, "lr: the C++ snippet compiles with its lr line and trains 2 steps of 256" +
          ("" if ok else ":\n" + (c.stdout + c.stderr)[-2000:]))


def cuda_compile_check(tmp, compile_flags, env):
    """No GPU here: the CUDA snippets (one process, and one NCCL rank) are compiled, not run, against the CUDA toolkit's
    headers, as the GPU machine's build would compile them."""
    cuda_inc = "/usr/local/cuda/include"
    if not os.path.exists(os.path.join(cuda_inc, "nccl.h")):
        print(f"skip cuda: no nccl.h under {cuda_inc}")
        return
    sets = {"one": ["batch_size=8", "precision=amp_fp16", "optimizer_impl=fused"],
            "rank": ["ranks=2", "batch_size=8", "precision=amp_bf16", "comm_hook=bf16", "grad_accum=2"]}
    includes, parts = [], []
    for name, ss in sets.items():
        a = subprocess.run([autotune, "apply", "--device", "cuda", "--lang", "cpp"] + [x for v in ss for x in ("--set", v)],
                           capture_output=True, text=True)
        includes += [line for line in a.stdout.splitlines() if line.startswith("#include") and line not in includes]
        with open(os.path.join(tmp, f"cuda_{name}.h"), "w") as f:
            f.write(a.stdout)
        parts.append(f"namespace cuda_{name} {{\n#include \"cuda_{name}.h\"\n}}")
    main = os.path.join(tmp, "cuda_snippets.cpp")
    with open(main, "w") as f:
        f.write("\n".join(includes) + "\n" + "\n".join(parts) + "\nint main() {\n"
                "  torch::nn::Sequential m(torch::nn::Linear(4, 2));\n"
                "  const auto x = torch::randn({8, 4});\n  const auto y = torch::randint(2, {8});\n"
                "  cuda_one::train(m, x, y, 1e-2, 1);\n  cuda_rank::train(m, x, y, 1e-2, 1);\n}\n")
    c = subprocess.run(compile_flags + ["-DUSE_DISTRIBUTED", "-DUSE_C10D_NCCL", "-isystem", cuda_inc, "-c", main, "-o",
                                        os.path.join(tmp, "cuda_snippets.o")], capture_output=True, text=True, timeout=900, env=env)
    check(c.returncode == 0, "cpp cuda: the one-process and the NCCL rank's loops compile as printed (not run: no GPU)" +
          ("" if c.returncode == 0 else ":\n" + c.stderr[-3000:]))


# A fixed folder under the build (emptied first), not a fresh temporary one: the compile's paths stay the same from
# run to run, so ccache answers an unchanged harness at once.
tmp = os.path.join(os.path.abspath(build), "snippet-loop-test")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
if True:
    model = os.path.join(tmp, "small.pt")
    e = subprocess.run([py, os.path.join(source, "scripts/export_model.py"), os.path.join(here, "small_net.py:SmallNet"), model,
                        "--input", "B,3,16,16:float32", "--target", "classes:10"], capture_output=True, text=True)
    if e.returncode != 0:
        sys.exit(f"export failed: {e.stderr.strip()}")
    python_cases(tmp, model)
    cpp_cases(tmp, model)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
