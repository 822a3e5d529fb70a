#!/usr/bin/env python3
"""The user's training as a task file (--task, pyworker/autotune_pyworker/task.py), run by the real tuner: what holds
whatever the timings.

    task_test.py BUILD_DIR SOURCE_DIR

Checked: the task machinery against plain PyTorch (task_reference.py: the rebuilt optimizer takes the user's
optimizer's steps, the default losses, the feed's epochs); trials of three tasks — a two-headed model with its own loss
and SGD + Nesterov, a dict dataset with its own padding collate and a model returning its loss under Adam(β2 0.98),
photos decoded by PIL through torchvision transforms (skipped without torchvision) — each with the loader knobs and
optimizer_impl read back, the data wait recorded, the files valid against the schema; a class without foreach= kept as
built with the reason; a DataLoader worker that dies named in the trial's error; `autotune tune --task` searching the
loader knobs on the task's own data, its report naming the task and the data; every bad task refused in one line
(exit 2) naming the function, nothing left behind. Exit 77 without a Python with torch 2.11 and jsonschema.
"""
import json
import re
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_worker_common import (SHORT as short, Setup, applied, check, finish,  # noqa: E402
                                  has_modules, run, share_warm_worker)

S = Setup("task-test")
autotune, py, work, here = S.autotune, S.py, S.work, S.here
# Set before the shared worker starts: a command whose environment differs from the server's starts cold (every command
# after the photos' trial was a fresh interpreter, about 20 torch imports).
os.environ["TASK_PHOTOS"] = os.path.join(work, "photos")
share_warm_worker(S.build)  # torch imported once for the whole test (python_worker_common.py)
tasks = os.path.join(here, "tasks")

# ---- the machinery against plain PyTorch, in the project's Python
r = run([py, os.path.join(here, "task_reference.py"), os.path.join(S.source, "pyworker"), tasks])
for line in r.stdout.splitlines()[:-1]:
    check(line.startswith("ok"), "reference: " + line[5:])
check(r.returncode == 0 and r.stdout.strip().endswith("0 failure(s)"), "task_reference.py passes")


def trial(task, sets, name):
    out = os.path.join(work, name)
    r = run([autotune, "trial", "--task", os.path.join(tasks, task), *[a for s in sets for a in ("--set", s)], *short,
             "--out", out])
    path = os.path.join(out, "0001", "result.json")
    res = json.load(open(path)) if os.path.exists(path) else {}
    return r, res, os.path.join(out, "0001")


# ---- a custom loss, SGD with Nesterov momentum, the loader in two worker processes, foreach
r, res, d = trial("two_heads_task.py", ["batch_size=16", "num_workers=2", "optimizer_impl=foreach"], "two-heads")
obs = applied(res)
check(r.returncode == 0 and res.get("status") == "ok", f"two heads: the trial runs ({res.get('message', r.stderr[-300:])})")
plan = json.load(open(os.path.join(d, "plan.json"))) if os.path.exists(os.path.join(d, "plan.json")) else {}
check(plan.get("model") == "task:" + os.path.join(tasks, "two_heads_task.py"), "the plan names the task file, absolute")
check("torch.optim.SGD foreach (foreach=True" in obs.get("optimizer_impl", "") and "momentum=0.9" in obs["optimizer_impl"]
      and "nesterov=True" in obs["optimizer_impl"], f"optimizer_impl=foreach on the task's SGD, its momentum kept ({obs.get('optimizer_impl')})")
check(obs.get("num_workers", "").startswith("DataLoader(num_workers=2): 2 worker process(es) alive"),
      f"num_workers=2: two persistent loader processes ({obs.get('num_workers')})")
data = res.get("data", {})
steps = sum(w["steps"] for w in res.get("windows", []))
check("dataset() Points" in data.get("source", "") and data.get("dataset_size") == 512 and data.get("num_workers") == 2
      and data.get("batches", 0) >= steps > 0 and data.get("wait_seconds", 0) > 0,
      f"result.json data: the task's dataset, its size, the loader's batches and the wait for them ({data})")
