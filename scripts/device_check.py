#!/usr/bin/env python3
"""The GPU proof kit's driver (scripts/device-check.sh runs it; docs/gpu-kit.md explains it).

On the GPU machine it builds autotune against that machine's torch with the Debian packages carried in
DEPS (scripts/device-deps.sh), then runs each step below, recording what it measured. Without a GPU
(--cpu, and `make test`) every GPU step is skipped with its reason, and rehearsed instead: the same
command on the CPU with a small workload, its output read by the same code, so the kit cannot rot.

Everything goes to OUT: device-check.json (machine-readable, schema autotune.device-check/1),
device-check.md (the summary to commit under docs/), device-check.log (every command's output) and
artifacts.tar.gz (reports and traces). Steps that would pass --deadline are left `not_run`; a later
call given --resume OUT/device-check.json keeps what finished and runs the rest.
"""
import argparse
import atexit
import contextlib
import datetime
import glob
import json
import os
import re
import shlex
import shutil
import sqlite3
import sysconfig
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import warm_server  # scripts/warm_server.py, beside this file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = "autotune.device-check/1"


class Kit:
    def __init__(self, a):
        self.a = a
        self.out = os.path.abspath(a.out)
        self.build = os.path.abspath(a.build_dir)
        self.bin = os.path.join(self.build, "bin")
        self.work = os.path.join(self.out, "work")  # reports, traces, data: packed into artifacts.tar.gz
        self.deps = os.path.abspath(a.deps) if a.deps else ""
        self.start = time.time()
        self.gpu = False
        self.steps = []
        self.previous = {}
        os.makedirs(self.work, exist_ok=True)
        self.logf = open(os.path.join(self.out, "device-check.log"), "a")
        self.env = dict(os.environ)
        if self.deps:
            lib = os.path.join(self.deps, "root/usr/lib/x86_64-linux-gnu")
            self.env["LD_LIBRARY_PATH"] = lib + (":" + self.env["LD_LIBRARY_PATH"] if self.env.get("LD_LIBRARY_PATH") else "")
            self.env["AUTOTUNE_CHARTJS"] = os.path.join(self.deps, "root/usr/share/javascript/chart.js/chart.min.js")
        self.env["AUTOTUNE_WORKER"] = os.path.join(self.bin, "autotune-worker")
        self.env["PYTHONUNBUFFERED"] = "1"
        self.python = python_with_torch()
        self.last_stderr = ""
        # One warm C++ worker for every autotune command of the kit (scripts/warm_server.py): LibTorch loaded once, not
        # once per command. (A shared Python one was measured to cost about what it saved: the kit's commands are
        # mostly the C++ worker's.) A command run with another environment starts its own, or fresh.
        shared = warm_server.start(self.bin, self.env, only=("autotune-worker",))
        if shared:
            self.env.update(shared[0])
            atexit.register(shared[1])

    # ---- running commands
    def log(self, text):
        self.logf.write(text)
        self.logf.flush()

    def run(self, cmd, timeout=600, cwd=None, check=True):
        """Runs `cmd` (a list), logs it; returns (exit code, stdout). Raises StepFailed when check and exit != 0."""
        self.log(f"\n$ {' '.join(shlex.quote(c) for c in cmd)}\n")
        t = time.time()
        try:
            p = subprocess.run(cmd, cwd=cwd or ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            self.log(f"[timed out after {timeout} s]\n")
            raise StepFailed(f"{os.path.basename(cmd[0])} timed out after {timeout} s") from e
        self.last_stderr = p.stderr
        self.log(p.stdout[-20000:] + (("\n[stderr]\n" + p.stderr[-8000:]) if p.stderr else "") +
                 f"\n[exit {p.returncode}, {time.time() - t:.1f} s]\n")
        if check and p.returncode != 0:
            last = (p.stderr.strip() or p.stdout.strip()).splitlines()
            raise StepFailed(f"{os.path.basename(cmd[0])} exited {p.returncode}: {last[-1] if last else ''}")
        return p.returncode, p.stdout

    def autotune(self, *args, timeout=600, check=True):
        return self.run([os.path.join(self.bin, "autotune"), *args], timeout=timeout, check=check)

    def json_of(self, *args, timeout=600):
        code, out = self.autotune(*args, timeout=timeout, check=False)
        try:
            return json.loads(out)
        except json.JSONDecodeError as e:
            raise StepFailed(f"autotune {args[0]} exited {code} without JSON") from e

    @contextlib.contextmanager
    def extra_env(self, env):
        """The block's commands run with `env` added to their environment; it is restored after."""
        saved = dict(self.env)
        self.env.update(env)
        try:
            yield
        finally:
            self.env.clear()
            self.env.update(saved)

    def left(self):
        return self.a.deadline - (time.time() - self.start)


def has_modules(python, *names):
    """Whether `python` has these packages installed: found on its path, not imported (importing torch, torchvision or
    Lightning only to decide whether a step runs costs 3-9 s of CPU each on a 2-core machine). The tests' too
    (tests/integration/python_worker_common.py): a package found but broken fails the check that uses it, not skips."""
    code = "import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in sys.argv[1:]) else 1)"
    return bool(python) and subprocess.run([python, "-c", code, *names], capture_output=True).returncode == 0


def python_with_torch():
    """The GPU machine's python3 holds torch; here the one scripts/setup-deps.sh made (deps.env PYTHON)."""
    recorded = subprocess.run([os.path.join(ROOT, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout
    for c in filter(None, [os.environ.get("AUTOTUNE_PYTHON", ""), recorded.strip(), sys.executable]):
        if has_modules(c, "torch"):
            return c
    return ""


class StepFailed(Exception):
    """The step's proof failed; `figures`, when given, are what it measured before it did (kept in the outputs)."""

    def __init__(self, reason, figures=None):
        super().__init__(reason)
        self.figures = figures or {}


class Skip(Exception):
    pass


class Partial(Exception):
    """The step stopped at the deadline with work left: its figures so far are kept, a --resume call goes on."""

    def __init__(self, reason, figures):
        super().__init__(reason)
        self.figures = figures


# ---------------------------------------------------------------------------------------------- steps
# Each step: fn(kit, gpu) -> figures (a dict). `gpu` False means a rehearsal on the CPU: same reading code.
# Raise Skip(reason) when it cannot run here, StepFailed(reason) when it ran and failed.


def step_env(k, gpu):
    f = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
         "host_cpus": os.cpu_count()}
    try:
        f["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        f["commit"] = ""
    if shutil.which("nvidia-smi"):
        code, out = k.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                           "--format=csv,noheader"], check=False)
        if code == 0 and out.strip():
            name, driver, mem, sm = [x.strip() for x in out.strip().splitlines()[0].split(",")]
            f.update(gpu=name, driver=driver, gpu_memory=mem, max_sm_clock=sm)
    # torch's version and CUDA build read from its version.py, not imported (2.3 s of CPU each kit run); whether CUDA
    # works is asked of torch only where a GPU tool is there to have one (worker_info says it for the C++ worker).
    probe = ("import importlib.util as u, json, runpy, os, sys; v = runpy.run_path(os.path.join(os.path.dirname("
             "u.find_spec('torch').origin), 'version.py')); f = {'torch': v['__version__'], 'cuda': v['cuda']}\n"
             "if sys.argv[1] == '1':\n import torch; f['available'] = torch.cuda.is_available()\nprint(json.dumps(f))")
    code, out = k.run([k.python or sys.executable, "-c", probe, "1" if shutil.which("nvidia-smi") else "0"], check=False)
    if code == 0:
        f["python_torch"] = json.loads(out.strip().splitlines()[-1])
    if shutil.which("nvcc"):
        f["nvcc"] = k.run(["nvcc", "--version"], check=False)[1].strip().splitlines()[-1]
    return f


def step_build(k, gpu):
    # Whether the device has a GPU is known only after the build (worker_info): build unless told --cpu.
    if k.a.cpu and not k.a.build:
        if not os.path.exists(os.path.join(k.bin, "autotune-worker")):
            raise StepFailed(f"--cpu uses an existing build and {k.bin}/autotune-worker is missing (make build)")
        raise Skip(f"--cpu uses the existing build in {k.build}")
    if not k.python:
        raise StepFailed("no python3 that imports torch (set AUTOTUNE_PYTHON)")
    code, prefix = k.run([k.python, "-c", "import torch.utils; print(torch.utils.cmake_prefix_path)"])
    prefixes = [prefix.strip()] + ([os.path.join(k.deps, "root/usr")] if k.deps else [])
    k.env["TORCH_CUDA_ARCH_LIST"] = k.env.get("TORCH_CUDA_ARCH_LIST", "9.0")
    t = time.time()
    if not os.path.exists(os.path.join(k.build, "build.ninja")):
        # The carried packages are Debian's multiarch layout (lib/x86_64-linux-gnu): say so, in case the
        # machine's own compiler does not.
        arch = ["-DCMAKE_LIBRARY_ARCHITECTURE=x86_64-linux-gnu"] if k.deps else []
        k.run(["cmake", "--preset", "dev", "-B", k.build, "-DCMAKE_PREFIX_PATH=" + ";".join(prefixes),
               "-DCMAKE_CUDA_ARCHITECTURES=90", *arch], timeout=300)
    configured = time.time() - t
    # Every carried package must come from DEPS: a header found in the machine's /usr would build
    # against another version than the library it links.
    found = {}
    if k.deps:
        cache = open(os.path.join(k.build, "CMakeCache.txt")).read()
        for var in ["fmt_DIR", "nlohmann_json_DIR", "CLI11_DIR", "yaml-cpp_DIR", "GTest_DIR", "benchmark_DIR",
                    "SQLite3_INCLUDE_DIR", "JPEG_INCLUDE_DIR", "TURBOJPEG_LIBRARY"]:
            m = re.search(rf"^{re.escape(var)}:[A-Z]+=(.*)$", cache, re.M)
            found[var] = m.group(1) if m else ""
        outside = [f"{v}={p}" for v, p in found.items() if not p.startswith(k.deps)]
        if outside:
            raise StepFailed("found outside the carried packages: " + ", ".join(outside))
    t = time.time()
    k.run(["cmake", "--build", k.build, "-j", str(os.cpu_count())], timeout=max(60, int(k.left()) - 30))
    return {"configure_s": round(configured, 1), "build_s": round(time.time() - t, 1), "torch_prefix": prefixes[0],
            "deps_found": found}


def step_linkage(k, gpu):
    f = {}
    for b in ["autotune", "autotune-worker"]:
        _, out = k.run(["readelf", "-d", os.path.join(k.bin, b)])
        needed = re.findall(r"\(NEEDED\).*\[(.*)\]", out)
        if any(n.startswith("libcuda.so") for n in needed):
            raise StepFailed(f"{b} needs libcuda.so at load time: it would not start without a driver")
        f[b] = {"needed": len(needed), "libtorch": any("torch" in n for n in needed)}
    if f["autotune"]["libtorch"]:
        raise StepFailed("autotune (the tuner) links LibTorch")
    return f


def step_worker_info(k, gpu):
    _, out = k.run([os.path.join(k.bin, "autotune-worker"), "info"])
    f = {"info": out.strip().splitlines()}
    f["cuda_available"] = "no CUDA device" not in out
    k.gpu = f["cuda_available"]
    return f


def ctest_counts(out):
    """CTest's summary line; it has no "N tests failed" part when all passed. -1 failed: no summary."""
    m = re.search(r"(\d+)% tests passed(?:, (\d+) tests failed)? out of (\d+)", out)
    return {"passed_pct": int(m.group(1)) if m else 0, "failed": int(m.group(2) or 0) if m else -1,
            "total": int(m.group(3)) if m else 0}


def ctest_of(k):
    """ctest over the build's tests, run from a folder of the kit's own: ctest writes its log and its record of each
    test's time (Testing/Temporary, which orders the next `make test`) where it runs, never into the build folder,
    which a `make test` that runs this kit is using at that moment."""
    d = os.path.join(k.work, "ctest")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "CTestTestfile.cmake"), "w") as f:
        f.write(f'subdirs("{os.path.abspath(k.build)}")\n')
    return ["ctest", "--test-dir", d]


def step_gpu_tests(k, gpu):
    code, out = k.run([*ctest_of(k), "-L", "gpu", "--output-on-failure", "--timeout", "600"], check=False)
    skipped = len(re.findall(r"\*\*\*Skipped|Not Run|\[  SKIPPED \]", out))
    f = dict(ctest_counts(out), skipped_cases=skipped)
    if code != 0:
        raise StepFailed(f"ctest -L gpu: {f['failed']} of {f['total']} failed (device-check.log)")
    return f


# PCIe per-lane signalling rate (GT/s) and line-code efficiency by generation (gen 6: FLIT mode, 242 of 256
# bytes carry data). The "practical" bandwidth also pays the packet framing: with 256-byte payloads about
# 24 bytes of TLP header, sequence number, LCRC and framing each, i.e. 256 / 280 of the line rate.
PCIE_LINE = {1: (2.5, 8 / 10), 2: (5.0, 8 / 10), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130), 5: (32.0, 128 / 130),
             6: (64.0, 242 / 256)}
PCIE_PAYLOAD_SHARE = 256 / (256 + 24)


def pcie_link(out):
    """nvidia-smi's `pcie.link.gen.max, pcie.link.width.max, pcie.link.gen.current, pcie.link.width.current`
    (csv, noheader, nounits) -> the link and its bandwidth per direction; None when unreadable. The maximum,
    not the current generation, is the link's: an idle GPU drops its link to a lower generation."""
    try:
        gen, width, gen_now, width_now = [int(x.strip()) for x in out.strip().splitlines()[0].split(",")]
    except (ValueError, IndexError):
        return None
    if gen not in PCIE_LINE or width <= 0:
        return None
    gts, code = PCIE_LINE[gen]
    line = gts * code * width / 8  # GB/s per direction after the line code
    return {"gen": gen, "width": width, "gen_current": gen_now, "width_current": width_now,
            "line_GBps": round(line, 2), "practical_GBps": round(line * PCIE_PAYLOAD_SHARE, 2)}


