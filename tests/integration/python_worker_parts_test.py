#!/usr/bin/env python3
"""The Python worker's other capabilities, run by the real tuner (not a measuring test: what it asserts holds whatever
the timings — python_worker_test.py has the measured ones).

    python_worker_parts_test.py BUILD_DIR SOURCE_DIR

Checked: image folders in Python (bad files counted as the C++ loader counts them); converge runs in Python (the curve step by step, --save and --init-from); `autotune check` with the C++
trainer on one side and the Python one on the other; a traced trial in each worker, the Python one's torch.profiler
trace analysed by autotune-trace into the same phase table; data parallel in Python (DDP over Gloo, the tuner's ranks
and torchrun's, the C++ worker's buckets, the printed DDP loop run under torchrun). Exit 77 without a Python with torch
2.11 and jsonschema.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_worker_common import (SHORT as short, Setup, applied, check, finish, run, share_warm_worker)  # noqa: E402

S = Setup("python-worker-parts-test")
share_warm_worker(S.build)  # torch imported once for the whole test (python_worker_common.py)
build, source, py, autotune, worker_py, work, here, small_net = (S.build, S.source, S.py, S.autotune, S.worker_py, S.work,
                                                                  S.here, S.small_net)
validate = S.validate
tokens, gpt = S.token_model()

# ---- image folders in Python: torchvision's decode and RandomResizedCrop through torch's DataLoader; bad files skipped and
# counted by the same reasons as the C++ worker's loader; too many of them fail the trial; a folder with more classes
# than the model's target is refused
imgs = os.path.join(work, "images")
made = run([py, "-c", f"""
import os, torch
from torchvision.io import encode_jpeg
g = torch.Generator().manual_seed(0)
for c in ("cat", "dog"):
    os.makedirs(os.path.join({imgs!r}, c))
    for i in range(12):
        img = (torch.rand(3, 40 + 8 * (i % 3), 48, generator=g) * 255).to(torch.uint8)
        open(os.path.join({imgs!r}, c, f"{{i:03d}}.jpg"), "wb").write(encode_jpeg(img).numpy().tobytes())