check(res.get("breakdown_ms", {}).get("data", 0) > 0, "the step's data phase is timed")
check(len(res.get("losses", [])) == steps and all(isinstance(x, float) for x in res["losses"]), "every measured step's loss")
for path, err in S.validate([os.path.join(d, "plan.json"), os.path.join(d, "result.json")]):
    check(err == "", f"{os.path.basename(path)} validates against the schema{': ' + err if err else ''}")

# ---- a dict dataset, the task's padding collate, the model's own loss, Adam with β2 = 0.98, the for-loop
r, res, d = trial("text_task.py", ["optimizer_impl=loop", "num_workers=1", "prefetch=4"], "text")
obs = applied(res)
check(r.returncode == 0 and res.get("status") == "ok", f"text: the trial runs ({res.get('message', r.stderr[-300:])})")
check("torch.optim.Adam for-loop (foreach=False" in obs.get("optimizer_impl", "") and "betas=(0.9, 0.98)" in obs["optimizer_impl"],
      f"optimizer_impl=loop on the task's Adam, β2 kept ({obs.get('optimizer_impl')})")
check(obs.get("prefetch") == "DataLoader(prefetch_factor=4)", "prefetch=4 read back from the DataLoader")
check(res.get("batch_size") == 8, "the batch is the task's batch_size = 8")

# ---- data parallel: two ranks, each its share of the task's dataset through DistributedSampler, the task's loss under DDP
r, res, d = trial("two_heads_task.py", ["ranks=2", "batch_size=8"], "two-ranks")
obs = applied(res)
check(res.get("status") == "ok" and obs.get("ranks", "").startswith("2 processes over gloo")
      and res.get("data", {}).get("sampler", "").startswith("DistributedSampler (rank 0 of 2"),
      f"ranks=2: DDP around the task's model, each rank its share ({obs.get('ranks')}; {res.get('data', {}).get('sampler')})")

# ---- a class without foreach=: kept as built, the reason in skipped
r, res, d = trial("plain_optimizer_task.py", ["optimizer_impl=foreach"], "plain")
check(res.get("status") == "ok" and any(s["knob"] == "optimizer_impl" and "takes no foreach= argument" in s["reason"]
                                        for s in res.get("skipped", [])),
      f"optimizer_impl=foreach on a class without it: skipped with the reason ({res.get('skipped')})")

# ---- a task's own scheduler(): stepped after every optimizer step, warm-up then cosine
r, res, d = trial("scheduled_task.py", ["optimizer_impl=foreach"], "scheduled")
steps_run = res.get("warmup_steps", 0) + sum(w["steps"] for w in res.get("windows", []))
m = re.search(r"scheduler LambdaLR \(interval step\) stepped to lr ([\d.e-]+)", applied(res).get("optimizer_impl", ""))
ref = run([py, "-c", f"import sys; sys.path.insert(0, {tasks!r}); import scheduled_task as t; print(0.1 * t.shape({steps_run}))"])
want = float(ref.stdout) if ref.returncode == 0 else float("nan")  # the task's own shape(), in the project's Python
check(res.get("status") == "ok" and m is not None and abs(float(m.group(1)) - want) <= 1e-9 + 1e-6 * want,
      f"the task's scheduler() stepped once per optimizer step ({steps_run} steps: lr {m.group(1) if m else '?'} vs {want})")

