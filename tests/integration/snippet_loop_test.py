#!/usr/bin/env python3
"""The one-process snippets run as printed: the whole loop in Python (the project's venv) and in C++ (built).

    snippet_loop_test.py BUILD_DIR SOURCE_DIR

A small CNN is exported with scripts/export_model.py; for each config `autotune apply --model M --device cpu`
prints the snippet the report gives (batch, grad_accum, autocast bf16 and fp16, loop / foreach / fused AdamW,
zero_grad, log_every, threads). Python: the names a user's script has (torch, lr, epochs, dataset) go in front of
the snippet, unchanged, and it runs. C++: each snippet is saved, unchanged, as a header included into its own
namespace of one harness program, compiled against the project's LibTorch and run on one tensor dataset. Checked:
each loop takes the optimizer steps its batch and accumulation make; every logged loss is finite; what log_every=4
logs is the mean of the four steps log_every=1 logs (the same seed, the same steps); the foreach and fused AdamW the
C++ snippet spells out train as LibTorch's own AdamW does (the same losses step by step); the fp32 loop learns. The
built-in workloads' C++ loop (a torch::nn::Module holder) is compiled and run too. Exit 77 without a Python with torch.
"""
import math
import os
import re
import shutil
import subprocess
import sys

build, source = sys.argv[1], sys.argv[2]
py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
if not py or subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
    print("no Python with torch: skipped")
    sys.exit(77)
autotune = os.path.join(build, "bin/autotune")
here = os.path.join(source, "tests/integration")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def apply(model, sets, lang):
    args = [autotune, "apply", "--device", "cpu", "--lang", lang] + (["--model", model] if model else [])
    a = subprocess.run(args + [x for s in sets for x in ("--set", s)], capture_output=True, text=True)
    if a.returncode != 0:
        sys.exit(f"autotune apply {' '.join(sets)} failed: {a.stderr.strip()}")
    return a.stdout


def losses(text):
    return [float(m) for m in re.findall(r"^step \d+: loss (\S+)$", text, re.M)]


def window_means(xs, n):
    return [sum(xs[i:i + n]) / n for i in range(0, len(xs) - n + 1, n)]


def close(a, b, rel):
    return len(a) == len(b) and all(abs(x - y) <= rel * max(1.0, abs(y)) for x, y in zip(a, b))


# 64 samples, 2 epochs: batch 8 → 16 steps; batch 16 → 8 steps (grad_accum splits a step, it does not add steps).
CASES = {
    "plain": (["batch_size=8"], 16),
    "logged": (["batch_size=8", "log_every=4"], 4),
    "foreach": (["batch_size=8", "optimizer_impl=foreach"], 16),
    "fused": (["batch_size=8", "optimizer_impl=fused"], 16),
    "bf16": (["batch_size=16", "grad_accum=2", "precision=amp_bf16", "optimizer_impl=fused", "zero_grad=zeros", "threads=1"], 8),
    "fp16": (["batch_size=16", "grad_accum=2", "precision=amp_fp16", "optimizer_impl=foreach", "log_every=2"], 4),
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


def python_cases(tmp, model):
    scripts = {}
    for name, (sets, _) in CASES.items():
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


HARNESS = """#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

{namespaces}

int main(int argc, char** argv) {{
  torch::manual_seed(1);
  const auto inputs = torch::randn({{64, 3, 16, 16}});
  const auto targets = torch::randint(10, {{64}});
  const std::string which = argc > 1 ? argv[1] : "";
  torch::manual_seed(0);
{calls}
  return 0;
}}
"""


def cpp_cases(tmp, model):
    names = list(CASES) + ["builtin"]
    includes = []  # every header a snippet names, first in the harness (inside a namespace they are then no-ops)
    for name in names:
        sets = CASES[name][0] if name in CASES else ["batch_size=8"]
        snippet = apply(None if name == "builtin" else model, sets, "cpp")
        includes += [line for line in snippet.splitlines() if line.startswith("#include") and line not in includes]
        with open(os.path.join(tmp, f"case_{name}.h"), "w") as f:
            f.write(snippet)
    namespaces = "\n".join(includes) + "\n\n" + "\n".join(f"namespace case_{n} {{\n#include \"case_{n}.h\"\n}}" for n in names)
    calls = "\n".join(f"  if (which == \"{n}\") case_{n}::train(inputs, targets, 1e-2, 2);" for n in CASES)
    calls += ("\n  if (which == \"builtin\") {\n"
              "    torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(3 * 16 * 16, 10));\n"
              "    case_builtin::train(model, inputs, targets, 1e-2, 2);\n  }")
    main = os.path.join(tmp, "snippets.cpp")
    with open(main, "w") as f:
        f.write(HARNESS.format(namespaces=namespaces, calls=calls))
    paths = subprocess.run([py, "-c", "import torch.utils.cpp_extension as c; print('\\n'.join(c.include_paths())); "
                            "print('--'); print('\\n'.join(c.library_paths()))"],
                           capture_output=True, text=True, env=dict(os.environ, CUDA_HOME="/nonexistent")).stdout
    inc, lib = paths.split("--\n")
    lib_dir = lib.strip().splitlines()[0]
    cxx = (["ccache"] if shutil.which("ccache") else []) + [os.environ.get("CXX", "g++")]
    exe, obj = os.path.join(tmp, "snippets"), os.path.join(tmp, "snippets.o")
    compile_cmd = cxx + ["-std=c++17", "-O1", "-D_GLIBCXX_USE_CXX11_ABI=1", "-I", tmp] + \
        [x for d in inc.split() for x in ("-isystem", d)] + ["-c", main, "-o", obj]  # compile apart: ccache caches it
    link_cmd = [os.environ.get("CXX", "g++"), obj, "-o", exe, "-L", lib_dir, "-Wl,-rpath," + lib_dir, "-Wl,--no-as-needed",
                "-ltorch_cpu", "-lc10", "-ltorch"]
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
    for impl in ("foreach", "fused"):
        check(close(got.get(impl, []), got.get("plain", []), 1e-4),
              f"cpp: the {impl} AdamW spelt out trains as torch::optim::AdamW ({got.get(impl, [])[-2:]} vs {got.get('plain', [])[-2:]})")
    check(len(got.get("builtin", [])) == 16, f"cpp builtin: a torch::nn::Module holder trains ({len(got.get('builtin', []))} steps)")


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