raw = open(os.path.join({imgs!r}, "cat", "000.jpg"), "rb").read()
open(os.path.join({imgs!r}, "cat", "truncated.jpg"), "wb").write(raw[: len(raw) // 2])
open(os.path.join({imgs!r}, "dog", "empty.jpg"), "wb").write(b"")
open(os.path.join({imgs!r}, "dog", "text.jpg"), "w").write("not an image")
"""])
data_of = {}
for trainer in ("cpp", "python"):
    r = run([autotune, "trial", "--trainer", trainer, "--workload", "resnet18", "--image-size", "32", "--data", imgs,
             "--set", "batch_size=8", "--set", "num_workers=2", "--max-bad-share", "0.3", *short, "--json"])
    data_of[trainer] = json.loads(r.stdout) if r.returncode == 0 else {}
pdata, cdata = data_of["python"].get("data", {}), data_of["cpp"].get("data", {})
check(made.returncode == 0 and data_of["python"].get("status") == "ok" and pdata.get("dataset_size") == 27
      and pdata.get("images_ok", 0) > 0 and set(pdata.get("bad_by_reason", {})) == {"empty", "not_jpeg", "truncated"}
      == set(cdata.get("bad_by_reason", {})) and "2 worker process(es)" in applied(data_of["python"]).get("num_workers", ""),
      f"an image folder in Python: 27 files, bad ones skipped and counted by the C++ loader's reasons "
      f"({pdata.get('bad_by_reason')} vs {cdata.get('bad_by_reason')}), 2 loader processes")
r = run([autotune, "trial", "--trainer", "python", "--workload", "resnet18", "--image-size", "32", "--data", imgs,
         "--set", "batch_size=8", *short])
check(r.returncode != 0 and "too much bad data" in r.stderr and "more than the allowed 1%" in r.stderr,
      "more bad images than --max-bad-share (1%) fail the trial, naming the reasons")
three = os.path.join(work, "three_classes")  # the good images of two classes, as three
for i, c in enumerate(("cat", "dog", "fox")):
    os.makedirs(os.path.join(three, c), exist_ok=True)
    for j in range(4):
        shutil.copy(os.path.join(imgs, ("cat", "dog")[i % 2], f"{j + 1:03d}.jpg"), os.path.join(three, c, f"{j:03d}.jpg"))
r = run([autotune, "trial", "--model", small_net, "--model-input", "B,3,32,32:float32", "--model-target", "classes:2",
         "--data", three, *short])
check(r.returncode != 0 and "3 classes, but the model's target has 2" in r.stderr,
      "an image folder with more classes than the model's target: refused in one line")
# converge on a model with batch norms (the Python worker counts them in describe): a candidate whose forward sees another
# batch is named, with the held-out loss as what compares alike (reports/batch_norm_note.h).
bn = os.path.join(work, "converge-bn")
r = run([autotune, "converge", "--trainer", "python", "--workload", "resnet18", "--image-size", "32", "--data", three,
         "--baseline-set", "batch_size=4", "--candidate-set", "batch_size=8", "--seconds", "1", "--reruns", "0",
         "--arm-orders", "1", "--out", bn])
bcv = json.load(open(os.path.join(bn, "converge.json"))) if r.returncode == 0 else {}
note = bcv.get("batch_norm_note", "")
check(bcv.get("workload", {}).get("batch_norms") == 20 and note.startswith("resnet18 has 20 batch norms")
      and "the baseline's 4 (candidate 1 at 8)" in note and "--val-data" in note and note in r.stdout,
      f"converge on resnet18 in Python: 20 batch norms counted, the forward batch 8 against 4 named ({r.stderr[-300:]}; {note[:200]})")

# ---- (4a) converge runs in Python: the baseline and a candidate trained to the same loss on the tokens, the curve recorded
# step by step, the baseline's weights saved and read back by --init-from (its first loss is the trained model's)
conv, weights = os.path.join(work, "converge"), os.path.join(work, "converged.pt")
r = run([autotune, "converge", *gpt, "--baseline-set", "batch_size=8", "--candidate-set", "batch_size=16", "--seconds", "3",
         "--reruns", "1", "--arm-orders", "1", "--noise-scale", "20", "--save", weights, "--out", conv])
cv = json.load(open(os.path.join(conv, "converge.json"))) if r.returncode == 0 else {}
runs = cv.get("runs", [])
check(r.returncode == 0 and cv.get("workload", {}).get("batch_norms") == 0 and cv.get("batch_norm_note") == "",
      "converge on a model without batch norm (GptMini): counted 0, no note")
check(len(runs) == 3 and all(len(x.get("points", [])) >= 2 and x.get("message") == "" for x in runs)
      and all(p2[0] > p1[0] and p2[1] >= p1[1] for x in runs for p1, p2 in zip(x["points"], x["points"][1:])),
      f"autotune converge with the Python trainer: 3 runs, every step's samples, seconds and loss "
      f"({[len(x.get('points', [])) for x in runs]} steps)")
first = {}
for name, extra in (("fresh", []), ("trained", ["--init-from", weights])):
    r = run([autotune, "trial", *gpt, "--set", "batch_size=8", *extra, *short, "--json"])
    first[name] = json.loads(r.stdout)["warmup_losses"][0] if r.returncode == 0 else None
check(os.path.exists(weights) and first["fresh"] and first["trained"] and first["trained"] < first["fresh"],
      f"--save wrote the baseline's weights and --init-from starts from them (first loss {first['trained']} vs {first['fresh']})")

# The comparison as the tool measures it: `autotune check` with the C++ trainer on one side and the Python one on the other.
chk = os.path.join(work, "check-trainers")
r = run([autotune, "check", "--workload", "gpt-mini", "--set", "batch_size=8", "--baseline-trainer", "cpp", "--candidate-trainer",
         "python", "--reps", "2", "--min-reps", "2", *short, "--out", chk])
cj = json.load(open(os.path.join(chk, "check.json"))) if os.path.exists(os.path.join(chk, "check.json")) else {}
workers = [json.load(open(os.path.join(chk, "trials", d, "result.json")))["env"].get("autotune_version", "")
           for d in sorted(os.listdir(os.path.join(chk, "trials")))] if cj else []
check(r.returncode in (0, 1, 4) and cj.get("a", {}).get("worker", "").endswith("autotune-worker")
      and cj.get("b", {}).get("worker", "").endswith("autotune-worker-py")
      and sum("python worker" in w for w in workers) == 2 and len(workers) == 4,
      f"autotune check --baseline-trainer cpp --candidate-trainer python: each side in its own worker, interleaved "
      f"({cj.get('metrics', [{}])[0].get('ratio', '?') if cj.get('metrics') else '?'} B/A)")

# ---- (4d) a traced trial in each worker: torch.profiler's trace read by the profiler's analysis (autotune-trace) into the
# profile the C++ worker's trace gives — the same phases, a verdict naming knobs the Python worker applies
profiles = {}
for trainer in ("cpp", "python"):
    trace = os.path.join(work, f"trace-{trainer}.json")
    r = run([autotune, "profile", "--trainer", trainer, "--workload", "gpt-mini", "--set", "batch_size=8", "--steps", "3",
             "--trace", trace, "--json", *short])
    profiles[trainer] = json.loads(r.stdout) if r.returncode == 0 else {}
    json.dump(profiles[trainer], open(os.path.join(work, f"trace-{trainer}.result.json"), "w"))
pp, cp = profiles["python"].get("profile", {}), profiles["cpp"].get("profile", {})
shares = {t: (p.get("phase_ms", {}).get("forward", 0) + p.get("phase_ms", {}).get("backward", 0)) / (p.get("step_ms") or 1)
          for t, p in (("python", pp), ("cpp", cp))}
check(pp.get("mode") == "torch.profiler" and pp.get("valid") and pp.get("steps") == 3 and cp.get("valid")
      and {"data", "forward", "backward", "optimizer", "other"} <= set(pp.get("phase_ms", {})) <= set(cp.get("phase_ms", {}))
      and all(v > 0.5 for v in shares.values()),
      f"a traced trial in Python: torch.profiler's trace analysed into the C++ worker's phase table "
      f"(forward+backward {shares['python']:.0%} of the step in Python, {shares['cpp']:.0%} in C++)")
with open(os.path.join(work, "trace-python.json")) as f:
    events = json.load(f).get("traceEvents", [])
check(sum(e.get("name", "").startswith("ProfilerStep#") for e in events) == 3 and any(e.get("cat") == "cpu_op" for e in events),
      "the Python worker's trace is torch.profiler's own: 3 ProfilerStep# ranges and the aten ops under them")
check(pp.get("verdict") and set(pp.get("verdict_knobs", [])) <= {"precision", "batch_size", "threads", "optimizer_impl",
                                                                   "grad_accum", "zero_grad", "compile"},
      f"the verdict ({pp.get('verdict')}) names only knobs the Python worker applies to this model ({pp.get('verdict_knobs')})")
for path, err in validate([os.path.join(work, f"trace-{t}.result.json") for t in ("cpp", "python")]):
    check(err == "", f"{os.path.relpath(path, work)} (a traced trial) validates against knobs/protocol.schema.json{': ' + err if err else ''}")

# ---- (4e) data parallel in Python: DDP over Gloo, 2 ranks started by the tuner and by torchrun, the same buckets as the C++
# worker's Reducer, each bucket's collective timed; the printed DDP loop runs under torchrun as printed
ddp_runs = {}
venv_path = dict(os.environ, PATH=os.path.dirname(py) + os.pathsep + os.environ.get("PATH", ""))  # torchrun beside the Python
for name, trainer, extra in (("cpp", "cpp", []), ("python", "python", []), ("torchrun", "python", ["--launcher", "torchrun"])):
    r = run([autotune, "trial", "--trainer", trainer, "--workload", "gpt-mini", "--set", "ranks=2", "--set", "batch_size=8",
             "--set", "grad_accum=2", *extra, *short, "--json"], env=venv_path)
    ddp_runs[name] = json.loads(r.stdout) if r.returncode == 0 else {}
for name, res in ddp_runs.items():
    json.dump(res, open(os.path.join(work, f"ddp-{name}.result.json"), "w"))
for path, err in validate([os.path.join(work, f"ddp-{n}.result.json") for n in ddp_runs]):
    check(err == "", f"{os.path.relpath(path, work)} (ranks=2) validates against knobs/protocol.schema.json{': ' + err if err else ''}")
pd, cd = ddp_runs["python"].get("dist", {}), ddp_runs["cpp"].get("dist", {})
check(ddp_runs["python"].get("status") == "ok" and pd.get("world") == 2 and len(pd.get("ranks", [])) == 2
      and pd.get("backend") == "gloo" and pd.get("launcher") == "autotune" and pd.get("comm_timed")
      and all(r["collectives_per_step"] == len(pd["bucket_bytes"]) and r["comm_ms_per_step"] > 0 for r in pd["ranks"]),
      f"ranks=2 in Python: DDP over Gloo, both ranks' figures, one timed collective per bucket per step "
      f"({[round(r['comm_ms_per_step'], 2) for r in pd.get('ranks', [])]} ms)")
check(pd.get("bucket_bytes") and pd.get("bucket_bytes") == cd.get("bucket_bytes"),
      f"Python's DDP builds the C++ worker's buckets for the same model and knobs ({pd.get('bucket_bytes')} vs {cd.get('bucket_bytes')})")
obs = applied(ddp_runs["python"])
check("2 micro-batches of 8" in obs.get("grad_accum", "") and "rebuilt after step 1" in obs.get("bucket_mb", ""),
      f"grad_accum=2 under no_sync; buckets read back from DDP ({obs.get('bucket_mb')})")
check(ddp_runs["torchrun"].get("status") == "ok" and ddp_runs["torchrun"].get("dist", {}).get("launcher") == "torchrun",
      "--launcher torchrun starts the Python worker's ranks (torchrun's agent store)")
ddp_snippet = run([autotune, "apply", *gpt[:6], "--device", "cpu", "--lang", "python", "--set", "batch_size=8", "--set", "ranks=2",
                   "--set", "comm_hook=bf16", "--set", "compile=default"]).stdout
check(ddp_snippet.find("model = GptMini()") < ddp_snippet.find("model = DDP(model)") < ddp_snippet.find("model = torch.compile(model)"),
      "apply with ranks=2: the model built by its factory, wrapped in DDP, then compiled around DDP")
script = os.path.join(work, "ddp_snippet.py")
with open(script, "w") as f:
    f.write("import torch\ntorch.manual_seed(0)\nlr = 1e-3\nepochs = 1\ng = torch.Generator().manual_seed(1)\n"
            "w = torch.randint(512, (64, 65), generator=g)\ndataset = list(zip(w[:, :-1], w[:, 1:]))\n"
            + ddp_snippet.replace("model = torch.compile(model)", "pass  # (compiled in the tune's loop check above)")
            + "print(f'rank {rank}: {i + 1} steps, loss {loss.item():.4f}')\n")
r = run([os.path.join(os.path.dirname(py), "torchrun"), "--standalone", "--nproc_per_node=2", script],
        env=dict(venv_path, PYTHONPATH=os.path.join(source, "bench"), OMP_NUM_THREADS="1"))
# Seen once in a full suite run (2026-11-27): both ranks trained and printed, then one aborted in the interpreter's
# teardown after destroy_process_group ("terminate called without an active exception", exit -6) — torch's Gloo
# threads outliving Python, not the loop. Accepted only in that form: every rank's steps printed, a SIGABRT, nothing else.
teardown_abort = (r.returncode != 0 and "terminate called without an active exception" in r.stderr
                  and "exitcode: -6" in r.stderr and r.stderr.count("Traceback (most recent call last)") <= 1)  # torchrun's own
check((r.returncode == 0 or teardown_abort) and r.stdout.count("4 steps, loss") == 2,
      "the printed DDP loop runs as printed under torchrun: 2 ranks × 4 steps" +
      (" (then a rank aborted at interpreter exit, after destroy_process_group: torch's Gloo teardown)" if teardown_abort else
       "" if r.returncode == 0 else f": exit {r.returncode}, {r.stderr[-800:]}"))

finish()