# ---- photos through PIL and torchvision transforms
has_tv = has_modules(py, "torchvision", "PIL")
photos = os.path.expanduser("~/.cache/autotune/test-images/photos")
if has_tv and os.path.isdir(photos):  # the four smallest photos (the test checks the path, not the decoder's speed)
    small = os.environ["TASK_PHOTOS"]
    os.makedirs(small, exist_ok=True)
    for f in sorted(os.listdir(photos), key=lambda f: os.path.getsize(os.path.join(photos, f)))[:4]:
        shutil.copy(os.path.join(photos, f), small)
    r, res, d = trial("photo_task.py", ["num_workers=2", "batch_size=4"], "photos")
    obs = applied(res)
    check(res.get("status") == "ok" and res.get("data", {}).get("dataset_size", 0) == 4,
          f"photos: PIL + torchvision transforms through the DataLoader ({res.get('message')}, {res.get('data', {}).get('dataset_size')} photos)")
else:
    print("skip photos: no torchvision/PIL in the project's Python or no test photos (make deps fetches them)")

# ---- a LightningModule as it stands (skipped without Lightning): training_step's loss, configure_optimizers' SGD and
# its StepLR (interval step, every 4 steps) stepped, train_dataloader()'s batch and collate; its Trainer arguments run
has_lightning = has_modules(py, "lightning")
if has_lightning:
    r, res, d = trial("lightning_task.py", ["num_workers=1", "optimizer_impl=foreach"], "lightning")
    obs = applied(res)
    opt = obs.get("optimizer_impl", "")
    steps_run = res.get("warmup_steps", 0) + sum(w["steps"] for w in res.get("windows", []))

    m = re.search(r"stepped to lr ([\d.e-]+)", opt)
    want = 0.1 * 0.99 ** (steps_run // 4)
    check(res.get("status") == "ok" and res.get("batch_size") == 16 and "torch.optim.SGD foreach (foreach=True" in opt,
          f"Lightning: trained with configure_optimizers' SGD (foreach set in place) at train_dataloader()'s batch 16 ({opt})")
    check(m is not None and abs(float(m.group(1)) - want) <= 1e-9 + 1e-6 * want,
          f"Lightning: the StepLR stepped once per 4 optimizer steps ({steps_run} steps: lr {m.group(1) if m else '?'} vs {want:.6g})")
    r = run([autotune, "apply", "--task", os.path.join(tasks, "lightning_task.py"), "--device", "cpu", "--set", "num_workers=1",
             "--set", "grad_accum=2", "--set", "precision=amp_bf16"])
    script = os.path.join(work, "apply_lightning.py")
    open(script, "w").write(r.stdout)
    ran = subprocess.run([py, script], capture_output=True, text=True, timeout=300, cwd=work)
    m = re.search(r"fitted: (\d+) optimizer steps, loss ([\d.]+)", ran.stdout)
    check(r.returncode == 0 and 'precision="bf16-mixed"' in r.stdout and "accumulate_grad_batches=2" in r.stdout and
          "num_workers=1, persistent_workers=True" in r.stdout and ran.returncode == 0 and m and int(m.group(1)) == 8,
          f"apply --task (Lightning): the printed Trainer and DataLoader arguments run (256 samples / 16 / 2 = 8 steps; "
          f"{m.group(0) if m else (ran.stderr.strip().splitlines() or [''])[-1][:200]})")
else:
    print("skip Lightning: not in the project's Python (scripts/setup-deps.sh installs it as an optional test tool)")

# ---- a DataLoader worker that dies: the trial's error names it
dies = os.path.join(work, "dies_task.py")
open(dies, "w").write(open(os.path.join(tasks, "plain_optimizer_task.py")).read() + '''

class Dies(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if torch.utils.data.get_worker_info() is not None:
            import os
            os._exit(3)
        return torch.zeros(6), 0


def dataset():
    return Dies()
''')
r = run([autotune, "trial", "--task", dies, "--set", "num_workers=1", *short])
check("DataLoader" in r.stdout + r.stderr and ("exited unexpectedly" in r.stdout + r.stderr or "killed" in r.stdout + r.stderr),
      f"a loader worker that dies: the trial says so ({(r.stdout + r.stderr).strip().splitlines()[-1:] if (r.stdout + r.stderr).strip() else ''})")

# ---- autotune tune --task: the loader knobs searched on the task's own data
out = os.path.join(work, "tune")
# The budget is a ceiling, not the test's length: quiet, the two-config grid ends in ~40 s; beside the rest of the
# suite on 2 cores a 60 s budget once ran out before num_workers=1 was measured.
r = run([autotune, "tune", "--task", os.path.join(tasks, "two_heads_task.py"), "--knobs", "num_workers=0,1",
         "--objective", "throughput", "--budget", "240s", "--confirm-rounds", "1", "--confirm-top", "1", *short, "--out", out])
check(r.returncode in (0, 1) and os.path.exists(os.path.join(out, "report.md")), f"tune --task runs (exit {r.returncode})")
check("autotune tune: task " in r.stdout, "the console names the task")
if os.path.exists(os.path.join(out, "journal.sqlite")):
    db = sqlite3.connect(os.path.join(out, "journal.sqlite"))
    rows = [(c, json.loads(j)) for c, j in db.execute("SELECT config_key, result_json FROM trials")]
    # Every trial that ran reports the loader it built, whatever became of it; the listing says what each ended as.
    ran = [(cfg, res.get("status"), res.get("data", {}).get("num_workers"), res.get("message", "")[:160]) for cfg, res in rows]
    workers = {w for _, _, w, _ in ran if w is not None}
    check(workers >= {0, 1}, f"trials ran with the loader at num_workers 0 and 1 ({sorted(set(ran), key=str)})")
    if not workers >= {0, 1}:
        print("the tune's console, last lines:\n" + "\n".join(r.stdout.splitlines()[-25:]) + "\n" + r.stderr[-2000:])
    md = open(os.path.join(out, "report.md")).read()
    check("two_heads_task.py" in md and "dataset()" in md, "report.md names the task and its dataset()")

# ---- apply: the task's whole loop, run as printed (nothing but the task file around it)
for task, sets, what in (
        ("two_heads_task.py", ["batch_size=16", "num_workers=2", "optimizer_impl=foreach", "grad_accum=2", "log_every=2"],
         "the task's loss() and SGD, two loader processes, accumulation"),
        ("text_task.py", ["optimizer_impl=loop", "zero_grad=zeros", "prefetch=4", "num_workers=1"],
         "the task's collate, the dict batch's own loss (no loss())"),
        ("plain_optimizer_task.py", ["precision=amp_bf16"], "(x, y) cross-entropy by default, a class without foreach=, autocast")):
    r = run([autotune, "apply", "--task", os.path.join(tasks, task), "--device", "cpu", *[a for s in sets for a in ("--set", s)]])
    script = os.path.join(work, "apply_" + task)
    open(script, "w").write(r.stdout)
    ran = subprocess.run([py, script], capture_output=True, text=True, timeout=300, cwd=work)
    steps_printed = [l for l in ran.stdout.splitlines() if l.startswith("step ")]
    check(r.returncode == 0 and ran.returncode == 0 and steps_printed and "nan" not in ran.stdout,
          f"apply --task {task}: the printed loop runs as printed — {what} ({len(steps_printed)} loss lines; "
          f"{(ran.stderr.strip().splitlines() or [''])[-1][:200]})")
    if task == "two_heads_task.py":
        check("num_workers=2, persistent_workers=True" in r.stdout and 'group["foreach"] = True' in r.stdout
              and "task.loss(model, b)" in r.stdout, "the loop carries the loader's and the optimizer's settings and the task's loss")
# ---- apply for a data-parallel config of a task: one rank's script, launched by torchrun as the script says
r = run([autotune, "apply", "--task", os.path.join(tasks, "two_heads_task.py"), "--device", "cpu", "--set", "ranks=2",
         "--set", "grad_accum=2", "--set", "bucket_mb=1", "--set", "num_workers=1", "--set", "optimizer_impl=foreach"])
script = os.path.join(work, "apply_ddp_two_heads.py")
open(script, "w").write(r.stdout)
check(r.returncode == 0 and "model = DDP(model, bucket_cap_mb=1)" in r.stdout and "DistributedSampler(dataset" in r.stdout
      and "model.no_sync()" in r.stdout and "task.loss(model, b)" in r.stdout and 'group["foreach"] = True' in r.stdout
      and "torchrun --standalone --nproc_per_node=2" in r.stdout,
      "apply --task with ranks=2: the task's script under DDP (bucket_cap_mb, its sampler share, no_sync, its loss and optimizer)")
ran = subprocess.run([py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", script], capture_output=True,
                     text=True, timeout=300, cwd=work, env=dict(os.environ, OMP_NUM_THREADS="1"))
steps_printed = [l for l in ran.stdout.splitlines() if l.startswith("step ")]
# 512 samples, 2 ranks, 16 a batch, 2 batches a step: 8 steps on each rank's share (16 had each rank read them all)
check(ran.returncode == 0 and len(steps_printed) == 8 and "nan" not in ran.stdout,
      f"the data-parallel script runs under torchrun as printed: rank 0 prints 8 steps ({len(steps_printed)}; "
      f"{(ran.stderr.strip().splitlines() or [''])[-1][:200]})")

r = subprocess.run([autotune, "apply", "--task", os.path.join(tasks, "text_task.py"), "--set", "batch_size=4", "--lang", "cpp"],
                   capture_output=True, text=True)
check(r.returncode == 2 and "is Python" in r.stderr, "apply --lang cpp for a task: refused, the loop is Python")

# ---- bad tasks: one line naming the function, exit 2, nothing left behind
BAD = {
    "import": ("import not_a_module_anywhere\n", "cannot load it: ModuleNotFoundError"),
    "no model": ("def dataset():\n    return None\n", "no model() function"),
    "model not a module": ("def model():\n    return 3\n", "model() returned int, not a torch.nn.Module"),
    "dataset raises": ("import torch\ndef model():\n    return torch.nn.Linear(2, 2)\ndef dataset():\n    raise OSError('no disk')\n",
                       "dataset() raises OSError: no disk"),
    "dataset not a dataset": ("import torch\ndef model():\n    return torch.nn.Linear(2, 2)\ndef dataset():\n    return [1, 2]\n",
                              "dataset() returned list, not a torch.utils.data.Dataset"),
    "first batch": ("import torch\ndef model():\n    return torch.nn.Linear(3, 2)\n"
                    "def dataset():\n    return torch.utils.data.TensorDataset(torch.zeros(8, 5), torch.zeros(8).long())\n",
                    "the model cannot take the first batch (list((2, 5) float32, (2,) int64))"),
    "loss not scalar": ("import torch\ndef model():\n    return torch.nn.Linear(5, 2)\n"
                        "def dataset():\n    return torch.utils.data.TensorDataset(torch.zeros(8, 5), torch.zeros(8).long())\n"
                        "def loss(model, batch):\n    return model(batch[0])\n", "loss() returned a tensor of shape (2, 2), not a scalar"),
    "loss not finite": ("import torch\ndef model():\n    return torch.nn.Linear(5, 2)\n"
                        "def dataset():\n    return torch.utils.data.TensorDataset(torch.zeros(8, 5), torch.zeros(8).long())\n"
                        "def loss(model, batch):\n    return model(batch[0]).sum() * float('nan')\n", "loss() is nan at step 0"),
    "optimizer none": ("import torch\ndef model():\n    return torch.nn.Linear(5, 2)\n"
                       "def dataset():\n    return torch.utils.data.TensorDataset(torch.zeros(8, 5), torch.zeros(8).long())\n"
                       "def optimizer(params):\n    return None\n", "optimizer() returned NoneType, not a torch.optim.Optimizer"),
    "optimizer of another model": ("import torch\ndef model():\n    return torch.nn.Linear(5, 2)\n"
                                   "def dataset():\n    return torch.utils.data.TensorDataset(torch.zeros(8, 5), torch.zeros(8).long())\n"
                                   "def optimizer(params):\n    return torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)\n",
                                   "optimizer() holds none of the model's parameters"),
    "batch_size": ("import torch\nbatch_size = 0\ndef model():\n    return torch.nn.Linear(5, 2)\n", "batch_size = 0"),
}
if has_lightning:
    BAD["Lightning without training_step"] = ("import lightning as L, torch\nclass M(L.LightningModule):\n"
                                              "    def __init__(self):\n        super().__init__()\n"
                                              "        self.l = torch.nn.Linear(2, 2)\ndef model():\n    return M()\n",
                                              "the LightningModule M has no training_step")
# Three through `autotune tune` (exit 2, one line, no run folder); every case through the worker's own describe path
# (Built + probe + info, what `describe` runs) in one Python process: the same refusal, without a torch import each.
THROUGH_CLI = ("no model", "first batch", "optimizer of another model")
paths = {}
for name, (text, want) in BAD.items():
    paths[name] = os.path.join(work, f"bad_{name.replace(' ', '_')}.py")
    open(paths[name], "w").write(text)
describe = ("import sys\nsys.path.insert(0, sys.argv[1])\nfrom autotune_pyworker.build import Built\n"
            "from autotune_pyworker.errors import Refused\n"
            "for p in sys.argv[2:]:\n"
            "    try:\n"
            "        b = Built({'model': 'task:' + p})\n        b.probe()\n        b.info()\n        print(p + '\\tNO REFUSAL')\n"
            "    except Refused as e:\n"
            "        print(p + '\\t' + str(e).replace(chr(10), ' '))\n")
# make tune's default task (examples/digits) is described by the same path: built and probed on the digits that
# `make deps` fetches, or, without them, refused in one line naming how to get them.
digits_task = os.path.join(S.source, "examples", "digits", "task.py")
digits_file = os.path.join(os.environ.get("AUTOTUNE_CACHE") or os.path.expanduser("~/.cache/autotune"), "test-images",
                           "digits.csv.gz")
r = run([py, "-c", describe, os.path.join(S.source, "pyworker"), *paths.values(), digits_task])
said = dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)
if os.path.exists(digits_file) and not os.environ.get("AUTOTUNE_DIGITS"):
    check(said.get(digits_task) == "NO REFUSAL", f"make tune's example task builds and probes ({said.get(digits_task)})")
else:
    check("make deps" in said.get(digits_task, ""), f"make tune's example task without its data: refused naming make deps "
          f"({said.get(digits_task)})")
for name, (text, want) in BAD.items():
    check(want in said.get(paths[name], ""), f"bad task ({name}): the worker refuses it naming the cause ({said.get(paths[name])})")
for name in THROUGH_CLI:
    out = os.path.join(work, "bad-out-" + name.replace(" ", "_"))
    r = subprocess.run([autotune, "tune", "--task", paths[name], "--budget", "1m", "--out", out], capture_output=True,
                       text=True, timeout=300)
    lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
    check(r.returncode == 2 and len(lines) == 1 and BAD[name][1] in lines[0] and not os.path.exists(out),
          f"bad task ({name}) through autotune tune: exit 2, one line, nothing left ({r.returncode}: "
          f"{lines[-1] if lines else r.stdout[-200:]})")
r = subprocess.run([autotune, "tune", "--task", os.path.join(work, "nowhere.py")], capture_output=True, text=True)
check(r.returncode == 2 and "no such file" in r.stderr, "a task file that is not there: refused")
r = subprocess.run([autotune, "tune", "--task", os.path.join(tasks, "text_task.py"), "--model", "x.py:M"], capture_output=True,
                   text=True)
check(r.returncode == 2 and "excludes" in r.stderr, "--task with --model: refused")
finish()