def device_bench_figures(doc, link):
    """device_bench's Google Benchmark JSON (and the PCIe link, or None) -> the kit's figures: every
    benchmark, the pinned copy against the link, the two gpt2 adds each way, the first augmentation."""
    f = {r["name"]: {"GB/s": round(r.get("bytes_per_second", 0) / 1e9, 2), "real_time": r["real_time"],
                     "unit": r["time_unit"], "iterations": r.get("iterations")}
         for r in doc["benchmarks"] if r.get("run_type", "iteration") == "iteration"}
    first = doc.get("context", {}).get("augment_on_device_first_call_ms")
    pinned = max((b["GB/s"] for n, b in f.items() if n.startswith("H2D/pinned_only")), default=None)
    out = {"benchmarks": f, "augment_first_call_ms": float(first) if first else None, "pcie": link,
           "pinned_only_best_GBps": pinned,
           "pinned_share_of_practical": round(pinned / link["practical_GBps"], 3) if pinned and link else None}
    def named(prefix):  # Google Benchmark appends "/real_time" (UseRealTime) and any arguments to the name
        return next((b for n, b in f.items() if n == prefix or n.startswith(prefix + "/")), None)

    def pair(group, first, second, ratio_key):  # group/first vs group/second: both times and first ÷ second
        a, b = named(f"{group}/{first}"), named(f"{group}/{second}")
        if a and b and b["real_time"] > 0:
            out[group] = {first: a["real_time"], second: b["real_time"], "unit": a["unit"],
                          ratio_key: round(a["real_time"] / b["real_time"], 3)}
    pair("residual_add", "mixed", "cast_then_add", "mixed_over_cast")
    pair("tied_grad_add", "transposed", "contiguous", "transposed_over_contiguous")
    return out


def step_device_bench(k, gpu):
    path = os.path.join(k.work, "device_bench.json")
    code, out = k.run([os.path.join(k.bin, "device_bench"), "--benchmark_format=json", "--benchmark_out=" + path,
                       "--benchmark_min_time=0.2"], check=False)  # Google Benchmark 1.7: plain seconds
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        if code == 0:
            raise Skip(out.strip().splitlines()[-1] if out.strip() else "device_bench ran nothing")
        raise StepFailed(f"device_bench exited {code}")
    link = None
    if shutil.which("nvidia-smi"):
        c, smi = k.run(["nvidia-smi", "--query-gpu=pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,"
                        "pcie.link.width.current", "--format=csv,noheader,nounits"], check=False)
        link = pcie_link(smi) if c == 0 else None
    return device_bench_figures(json.load(open(path)), link)


# The GPU knobs, each with its proof (result.json applied[] or skipped[]), on the workload where it matters.
GPU_KNOBS = [
    ("baseline", "resnet50", []),
    ("tf32", "resnet50", ["precision=tf32"]),
    ("amp_bf16", "resnet50", ["precision=amp_bf16"]),
    ("amp_fp16", "resnet50", ["precision=amp_fp16"]),
    ("fused", "resnet50", ["optimizer_impl=fused"]),
    ("cudnn_benchmark", "resnet50", ["cudnn_benchmark=true"]),
    ("channels_last_bf16", "resnet50", ["precision=amp_bf16", "memory_format=channels_last"]),
    ("recipe", "resnet50", ["precision=amp_bf16", "memory_format=channels_last", "cudnn_benchmark=true",
                            "optimizer_impl=fused", "zero_grad=none", "log_every=100"]),
    ("cuda_graphs_mlp", "mlp", ["cuda_graphs=on", "optimizer_impl=fused", "precision=amp_bf16"]),
    ("no_graphs_mlp", "mlp", ["optimizer_impl=fused", "precision=amp_bf16"]),
    ("gpt2_bf16", "gpt2-124m", ["precision=amp_bf16", "optimizer_impl=fused"]),
]
# On the CPU the rehearsal runs two of them on mlp: their GPU values come back as skipped, with reasons.
CPU_KNOBS = [("baseline", "mlp", []), ("amp_fp16", "mlp", ["precision=amp_fp16"]),
             ("cuda_graphs_mlp", "mlp", ["cuda_graphs=on", "optimizer_impl=fused"])]


def trial_figures(r):
    sps = [w["samples_per_s"] for w in r.get("windows", [])]
    return {"status": r.get("status"), "message": r.get("message", ""),
            "samples_per_s": round(statistics.median(sps), 1) if sps else 0,
            "applied": {a["knob"]: a["observed"] for a in r.get("applied", [])},
            "skipped": [s["reason"] for s in r.get("skipped", [])],
            "peak_device_mib": (round(r["memory"]["peak_device_bytes"] / 2**20, 1)
                                if r.get("memory", {}).get("peak_device_bytes", -1) >= 0 else None),
            "scaler_skips": r.get("scaler_skips", 0)}


def step_knob_trials(k, gpu):
    f = {}
    for name, workload, sets in (GPU_KNOBS if gpu else CPU_KNOBS):
        args = ["trial", "--workload", workload, "--json", "--windows", "3",
                "--window-seconds", "0.5" if gpu else "0.05"] + [x for s in sets for x in ("--set", s)]
        if not gpu:
            args += ["--device", "cpu", "--warmup-seconds", "0"]
        f[name] = trial_figures(k.json_of(*args))
    bad = [n for n, t in f.items() if t["status"] != "ok"]
    if bad:
        raise StepFailed("trials not ok: " + ", ".join(f"{n} ({f[n]['status']}: {f[n]['message']})" for n in bad))
    if gpu:  # the proofs the GPU must show; a knob that fell back is a finding, not a pass
        fell_back = [n for n, t in f.items() if t["skipped"] and n != "baseline"]
        f["_fell_back"] = fell_back
    return f


def profile_figures(r):
    p = r.get("profile") or {}
    return {"status": r.get("status"), "mode": p.get("mode"), "reason": p.get("reason", ""),
            "traced_step_ms": p.get("traced_step_ms"), "untraced_step_ms": p.get("untraced_step_ms"),
            "inflation": p.get("inflation"), "busy_share": p.get("busy_share"), "mfu": p.get("mfu"),
            "kernels_per_step": p.get("kernels_per_step"), "syncs_per_step": p.get("syncs_per_step"),
            "launch_delay_us": p.get("launch_delay_us"), "verdict": p.get("verdict"),
            "kernel_classes": {c["name"]: {"share": round(c["share"], 4), "ms_per_step": round(c["ms_per_step"], 3),
                                           "per_step": round(c["per_step"], 1)} for c in p.get("kernel_classes") or []},
            "top_kernels": [top_kernel(t) for t in (p.get("top_kernels") or [])[:8]]}


def top_kernel(t):
    """A top kernel as the kit keeps it: with its time per call, launch geometry (blocks x threads; for
    ATen's generic elementwise kernel, 512 elements per block, which tells tensors apart) and the phases
    that launched it (profiles written before 2026-11-25 have only name, share and count)."""
    k = {"name": t.get("name"), "share": round(t.get("share", 0), 4), "count": t.get("count")}
    if "mean_us" in t:
        k.update({"mean_us": round(t["mean_us"], 2), "grid": t.get("grid"), "block": t.get("block"),
                  "geometries": t.get("geometries"), "threads_per_call": t.get("threads_per_call"),
                  "phases": {ph: round(v, 3) for ph, v in (t.get("phases") or {}).items()}})
    return k


def step_device_holders(k, gpu):
    """The busy-host guard's GPU half: a trial alone records no other holder of its GPU; a trial beside a Python process
    that holds the same GPU (and keeps it busy) records one, and its quiet-host check fails."""
    args = ["trial", "--workload", "mlp", "--json", "--windows", "3", "--window-seconds", "0.5" if gpu else "0.05"]
    if not gpu:  # the rehearsal: the same commands and reading on the CPU, where nothing is recorded (no NVML to ask)
        args += ["--device", "cpu", "--warmup-seconds", "0"]
    alone = k.json_of(*args)
    f = {"alone": alone.get("device_holders"), "alone_status": alone.get("status")}
    if not k.python:
        raise StepFailed("no Python with torch to hold the GPU beside the trial")
    dev, n = ("cuda", 4096) if gpu else ("cpu", 256)
    hog = subprocess.Popen([k.python, "-c", f"import torch, time\nx = torch.randn({n}, {n}, device='{dev}')\n"
                            "end = time.time() + 60\nwhile time.time() < end:\n    x = (x @ x).tanh_()\n"
                            + ("    torch.cuda.synchronize()\n" if gpu else "")])
    try:
        time.sleep(8 if gpu else 2)  # the other process has its context and is busy
        beside = k.json_of(*args)
    finally:
        hog.kill()
        hog.wait()
    f["beside"] = beside.get("device_holders")
    f["beside_status"] = beside.get("status")
    if not gpu:
        if f["alone"] is not None or f["beside"] is not None or f["alone_status"] != "ok":
            raise StepFailed(f"a CPU trial recorded GPU holders or failed: {f}")
        return f
    if f["alone"] is None or f["beside"] is None:
        raise StepFailed(f"NVML gave no answer on this GPU: alone {f['alone']}, beside {f['beside']}")
    if f["alone"].get("others", -1) != 0 or f["beside"].get("others", 0) < 1:
        raise StepFailed(f"other holders: alone {f['alone']}, beside another process {f['beside']}: want 0 and ≥ 1")
    return f


def step_profiles(k, gpu):
    # Compute-bound steps (the inflation and MFU figures are about those): resnet50 at batch 256 with the
    # recipe (at batch 32 the step is launch-bound and CUPTI's per-kernel cost inflates it 1.7x),
    # gpt2-124m at batch 32 (8 x 1024 tokens left the H100 at 18% MFU).
    cases = ([("resnet50_bf16_cl", "resnet50", ["precision=amp_bf16", "memory_format=channels_last", "batch_size=256",
                                                "cudnn_benchmark=true", "optimizer_impl=fused", "log_every=100"]),
              ("gpt2_bf16_log1", "gpt2-124m", ["precision=amp_bf16", "optimizer_impl=fused", "log_every=1",
                                               "batch_size=32"]),
              ("gpt2_bf16_log100", "gpt2-124m", ["precision=amp_bf16", "optimizer_impl=fused", "log_every=100",
                                                 "batch_size=32"])]
             if gpu else [("mlp_log1", "mlp", ["log_every=1"])])
    f = {}
    for name, workload, sets in cases:
        trace = os.path.join(k.work, f"trace-{name}.json")
        args = ["profile", "--workload", workload, "--trace", trace, "--force", "--json"] + \
               [x for s in sets for x in ("--set", s)]
        if not gpu:
            args += ["--device", "cpu", "--steps", "3"]
        f[name] = profile_figures(k.json_of(*args))
        if f[name]["status"] != "ok":
            raise StepFailed(f"profile {name}: {f[name]['status']}")
        if gpu and f[name]["mode"] != "cupti":
            raise StepFailed(f"profile {name} fell back to {f[name]['mode']}: {f[name]['reason']}")
    return f


def first_screen_agrees(out_dir, b):
    """The first screen's sentences as issue 64 made them agree (tests/tuner/first_screen_test.py checks them on fake runs;
    here on the device's real ones): the winner or its absence, and a compiled winner's compile sentence, the same in
    best.json and report.md; no stable row beside a 'no stable config' line. Returns the disagreements ([] = none)."""
    md = open(os.path.join(out_dir, "report.md")).read()
    bad = []
    if ("**Winner:**" in md) != (b.get("status") == "ok") or ("**No winner:**" in md) != (b.get("status") == "no_winner"):
        bad.append(f"best.json status {b.get('status')} vs report.md's Winner line")
    comp = ((b.get("winner") or {}).get("compile") or {}).get("sentence")
    if comp and f"**Compile:** {comp}." not in md:
        bad.append("the winner's compile sentence differs between best.json and report.md")
    if "**No stable config:**" in md and re.search(r"\| stable(, not ranked)?[:|]", md):
        bad.append("'No stable config' beside a stable row")
    return bad


def tune_figures(out_dir):
    b = json.load(open(os.path.join(out_dir, "best.json")))
    s = b.get("speedup") or {}  # null when nothing was stable
    t = b.get("time_to_train") or {}
    ns = t.get("noise_scale") or {}
    cb = t.get("changed_batch") or {}
    return {"status": b.get("status"), "winner": b.get("config"), "speedup": s.get("median"),
            "speedup_ci95": s.get("ci95"), "significant": s.get("significant"),
            "trials": (b.get("search") or {}).get("trials"), "elapsed_s": (b.get("search") or {}).get("elapsed_seconds"),
            "winner_samples_per_s": (b.get("confirmation") or {}).get("median"),
            # which answer the speedup is (docs/time-to-train.md): objective, and under time the two answers
            "objective": t.get("objective", "throughput"), "answer": t.get("answer"), "time_speedup": t.get("time_speedup"),
            "noise_scale": ns.get("value"), "noise_scale_ci95": ns.get("ci95"), "noise_state": ns.get("state"),
            # the noise scale along the run (docs/time-to-train.md): each window's B̂, the growth exponent, the run's B̄
            "noise_windows": [w.get("value") for w in (ns.get("along_run") or {}).get("windows", [])],
            "noise_growth": ((ns.get("along_run") or {}).get("growth") or {}).get("exponent_in_samples"),
            "noise_growth_ci95": ((ns.get("along_run") or {}).get("growth") or {}).get("ci95"),
            "noise_over_run": (ns.get("along_run") or {}).get("over_run"),
            "changed_batch": cb.get("config"), "changed_batch_time_ratio": cb.get("time_ratio"),
            "changed_batch_wins": cb.get("wins_across_band"),
            # answer (c), the batch ramp: its global batches, predicted times and whether it is advised (or why none)
            "ramp_batches": [p.get("global_batch") for p in (t.get("batch_ramp") or {}).get("phases", [])],
            "ramp_predicted_s": (t.get("batch_ramp") or {}).get("predicted_seconds"),
            "ramp_advised": (t.get("batch_ramp") or {}).get("advised"),
            "ramp_why_not": (t.get("batch_ramp") or {}).get("why_not"),
            # torch.compile's cost as the first screen states it, and whether the first screen agrees with itself
            "compile": ((b.get("winner") or {}).get("compile") or {}).get("sentence"),
            "first_screen_disagreements": first_screen_agrees(out_dir, b)}


# A CPU rehearsal exercises the step's command and reading code, not its figures: one interleaved confirmation
# round is enough to produce every output the reading code reads.
REHEARSAL = ["--confirm-rounds", "1"]


def tune(k, name, args, budget):
    out = os.path.join(k.work, name)
    shutil.rmtree(out, ignore_errors=True)
    if "--device" in args and args[args.index("--device") + 1] == "cpu":
        args = list(args) + REHEARSAL
    code, _ = k.autotune("tune", *args, "--budget", f"{budget}s", "--out", out, timeout=budget + 240, check=False)
    # Exit 1 with a best.json is a finding (no stable config, every reason in the report), not a broken kit.
    if not os.path.exists(os.path.join(out, "best.json")):
        raise StepFailed(f"autotune tune exited {code} without best.json")
    return tune_figures(out)


