"""Run in the project's Python (torch): the task machinery against references computed here with plain PyTorch.

    python task_reference.py PYWORKER_DIR TASKS_DIR

Prints one line per check ("ok ..." / "FAIL ...") and exits 1 on a failure."""
import copy
import os
import sys

import torch

sys.path.insert(0, sys.argv[1])
from autotune_pyworker.errors import Refused  # noqa: E402
from autotune_pyworker.task import Task, TaskFeed, default_loss, to_device  # noqa: E402

tasks = sys.argv[2]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def train(opt_of, model, steps=5):
    """`steps` SGD/Adam steps of `model` on fixed batches; the parameters after."""
    g = torch.Generator().manual_seed(7)
    opt = opt_of(model)
    for _ in range(steps):
        x = torch.randn(16, 20, generator=g)
        logits, value = model(x)
        loss = logits.logsumexp(1).mean() + value.square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return [p.detach().clone() for p in model.parameters()]


# optimizer_impl rebuilds the user's optimizer from its own param groups: the same updates as the user's optimizer
# (SGD with momentum and Nesterov here), for-loop and foreach alike; its hyperparameters are kept.
t = Task("task:" + os.path.join(tasks, "two_heads_task.py"))
torch.manual_seed(0)
base = t.model()
ref = train(lambda m: t.fns["optimizer"](m.parameters()), copy.deepcopy(base))
for impl in ("loop", "foreach"):
    got = train(lambda m: t.optimizer(m.parameters(), impl, 1e-3, (0.9, 0.999), 1e-8)[0], copy.deepcopy(base))
    check(all(torch.allclose(a, b, atol=1e-6, rtol=1e-5) for a, b in zip(ref, got)),
          f"optimizer_impl={impl}: the rebuilt SGD(momentum=0.9, nesterov=True) takes the user's optimizer's steps")
opt, why = t.optimizer(base.parameters(), "foreach", 1e-3, (0.9, 0.999), 1e-8)
g = opt.param_groups[0]
check(why is None and g["foreach"] is True and g["momentum"] == 0.9 and g["nesterov"] and g["lr"] == 0.02,
      f"the rebuilt optimizer keeps lr, momentum and nesterov, foreach=True ({ {k: g[k] for k in ('lr', 'momentum', 'foreach')} })")

# Adam with a non-default beta2 keeps it; a class without foreach= is kept as built, with the reason.
t2 = Task("task:" + os.path.join(tasks, "text_task.py"))
opt, why = t2.optimizer(t2.model().parameters(), "foreach", 1e-3, (0.9, 0.999), 1e-8)
check(type(opt).__name__ == "Adam" and opt.param_groups[0]["betas"] == (0.9, 0.98) and opt.defaults["foreach"] is True,
      "Adam(betas=(0.9, 0.98)) rebuilt with foreach=True keeps its beta2")
t3 = Task("task:" + os.path.join(tasks, "plain_optimizer_task.py"))
opt, why = t3.optimizer(t3.model().parameters(), "foreach", 1e-3, (0.9, 0.999), 1e-8)
check(type(opt).__name__ == "PlainSGD" and why and "takes no foreach= argument" in why,
      f"a class without foreach= runs as built, the reason said ({why})")

# The default losses against torch.nn.functional: (x, y) cross-entropy; a dict's model(**batch).loss.
m = torch.nn.Linear(4, 3)
x, y = torch.randn(5, 4), torch.tensor([0, 2, 1, 1, 0])
check(torch.equal(default_loss(m, (x, y)), torch.nn.functional.cross_entropy(m(x), y)), "default loss of (x, y): cross-entropy")
yr = torch.randn(5, 3)
check(torch.equal(default_loss(m, (x, yr)), torch.nn.functional.mse_loss(m(x), yr)), "default loss of (x, float y): MSE")
lm = t2.model()
batch = t2.collate()([t2.dataset()[i] for i in range(3)])
check(torch.equal(default_loss(lm, batch), lm(**batch)["loss"]), "default loss of a dict: the model's own loss")
check(batch["input_ids"].shape[1] == max(len(t2.dataset()[i]["input_ids"]) for i in range(3)),
      "the task's collate pads to the batch's longest sequence")
try:
    default_loss(m, [x, y, y])
    check(False, "a batch of three without loss() is refused")
except Refused as e:
    check("define loss(model, batch)" in str(e), f"a batch of three without loss() is refused: {e}")

# The feed: the user's dataset through DataLoader, endless (epochs roll over), whole batches, each sample once per epoch.
feed = TaskFeed(t3, t3.dataset(), 16, seed=5, num_workers=0)
seen = [feed.fetch()[1] for _ in range(4)]
check(feed.batches == 4 and all(len(b) == 16 for b in seen), "64 samples at batch 16: four whole batches")
more = [feed.fetch()[1] for _ in range(4)]
check(feed.epoch == 1 and len(more) == 4, "the fifth batch starts a second epoch")
ids = sorted(torch.cat([b for b in seen]).tolist())
check(sorted(t3.dataset().tensors[1].tolist()) == ids, "an epoch holds each sample once (the seeded random order)")
nested = to_device({"a": (torch.ones(2), [torch.zeros(1)]), "b": 3}, "cpu")
check(isinstance(nested["a"], tuple) and isinstance(nested["a"][1], list) and nested["b"] == 3, "to_device keeps the batch's structure")

# A task's scheduler(), and another rate for the same training (lr-sweep, converge: setup.lr_scale): the whole schedule
# scales — warm-up, peak and decay — as if the user had written the rate × 3 into it (LambdaLR, OneCycleLR, and a
# SequentialLR of LinearLR then CosineAnnealingLR), step by step.
def rates(opt, sched, steps=30):
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


