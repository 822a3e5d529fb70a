#!/usr/bin/env python3
"""The held-out loss of `autotune converge` (docs/time-to-train.md, "A held-out target") with the real tuner and the
Python worker:

    held_out_test.py BUILD_DIR SOURCE_DIR

Checked: a task's val_dataset() found by describe and evaluated without being asked (the default cadence), at the start,
every --val-every samples and at the end; its time kept off the training clock (a held-out set made slow on purpose:
the runs still train their --seconds, the evaluation time counted apart); the baseline's last held-out loss equal to the
same loss computed in plain PyTorch from the weights it saved (--save); the reports' held-out section and verdict; a
held-out token file (--val-data) for a token model; --val-every 0 turning it off. `autotune lr-sweep` on the task judged
on its val_dataset() as well: every rate evaluated at the checkpoint and at the horizon, the rates ranked by it, the
sweep saying whether the training loss's best is the held-out best. Exit 77 without a Python with torch.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_worker_common import Setup, check, finish, run, share_warm_worker  # noqa: E402

S = Setup("held-out-test")
autotune, py, work = S.autotune, S.py, S.work
task = os.path.join(S.here, "tasks", "held_out_task.py")
DELAY = 0.005  # seconds per held-out sample: 32 samples make an evaluation last ≥ 0.16 s
# Read by the task's val_dataset() only, so set for every command: the shared worker's environment is then theirs, and
# each converge forks its runs from it (a command whose environment differs would start cold).
os.environ["HELD_OUT_DELAY"] = str(DELAY)
share_warm_worker(S.build)  # torch imported once for the whole test (python_worker_common.py)

# ---- a task's val_dataset(): evaluated every 4,096 samples, slow on purpose, the baseline's weights saved
conv, weights = os.path.join(work, "conv"), os.path.join(work, "baseline.pt")
r = run([autotune, "converge", "--task", task, "--candidate-set", "batch_size=64", "--seconds", "1.5", "--reruns", "1",
         "--arm-orders", "1", "--val-every", "4096", "--val-samples", "32", "--save", weights, "--out", conv])
check(r.returncode == 0, "converge --task with val_dataset(): exit 0")
check("held-out loss: the task's val_dataset() (Slow, 256 samples), the first 32 samples every 4,096 samples trained"
      in r.stdout, "the held-out set and its cadence said before the runs")
cv = json.load(open(os.path.join(conv, "converge.json"))) if r.returncode == 0 else {}
h = cv.get("held_out") or {}
check(h.get("samples") == 32 and h.get("every") == 4096 and "val_dataset()" in h.get("source", ""),
      f"converge.json held_out: 32 samples every 4,096 from the task's val_dataset() ({h.get('source')})")
runs = {x["label"]: x for x in cv.get("runs", [])}
evals = 0
for hr in h.get("runs", []):
    pts, curve = hr["points"], runs[hr["label"]]["points"]
    evals += len(pts)
    spaced = all(b[0] - a[0] >= 4096 for a, b in zip(pts[1:-1], pts[2:-1]))
    check(len(pts) >= 3 and pts[0][:2] == [0, 0] and spaced and pts[-1][0] == curve[-1][0] and
          abs(pts[-1][1] - curve[-1][1]) < 1e-9,
          f"{hr['label']}: evaluated at the start, every 4,096 samples and at its end ({len(pts)} evaluations, the last at "
          f"{pts[-1][0] if pts else '–'} samples)")
    # the step after each evaluation took a step's time on the training clock, not the evaluation's ≥ 0.32 s
    at = {p[0] for p in pts[1:-1]}
    gaps = sorted(b[1] - a[1] for a, b in zip(curve, curve[1:]) if a[0] in at)
    check(len(gaps) >= 1 and gaps[len(gaps) // 2] < 32 * DELAY,
          f"{hr['label']}: the step after an evaluation took {gaps[len(gaps) // 2] if gaps else float('nan'):.4f} s of "
          f"training time (median of {len(gaps)}), the evaluation itself ≥ {32 * DELAY:.2f} s: held-out time is not "
          "training time")
check(h.get("eval_seconds", 0) >= evals * 32 * DELAY,
      f"the evaluation time counted apart: {h.get('eval_seconds', 0):.2f} s ≥ {evals} × 32 × {DELAY} s")

# the baseline's last held-out loss against plain PyTorch on the weights it saved: the same samples, the same loss
code = ("import sys, importlib.util, torch\n"
        "spec = importlib.util.spec_from_file_location('t', sys.argv[1]); t = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(t)\n"
        "m = t.model(); m.load_state_dict(torch.load(sys.argv[2], weights_only=True)); m.eval()\n"
        "v = t.val_dataset(); x = torch.stack([v[i][0] for i in range(32)]); y = torch.stack([v[i][1] for i in range(32)])\n"
        "with torch.no_grad():\n"
        "    l = torch.nn.functional.cross_entropy(m(x), y).item()\n"
        "print(repr(l))\n")
ref = run([py, "-c", code, task, weights])
base = next((x for x in h.get("runs", []) if x["label"] == "baseline"), None)
want = float(ref.stdout.strip()) if ref.returncode == 0 else float("nan")
got = base["points"][-1][2] if base else float("nan")
check(abs(got - want) < 1e-5, f"the baseline's last held-out loss {got:.6f} = plain PyTorch on its saved weights {want:.6f}")

md = open(os.path.join(conv, "converge.md")).read() if r.returncode == 0 else ""
check("## Held-out loss" in md and "fastest to the training loss" in md and "to held-out loss" in md,
      "converge.md: the held-out section, the verdict on the fastest and the candidate's held-out ratio")
check("generalise worse: the held-out loss above measures that" in md, "converge.md's limits say the held-out loss was measured")
check(re.search(r"The fastest to the training loss, .* the fastest to the held-out loss", r.stdout) is not None,
      "the command's own output ends with the verdict on the fastest to each loss")

# ---- --val-every 0: the task's held-out samples left alone
off = os.path.join(work, "off")
r = run([autotune, "converge", "--task", task, "--candidate-set", "batch_size=32", "--seconds", "1", "--reruns", "0",
         "--arm-orders", "1", "--val-every", "0", "--out", off])
cv = json.load(open(os.path.join(off, "converge.json"))) if r.returncode == 0 else {}
check(r.returncode == 0 and cv.get("held_out") is None and "held-out loss" not in r.stdout,
      "--val-every 0: no held-out evaluation, no held-out section")

# ---- lr-sweep judged on the task's val_dataset() as well: each rate evaluates its first 32 samples at its start (the
# task's own, the same weights for every rate) and at the horizon (3,048 samples: the first 5% of the run, then 8 windows
# of 256); which rate is best on either loss is this machine's finding
sweep = os.path.join(work, "sweep")
r = run([autotune, "lr-sweep", "--task", task, "--run-length", "20000", "--orders", "2", "--smooth-samples", "256",
         "--val-samples", "32", "--out", sweep])
d = json.load(open(os.path.join(sweep, "lr-sweep.json"))) if r.returncode == 0 else {}
h = d.get("held_out") or {}
trained = [a["multiple"] for a in d.get("arms", []) if a["status"] == "ok"]
check(r.returncode == 0 and "val_dataset()" in h.get("source", "") and h.get("samples") == 32
      and sorted(a["multiple"] for a in h.get("arms", [])) == sorted(trained) and all(a["orders"] == 2 for a in h.get("arms", []))
      and isinstance(h.get("agrees"), bool) and h.get("best_multiple") in trained and f"Held out: {h.get('reason')}" in r.stdout,
      f"lr-sweep --task with val_dataset(): every rate that trained ranked by its held-out loss ({h.get('reason')})")
plans = [json.load(open(os.path.join(sweep, "trials", t, "plan.json"))) for t in sorted(os.listdir(os.path.join(sweep, "trials")))] \
    if r.returncode == 0 else []
results = [json.load(open(os.path.join(sweep, "trials", t, "result.json"))) for t in sorted(os.listdir(os.path.join(sweep, "trials")))] \
    if r.returncode == 0 else []
starts = {x["converge"]["val_points"][0][2] for x in results if x.get("converge", {}).get("val_points")}
check(len(plans) >= 4 and d["horizon"]["horizon_samples"] == 3048 and not any(p.get("init_from") for p in plans)
      and all(p["converge"].get("val_every") == d["horizon"]["horizon_samples"] for p in plans) and len(starts) == 1
      and all([q[0] for q in x["converge"]["val_points"]][0] == 0 and len(x["converge"]["val_points"]) == 2
              and 0 <= x["converge"]["val_points"][1][0] - d["horizon"]["horizon_samples"] < d["global_batch"] for x in results),
      f"every rate from the task's start (one held-out loss for all: {starts}) and at the horizon (its first step there)")

# ---- --val-data: a held-out token file for a token model, in --data's form
tokens, gpt = S.token_model()
held = os.path.abspath(os.path.join(work, "held.bin"))
run([autotune, "prepare-data", "--tokens-from", os.path.join(S.source, "docs/time-to-train.md"), "--to", held])
tok = os.path.join(work, "tokens")
r = run([autotune, "converge", *gpt, "--baseline-set", "batch_size=8", "--candidate-set",
         "batch_size=16", "--seconds", "2", "--reruns", "0", "--arm-orders", "1", "--val-data", held, "--val-samples", "32", "--val-every", "64",
         "--out", tok])
cv = json.load(open(os.path.join(tok, "converge.json"))) if r.returncode == 0 else {}
h = cv.get("held_out") or {}
pts = [p for x in h.get("runs", []) for p in x["points"]]
check(r.returncode == 0 and "its first 32 windows of 64 tokens" in h.get("source", "") and h.get("every", 0) > 0 and
      all(len(x["points"]) >= 3 and all(p[2] is not None and p[2] > 0 for p in x["points"]) and
          x["points"][-1][2] < x["points"][0][2] for x in h.get("runs", [])),
      f"--val-data a token file: {len(pts)} finite held-out losses over 32 windows, falling ({h.get('source')})")

# ---- --val-data: a held-out image folder for an image model (the Python worker's resnet18 at 32²), centre-cropped, its
# bad files skipped and counted; a folder of other classes refused in one line
images, other = os.path.join(work, "images"), os.path.join(work, "other-classes")
made = run([py, "-c", f"""
import os, torch
from torchvision.io import encode_jpeg
g = torch.Generator().manual_seed(0)
for root, classes in (({images!r}, ("cat", "dog")), ({other!r}, ("ant", "bee", "cow"))):
    for c in classes:
        os.makedirs(os.path.join(root, c))
        for i in range(8):
            img = (torch.rand(3, 40, 48, generator=g) * 255).to(torch.uint8)
            open(os.path.join(root, c, f"{{i:03d}}.jpg"), "wb").write(encode_jpeg(img).numpy().tobytes())