def step_tune_synthetic(k, gpu):
    if not gpu:
        return {"mlp": tune(k, "tune-mlp", ["--workload", "mlp", "--device", "cpu", "--knobs", "batch_size=32,64",
                                            "--objective", "throughput", "--window-seconds", "0.05", "--warmup-seconds", "0"], 60)}
    # resnet50's GPU trials take 7-12 s (cuDNN's algorithm search, CUDA start-up): at 100 s the search
    # ended after the recipe, with 8 trials kept for the end.
    # Throughput claims (samples/s, any batch): --objective throughput, as the 2026-11-23 figures were measured;
    # time to train has its own step (time_to_train).
    runs = {"resnet50": lambda: tune(k, "tune-resnet50", ["--workload", "resnet50", "--strategy", "auto",
                                                          "--objective", "throughput", "--window-seconds", "0.5"], 150),
            "gpt2-124m": lambda: tune(k, "tune-gpt2", ["--workload", "gpt2-124m", "--strategy", "auto",
                                                       "--objective", "throughput", "--window-seconds", "0.5"], 80)}
    return per_workload(k, "tune_synthetic", runs)


def per_workload(k, step, runs):
    """Runs the workloads --workloads names (all by default); the others keep the resumed step's figures."""
    chosen = [w for w in runs if not k.a.workloads or w in k.a.workloads.split(",")]
    prev = (k.previous.get(step) or {}).get("figures") or {}
    return {w: (runs[w]() if w in chosen else prev[w]) for w in runs if w in chosen or w in prev}


def photo_folder(k):
    """The photos JPEG folders are cropped from: the kit's own (scripts/device-deps.sh carries some), else the test
    images' ("" when neither is there)."""
    photos = os.path.join(k.deps, "photos") if k.deps else ""
    if not photos or not os.path.isdir(photos):
        cache = os.environ.get("AUTOTUNE_CACHE", os.path.expanduser("~/.cache/autotune"))
        photos = os.path.join(cache, "test-images/photos")
    return photos if os.path.isdir(photos) else ""


def step_tune_jpeg(k, gpu):
    photos = photo_folder(k)
    if not photos:
        raise Skip("no photos for the JPEG folder (scripts/device-deps.sh carries some)")
    folder, cache_file = os.path.join(k.work, "jpegs"), os.path.join(k.work, "jpegs.cache")
    n = "2048" if gpu else "64"
    shutil.rmtree(folder, ignore_errors=True)
    k.run([os.path.join(k.bin, "make_image_folder"), photos, folder, n, "16"])
    k.autotune("prepare-data", "--from", folder, "--to", cache_file, "--size", "256" if gpu else "40", "--force")
    if not gpu:  # 32-pixel crops: the rehearsal exercises the path and its reading, in a few trials of seconds
        return {"resnet18": tune(k, "tune-jpeg", ["--workload", "resnet18", "--device", "cpu", "--image-size", "32",
                                                  "--data", folder, "--cache", cache_file, "--knobs",
                                                  "decode=jpeg_full,cache", "batch_size=8", "--objective", "throughput",
                                                  "--window-seconds", "0.05", "--warmup-seconds", "0"], 20)}
    return {"resnet50": tune(k, "tune-resnet50-jpeg", ["--workload", "resnet50", "--strategy", "auto", "--data", folder,
                                                      "--cache", cache_file, "--objective", "throughput",
                                                      "--window-seconds", "0.5"], 130)}


def task_photos(k):
    """The photo task's folder (the carried photos, else the test images'); Skip without them or torchvision/PIL."""
    if not has_modules(k.python, "torchvision", "PIL"):
        raise Skip("no torchvision/PIL in this machine's Python (the task decodes with them)")
    photos = os.path.join(k.deps, "photos") if k.deps else ""
    if not photos or not os.path.isdir(photos):
        photos = os.path.join(os.environ.get("AUTOTUNE_CACHE", os.path.expanduser("~/.cache/autotune")), "test-images/photos")
    if not os.path.isdir(photos):
        raise Skip("no photos for the task's dataset (scripts/device-deps.sh carries some)")
    return photos


def step_task(k, gpu):
    """The user's training as a task file (--task, docs/models.md): photos decoded by PIL through torchvision transforms
    in the task's own Dataset, resnet18 with SGD + momentum on the GPU (a small CNN in the CPU rehearsal), the loader
    knobs searched. Figures: the tune's, and per num_workers the median samples/s and the share of the step spent
    waiting for data (result.json breakdown_ms) — the winner against DataLoader(num_workers=0), side by side."""
    photos = task_photos(k)
    task = os.path.join(ROOT, "tests/integration/tasks/photo_task.py")
    if not gpu:  # the rehearsal reads the step's outputs: the four smallest photos, batch 4, in a few short trials
        small = os.path.join(k.work, "task-photos")
        shutil.rmtree(small, ignore_errors=True)
        os.makedirs(small)
        for f in sorted(os.listdir(photos), key=lambda f: os.path.getsize(os.path.join(photos, f)))[:4]:
            shutil.copy(os.path.join(photos, f), small)
        photos = small
    # twice each on the CPU: 8 samples, one batch of the task's 8 (the baseline's batch, whose num_workers=0 is the figure
    # the step compares with). On the GPU batch 16: the H200 lease of 2026-11-29 measured the photos' decode at 21
    # samples/s in one process, so batch 64 made one num_workers=0 trial take 74 s and a 110-s budget held no search.
    env = {"TASK_PHOTOS": photos, "TASK_RESNET": "1" if gpu else "0", "TASK_REPEAT": "64" if gpu else "2"}
    if gpu:
        env["TASK_BATCH"] = "16"
    with k.extra_env(env):
        args = ["--task", task, "--device", "cuda" if gpu else "cpu", "--objective", "throughput", "--knobs",
                "num_workers=0,4,8,16" if gpu else "num_workers=0,1", "--knobs", "pin_memory=false,true" if gpu else "batch_size=4",
                "--window-seconds", "0.5" if gpu else "0.05", "--warmup-seconds", "0.2" if gpu else "0"]
        if not gpu:
            args += ["--confirm-top", "1"]
        f = tune(k, "tune-task", args, 240 if gpu else 30)
    db = sqlite3.connect(os.path.join(k.work, "tune-task", "journal.sqlite"))
    by_workers = {}
    for (res,) in db.execute("SELECT result_json FROM trials WHERE status = 'ok'"):
        r = json.loads(res)
        n = (r.get("data") or {}).get("num_workers")
        b = r.get("breakdown_ms") or {}
        total = sum(b.values())
        if n is None or not r.get("windows") or total <= 0:
            continue
        sps = statistics.median(w["samples_per_s"] for w in r["windows"])
        by_workers.setdefault(n, []).append((sps, b.get("data", 0) / total))
    f["by_num_workers"] = {str(n): {"samples_per_s": round(statistics.median(x for x, _ in v), 1),
                                    "data_wait_share": round(statistics.median(y for _, y in v), 3), "trials": len(v)}
                           for n, v in sorted(by_workers.items())}
    if "0" not in f["by_num_workers"]:
        raise StepFailed("no trial with DataLoader(num_workers=0) finished: nothing to compare the winner with")
    return f


def held_out_sweep(k, gpu, task):
    """lr-sweep on a task with val_dataset(): the verdict, and the held-out judge's (docs/time-to-train.md, "Judged on
    held-out data as well"). The rehearsal: one order, 1,024 samples a rate, 32 held-out samples an evaluation."""
    sweep = os.path.join(k.work, "held-out-sweep")
    shutil.rmtree(sweep, ignore_errors=True)
    k.autotune("lr-sweep", "--task", task, "--device", "cuda" if gpu else "cpu",
               *(["--run-length", "20000", "--orders", "2", "--smooth-samples", "256", "--val-samples", "256"] if gpu else
                 ["--run-length", "8000", "--orders", "1", "--smooth-samples", "128", "--val-samples", "32"]),
               "--out", sweep, timeout=300)
    d = json.load(open(os.path.join(sweep, "lr-sweep.json")))
    h = d.get("held_out")
    if not h:
        raise StepFailed("lr-sweep.json has no held_out: the task's val_dataset() did not judge the rates")
    return {"headline": d["verdict"]["headline"], "best_multiple": d["verdict"]["best_multiple"],
            "held_out_best": h["best_multiple"], "agrees": h["agrees"], "reason": h["reason"],
            "held_out": [{"multiple": a["multiple"], "loss": a["loss"], "range": [a["loss_lo"], a["loss_hi"]]} for a in h["arms"]]}


def batch_norm_converges(k, gpu):
    """docs/time-to-train.md, "Batch norm, not the rate": resnet18 (the Python worker) on photo crops with held-out crops
    of the same photos. On the device: batch 32 against batch 128 and against batch 32 with grad_accum 4 (one global
    batch, one rate), each timed to the training loss and to the held-out loss, with the note converge prints. On the
    CPU: one tiny converge, batch 4 against 8, for the note and the count."""
    photos = photo_folder(k)
    if not photos:
        return {"skipped": "no photos (scripts/device-deps.sh carries some)"}
    n_train, n_val = (4096, 1024) if gpu else (48, 16)
    crops = os.path.join(k.work, "bn-crops")
    shutil.rmtree(crops, ignore_errors=True)
    classes = str(len([p for p in os.listdir(photos) if p.endswith(".jpg")]))  # one class a photo, as the doc's run
    k.run([os.path.join(k.bin, "make_image_folder"), photos, os.path.join(crops, "all"), str(n_train + n_val), classes, "48",
           "48"])
    for c in os.listdir(os.path.join(crops, "all")):  # img<i>.jpg: the first n_train crops train, the rest are held out
        for name in os.listdir(os.path.join(crops, "all", c)):
            part = "train" if int(name[3:-4]) < n_train else "val"
            os.makedirs(os.path.join(crops, part, c), exist_ok=True)
            shutil.copy(os.path.join(crops, "all", c, name), os.path.join(crops, part, c, name))
    common = ["--trainer", "python", "--workload", "resnet18", "--image-size", "32", "--device", "cuda" if gpu else "cpu",
              "--data", os.path.join(crops, "train"), "--val-data", os.path.join(crops, "val")]
    arms = ({"batch_128": ["batch_size=128"], "accumulated_32x4": ["batch_size=32", "grad_accum=4"]} if gpu
            else {"batch_8": ["batch_size=8"]})
    f = {}
    for name, sets in arms.items():
        cv = os.path.join(k.work, f"bn-{name}")
        shutil.rmtree(cv, ignore_errors=True)
        k.autotune("converge", *common, "--baseline-set", "batch_size=32" if gpu else "batch_size=4",
                   *[a for s in sets for a in ("--candidate-set", s)], "--seconds", "10" if gpu else "1",
                   "--reruns", "1" if gpu else "0", "--arm-orders", "2" if gpu else "1", "--val-every", "2048" if gpu else "16",
                   "--val-samples", str(n_val), "--noise-scale", "246", "--out", cv, timeout=600)
        c = json.load(open(os.path.join(cv, "converge.json")))
        h = c.get("held_out") or {}
        f[name] = {"batch_norms": c["workload"].get("batch_norms", 0), "note": c.get("batch_norm_note", ""),
                   "training": [{"run": x["run"], "measured": round(x["measured"], 3),
                                 "samples_ratio": round(x.get("samples_ratio", 0), 3)} for x in c["comparisons"]],
                   "held_out": [{"run": x["run"], "measured": round(x["measured"], 3)} for x in h.get("comparisons", [])]}
        if bool(f[name]["note"]) == name.startswith("accumulated"):  # grad_accum keeps the forward's batch: no note
            raise StepFailed(f"converge's batch-norm note where the forward batch {'is' if f[name]['note'] else 'is not'} "
                             f"the baseline's ({name}): {f[name]['note'][:200]!r}")
    return f


def step_held_out(k, gpu):
    """converge's held-out loss and a task's own scheduler on the device (docs/time-to-train.md, "A held-out target";
    docs/models.md): a task with val_dataset() trained at batch 16 and 64, its held-out loss evaluated in eval mode off
    the training clock; a task with scheduler() (warm-up then cosine) in one trial, the rate it reached read back.
    Figures: each run's evaluations, the evaluation time against the training time, the verdict on the fastest to
    each loss; the scheduler's rate against the task's own schedule; then lr-sweep on the held-out task, every rate judged
    by its held-out loss as well (agrees or differs with the training loss's best); then resnet18's batch norms at
    another forward batch (batch_norm_converges)."""
    t = time.time()
    tasks = os.path.join(ROOT, "tests/integration/tasks")
    cv = os.path.join(k.work, "held-out")
    shutil.rmtree(cv, ignore_errors=True)
    device = "cuda" if gpu else "cpu"
    k.autotune("converge", "--task", os.path.join(tasks, "held_out_task.py"), "--device", device, "--candidate-set",
               "batch_size=64", "--seconds", "10" if gpu else "1", "--reruns", "1" if gpu else "0", "--arm-orders",
               "2" if gpu else "1", "--val-every", "4096", "--val-samples", "256", "--out", cv, timeout=300)
    c = json.load(open(os.path.join(cv, "converge.json")))
    h = c.get("held_out")
    if not h:
        raise StepFailed("converge.json has no held_out: the task's val_dataset() was not evaluated")
    train_s = {r["label"]: r["seconds"] for r in c["runs"]}
    f = {"source": h["source"], "eval_seconds": round(h["eval_seconds"], 2),
         "runs": [{"run": r["label"], "evaluations": len(r["points"]), "lowest": r["lowest"], "final": r["final"],
                   "training_seconds": round(train_s.get(r["label"], 0), 2)} for r in h["runs"]],
         "fastest": h["fastest"], "comparisons": [{"run": x["run"], "measured": round(x["measured"], 3),
                                                   "stopped_above": x["stopped_above"]} for x in h["comparisons"]]}
    f["lr_sweep"] = held_out_sweep(k, gpu, os.path.join(tasks, "held_out_task.py"))
    f["batch_norm"] = batch_norm_converges(k, gpu)
    out = os.path.join(k.work, "scheduled")
    shutil.rmtree(out, ignore_errors=True)
    k.autotune("trial", "--task", os.path.join(tasks, "scheduled_task.py"), "--device", device, "--windows", "3",
               "--window-seconds", "0.2", "--warmup-seconds", "0.1", "--out", out, timeout=300)
    r = json.load(open(os.path.join(out, "0001", "result.json")))
    applied = {a["knob"]: a["observed"] for a in r["applied"]}
    m = re.search(r"stepped to lr ([\d.e-]+)", applied.get("optimizer_impl", ""))
    steps = r.get("warmup_steps", 0) + sum(w["steps"] for w in r.get("windows", []))
    py = python_with_torch()  # the task's own shape() in a Python with torch
    ref = subprocess.run([py, "-c", f"import sys; sys.path.insert(0, {tasks!r}); import scheduled_task as t; "
                                    f"print(0.1 * t.shape({steps}))"], capture_output=True, text=True) if py else None
    f["scheduler"] = {"steps": steps, "lr": float(m.group(1)) if m else None,
                      "expected": float(ref.stdout) if ref and ref.returncode == 0 else None}
    if m is None:
        raise StepFailed(f"the scheduled task's trial read back no scheduler: {applied.get('optimizer_impl')}")
    if gpu:  # a captured step would freeze the schedule's rate: the trial must say so, not train at a stale rate
        graphed = os.path.join(k.work, "scheduled-graphed")
        shutil.rmtree(graphed, ignore_errors=True)
        # fused: without it the knob rules skip cuda_graphs before the task's scheduler is reached (the H200 lease of
        # 2026-11-30 ran the trial with cuda_graphs off for that reason and proved nothing)
        k.autotune("trial", "--task", os.path.join(tasks, "scheduled_task.py"), "--device", device, "--set",
                   "cuda_graphs=on", "--set", "optimizer_impl=fused", "--windows", "3", "--window-seconds", "0.2",
                   "--out", graphed, timeout=300, check=False)
        g = os.path.join(graphed, "0001", "result.json")
        said = json.load(open(g)).get("message", "") if os.path.exists(g) else k.last_stderr[-300:]
        f["scheduler"]["cuda_graphs"] = said
        if "changes the rate between steps" not in said:
            raise StepFailed(f"the scheduled task with cuda_graphs=on was not refused for its scheduler: {said!r}", f)
    f["seconds"] = round(time.time() - t, 1)
    return f