st = Task("task:" + os.path.join(tasks, "scheduled_task.py"))
lin = torch.nn.Linear(6, 2)
opt, _ = st.optimizer(lin.parameters(), "loop", 1e-3, (0.9, 0.999), 1e-8)
st.build_scheduler(opt)
st.scale_rate(opt, 3.0)
ref_opt = torch.optim.SGD(torch.nn.Linear(6, 2).parameters(), lr=0.3, momentum=0.9)
ref = rates(ref_opt, torch.optim.lr_scheduler.LambdaLR(ref_opt, st.mod.shape))
got = rates(opt, st.scheduler)
check(type(st.scheduler).__name__ == "LambdaLR" and max(abs(a - b) for a, b in zip(got, ref)) < 1e-12,
      f"the task's LambdaLR warm-up and cosine scaled × 3 step by step (peak {max(got):.3g}, reference {max(ref):.3g})")


def scaled_like_written(make, lr, scale=2.5):
    """`make(opt, lr)` built at lr, its rates × scale by scale_rate, against the same built at lr × scale."""
    t = Task("task:" + os.path.join(tasks, "scheduled_task.py"))
    o = torch.optim.SGD(torch.nn.Linear(6, 2).parameters(), lr=lr)
    t.scheduler = make(o, lr)
    t.scale_rate(o, scale)
    r = torch.optim.SGD(torch.nn.Linear(6, 2).parameters(), lr=lr * scale)
    a, b = rates(o, t.scheduler), rates(r, make(r, lr * scale))
    return max(abs(x - y) for x, y in zip(a, b)) / max(b)


lrs = torch.optim.lr_scheduler
check(scaled_like_written(lambda o, lr: lrs.OneCycleLR(o, max_lr=lr, total_steps=30), 0.2) < 1e-9,
      "a OneCycleLR (its max_lr in the groups) scaled as if written at the scaled rate")
check(scaled_like_written(lambda o, lr: lrs.SequentialLR(o, [lrs.LinearLR(o, 0.1, total_iters=5),
                                                            lrs.CosineAnnealingLR(o, T_max=25)], milestones=[5]), 0.2) < 1e-9,
      "a SequentialLR of LinearLR then CosineAnnealingLR scaled as if written at the scaled rate")
try:
    bad = Task("task:" + os.path.join(tasks, "scheduled_task.py"))
    bad.fns["scheduler"] = lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o)
    bad.build_scheduler(torch.optim.SGD(torch.nn.Linear(6, 2).parameters(), lr=0.1))
    check(False, "a ReduceLROnPlateau scheduler() is refused")
except Refused as e:
    check("ReduceLROnPlateau needs a validation metric" in str(e), f"a ReduceLROnPlateau scheduler() is refused ({e})")

# A converge ramp under the task's schedule (converge.py): each later phase scales the schedule by its change of rate
# (×2 here) and the schedule goes on from where it was, rather than the phase's rate overwriting the scheduler's.
from types import SimpleNamespace  # noqa: E402

from autotune_pyworker.converge import run_converge  # noqa: E402

rt = Task("task:" + os.path.join(tasks, "scheduled_task.py"))
ro, _ = rt.optimizer(torch.nn.Linear(6, 2).parameters(), "loop", 1e-3, (0.9, 0.999), 1e-8)
rt.build_scheduler(ro)
fake = SimpleNamespace(opt=ro, s=SimpleNamespace(grad_accum=1, batch_size=8), denv=SimpleNamespace(world=1, rank=0),
                       losses=[], group=None, graphed=None, built=SimpleNamespace(task=rt), sync=lambda: None,
                       flush=lambda: None)


def fake_step():
    ro.step()
    rt.after_step(len(fake.losses) + 1, 0)
    fake.losses.append(1.0)


fake.step = fake_step
rec, trained, _ = run_converge(fake, {"max_samples": 8 * 30, "max_seconds": 60, "smooth_samples": 8,
                                      "ramp": [[0, 1, 0.1], [80, 1, 0.2]]})
want = 2 * 0.1 * rt.mod.shape(len(fake.losses))
check(rec["switched_at"] == [80] and abs(ro.param_groups[0]["lr"] - want) < 1e-12,
      f"a ramp under the task's schedule: ×2 the schedule after its switch ({ro.param_groups[0]['lr']:.6g} vs {want:.6g})")

# The quiet-host guard's own CPU time includes the trial's live child processes (DataLoader workers): a loader's
# workers are the trial's work, not another program's (they were counted as "others", so no num_workers > 0 could win).
import multiprocessing  # noqa: E402
import time  # noqa: E402

from autotune_pyworker import host  # noqa: E402


def burn(q, seconds):
    t = time.process_time()
    while time.process_time() - t < seconds:
        pass
    q.put(time.process_time())
    time.sleep(0.5)  # alive when the parent reads again


q = multiprocessing.Queue()
before = host.read_cpus()
child = multiprocessing.Process(target=burn, args=(q, 0.6))
child.start()
child_cpu = q.get(timeout=30)
after = host.read_cpus()
child.join()
check(after[1] - before[1] >= 0.9 * child_cpu,
      f"a live child's CPU time is the trial's own ({after[1] - before[1]:.2f} s counted, the child used {child_cpu:.2f} s)")
load = host.host_load_between(before, after)
check(load is not None and 0 <= load["steal_cores"] <= load["other_cores"] and len(after) == 5 and after[4] >= before[4],
      f"the hypervisor's steal is named within other programs' time ({load})")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