open(os.path.join({images!r}, "cat", "bad.jpg"), "w").write("not an image")
"""])
if made.returncode == 0:
    img = os.path.join(work, "img")
    base = [autotune, "converge", "--trainer", "python", "--workload", "resnet18", "--image-size", "32", "--data", images,
            "--baseline-set", "batch_size=4", "--candidate-set", "batch_size=8", "--seconds", "2", "--reruns", "0",
            "--arm-orders", "1", "--max-bad-share", "0.3", "--val-every", "16"]
    r = run(base + ["--val-data", images, "--out", img])
    cv = json.load(open(os.path.join(img, "converge.json"))) if r.returncode == 0 else {}
    h = cv.get("held_out") or {}
    check(r.returncode == 0 and "the first 17 of 17 images, centre-cropped" in h.get("source", "") and
          "1 bad image(s) skipped at each evaluation" in h.get("source", "") and
          all(len(x["points"]) >= 2 and all(p[2] is not None for p in x["points"]) for x in h.get("runs", [])),
          f"--val-data an image folder: centre crops, the bad file skipped and counted ({h.get('source')})")
    r = run(base + ["--val-data", other, "--out", os.path.join(work, "img-other")])
    runs = json.load(open(os.path.join(work, "img-other", "converge.json")))["runs"] if r.returncode == 0 else []
    check(any("its classes (3) are not --data's (2)" in x.get("message", "") for x in runs) or
          "its classes (3) are not --data's (2)" in r.stderr + r.stdout,
          "--val-data of other classes: refused in one line naming both")
else:
    print("skip held-out images: no torchvision in the project's Python")

finish()