def warm_and_fresh(k, gpu, trainer):
    """One worker's warm path on the device: a tune's trials forked, each child initialising CUDA itself; the same
    trial started fresh (AUTOTUNE_WARM=0) beside them. Figures: each trial's `started`, status and device; the forked and
    the fresh trials' median wall seconds (a forked trial's count from the fork: the difference is the start-up it did
    not repeat)."""
    device = "cuda" if gpu else "cpu"
    short = ["--windows", "3", "--window-seconds", "0.2", "--warmup-seconds", "0.1"]
    out = os.path.join(k.work, f"warm-{trainer}")
    shutil.rmtree(out, ignore_errors=True)
    with k.extra_env({"AUTOTUNE_WARM_CPP_SOCKET": ""}):  # the tuner's own server, not the kit's shared one
        k.autotune("tune", "--trainer", trainer, "--workload", "mlp", "--device", device, "--knobs", "batch_size=64,256",
                   "--budget", "40s" if gpu else "8s", *short, "--confirm-rounds", "1", "--out", out, timeout=300,
                   check=False)
    forked = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "trials/*/result.json")))]
    fresh = []
    with k.extra_env({"AUTOTUNE_WARM": "0"}):
        for i in range(3 if gpu else 1):
            o = os.path.join(k.work, f"warm-{trainer}-fresh-{i}")
            shutil.rmtree(o, ignore_errors=True)
            k.autotune("trial", "--trainer", trainer, "--workload", "mlp", "--device", device, "--set", "batch_size=64",
                       *short, "--out", o, timeout=300)
            fresh.append(json.load(open(os.path.join(o, "0001", "result.json"))))

    def rows(rs):
        return [{"started": r.get("started"), "status": r.get("status"), "device": r.get("device"),
                 "wall_seconds": round(r.get("wall_seconds", 0), 2)} for r in rs]

    f = {"forked": rows(forked), "fresh": rows(fresh)}
    for name, rs in (("forked", forked), ("fresh", fresh)):
        f[f"median_wall_{name}"] = round(statistics.median(r.get("wall_seconds", 0) for r in rs), 2) if rs else None
    if not forked or any(r.get("started") != "forked" or r.get("status") != "ok" for r in forked):
        raise StepFailed(f"{trainer}: the tune's trials were not all forked and ok: {f['forked']}", f)
    if gpu and any(not str(r.get("device", "")).startswith("cuda") for r in forked):
        raise StepFailed(f"{trainer}: a forked trial did not train on the GPU: {f['forked']}", f)
    if any(r.get("started") != "fresh" for r in fresh):
        raise StepFailed(f"{trainer}: AUTOTUNE_WARM=0 still forked: {f['fresh']}", f)
    return f


def step_warm_worker(k, gpu):
    """The warm workers on the device (docs/design.md, "The warm Python worker", "The warm C++ worker"): the Python
    worker's trials forked from one process that imported torch, the C++ worker's from one that loaded LibTorch, each
    beside the same trial started fresh (figures per worker: warm_and_fresh)."""
    t = time.time()
    f, failed = {}, []
    for trainer in ("python", "cpp"):  # one worker's failure keeps the other's figures
        try:
            f[trainer] = warm_and_fresh(k, gpu, trainer)
        except StepFailed as e:
            f[trainer], failed = e.figures, failed + [str(e)]
    f["seconds"] = round(time.time() - t, 1)
    if failed:
        raise StepFailed("; ".join(failed), f)
    return f


def stdlib_corpus(k, gpu):
    """Byte-level text of Python's standard library (all of it on the GPU, 20 files in a rehearsal), made once per call."""
    corpus = os.path.join(k.work, "stdlib.bin")
    if not os.path.exists(corpus):
        stdlib = sysconfig.get_paths()["stdlib"]
        texts = sorted(os.path.join(stdlib, f) for f in os.listdir(stdlib) if f.endswith(".py"))
        k.autotune("prepare-data", "--tokens-from", *(texts if gpu else texts[:20]), "--to", corpus, "--force")
    return corpus


def step_lr_sweep(k, gpu):
    """The learning rate measured (autotune lr-sweep, docs/time-to-train.md): the photo task's resnet18 with SGD +
    momentum, x1/3..x10 its rate from one checkpoint, on 2 data orders. The CPU rehearsal runs the same command and reading
    on gpt-mini (the C++ worker) over a little text, one order, a 128-sample horizon: a Python trial's start costs seconds
    on 2 cores, and the Python worker's converge trials, --save and --init-from are python_worker_parts_test's.
    Then converge --from-sweep trains the user's rate against the sweep's answer from the start to one loss (the rehearsal:
    one order each, 3 s). Figures: the verdict, the best multiple, the time ratio to the user's loss, each rate's loss and
    status, the horizon; converge's measured and predicted ratio (or why it refused the sweep)."""
    if gpu:  # sized for a 15-minute lease: each rate 3,048 samples from the start (the run's first 5%, then 8 windows of
        # 256), 16 loader workers decoding (8
        # held the task at ~145 samples/s, 86% of the step waiting for data, on the H200 lease of 2026-11-29)
        photos = task_photos(k)
        model = ["--task", os.path.join(ROOT, "tests/integration/tasks/photo_task.py"), "--device", "cuda",
                 "--set", "num_workers=16"]
        sizes = ["--run-length", "20000", "--orders", "2", "--seconds", "60", "--smooth-samples", "256"]
        env = {"TASK_PHOTOS": photos, "TASK_RESNET": "1", "TASK_REPEAT": "64"}
    else:  # 1,000 samples: each rate from the start for 15% (150), raised to the first 5% then 8 windows of 16 (178)
        model = ["--workload", "gpt-mini", "--data", stdlib_corpus(k, gpu), "--device", "cpu"]
        sizes = ["--run-length", "1000", "--orders", "1", "--seconds", "30", "--smooth-samples", "16"]
        env = {}
    out = os.path.join(k.work, "lr-sweep")
    shutil.rmtree(out, ignore_errors=True)
    t = time.time()
    with k.extra_env(env):
        try:  # converge --from-sweep keeps ~130 s of the deadline
            code, _ = k.autotune("lr-sweep", *model, *sizes, "--out", out,
                                 timeout=max(60, int(k.left()) - 130) if gpu else 400, check=False)
        except StepFailed as e:  # killed at its timeout: the rates that finished are still figures
            raise Partial(f"{e}; the trials that finished: figures", {"trials": sweep_trials(out)}) from e
    if not os.path.exists(os.path.join(out, "lr-sweep.json")):
        raise StepFailed(f"autotune lr-sweep exited {code} without lr-sweep.json")
    d = json.load(open(os.path.join(out, "lr-sweep.json")))
    v = d["verdict"]
    f = {"verdict": v["verdict"], "best_multiple": v["best_multiple"], "gain": v["gain"], "gain_range": [v["gain_lo"], v["gain_hi"]],
         "headline": v["headline"], "horizon": d["horizon"], "arms_from": d.get("arms_from", "checkpoint"),
         "burn_in": d["burn_in"], "start_loss": d["start_loss"],
         "arms": [{"multiple": a["multiple"], "status": a["status"], "loss": a["loss"]} for a in d["arms"]]}
    cv = os.path.join(k.work, "lr-converge")
    shutil.rmtree(cv, ignore_errors=True)
    with k.extra_env(env):
        code, _ = k.autotune("converge", "--from-sweep", out, *(["--seconds", "15", "--reruns", "0", "--arm-orders", "2"]
                                                                if gpu else
                                                                ["--seconds", "3", "--reruns", "0", "--arm-orders", "1"]),
                             "--out", cv, timeout=max(30, int(k.left()) - 5) if gpu else 120, check=False)
    if os.path.exists(os.path.join(cv, "converge.json")):
        c = json.load(open(os.path.join(cv, "converge.json")))
        lr_of = {r["label"]: r["lr"] for r in c["runs"]}
        f["converge"] = [{"run": x["run"], "lr": lr_of.get(x["run"]), "measured": round(x["measured"], 3),
                          "interval": [round(v, 3) for v in x["measured_interval"]], "predicted": round(x["predicted"], 3),
                          "lr_gain": x["lr_gain"], "agrees": x["agrees"],
                          # the sweep's own loss from the start: where its arms started, apart from the target's depth
                          "sweep_loss": x.get("sweep_loss")} for x in c["comparisons"]]
        # the common target: the loss the user's run ends at (the baseline stopped at the sweep's --run-length)
        f["converge_target"] = {"loss": c["target_loss"], "baseline_samples": c.get("baseline_samples"),
                                "basis": c["target_basis"]}
    elif code == 2 and "--from-sweep" in k.last_stderr:  # a verdict with nothing to train against the user's rate: said
        f["converge"] = {"refused": k.last_stderr.strip().splitlines()[-1]}
    else:
        raise StepFailed(f"autotune converge --from-sweep exited {code} without converge.json")
    f["seconds"] = round(time.time() - t, 1)
    return f


def sweep_trials(out):
    """Each finished trial of an lr-sweep cut short (its folder's trials/*/plan.json and result.json): the rate's multiple,
    the samples and seconds it trained, its last smoothed loss, samples/s and the seconds it waited for data."""
    rows = []
    for d in sorted(glob.glob(os.path.join(out, "trials", "*"))):
        try:
            p = json.load(open(os.path.join(d, "plan.json")))
            r = json.load(open(os.path.join(d, "result.json")))
            last = r["converge"]["points"][-1]
        except (OSError, ValueError, KeyError, IndexError):
            continue  # the trial in flight when the sweep was killed
        rows.append({"multiple": round(p.get("lr_scale", 1.0), 4), "burn_in": "save_checkpoint" in p["converge"],
                     "lr": r["converge"].get("lr"), "samples": last[0], "seconds": round(last[1], 2),
                     "smoothed_loss": round(last[2], 4),
                     "samples_per_s": round(r["windows"][0]["samples_per_s"], 1) if r.get("windows") else None,
                     "data_wait_s": round((r.get("data") or {}).get("wait_seconds", 0), 2)})
    return rows


def converge_figures(out_dir):
    c = json.load(open(os.path.join(out_dir, "converge.json")))
    cmp = {x["run"]: {"measured": round(x["measured"], 3), "predicted": round(x["predicted"], 3),
                      "predicted_by_tune": round(x["predicted_by_tune"], 3), "agreement": round(x["agreement"], 3),
                      "throughput_ratio": round(x["throughput_ratio"], 3), "picked": x["picked"], "config": x["config"]}
           for x in c["comparisons"]}
    picked = next((x for x in c["comparisons"] if x["picked"]), c["comparisons"][0] if c["comparisons"] else None)
    return {"target_loss": c["target_loss"], "eps_loss": c["eps"]["loss"], "eps_time": c["eps"]["time"],
            "noise_scale": c["noise_scale"]["value"], "comparisons": cmp,
            "pick_agreement": round(picked["agreement"], 3) if picked and picked["measured"] > 0 else None,
            "runs": [{"label": r["label"], "samples_per_s": round(r["samples_per_s"], 1), "reached": r["reached"],
                      "time_to_target": round(r["time_to_target"], 2)} for r in c["runs"]]}


def time_to_train(k, gpu, name, data_args, knobs, tune_budget, seconds):
    """The time objective end to end on real data: tune (the noise scale, answers a and b), then converge --from-run."""
    out, cv = os.path.join(k.work, f"ttt-tune-{name}"), os.path.join(k.work, f"ttt-converge-{name}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cv, ignore_errors=True)
    extra = [] if gpu else ["--device", "cpu", "--window-seconds", "0.05", "--warmup-seconds", "0"]
    rehearsal = [] if gpu else REHEARSAL
    k.autotune("tune", *data_args, "--knobs", *knobs, *extra, *rehearsal, "--budget", f"{tune_budget}s", "--out", out,
               timeout=tune_budget + 240, check=False)
    if not os.path.exists(os.path.join(out, "best.json")):
        raise StepFailed(f"time_to_train {name}: tune wrote no best.json")
    f = {"tune": tune_figures(out)}
    if f["tune"]["status"] != "ok":
        return f
    # The batch ramp (answer c) trains as one more arm when the tune found one.
    compare = "pick,changed-batch,fastest" + (",ramp" if f["tune"].get("ramp_batches") else "")
    k.autotune("converge", "--from-run", out, "--compare", compare, "--seconds", str(seconds), "--reruns", "1", "--out", cv,
               timeout=10 * seconds + 300, check=False)
    if not os.path.exists(os.path.join(cv, "converge.json")) and (f["tune"]["noise_scale"] or 0) > 0:
        # The pick was the baseline itself (converge: nothing to compare): prove the prediction on twice the
        # baseline's batch instead, priced by the tune's noise scale.
        best = json.load(open(os.path.join(out, "best.json")))
        b0 = int(best["baseline"]["batch_size"])
        f["converge_candidate"] = f"batch_size={2 * b0} (the tune's pick was its baseline)"
        shutil.rmtree(cv, ignore_errors=True)
        k.autotune("converge", *data_args, *extra, "--candidate-set", f"batch_size={2 * b0}", "--noise-scale",
                   str(f["tune"]["noise_scale"]), "--seconds", str(seconds), "--reruns", "1", "--out", cv,
                   timeout=8 * seconds + 300, check=False)
    if os.path.exists(os.path.join(cv, "converge.json")):
        f["converge"] = converge_figures(cv)
    # Calibration by training: converge --from-run writes the noise scale its arms imply beside the tune run.
    cal = os.path.join(out, "calibration.json")
    if os.path.exists(cal):
        c = json.load(open(cal))
        f["calibration"] = {"noise_scale": c["noise_scale"], "arms": c["arms"]}
    f["rate_at_b"] = rate_at_b(k, gpu, name, out)
    return f


def rate_at_b(k, gpu, name, out):
    """Answer (b)'s batch swept around the batch rule's rate (lr-sweep --from-run --at changed-batch), and the tune run's
    report re-priced with it: the rule's verdict, and (b) over (a) at the measured rate beside the rule's. The rehearsal:
    a 1,000-sample run, one order, 16-sample windows."""
    best = json.load(open(os.path.join(out, "best.json")))
    if "changed_batch" not in best.get("time_to_train", {}):
        return {"skipped": "the tune run has no answer (b)"}
    sweep = os.path.join(k.work, f"ttt-lr-{name}")
    shutil.rmtree(sweep, ignore_errors=True)
    sizes = ["--run-length", "40000", "--orders", "2", "--seconds", "60"] if gpu else \
        ["--run-length", "1000", "--orders", "1", "--seconds", "30", "--smooth-samples", "16"]
    k.autotune("lr-sweep", "--from-run", out, "--at", "changed-batch", *sizes, "--out", sweep, timeout=900 if gpu else 300,
               check=False)
    if not os.path.exists(os.path.join(sweep, "lr-sweep.json")):
        raise StepFailed(f"time_to_train {name}: lr-sweep --at changed-batch wrote no lr-sweep.json")
    k.autotune("report", out, timeout=120)
    d = json.load(open(os.path.join(sweep, "lr-sweep.json")))
    lm = json.load(open(os.path.join(out, "best.json")))["time_to_train"].get("learning_rate_measured", {})
    return {"headline": d["verdict"]["headline"], "rule": d["rule"], "best_multiple": d["verdict"]["best_multiple"],
            "gain": d["verdict"]["gain"], "measured": lm.get("changed-batch"),
            "b_over_a_at_measured_rates": lm.get("changed_batch_time_ratio_at_measured_rates"),
            "b_over_a_at_rule": best["time_to_train"]["changed_batch"].get("time_ratio")}


def step_time_to_train(k, gpu):
    """Time to a trained model (docs/time-to-train.md): gpt2-124m on byte-level text (Python's standard library on the
    device machine) and resnet50 on sklearn's handwritten digits, each tuned under the time objective and proved
    by autotune converge, then (b)'s learning rate measured (rate_at_b). On the CPU a rehearsal: gpt-mini, seconds."""
    corpus = stdlib_corpus(k, gpu)
    if not gpu:
        # The rehearsal checks the step's logic on one workload (text); the digits (an image folder) are the GPU
        # run's, and are made only there.
        return {"gpt-mini": time_to_train(k, gpu, "gpt-mini", ["--workload", "gpt-mini", "--data", corpus],
                                          ["batch_size=32,64"], 20, 3)}
    digits_gz = os.path.join(k.deps, "digits.csv.gz") if k.deps else ""
    if not digits_gz or not os.path.exists(digits_gz):
        digits_gz = os.path.join(os.environ.get("AUTOTUNE_CACHE", os.path.expanduser("~/.cache/autotune")),
                                 "test-images/digits.csv.gz")
    digits = os.path.join(k.work, "digits")
    if os.path.exists(digits_gz) and not os.path.isdir(digits):
        csv = subprocess.run(["gzip", "-dc", digits_gz], capture_output=True, check=True).stdout
        subprocess.run([os.path.join(k.bin, "make_digits_folder"), digits, "32"], input=csv, capture_output=True, check=True)
    runs = {"gpt2-124m": lambda: time_to_train(k, gpu, "gpt2", ["--workload", "gpt2-124m", "--data", corpus],
                                               ["batch_size=8,16,32", "grad_accum=1,2,4", "precision=amp_bf16",
                                                "optimizer_impl=fused"], 110, 40)}
    if os.path.isdir(digits):
        runs["resnet50"] = lambda: time_to_train(k, gpu, "resnet50", ["--workload", "resnet50", "--data", digits,
                                                                      "--image-size", "64"],
                                                 ["batch_size=32,64,128,256", "grad_accum=1,2,4", "precision=amp_bf16",
                                                  "memory_format=channels_last"], 110, 40)
    return per_workload(k, "time_to_train", runs)


def step_noise_log(k, gpu):
    """The noise logger in the user's own loop (logger/; docs/time-to-train.md, "Your own training loop"): its sums
    against each micro-batch's own gradient on the device under bf16 autocast, and what it costs a step (every step and
    every 10th), from bench/noise_logger.py."""
    if not k.python:
        raise Skip("no python3 that imports torch")
    path = os.path.join(k.work, "noise-logger.json")
    k.run([k.python, os.path.join(ROOT, "bench/noise_logger.py"), "--device", "cuda" if gpu else "cpu",
           "--steps", "400" if gpu else "5", "--out", path] + ([] if gpu else ["--width", "256", "--reps", "1"]), timeout=300)
    r = json.load(open(path))
    return {"device": r["device"], "sums_rel_error": r["sums_rel_error"], "steps_per_s": r["steps_per_s"],
            "cost_every_1": round(r["cost_every_1"], 4), "cost_every_10": round(r["cost_every_10"], 4)}


# The Python worker against the C++ worker on the same model, defined alike in both (bench/python_eager.py's classes, the
# built-in workloads' Python twins), same knobs; then torch.compile's modes in the Python worker.
PY_WORKER_CASES = [  # name, C++ workload, Python factory and kwargs, --model-input, --model-target, batch, knobs
    ("resnet50", "resnet50", "ResNet18", {"depth": 50}, "B,3,224,224:float32", "classes:1000", 128,
     ["precision=amp_bf16", "memory_format=channels_last", "optimizer_impl=fused", "log_every=100"]),
    ("gpt2-124m", "gpt2-124m", "GptMini", {"vocab": 50304, "T": 1024, "L": 12, "H": 12, "C": 768}, "B,1024:int64:50304",
     "classes:50304:B,1024", 8, ["precision=amp_bf16", "optimizer_impl=fused", "log_every=100"]),
]
PY_WORKER_CPU = [("gpt-mini", "gpt-mini", "GptMini", {"vocab": 512, "T": 64}, "B,64:int64:512", "classes:512:B,64", 8,
                  ["optimizer_impl=foreach", "log_every=10"])]
COMPILE_MODES_GPU = {"resnet50": ["default", "reduce-overhead", "max-autotune"], "gpt2-124m": ["default", "reduce-overhead"]}
# seconds a compile mode needs left before it starts (max-autotune benchmarks every kernel choice: minutes)
COMPILE_MARGIN_S = {"max-autotune": 420}


def step_python_worker(k, gpu):
    """The Python worker (pyworker/) against the C++ worker on resnet50 and gpt2-124m, same seed and knobs, interleaved;
    cuda_graphs=on in each worker (on the CPU: skipped with its reason); a traced trial in each worker (CUPTI vs
    torch.profiler, one analysis); then, for every model, compile's modes in the Python worker: steady samples/s,
    compile seconds, graph breaks. The compile modes come last: they cost the most, and the deadline cuts them first."""
    if not k.python:
        raise Skip("no python3 that imports torch")
    os.environ["AUTOTUNE_PYTHON"] = k.python  # the launcher's Python: the one that holds torch here
    window = "0.5" if gpu else "0.05"
    f, cases = {}, []
    for name, workload, cls, kwargs, inp, target, batch, sets in (PY_WORKER_CASES if gpu else PY_WORKER_CPU):
        common = ["--json", "--set", f"batch_size={batch}", "--window-seconds", window, "--windows", "3"]
        common += [x for s in sets for x in ("--set", s)] + ([] if gpu else ["--device", "cpu", "--warmup-seconds", "0"])
        py_model = ["--model", os.path.join(ROOT, "bench/python_eager.py") + ":" + cls, "--model-kwargs", json.dumps(kwargs),
                    "--model-input", inp, "--model-target", target]
        sides = (("cpp", ["--workload", workload]), ("py", py_model))
        f[name] = two_workers(k, gpu, name, sides, common)
        f[name].update(batch=batch, knobs=sets)
        cases.append((name, py_model, common))
    for name, py_model, common in cases:
        f[name]["compile"] = compile_modes(k, gpu, name, py_model, common, statistics.median(f[name]["python_samples_per_s"]))
    return f


def two_workers(k, gpu, name, sides, common):
    """One model in both workers: interleaved trials (C++, Python, then Python, C++: drift hits both alike), each
    worker's captured step, each worker's traced trial. A traced trial that fails is recorded, not fatal."""
    runs, resolved = {"cpp": [], "py": []}, {}
    for r in range(2 if gpu else 1):
        for side, args in (sides if r % 2 == 0 else sides[::-1]):
            raw = k.json_of("trial", *args, *common)
            t = trial_figures(raw)
            if t["status"] != "ok":
                raise StepFailed(f"{side} {name}: {t['status']}: {t['message']}")
            runs[side].append(t["samples_per_s"])
            if side == "py" and not resolved:  # what the knob rules told the Python worker on this device
                got = raw.get("resolved", {})
                resolved = {"settings": {x: got.get("settings", {}).get(x) for x in
                                         ("precision", "optimizer_impl", "zero_grad", "memory_format", "cuda_graphs")},
                            "skipped": got.get("skipped"), "applicable": got.get("applicable")}
    graphed, traced = {}, {}
    for side, args in sides:  # cuda_graphs=on in each worker
        if gpu and k.left() < 120:
            graphed[side] = {"status": "not run: the deadline"}
            continue
        if not gpu and side == "py":  # on the CPU both workers only report the knob skipped: the C++ one rehearses it
            graphed[side] = {"status": "not run: the CPU rehearsal reads cuda_graphs' skip from the C++ worker"}
            continue
        r = k.json_of("trial", *args, *common, "--set", "cuda_graphs=on", "--set", "optimizer_impl=fused")
        t = trial_figures(r)
        proof = next((a["observed"] for a in r.get("applied", []) if a["knob"] == "cuda_graphs"), "")
        skipped = next((x["reason"] for x in r.get("skipped", []) if x["knob"] == "cuda_graphs"), "")
        base = statistics.median(runs[side])
        graphed[side] = {"status": t["status"], "samples_per_s": t["samples_per_s"], "proof": proof, "skipped": skipped,
                         "message": t["message"], "over_eager": round(t["samples_per_s"] / base, 3) if t["samples_per_s"] else None}
    for side, args in sides:
        if gpu and k.left() < 90:
            traced[side] = {"status": "not run: the deadline"}
            continue
        try:
            traced[side] = traced_figures(k, f"pytrace-{name}-{side}", args, common, 5 if gpu else 3)
        except StepFailed as e:
            if not gpu:
                raise  # the rehearsal must trace: a CLI or field change breaks it here
            traced[side] = {"status": "failed", "reason": str(e)}
    return {"cpp_samples_per_s": runs["cpp"], "python_samples_per_s": runs["py"], "python_resolved": resolved,
            "cpp_over_python": round(statistics.median(runs["cpp"]) / statistics.median(runs["py"]), 3),
            "cuda_graphs": graphed, "traced": traced}


def compile_modes(k, gpu, name, py_model, common, eager):
    """torch.compile's modes in the Python worker, each over the same model's eager median."""
    compiled = {}
    if not gpu:  # a CPU compile spends half a minute per process in inductor's vector-ISA checks (a subprocess each) and
        # proves nothing the suite's python_worker_test does not: its trials read back these same result fields
        return {"default": {"status": "not run: the CPU rehearsal leaves compile to python_worker_test"}}
    for mode in COMPILE_MODES_GPU.get(name, []):
        if k.left() < COMPILE_MARGIN_S.get(mode, 120):
            compiled[mode] = {"status": "not run: the deadline"}
            continue
        r = k.json_of("trial", *py_model, *common, "--set", f"compile={mode}", timeout=900)
        t, c = trial_figures(r), r.get("compile", {})
        compiled[mode] = {"status": t["status"], "samples_per_s": t["samples_per_s"],
                          "over_eager": round(t["samples_per_s"] / eager, 3) if t["samples_per_s"] else None,
                          "compile_seconds": round(c.get("seconds", 0), 1), "graph_breaks": c.get("graph_breaks"),
                          "recompiles": c.get("recompiles"), "message": t["message"]}
    return compiled


def traced_figures(k, label, args, common, steps):
    """One traced trial (autotune profile): the C++ worker's CUPTI profile or the Python worker's torch.profiler one,
    analysed alike (profiler/kineto_trace.h) — whether it saw the GPU, its kernels, syncs, busy share and verdict."""
    trace = os.path.join(k.work, label + ".json")
    if os.path.exists(trace):
        os.remove(trace)
    r = k.json_of("profile", *args, *common, "--trace", trace, "--steps", str(steps), timeout=900)
    p = r.get("profile") or {}
    if r.get("status") != "ok" or not p.get("valid"):
        raise StepFailed(f"{label}: traced trial {r.get('status')}: {r.get('message') or p.get('invalid_reason')}")
    top = p.get("top_kernels") or [{}]
    return {"mode": p.get("mode"), "gpu": p.get("gpu"), "step_ms": round(p.get("step_ms", 0), 3),
            "inflation": round(p.get("inflation", 0), 3), "kernels_per_step": p.get("kernels_per_step"),
            "syncs_per_step": p.get("syncs_per_step"), "busy_share": round(p.get("busy_share", 0), 3), "mfu": p.get("mfu"),
            "top_kernel": top[0].get("name"), "verdict": p.get("verdict"), "verdict_knobs": p.get("verdict_knobs"),
            "phase_ms": {n: round(v, 3) for n, v in (p.get("phase_ms") or {}).items()}}


RECIPE = ["precision=amp_bf16", "memory_format=channels_last", "cudnn_benchmark=true", "optimizer_impl=fused",
          "pin_memory=true"]  # the seeds' hand-applied recipe (workers come with --data)


def find_step(k, name):
    for s in k.steps:
        if s["name"] == name:
            return s
    return k.previous.get(name)


def step_vs_recipe(k, gpu):
    """The tuner's winner against the hand-applied recipe, interleaved in fresh processes (autotune check)."""
    src = find_step(k, "tune_synthetic")
    tuned = (src or {}).get("figures") if gpu else ((src or {}).get("rehearsal") or {}).get("figures")
    if not tuned or not any(t.get("winner") for t in tuned.values()):
        raise Skip("tune_synthetic has no winner to compare")
    runs = {w: (lambda w=w, t=t: recipe_check(k, gpu, w, t)) for w, t in tuned.items() if t.get("winner")}
    return per_workload(k, "vs_recipe", runs) if gpu else {w: r() for w, r in runs.items()}


def recipe_check(k, gpu, workload, t):
    """autotune check: the recipe as side A, the tuned winner as side B."""
    out = os.path.join(k.work, f"vs-recipe-{workload}")
    shutil.rmtree(out, ignore_errors=True)
    recipe = [r for r in RECIPE if gpu or r.startswith(("optimizer_impl", "precision=amp_bf16"))]
    args = ["check", "--workload", workload, "--reps", "3" if gpu else "2", "--out", out, "--inconclusive", "pass",
            "--window-seconds", "0.5" if gpu else "0.05"]
    args += [x for r in recipe for x in ("--baseline-set", r)]
    args += [x for kv in t["winner"].items() for x in ("--candidate-set", f"{kv[0]}={kv[1]}")]
    if not gpu:  # the rehearsal reads the check's figures: two processes a side
        args += ["--device", "cpu", "--warmup-seconds", "0", "--min-reps", "2"]
    k.autotune(*args, check=False, timeout=900)
    c = json.load(open(os.path.join(out, "check.json")))
    m = next(x for x in c["metrics"] if x["name"] == "throughput")
    return {"tuned_over_recipe": round(m["ratio"], 3), "ci95": [round(x, 3) for x in m["ratio_ci95"]],
            "recipe_samples_per_s": round(m["median_a"], 1), "tuned_samples_per_s": round(m["median_b"], 1),
            "reps": [m["n_a"], m["n_b"]], "recipe": recipe, "tuned": t["winner"]}


def figure(k, step, path):
    """A number from an earlier step's figures (this call's or the resumed one's): path 'a.b.c'; None if absent."""
    s = find_step(k, step)
    v = (s or {}).get("figures") if (s or {}).get("status") == "ok" else None
    for part in path.split("."):
        if not isinstance(v, dict):
            return None
        v = v.get(part)
    return v


def step_targets(k, gpu):
    """The issue's figures, each against its goal: met, missed, or not measured (never guessed)."""
    def target(name, value, goal, ok):
        return {"target": name, "value": value, "goal": goal, "met": None if value is None else bool(ok(value))}
    link = figure(k, "device_bench", "pcie")
    rows = [
        target("tuned vs PyTorch defaults, resnet50 on a JPEG folder", figure(k, "tune_jpeg", "resnet50.speedup"),
               ">= 4x", lambda v: v >= 4),
        target("tuned vs the seed recipe, resnet50", figure(k, "vs_recipe", "resnet50.tuned_over_recipe"),
               ">= 1.0x (>= 1.15x on one workload)", lambda v: v >= 1.0),
        target("tuned vs the seed recipe, gpt2-124m", figure(k, "vs_recipe", "gpt2-124m.tuned_over_recipe"),
               ">= 1.0x (>= 1.15x on one workload)", lambda v: v >= 1.0),
        target("gpt2-124m bf16 MFU", figure(k, "profiles", "gpt2_bf16_log100.mfu"), ">= 0.45", lambda v: v >= 0.45),
        target("tracing inflation, resnet50 (compute-bound)", figure(k, "profiles", "resnet50_bf16_cl.inflation"),
               "<= 1.05", lambda v: v <= 1.05),
        target("CPU syncs per step, log_every=1", figure(k, "profiles", "gpt2_bf16_log1.syncs_per_step"), ">= 1",
               lambda v: v >= 1),
        target("CPU syncs per step, log_every=100", figure(k, "profiles", "gpt2_bf16_log100.syncs_per_step"), "< 0.25",
               lambda v: v < 0.25),
        # Pinned->device copies alone (H2D/pinned_only, best size) over the link's practical bandwidth (PCIe
        # generation and width from nvidia-smi, pcie_link()); without the link the share stays unjudged.
        target("pinned H2D, share of the PCIe link's practical bandwidth"
               + (f" (gen {link['gen']} x{link['width']}: {link['practical_GBps']} GB/s)" if link else " (link not read)"),
               figure(k, "device_bench", "pinned_share_of_practical"), ">= 0.8", lambda v: v >= 0.8),
        target("C++ vs Python eager, resnet50", figure(k, "eager_compare", "resnet50.cpp_over_python"), ">= 1.0x",
               lambda v: v >= 1.0),
        target("C++ vs Python eager, gpt2-124m", figure(k, "eager_compare", "gpt2-124m.cpp_over_python"), ">= 1.0x",
               lambda v: v >= 1.0),
        target("C++ (CUDA graphs) vs Python eager, launch-bound mlp", figure(k, "eager_compare", "mlp.cpp_over_python"),
               ">= 1.3x", lambda v: v >= 1.3),
        target("peers: Lightning (power, binsearch), Accelerate, torch.compile measured", figure(k, "peers", "_tools_ok"),
               "4 side by side (ratios reported whichever way they fall)", lambda v: v == 4),
        target("1-rank NCCL trial: NCCL kernels in its profile", figure(k, "ddp", "_nccl_kernels_in_profile"),
               "present", lambda v: v is True),
        target("time to train, gpt2-124m: converge's measured time ratio vs the predicted one (the pick)",
               figure(k, "time_to_train", "gpt2-124m.converge.pick_agreement"), "within 20%", lambda v: abs(v) <= 0.2),
        target("time to train, resnet50 on digits: converge's measured time ratio vs the predicted one (the pick)",
               figure(k, "time_to_train", "resnet50.converge.pick_agreement"), "within 20%", lambda v: abs(v) <= 0.2),
    ]
    return {"targets": rows, "met": sum(r["met"] is True for r in rows), "missed": sum(r["met"] is False for r in rows),
            "not_measured": sum(r["met"] is None for r in rows)}


# C++ trainer vs PyTorch eager, same model, batch, knobs and data stage (bench/python_eager.py), interleaved.
# The launch-bound case gives the C++ side CUDA graphs, which Python eager does not have: the knob's win.
EAGER_CASES = [
    ("resnet50", 128, ["precision=amp_bf16", "memory_format=channels_last", "optimizer_impl=fused", "log_every=100"], []),
    ("gpt2-124m", 8, ["precision=amp_bf16", "optimizer_impl=fused", "log_every=100"], []),
    ("mlp", 64, ["precision=amp_bf16", "optimizer_impl=fused", "log_every=100"], ["cuda_graphs=on"]),
]


def py_args(sets):
    kv = dict(s.split("=", 1) for s in sets)
    out = ["--precision", kv.get("precision", "fp32"), "--optimizer", kv.get("optimizer_impl", "loop"),
           "--log-every", kv.get("log_every", "1"), "--zero-grad", kv.get("zero_grad", "zeros")]
    return out + (["--channels-last"] if kv.get("memory_format") == "channels_last" else [])


def step_eager_compare(k, gpu):
    if not k.python:
        raise Skip("no python3 that imports torch")
    cases = EAGER_CASES if gpu else [("mlp", 64, ["optimizer_impl=fused", "log_every=10"], [])]
    # 3 repetitions on a GPU: with 2, one Python run 11% faster than its twin (gpt2-124m: 289 vs 259
    # samples/s) decided the ratio; the median of 3 does not follow one outlier.
    reps, window = (3, "0.5") if gpu else (1, "0.05")
    f = {}
    for workload, batch, sets, cpp_only in cases:
        cpp, py = [], []
        for r in range(reps):  # C++, Python, then Python, C++: drift hits both sides alike
            for side in (("cpp", "py") if r % 2 == 0 else ("py", "cpp")):
                if side == "cpp":
                    args = ["trial", "--workload", workload, "--json", "--set", f"batch_size={batch}",
                            "--window-seconds", window] + [x for s in sets + cpp_only for x in ("--set", s)]
                    if not gpu:
                        args += ["--device", "cpu", "--warmup-seconds", "0"]
                    t = trial_figures(k.json_of(*args))
                    if t["status"] != "ok":
                        raise StepFailed(f"C++ {workload}: {t['status']}: {t['message']}")
                    cpp.append(t["samples_per_s"])
                else:
                    _, out = k.run([k.python, os.path.join(ROOT, "bench/python_eager.py"), "--workload", workload,
                                    "--batch-size", str(batch), "--device", "cuda" if gpu else "cpu",
                                    "--image-size", "224" if gpu else "64", "--window-seconds", window] + py_args(sets),
                                   timeout=600)
                    py.append(statistics.median(json.loads(out.strip().splitlines()[-1])["windows"]))
        f[workload] = {"cpp_over_python": round(statistics.median(cpp) / statistics.median(py), 3),
                       "cpp_samples_per_s": [round(x, 1) for x in cpp], "python_samples_per_s": [round(x, 1) for x in py],
                       "batch": batch, "knobs": sets, "cpp_only": cpp_only}
    return f


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_figures(r):
    d = r.get("dist") or {}
    ranks = d.get("ranks") or [{}]
    sps = [w["samples_per_s"] for w in r.get("windows", [])]
    p = r.get("profile") or {}
    return {"status": r.get("status"), "message": r.get("message", ""), "world": d.get("world"),
            "backend": d.get("backend"), "backend_version": d.get("backend_version"),
            "samples_per_s": round(statistics.median(sps), 1) if sps else None,
            "comm_ms_per_step": d.get("comm_ms_per_step"), "overlap_share": d.get("overlap_share"),
            "comm_timed": d.get("comm_timed"),
            "collectives_per_step": ranks[0].get("collectives_per_step"), "bucket_bytes": d.get("bucket_bytes"),
            "profile_mode": p.get("mode"), "profile_comm": p.get("comm"),
            "comm_kernels": [t.get("name") for t in (p.get("top_kernels") or []) if "nccl" in t.get("name", "").lower()]}


def step_ddp(k, gpu):
    """Data parallel: on a GPU, one rank that still joins an NCCL process group (WORLD_SIZE=1, as
    torchrun --nproc_per_node=1 starts it) measured, then traced — its profile must show NCCL kernels;
    multi-GPU scaling needs more GPUs than the kit's machine has. On the CPU, two Gloo ranks."""
    f = {}
    if not gpu:
        f["cpu_2_ranks"] = ddp_figures(k.json_of("trial", "--workload", "mlp", "--device", "cpu", "--json", "--set",
                                                 "ranks=2", "--windows", "3", "--window-seconds", "0.05",
                                                 "--warmup-seconds", "0"))
        if f["cpu_2_ranks"]["status"] != "ok" or f["cpu_2_ranks"]["backend"] != "gloo":
            raise StepFailed(f"2 Gloo ranks: {f['cpu_2_ranks']}")
        return f
    worker = os.path.join(k.bin, "autotune-worker")
    base = {"schema": "autotune.plan/1", "workload": "resnet50", "device": "cuda", "seed": 0,
            "config": {"batch_size": "64", "precision": "amp_bf16", "memory_format": "channels_last",
                       "optimizer_impl": "fused", "log_every": "100"},
            "measure": {"windows": 3, "window_min_seconds": 0.5}}
    saved = dict(k.env)
    try:
        for name, extra in (("nccl_1_rank", {}), ("nccl_1_rank_traced", {"trace": os.path.join(k.work, "trace-ddp.json"),
                                                                          "trace_steps": 5})):
            plan, result = os.path.join(k.work, f"plan-{name}.json"), os.path.join(k.work, f"result-{name}.json")
            json.dump({**base, **extra}, open(plan, "w"))
            k.env.update({"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                          "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())})
            k.run([worker, "run", "--plan", plan, "--result", result], timeout=300, check=False)
            f[name] = ddp_figures(json.load(open(result))) if os.path.exists(result) else {"status": "no result"}
    finally:
        k.env.clear()
        k.env.update(saved)
    bad = [n for n, v in f.items() if v.get("status") != "ok" or v.get("backend") != "nccl"]
    if bad:
        raise StepFailed("NCCL rank not ok: " + ", ".join(f"{n} ({f[n]})" for n in bad))
    # The profile's communication figures come from the NCCL kernels when it saw any (profile.comm.source).
    comm = f["nccl_1_rank_traced"].get("profile_comm") or {}
    f["_nccl_kernels_in_profile"] = bool(f["nccl_1_rank_traced"]["comm_kernels"]) or comm.get("source") == "nccl kernels"
    return f


def step_user_models(k, gpu):
    """A Python user's models on the device: Hugging Face gpt2 (causal LM) exported by scripts/export_model.py
    and tuned (when the machine's Python has transformers: nothing can be installed there, so it may skip), and the
    how-to-apply snippet of a data-parallel config (`autotune apply --set ranks=N`) run under torchrun on the
    device (NCCL; with one GPU, one rank: what the lease can show). On the CPU: the same on a small CNN with Gloo."""
    f = {}
    dev = "cuda" if gpu else "cpu"
    ranks = 1 if gpu else 2
    export = os.path.join(ROOT, "scripts/export_model.py")
    net = os.path.join(k.work, "small_net.pt")
    k.run([k.python, export, os.path.join(ROOT, "tests/integration/small_net.py:SmallNet"), net,
           "--input", "B,3,32,32:float32", "--target", "classes:10"], timeout=300)
    _, snippet = k.autotune("apply", "--model", net, "--device", dev, "--set", f"ranks={max(ranks, 2)}",
                            "--set", "batch_size=64", "--set", "grad_as_bucket_view=true")
    script = os.path.join(k.work, "snippet_train.py")
    with open(script, "w") as fh:
        fh.write("import torch\ntorch.manual_seed(0)\nlr = 1e-3\nepochs = 2\n"
                 "dataset = torch.utils.data.TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(10, (512,)))\n")
        fh.write(snippet)
        # One file per rank: torchrun interleaves the ranks' stdout, even inside a line.
        fh.write(f"\nopen(os.path.join({k.work!r}, f'snippet-rank{{rank}}.txt'), 'w').write(f'RANK {{rank}} BATCHES {{len(loader)}} OK')\n")
    saved = dict(k.env)
    try:
        k.env["PYTHONPATH"] = os.path.join(ROOT, "tests/integration")
        t = time.time()
        for old in glob.glob(os.path.join(k.work, "snippet-rank*.txt")):
            os.remove(old)
        code, out = k.run([k.python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}", script],
                          timeout=300, check=False)
    finally:
        k.env.clear()
        k.env.update(saved)
    f["snippet"] = {"device": dev, "ranks": ranks, "backend": "nccl" if gpu else "gloo", "exit": code,
                    "ranks_finished": sum(bool(re.fullmatch(r"RANK \d+ BATCHES \d+ OK", open(f).read()))
                                          for f in glob.glob(os.path.join(k.work, "snippet-rank*.txt"))),
                    "seconds": round(time.time() - t, 1)}
    if code != 0 or f["snippet"]["ranks_finished"] != ranks:
        raise StepFailed(f"the DDP snippet under torchrun: {f['snippet']}")
    if not has_modules(k.python, "transformers"):
        f["hf_gpt2"] = "skipped: no transformers in this machine's Python"
        return f
    gpt2 = os.path.join(k.work, "hf_gpt2.pt")
    # The CPU rehearsal exports a tiny one (the GPU size took 248 s for one trial on 2 cores).
    size = {"n_layer": 4, "n_embd": 256, "n_head": 4} if gpu else {"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 512}
    k.run([k.python, export, "hf:gpt2", gpt2, "--task", "causal-lm", "--seq", "256" if gpu else "32",
           "--kwargs", json.dumps(size)], timeout=600)
    f["hf_gpt2"] = tune(k, "tune-hf-gpt2", ["--model", gpt2, "--device", dev, "--knobs",
                                           "batch_size=16,32" if gpu else "batch_size=4,8",
                                           "--objective", "throughput", "--window-seconds", "0.5" if gpu else "0.1"],
                        90 if gpu else 15)
    return f


def memory_figures(path):
    d = json.load(open(path))
    fams = []
    for f in d["families"]:
        rows = [{kk: r.get(kk) for kk in ("batch", "predicted", "hi", "fits", "measured", "status", "error", "held_out")}
                for r in f["rows"]]
        fams.append({"family": f["family"], "states_analytic": f.get("states_analytic"), "states_counted": f.get("states_counted"),
                     "largest_fit": f.get("largest_fit"), "advice": f.get("advice", ""), "rows": rows,
                     "why_unknown": f.get("why_unknown", "")})
    return {"capacity_mib": round(d.get("capacity", 0) / 2**20, 1), "held_out": d.get("held_out", {}), "families": fams,
            "trials": d.get("trials")}


MEMORY_RUN_S = 45  # one `autotune memory --check` run on the GPU, about (a guess until a lease times one)


def step_memory(k, gpu):
    """The memory model (docs/memory.md): predicted vs measured peak for held-out batches (`autotune memory
    --check`: probes at small batches, each listed batch measured by its own probe never fed to the fit) on
    resnet50 and gpt2-124m at the card's own capacity, then resnet50 at smaller emulated capacities
    (--memory-cap: the caching allocator's memory fraction), where the largest batch predicted to fit must
    run and the next must not. On the CPU: mlp and gpt-mini under the counting allocator's caps."""
    f = {}
    runs = ([("resnet50", [], "32,64,128,256,384", "32"), ("gpt2-124m", [], "2,4,8,16,24,32", "4"),
             ("resnet50_cap_20G", ["--memory-cap", "20G"], "64,128,256,512", "32"),
             ("resnet50_cap_8G", ["--memory-cap", "8G"], "32,64,128,256", "32")] if gpu else
            [("mlp", ["--memory-cap", "64M"], "32,256,1024,4096", "64"),
             ("gpt-mini", ["--memory-cap", "96M"], "8,16,32,64", "8")])
    if k.a.workloads:  # --workloads resnet50: that workload's runs (its capped ones too), the others left for a later call
        runs = [r for r in runs if r[0].split("_cap")[0] in k.a.workloads.split(",")]
    for i, (name, extra, batches, probe) in enumerate(runs):
        if gpu and f and k.left() < MEMORY_RUN_S:  # the runs that finished are figures; --resume --rerun memory goes on
            raise Partial(f"stopped at the deadline, left: {', '.join(r[0] for r in runs[i:])}", f)
        workload = name.split("_cap")[0]
        out = os.path.join(k.work, f"memory-{name}.json")
        k.autotune("memory", "--workload", workload, "--device", "cuda" if gpu else "cpu", "--check", "--batch-sizes", batches,
                   "--probe-batch", probe, "--json", out, *extra,
                   timeout=max(MEMORY_RUN_S, int(k.left())) if gpu else 600)
        f[name] = memory_figures(out)
    bad = [n for n, x in f.items() if x["held_out"].get("worst_under", 0) > 0.05]
    if bad:
        raise StepFailed("under-predicted beyond the interval by more than the 5% margin: " + ", ".join(bad))
    return f


def step_slots(k, gpu):
    """Trials side by side (docs/scale-out.md): a grid with one trial per GPU (--parallel = the GPUs) against the
    same grid one trial at a time — search wall time, the winners, the interference ratio (the baseline alone vs
    one copy per GPU at once), which GPU each trial had. A one-GPU lease cannot show it: skipped with that
    reason. On the CPU: mlp, 2 slots of one core each against one slot (the same one core, taskset)."""
    def figures(name):
        out = os.path.join(k.work, name)
        b = json.load(open(os.path.join(out, "best.json")))
        so = b.get("scale_out") or {}
        return {"winner": b.get("config"), "elapsed_s": (b.get("search") or {}).get("elapsed_seconds"),
                "trials": (b.get("search") or {}).get("trials"), "slots": so.get("slots", 1), "places": so.get("places"),
                "interference": so.get("interference"), "trials_beside": so.get("trials_beside"),
                "finalists_beside": so.get("finalists_beside")}
    if gpu:
        n = gpu_count(k)
        if n < 2:
            raise Skip(f"{n} GPU here: one trial per GPU needs a lease with 2 or more")
        args = ["--workload", "resnet50", "--knobs", "batch_size=64,128,256", "precision=amp_bf16,fp32",
                "memory_format=contiguous,channels_last", "--objective", "throughput", "--window-seconds", "0.5"]
        tune(k, "slots-parallel", args + ["--parallel", str(n)], 300)
        tune(k, "slots-serial", args, 600)
    else:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise Skip("1 CPU: two slots need 2")
        args = ["--workload", "mlp", "--device", "cpu", "--knobs", "batch_size=32,64",
                "--objective", "throughput", "--window-seconds", "0.05", "--warmup-seconds", "0"]
        tune(k, "slots-parallel", args + ["--parallel", "2"], 60)
        k.run(["taskset", "-c", str(cpus[0]), os.path.join(k.bin, "autotune"), "tune", *args, *REHEARSAL, "--budget", "60s", "--out",
               os.path.join(k.work, "slots-serial")], timeout=300, check=False)
    par, ser = figures("slots-parallel"), figures("slots-serial")
    if par["finalists_beside"]:
        raise StepFailed(f"{par['finalists_beside']} confirmation trials ran beside others")
    return {"parallel": par, "serial": ser, "same_winner": par["winner"] == ser["winner"],
            "search_speedup": (ser["elapsed_s"] / par["elapsed_s"]) if par["elapsed_s"] else None}


def gpu_count(k):
    code, out = k.run([os.path.join(k.bin, "autotune-worker"), "info", "--json"], check=False)
    try:
        return int(json.loads(out).get("device_count", 0))
    except (ValueError, AttributeError):
        return 0


def step_peers(k, gpu):
    """The Python user's alternatives on resnet50 beside autotune's tuned winner: Lightning's batch finder
    (power, binsearch), Accelerate's find_executable_batch_size and torch.compile with the recipe
    (bench/peers.py, with the device's own python3 and packages); every tool's pick measured by one eager loop."""
    if not k.python:
        raise Skip("no python3 that imports torch")
    winner = figure(k, "tune_synthetic", "resnet50.winner") or {}
    batch = str(winner.get("batch_size", ""))
    out = os.path.join(k.work, "peers.json")
    if os.path.exists(out):
        os.remove(out)
    if gpu:
        args = ["--device", "cuda", "--workload", "resnet50", "--image-size", "224", "--compile-batch",
                batch if batch.isdigit() else "256"]
    else:  # the CPU rehearsal: the finders' logic on tiny fp32 steps (a CPU compile takes a minute; bf16 is emulated)
        args = ["--device", "cpu", "--workload", "resnet18", "--image-size", "16", "--precision", "fp32", "--init-batch", "4",
                "--max-trials", "2", "--start-batch", "16", "--warmup-steps", "1", "--window-seconds", "0.05", "--windows", "1", "--tools",
                "lightning_power", "lightning_binsearch", "accelerate"]
    code, _ = k.run([k.python, os.path.join(ROOT, "bench/peers.py"), *args, "--work", os.path.join(k.work, "peers-scratch"),
                     "--out", out], timeout=480, check=False)
    if code == 77:
        raise Skip("Lightning or Accelerate is not importable by the device's python3 (bench/peers.py)")
    if not os.path.exists(out):
        raise StepFailed("bench/peers.py wrote no result (its log is in the kit's log)")
    f = json.load(open(out))
    tuned = figure(k, "tune_synthetic", "resnet50.winner_samples_per_s")
    f["autotune"] = {"winner": winner, "samples_per_s": tuned, "tuning_s": figure(k, "tune_synthetic", "resnet50.elapsed_s"),
                     "note": "the C++ worker's confirmation median; the tools' picks are measured by a Python eager loop "
                             "(eager_compare gives the C++/Python factor on its own)"}
    for t in f["tools"].values():
        if tuned and t.get("samples_per_s"):
            t["autotune_over_this"] = round(tuned / t["samples_per_s"], 3)
    f["_tools_ok"] = sum(t.get("status") == "ok" for t in f["tools"].values())
    failed = [n for n, t in f["tools"].items() if t.get("status") != "ok"]
    if failed and not gpu:  # on the GPU a tool that fails is a figure (its message), the others still count
        raise StepFailed("peers failed: " + "; ".join(f"{n}: {f['tools'][n].get('message')}" for n in failed))
    return f


# The search study (docs/search.md) on this machine: workload -> trial flags and a space of 48 configs whose
# knobs interact on a GPU (precision x memory format x cuDNN's algorithm search; launch-bound small steps where the
# optimizer's kernel count and the loss reads matter). Each space holds the baseline's values (batch 32, fp32, the
# loop AdamW, …): auto walks one knob at a time from the baseline, and a move outside the grid has no ground truth.
# The CPU rehearsal: a 4-config space, 0.05 s windows, 3 configs timed again at twice the windows.
STUDY_GPU = {
    "resnet18": (["--device=cuda", "--image-size=64"],
                 ["batch_size=32,128,256", "precision=fp32,amp_bf16", "memory_format=contiguous,channels_last",
                  "optimizer_impl=loop,fused", "cudnn_benchmark=false,true"]),
    "gpt-mini": (["--device=cuda"],
                 ["batch_size=32,64,128,256", "precision=fp32,amp_bf16", "optimizer_impl=loop,foreach,fused",
                  "log_every=1,100"]),
}
STUDY_CPU = {"mlp": (["--device=cpu", "--warmup-seconds=0"], ["batch_size=32,64", "optimizer_impl=loop,fused"])}


def study_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("search_study", os.path.join(ROOT, "bench/search_study.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def step_search_study(k, gpu):
    """bench/search_study.py's measured steps on this machine, per workload: the ground-truth grid (every config
    in 2 interleaved fresh processes), ranking fidelity (12 configs once more with 10x windows), the fitted
    landscape and 2 real `--strategy auto` runs scored against the grid. Runs until the deadline and goes on
    from where it stopped in a later call: the data come back as study.tar.gz, and --study-from (that file, or
    the folder it was unpacked into) seeds the next call. The strategies are simulated on the landscapes
    afterwards, off the GPU machine (docs/search.md)."""
    ss = study_module()
    study = os.path.join(k.out, "study")
    seed_study(k, study)
    spaces, reps, window, configs, long_factor, runs = (
        (STUDY_GPU, 2, 1.0, 12, 10, 2) if gpu else (STUDY_CPU, 2, 0.05, 3, 2, 1))
    chosen = [w for w in spaces if not k.a.study_workloads or w in k.a.study_workloads.split(",")]
    figures, left = {}, []
    for w in chosen:
        setup, knobs = spaces[w]
        d = os.path.join(study, w)
        cmds = [["grid", "--workload", w, "--reps", str(reps), "--window-seconds", f"{window:g}", "--knobs", *knobs,
                 *[f"--setup={x}" for x in setup]],
                ["fidelity", "--configs", str(configs), "--long", str(long_factor)],
                ["fit"],
                ["real", "--strategy", "auto", "--runs", str(runs)]]
        stopped = False
        for c in cmds:
            args = [sys.executable, os.path.join(ROOT, "bench/search_study.py"), c[0], "--out", d, *c[1:]]
            if c[0] != "fit":
                args[3:3] = ["--autotune", os.path.join(k.bin, "autotune")]
            if gpu and c[0] != "fit":
                args += ["--stop-at", f"{time.time() + k.left() - 15:.0f}"]
            code, _ = k.run(args, timeout=max(60, int(k.left()) + 300) if gpu else 600, check=False)
            if code == ss.STOPPED:
                stopped = True
                left.append(f"{w}: {c[0]}")
                break
            if code != 0:
                raise StepFailed(f"search_study.py {c[0]} ({w}) exited {code} (its output is in the kit's log)")
        figures[w] = study_figures(ss, d)
        if stopped:
            break
    if left or len(figures) < len(chosen):
        todo = left + [w for w in chosen if w not in figures]
        raise Partial(f"stopped at the deadline, left: {', '.join(todo)}; run again with --resume and "
                      f"--study-from study.tar.gz", figures)
    return figures


def seed_study(k, study):
    """--study-from: a study.tar.gz an earlier call returned, or the folder it was unpacked into."""
    src = k.a.study_from
    if not src or os.path.exists(study):
        return
    if os.path.isdir(src):
        shutil.copytree(src, study)
    elif os.path.isfile(src):
        with tarfile.open(src) as t:
            t.extractall(study, filter="data")
    else:
        raise StepFailed(f"--study-from {src}: no such file or folder")


def study_figures(ss, d):
    """What the study measured so far in one workload's folder (None where that part has not run)."""
    f = {}
    gp = os.path.join(d, "grid.json")
    if not os.path.exists(gp):
        return f
    g = ss.load(gp)
    table = ss.truth_table(g)
    ranked = ss.ranked_keys(g, table)
    total = len(ss.grid_keys(g)) + (0 if g["baseline_in_grid"] else 1)
    f["grid"] = {"trials": len(g["trials"]), "of": total * g["reps"],
                 "trial_wall_s": round(statistics.mean(t["wall_s"] for t in g["trials"]), 2) if g["trials"] else None}
    complete = len(g["trials"]) >= total * g["reps"]
    if complete and len(ranked) >= 2:
        best, second = ranked[0], ranked[1]
        base = ss.key_of(g["baseline"], g["knobs"])
        f["grid"].update(optimum=best, optimum_samples_per_s=round(table[best]["rate"], 1),
                         runner_up=second, runner_up_behind=round(1 - table[second]["rate"] / table[best]["rate"], 4),
                         baseline_samples_per_s=round(table[base]["rate"], 1) if base in table else None,
                         failed_trials=sum(t["status"] != "ok" for t in g["trials"]))
    lp = os.path.join(d, "landscape.json")
    if os.path.exists(lp):
        land = ss.load(lp)
        f["landscape"] = {"sigma_process": round(land["sigma_process"], 4), "sigma_window": round(land["sigma_window"], 4),
                          "oracle_trials_top2": ss.oracle_pair_trials(land)}
    fp = os.path.join(d, "fidelity.json")
    if os.path.exists(fp):
        fid = ss.load(fp)
        f["fidelity"] = {"long_runs": len(fid["long"]), "of": len(fid["configs"])}
        if len(fid["long"]) >= len(fid["configs"]) and complete:
            n = ss.fidelity_numbers(g, fid)
            f["fidelity"].update(tau_b_single=[round(r["tau_b"], 3) for r in n["per_rep"]],
                                 tau_b_mean_of_reps=round(n["mean_of_reps"]["tau_b"], 3),
                                 top1_single=[r["top1"] for r in n["per_rep"]],
                                 top3_single=[r["top3"] for r in n["per_rep"]],
                                 tau_b_retest=[round(x, 3) for x in n["tau_retest"]])
    rp = os.path.join(d, "real-auto.json")
    if os.path.exists(rp):
        f["real_auto"] = [{"seed": r["seed"], "pick": r.get("pick"), "regret": round(r["regret"], 4) if "regret" in r else None,
                           "wall_s": round(r["wall_s"], 1), "trials": r.get("trials"), "rc": r["rc"]}
                          for r in ss.load(rp)["runs"]]
    return f


def step_all_tests(k, gpu):
    if not gpu:
        raise Skip("the CPU suite is `make test` itself")
    code, out = k.run([*ctest_of(k), "-j", str(min(8, os.cpu_count())), "--timeout", "600"],
                      check=False, timeout=max(60, int(k.left()) - 20))
    failed = re.findall(r"^\s*\d+ - (\S+) \(", out, re.M)
    f = dict(ctest_counts(out), failed_tests=failed)
    if code != 0:
        raise StepFailed(f"{f['failed']} of {f['total']} tests failed: {', '.join(failed)}")
    return f


# name, needs a GPU, function, seconds it may take on the GPU machine (for the deadline)
STEPS = [
    ("env", False, step_env, 5),
    ("build", False, step_build, 240),
    ("linkage", False, step_linkage, 2),
    ("worker_info", False, step_worker_info, 5),
    ("gpu_tests", True, step_gpu_tests, 60),
    ("device_bench", True, step_device_bench, 40),
    ("knob_trials", True, step_knob_trials, 180),
    ("device_holders", True, step_device_holders, 40),
    ("profiles", True, step_profiles, 90),
    ("tune_synthetic", True, step_tune_synthetic, 250),
    ("tune_jpeg", True, step_tune_jpeg, 170),
    ("task", True, step_task, 270),
    ("lr_sweep", True, step_lr_sweep, 420),
    ("held_out", True, step_held_out, 90),
    ("warm_worker", True, step_warm_worker, 70),
    ("vs_recipe", True, step_vs_recipe, 150),
    ("eager_compare", True, step_eager_compare, 160),
    ("ddp", False, step_ddp, 60),
    ("user_models", True, step_user_models, 200),
    ("memory", True, step_memory, 240),
    ("peers", True, step_peers, 300),
    ("all_tests", True, step_all_tests, 200),
    ("time_to_train", True, step_time_to_train, 500),
    ("noise_log", False, step_noise_log, 60),
    ("python_worker", True, step_python_worker, 240),  # the compile modes after it guard themselves (COMPILE_MARGIN_S)
    ("slots", True, step_slots, 500),  # needs a lease with 2+ GPUs; a one-GPU one skips it at once
    ("search_study", True, step_search_study, 60),  # uses what is left; a later call goes on
    ("targets", False, step_targets, 1),
]
ALWAYS_RUN = {"env", "build", "linkage", "worker_info", "targets"}  # a fresh machine has no build: these run every call


def run_steps(k):
    only = set(k.a.only.split(",")) if k.a.only else None
    for name, needs_gpu, fn, est in STEPS:
        prev = k.previous.get(name)
        if only and name not in only and name not in ALWAYS_RUN:
            if prev:  # not this call's: the resumed record stays in the outputs
                k.steps.append(dict(prev, resumed=True))
            continue
        rerun = k.a.rerun == "*" or name in k.a.rerun.split(",")
        if prev and name not in ALWAYS_RUN and prev["status"] in ("ok", "failed") and not rerun:
            k.steps.append(dict(prev, resumed=True))
            continue
        rec = {"name": name, "gpu": needs_gpu, "status": "ok", "reason": "", "seconds": 0, "figures": {}}
        gpu = k.gpu and not k.a.cpu
        if needs_gpu and gpu and est > k.left():
            rec.update(status="not_run", reason=f"deadline: {k.left():.0f} s left, the step takes ~{est} s; "
                                                 "run again with --resume")
            k.steps.append(rec)
            continue
        t = time.time()
        try:
            if needs_gpu and not gpu:
                rec["status"] = "skipped"
                rec["reason"] = ("--cpu: GPU steps are rehearsed on the CPU" if k.gpu
                                 else "no CUDA device (autotune-worker info); rehearsed on the CPU")
                try:  # the rehearsal: same command and reading code, a CPU stand-in
                    rec["rehearsal"] = {"status": "ok", "figures": fn(k, False)}
                except Skip as e:
                    rec["rehearsal"] = {"status": "skipped", "reason": str(e)}
                except StepFailed as e:
                    rec["rehearsal"] = {"status": "failed", "reason": str(e)}
                except Exception as e:  # noqa: BLE001 - a bug in the reading code: the rehearsal exists to catch it
                    rec["rehearsal"] = {"status": "failed", "reason": f"{type(e).__name__}: {e}"}
            else:
                rec["figures"] = fn(k, gpu)
        except Skip as e:
            rec.update(status="skipped", reason=str(e))
        except Partial as e:
            rec.update(status="partial", reason=str(e), figures=e.figures)
        except StepFailed as e:
            rec.update(status="failed", reason=str(e), figures=e.figures)
        except Exception as e:  # noqa: BLE001 - a bug in one step must not lose the others' figures
            rec.update(status="failed", reason=f"{type(e).__name__}: {e}")
        rec["seconds"] = round(time.time() - t, 1)
        k.steps.append(rec)
        k.log(f"\n== step {name}: {rec['status']} {rec['reason']} ({rec['seconds']} s)\n")
        write_outputs(k)  # after every step: a call cut off at its limit still returns what finished
        if name == "build" and rec["status"] == "failed":
            break


def ok_figures(doc, name):
    """The figures of the step `name` in `doc` when it finished ok, else None."""
    return next((s["figures"] for s in doc["steps"] if s["name"] == name and s["status"] == "ok"), None)


def md_summary(k, doc):
    env = next((s["figures"] for s in doc["steps"] if s["name"] == "env"), {})
    lines = ["# autotune device check", "",
             f"{env.get('date', '')} · {env.get('gpu', 'no GPU')} · driver {env.get('driver', '–')} · "
             f"torch {env.get('python_torch', {}).get('torch', 'not in this python3')} · commit {env.get('commit', '')[:12]} · "
             f"mode {'GPU' if doc['gpu'] else 'CPU (GPU steps skipped, rehearsed on the CPU)'}", "",
             "| step | status | seconds | reason / figures |", "|---|---|---:|---|"]
    for s in doc["steps"]:
        what = s["reason"]
        if s["status"] == "ok":
            what = json.dumps(s["figures"], separators=(",", ":"))[:300]
        elif s.get("rehearsal"):
            what += f"; rehearsal {s['rehearsal']['status']}"
            if s["rehearsal"].get("reason"):
                what += f" ({s['rehearsal']['reason']})"
        lines.append(f"| {s['name']} | {s['status']}{' (resumed)' if s.get('resumed') else ''} | {s['seconds']} | "
                     f"{what.replace('|', '/')} |")
    targets = ok_figures(doc, "targets")
    if targets:
        lines += ["", "## Figures against their goals", "", "| figure | value | goal | met |", "|---|---:|---|---|"]
        for t in targets["targets"]:
            met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
            lines.append(f"| {t['target']} | {t['value'] if t['value'] is not None else '–'} | {t['goal']} | {met} |")
    profiles = ok_figures(doc, "profiles")
    if profiles and any(p.get("kernel_classes") for p in profiles.values()):
        lines += ["", "## Kernel time per step by kind (profiles)", "", "| profile | MFU | kinds: share of kernel time (ms per step) |",
                  "|---|---:|---|"]
        for n, p in profiles.items():
            kinds = ", ".join(f"{c} {v['share']:.0%} ({v['ms_per_step']:.2f})" for c, v in (p.get("kernel_classes") or {}).items())
            mfu = f"{p['mfu']:.1%}" if isinstance(p.get("mfu"), (int, float)) and p["mfu"] >= 0 else "–"
            lines.append(f"| {n} | {mfu} | {kinds} |")
    trials = ok_figures(doc, "knob_trials")
    if trials:
        lines += ["", "## Knob trials", "", "| trial | samples/s | peak MiB | proofs | fell back |", "|---|---:|---:|---|---|"]
        for n, t in trials.items():
            if n.startswith("_"):
                continue
            proofs = "; ".join(f"{a}: {o}" for a, o in t["applied"].items() if a != "batch_size")
            lines.append(f"| {n} | {t['samples_per_s']} | {t['peak_device_mib']} | {proofs[:200]} | "
                         f"{'; '.join(t['skipped'])[:200]} |")
    return "\n".join(lines) + "\n"


def write_outputs(k):
    doc = {"schema": SCHEMA, "gpu": k.gpu and not k.a.cpu, "deadline_s": k.a.deadline,
           "elapsed_s": round(time.time() - k.start, 1), "steps": k.steps}
    tmp = os.path.join(k.out, "device-check.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(k.out, "device-check.json"))
    with open(os.path.join(k.out, "device-check.md"), "w") as f:
        f.write(md_summary(k, doc))


def pack_artifacts(k):
    """Reports and traces (no data, no journals) in one file under 15 MiB, largest traces left out first; the
    search study's data in study.tar.gz (the device returns at most 8 files)."""
    study = os.path.join(k.out, "study")
    if os.path.isdir(study):
        with tarfile.open(os.path.join(k.out, "study.tar.gz"), "w:gz") as t:
            t.add(study, arcname=".")
        shutil.rmtree(study)
    files = []
    for dirpath, _, names in os.walk(k.work):
        if "/jpegs" in dirpath:
            continue
        for n in names:
            if n.endswith((".md", ".html", ".json", ".xml")):
                p = os.path.join(dirpath, n)
                files.append((os.path.getsize(p), p))
    files.sort()
    total, kept = 0, []
    for size, p in files:
        if total + size > 15 * 2**20:
            break
        total += size
        kept.append(p)
    with tarfile.open(os.path.join(k.out, "artifacts.tar.gz"), "w:gz") as t:
        for p in kept:
            t.add(p, arcname=os.path.relpath(p, k.work))
    shutil.rmtree(k.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "device-out")
    ap.add_argument("--build-dir", default="build-device")
    ap.add_argument("--deps", default="", help="the folder scripts/device-deps.sh made (Debian packages, photos)")
    ap.add_argument("--cpu", action="store_true", help="skip every GPU step with its reason and rehearse it on the CPU")
    ap.add_argument("--build", action="store_true", help="with --cpu: configure and build too (default: use --build-dir)")
    ap.add_argument("--deadline", type=float, default=540, help="seconds; steps that would pass it are left for --resume")
    ap.add_argument("--resume", default="", help="an earlier device-check.json: its finished steps are kept")
    ap.add_argument("--rerun", nargs="?", const="*", default="",
                    help="with --resume: run finished steps again (all, or the comma-separated ones named)")
    ap.add_argument("--workloads", default="", help="tune_synthetic, vs_recipe and memory: only these (comma-separated); "
                    "the others keep the resumed figures")
    ap.add_argument("--study-from", default="", help="search_study: the study.tar.gz (or its unpacked folder) an "
                    "earlier call returned; the study goes on from it")
    ap.add_argument("--study-workloads", default="", help="search_study: only these workloads (comma-separated)")
    ap.add_argument("--only", default="", help="comma-separated steps (env, build, linkage, worker_info always run)")
    a = ap.parse_args()
    names = [s[0] for s in STEPS]
    for n in filter(None, a.only.split(",") + ([] if a.rerun == "*" else a.rerun.split(","))):
        if n not in names:
            sys.exit(f"device-check: unknown step '{n}'; steps: {', '.join(names)}")
    os.makedirs(a.out, exist_ok=True)
    k = Kit(a)
    if a.resume:
        try:
            prev = json.load(open(a.resume))
        except (OSError, json.JSONDecodeError) as e:
            sys.exit(f"device-check: --resume {a.resume}: {e}")
        if prev.get("schema") != SCHEMA:
            sys.exit(f"device-check: --resume {a.resume}: schema {prev.get('schema')!r}, expected {SCHEMA}")
        k.previous = {s["name"]: s for s in prev["steps"]}
    run_steps(k)
    write_outputs(k)
    pack_artifacts(k)
    failed = [s["name"] for s in k.steps if s["status"] == "failed" or
              (s.get("rehearsal") or {}).get("status") == "failed"]
    left = [s["name"] for s in k.steps if s["status"] == "not_run"]
    print(f"device-check: {len(k.steps)} steps in {time.time() - k.start:.0f} s; failed: {', '.join(failed) or 'none'}"
          f"{'; left for --resume: ' + ', '.join(left) if left else ''}; {os.path.join(k.out, 'device-check.md')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
