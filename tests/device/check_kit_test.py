#!/usr/bin/env python3
"""CTest device_check_cpu_test and its two sister tests: the GPU proof kit's CPU mode (scripts/device-check.sh --cpu),
so the kit cannot rot between GPU runs. Every GPU step must be skipped with its reason and its rehearsal (the same
command and reading code on the CPU) must not fail; --resume must keep a finished step and the figures table must read
it.
    check_kit_test.py BUILD_DIR WORK_DIR [PART]

PART (search, python or time) runs one third of the steps (`--only`), so that the three CTest tests run side by side
with the rest of the suite instead of one 400-s chain; the `search` part also checks --resume, --rerun, --study-from,
a deadline and the kit's pure functions. Without PART: every step in one kit run, as a person runs it.
"""
import json
import os
import shutil
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
build, work = sys.argv[1], sys.argv[2]
# Each part about 130 s of rehearsal on the 2-core machine (2026-11-30); steps whose reading uses another's outputs
# stay together (vs_recipe and peers read tune_synthetic's winner).
PARTS = {"search": ["tune_synthetic", "vs_recipe", "eager_compare", "peers", "search_study", "profiles", "knob_trials",
                    "device_holders", "gpu_tests", "device_bench", "all_tests"],
         "python": ["task", "user_models", "slots", "tune_jpeg", "python_worker"],
         "time": ["lr_sweep", "memory", "held_out", "warm_worker", "time_to_train", "noise_log", "ddp"]}
sys.path.insert(0, os.path.join(root, "scripts"))
import device_check  # noqa: E402

unplaced = [n for n, *_ in device_check.STEPS if n not in device_check.ALWAYS_RUN and not any(n in p for p in PARTS.values())]
if unplaced:  # a new step must join a part, or no `make test` would rehearse it
    print(f"FAIL: kit steps in no part of check_kit_test.py's PARTS: {', '.join(unplaced)}")
    sys.exit(1)
part = sys.argv[3] if len(sys.argv) > 3 else ""
if part and part not in PARTS:
    print(f"check_kit_test: part {part!r}: allowed: {', '.join(PARTS)}")
    sys.exit(2)
mine = set(PARTS[part] if part else [n for p in PARTS.values() for n in p])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
kit = [os.path.join(root, "scripts/device-check.sh"), "--cpu", "--build-dir", build]


def run(*args):
    p = subprocess.run(kit + list(args), capture_output=True, text=True)
    print(p.stdout, p.stderr, sep="\n")
    return p


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


# 1. The whole kit in CPU mode.
out1 = os.path.join(work, "first")
p = run("--out", out1, *(["--only", ",".join(sorted(mine))] if part else []))
if p.returncode != 0:
    fail(f"exit {p.returncode}")
doc = json.load(open(os.path.join(out1, "device-check.json")))
if doc["schema"] != "autotune.device-check/1" or doc["gpu"]:
    fail("schema or mode")
steps = {s["name"]: s for s in doc["steps"]}
for name in ["env", "build", "linkage", "worker_info", "targets", *sorted(mine)]:
    if name not in steps:
        fail(f"step {name} missing")
for s in doc["steps"]:
    if s["gpu"]:
        if s["status"] != "skipped" or not s["reason"]:
            fail(f"{s['name']}: a GPU step without a GPU must be skipped with its reason: {s}")
        r = s.get("rehearsal") or {}
        if r.get("status") not in ("ok", "skipped") or (r["status"] == "skipped" and not r.get("reason")):
            fail(f"{s['name']}: rehearsal {r}")
    elif s["status"] == "failed":
        fail(f"{s['name']} failed: {s['reason']}")
# The rehearsals read real outputs: numbers, not placeholders.
if "knob_trials" in mine:
    trials = steps["knob_trials"]["rehearsal"]["figures"]
    if trials["baseline"]["samples_per_s"] <= 0 or "threads" not in trials["baseline"]["applied"]:
        fail(f"knob trial figures: {trials['baseline']}")
    if not any("needs a CUDA device" in r for r in trials["amp_fp16"]["skipped"]):
        fail(f"amp_fp16 on the CPU must come back skipped with the worker's reason: {trials['amp_fp16']}")
if "profiles" in mine:
    prof = steps["profiles"]["rehearsal"]["figures"]["mlp_log1"]
    if prof["mode"] != "host-only" or not prof["traced_step_ms"]:
        fail(f"profile figures: {prof}")
# A tune may find nothing stable on a loaded machine: that is a finding the kit records, with its trials.
for step, key in [x for x in [("tune_synthetic", "mlp"), ("tune_jpeg", "resnet18")] if x[0] in mine]:
    t = steps[step]["rehearsal"]["figures"][key]
    if t["status"] not in ("ok", "no_stable_config", "no_winner") or not t["trials"] or (t["status"] == "ok") != bool(t["winner"]):
        fail(f"{step} figures: {t}")
    if t.get("first_screen_disagreements") != []:  # read and checked on every kit tune, GPU lease included
        fail(f"{step}: the first screen disagrees with itself: {t.get('first_screen_disagreements')}")
# The task step (--task): the loader searched on the task's own photos, num_workers=0 among them, each with its
# samples/s and data-wait share (skipped, with its reason, without torchvision). How many of the others the rehearsal's
# short budget reaches depends on the machine's load: what is read must be well formed.
if "task" in mine:
    ta = steps["task"]["rehearsal"]
    if ta["status"] == "ok":
        bw = ta["figures"]["by_num_workers"]
        if "0" not in bw or any(v["samples_per_s"] <= 0 or not 0 <= v["data_wait_share"] <= 1 for v in bw.values()):
            fail(f"task figures: {bw}")
        if ta["figures"].get("first_screen_disagreements") != []:
            fail(f"task: the first screen disagrees with itself: {ta['figures'].get('first_screen_disagreements')}")
    elif not ta.get("reason"):
        fail(f"task: skipped without a reason: {ta}")
# The learning-rate sweep (gpt-mini on a little text in the rehearsal): a verdict from the rule, every rate with its
# status, every rate from the start to the horizon: the run's first 5% (50 samples), then 8 windows of 16 samples.
if "lr_sweep" in mine:
    ls = steps["lr_sweep"]["rehearsal"]
    if ls["status"] == "ok":
        lf = ls["figures"]
        if lf["verdict"] not in ("too low", "about right", "too high", "no rate trained") or len(lf["arms"]) < 4 \
                or not any(a["multiple"] == 1 for a in lf["arms"]) or lf["horizon"]["horizon_samples"] != 178 \
                or lf.get("arms_from") != "start":
            fail(f"lr_sweep figures: {lf}")
        # converge --from-sweep after it: the sweep's rate against the user's, measured (or refused with its one-line reason)
        cv = lf.get("converge")
        # each arm also timed to the sweep's own loss from the start (its loss always named; the ratio where both reached it)
        if not (isinstance(cv, list) and cv and all("measured" in x and "predicted" in x and isinstance(x.get("sweep_loss"), dict)
                                                    and x["sweep_loss"]["loss"] > 0 for x in cv)) \
                and not (isinstance(cv, dict) and "--from-sweep" in cv.get("refused", "")):
            fail(f"lr_sweep: converge --from-sweep figures: {cv}")
        # its baseline stopped at the sweep's --run-length (1,000 samples): the target is the loss the run ends at
        if isinstance(cv, list) and (lf.get("converge_target") or {}).get("baseline_samples") != 1000:
            fail(f"lr_sweep: converge's baseline not held to the run's length: {lf.get('converge_target')}")
    elif not ls.get("reason"):
        fail(f"lr_sweep: skipped without a reason: {ls}")
# The held-out step: converge's held-out loss on a task's val_dataset() (every run evaluated at least at its start and
# end, the evaluation time counted apart) and a task's scheduler() read back at the rate its own schedule gives.
if "held_out" in mine:
    ho = steps["held_out"]["rehearsal"]
    if ho["status"] != "ok":
        fail(f"held_out: {ho}")
    hf = ho["figures"]
    sc = hf["scheduler"]
    if "val_dataset()" not in hf["source"] or not hf["runs"] or any(r["evaluations"] < 2 for r in hf["runs"]) \
            or hf["eval_seconds"] <= 0 or sc["expected"] is None or abs(sc["lr"] - sc["expected"]) > 1e-6 * sc["expected"] + 1e-9:
        fail(f"held_out figures: {hf}")
    # lr-sweep on the same task: every rate that trained ranked by its held-out loss as well, agreeing or not
    hs = hf["lr_sweep"]
    if not hs["held_out"] or not isinstance(hs["agrees"], bool) or hs["held_out_best"] not in [a["multiple"] for a in hs["held_out"]] \
            or not hs["reason"].startswith("on held-out data"):
        fail(f"held_out: the lr-sweep's held-out judge: {hs}")
    # converge on resnet18 at another forward batch: its 20 batch norms counted and the note printed (CPU: batch 4 and 8)
    bn = hf["batch_norm"]
    if "skipped" not in bn and (bn["batch_8"]["batch_norms"] != 20 or "batch norms" not in bn["batch_8"]["note"]
                                or not bn["batch_8"]["training"]):
        fail(f"held_out: the batch-norm converge: {bn}")
# The warm workers' step: for each worker, the tune's trials forked and ok, the AUTOTUNE_WARM=0 one fresh, with wall times.
if "warm_worker" in mine:
    ww = steps["warm_worker"]["rehearsal"]
    for w in ("python", "cpp"):
        f = ww.get("figures", {}).get(w, {})
        if ww["status"] != "ok" or not f.get("forked") or f["fresh"][0]["started"] != "fresh" \
                or not f.get("median_wall_fresh") or f.get("median_wall_forked") is None:
            fail(f"warm_worker ({w}): {ww}")
# The peers (Lightning's and Accelerate's batch finders, bench/peers.py) on the CPU: each tool ran and its pick was
# measured (this rehearsal is the suite's one run of bench/peers.py; it skips, with its reason, without the packages).
if "peers" in mine:
    pe = steps["peers"]["rehearsal"]
    if pe["status"] == "ok":
        tools = pe["figures"]["tools"]
        if sorted(tools) != ["accelerate", "lightning_binsearch", "lightning_power"] or \
                any(t.get("status") != "ok" or not t.get("batch") for t in tools.values()):
            fail(f"peers: every finder ran and picked a batch: {tools}")
    elif not pe.get("reason"):
        fail(f"peers rehearsal {pe}")
if "vs_recipe" in mine:
    vs = steps["vs_recipe"]["rehearsal"]
    if vs["status"] == "ok":
        v = vs["figures"]["mlp"]
        if not v["tuned_over_recipe"] or len(v["ci95"]) != 2:
            fail(f"vs_recipe figures: {v}")
    elif vs.get("reason") != "tune_synthetic has no winner to compare":
        fail(f"vs_recipe rehearsal: {vs}")
if "eager_compare" in mine:
    eager = steps["eager_compare"]["rehearsal"]
    if eager["status"] == "ok":
        e = eager["figures"]["mlp"]
        if not e["cpp_over_python"] > 0 or not e["python_samples_per_s"]:
            fail(f"eager_compare figures: {e}")
    elif "no python3 that imports torch" not in eager.get("reason", ""):
        fail(f"eager_compare rehearsal: {eager}")
# Time to train: the tune under the time objective on real text measured a noise scale, and converge trained
# its baseline and candidates to one loss.
if "time_to_train" in mine:
    ttt = steps["time_to_train"]["rehearsal"]
    if ttt["status"] != "ok":
        fail(f"time_to_train rehearsal: {ttt}")
    g = ttt["figures"]["gpt-mini"]
    if g["tune"]["objective"] != "time" or not (g["tune"]["noise_scale"] or 0) > 0:
        fail(f"time_to_train tune figures: {g['tune']}")
    if g["tune"]["status"] == "ok" and (not g.get("converge") or not g["converge"]["runs"] or not g["converge"]["target_loss"] > 0):
        fail(f"time_to_train converge figures: {g.get('converge')}")
    # ... then (b)'s batch swept around the batch rule's rate, and the tune's report re-priced with what it measured
    rb = g.get("rate_at_b", {})
    if g["tune"]["status"] == "ok" and "skipped" not in rb and not (
            rb.get("headline", "").startswith("At global batch") and rb.get("measured") and "√r" in rb.get("rule", "")):
        fail(f"time_to_train rate_at_b figures: {rb}")
if "noise_log" in mine:
    nl = steps["noise_log"]  # the Python noise logger: its sums against each micro-batch's own gradient, its cost
    if nl["status"] == "ok":
        if not nl["figures"]["sums_rel_error"] < 1e-4 or not nl["figures"]["steps_per_s"]["none"] > 0:
            fail(f"noise_log figures: {nl['figures']}")
    elif "no python3 that imports torch" not in nl.get("reason", ""):
        fail(f"noise_log: {nl}")
if "python_worker" in mine:
    pw = steps["python_worker"]["rehearsal"]  # the Python worker beside the C++ one on gpt-mini
    if pw["status"] == "ok":
        g = pw["figures"]["gpt-mini"]
        c = g["compile"].get("default", {})  # compile is left to python_worker_test on the CPU (a CPU compile: half a minute)
        if not g["cpp_over_python"] > 0 or c.get("status") != "not run: the CPU rehearsal leaves compile to python_worker_test":
            fail(f"python_worker rehearsal figures: {pw['figures']}")
    elif "no python3 that imports torch" not in pw.get("reason", ""):
        fail(f"python_worker rehearsal: {pw}")
if "memory" in mine:
    mem = steps["memory"]["rehearsal"]["figures"]
    for name in ("mlp", "gpt-mini"):  # the memory model's predictions read back: states equal, held-out batches measured
        fams = mem[name]["families"]
        if not fams or any(f["states_analytic"] != f["states_counted"] for f in fams) or mem[name]["held_out"].get("n", 0) < 1:
            fail(f"memory rehearsal {name}: {mem[name]}")
if "slots" in mine:
    slots = steps["slots"]["rehearsal"]  # trials side by side: two slots, placements and interference read back
    if slots["status"] == "ok":
        sf = slots["figures"]
        if sf["parallel"]["slots"] != 2 or not sf["parallel"]["interference"] or len(sf["parallel"]["places"] or []) != 2:
            fail(f"slots rehearsal figures: {sf}")
    elif "two slots need 2" not in slots.get("reason", ""):
        fail(f"slots rehearsal: {slots}")
if "search_study" in mine:
    study = steps["search_study"]["rehearsal"]["figures"]["mlp"]
    # The real auto run: a pick scored against the grid, or — on a loaded machine, as the tune steps above — no stable
    # config (exit 1), recorded as such with no pick; never another exit.
    real_ok = len(study["real_auto"]) == 1 and all(
        (r["rc"] == 0 and r["pick"]) or (r["rc"] == 1 and r["pick"] is None) for r in study["real_auto"])
    if (study["grid"]["trials"] != study["grid"]["of"] or not study["grid"]["optimum_samples_per_s"] or
            len(study["fidelity"]["tau_b_single"]) != 2 or study["fidelity"]["long_runs"] != 3 or
            not real_ok or not study["landscape"]["sigma_window"]):
        fail(f"search_study figures: {study}")
md = open(os.path.join(out1, "device-check.md")).read()
for want in ["# autotune device check", "## Figures against their goals", "| gpt2-124m bf16 MFU | – | >= 0.45 | not measured |",
             *(["| knob_trials | skipped |"] if "knob_trials" in mine else [])]:
    if want not in md:
        fail(f"device-check.md lacks {want!r}")
for f in ["device-check.json", "device-check.md", "device-check.log", "artifacts.tar.gz",
          *(["study.tar.gz"] if "search_study" in mine else [])]:
    if not os.path.getsize(os.path.join(out1, f)):
        fail(f"{f} is empty")
if os.path.exists(os.path.join(out1, "work")):
    fail("the work folder must be packed and removed (the device returns at most 8 files)")
if part and part != "search":  # what follows (--resume, --rerun, --study-from, deadlines, pure functions) is one part's
    print(f"device-check CPU mode, part {part}: ok")
    sys.exit(0)

# 2. --resume keeps a finished step (as a GPU run would have left it) and the figures read it.
prev = dict(doc)
prev["steps"] = [dict(s) for s in doc["steps"]]
for s in prev["steps"]:
    if s["name"] == "profiles":
        s.update(status="ok", figures={"gpt2_bf16_log1": {"syncs_per_step": 1.0, "mfu": 0.47},
                                       "gpt2_bf16_log100": {"syncs_per_step": 0.01, "mfu": 0.41}})
resume = os.path.join(work, "previous.json")
json.dump(prev, open(resume, "w"))
out2 = os.path.join(work, "second")
p = run("--out", out2, "--resume", resume, "--only", "profiles")
if p.returncode != 0:
    fail(f"resume: exit {p.returncode}")
doc2 = json.load(open(os.path.join(out2, "device-check.json")))
s2 = {s["name"]: s for s in doc2["steps"]}
if not s2["profiles"].get("resumed") or s2["profiles"]["figures"]["gpt2_bf16_log100"]["mfu"] != 0.41:
    fail(f"profiles not kept: {s2['profiles']}")
if not s2["knob_trials"].get("resumed"):
    fail(f"--only profiles ran knob_trials, or lost its resumed record: {s2['knob_trials']}")
targets = {t["target"]: t for t in s2["targets"]["figures"]["targets"]}
if targets["gpt2-124m bf16 MFU"]["met"] is not False or targets["CPU syncs per step, log_every=100"]["met"] is not True:
    fail(f"targets: {targets}")
# --rerun NAME runs that finished step again, and keeps the others.
p = run("--out", os.path.join(work, "third"), "--resume", resume, "--only", "profiles", "--rerun", "profiles")
doc3 = json.load(open(os.path.join(work, "third", "device-check.json")))
s3 = {s["name"]: s for s in doc3["steps"]}
if p.returncode != 0 or s3["profiles"].get("resumed") or not s3["knob_trials"].get("resumed"):
    fail(f"--rerun profiles: exit {p.returncode}, {s3['profiles']}")
# The study goes on from the data an earlier call returned (--study-from): nothing measured again.
p = run("--out", os.path.join(work, "study2"), "--only", "search_study", "--study-from", os.path.join(out1, "study.tar.gz"))
s4 = {s["name"]: s for s in json.load(open(os.path.join(work, "study2", "device-check.json")))["steps"]}
again = (s4["search_study"].get("rehearsal") or {}).get("figures", {}).get("mlp", {})
if p.returncode != 0 or again.get("grid") != study["grid"] or again.get("real_auto") != study["real_auto"]:
    fail(f"--study-from: exit {p.returncode}, {s4['search_study']}")
# A study step stopped by its deadline exits 3 and starts nothing (the kit then records the step as partial).
import time  # noqa: E402
grid = os.path.join(work, "stopped")
p = subprocess.run([sys.executable, os.path.join(root, "bench/search_study.py"), "grid", "--autotune",
                    os.path.join(build, "bin/autotune"), "--workload", "mlp", "--out", grid, "--knobs", "batch_size=32,64",
                    "--stop-at", str(time.time() - 1)], capture_output=True, text=True)
if p.returncode != 3 or json.load(open(os.path.join(grid, "grid.json")))["trials"]:
    fail(f"grid --stop-at in the past: exit {p.returncode}, {p.stderr[-300:]}")

# The GPU mode of the study step past its deadline: nothing measured, the step ends `partial` with the
# grid's progress and says how to go on (the step's own code, called as the kit calls it on the GPU machine).
args = device_check.argparse.Namespace(out=os.path.join(work, "gpu-partial"), build_dir=build, deps="", deadline=0,
                                       study_from="", study_workloads="resnet18")
kit_obj = device_check.Kit(args)
try:
    device_check.step_search_study(kit_obj, True)
    fail("the GPU study step past its deadline must stop as partial")
except device_check.Partial as e:
    g = e.figures.get("resnet18", {}).get("grid", {})
    if g.get("trials") != 0 or g.get("of") != 96 or "--study-from" not in str(e):
        fail(f"partial study: {e} {e.figures}")

# The PCIe link and the pinned-copy share (pure functions; nvidia-smi and device_bench only exist on the GPU
# machine). Gen 5 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.02 GB/s, 57.61 practical (256 B payloads).
link = device_check.pcie_link("5, 16, 1, 16\n")
if link != {"gen": 5, "width": 16, "gen_current": 1, "width_current": 16, "line_GBps": 63.02, "practical_GBps": 57.61}:
    fail(f"pcie_link: {link}")
if device_check.pcie_link("[N/A], 16, 1, 16") is not None or device_check.pcie_link("") is not None:
    fail("an unreadable link must be None")
bench = {"context": {"augment_on_device_first_call_ms": "229.5"}, "benchmarks": [
    {"name": "H2D/pinned_only/1048576/real_time", "run_type": "iteration", "bytes_per_second": 40e9, "real_time": 26,
     "time_unit": "us", "iterations": 9000},
    {"name": "H2D/pinned_only/67108864/real_time", "run_type": "iteration", "bytes_per_second": 50e9, "real_time": 1342,
     "time_unit": "us", "iterations": 150},
    {"name": "H2D/pinned_reused/67108864/real_time", "run_type": "iteration", "bytes_per_second": 60e9, "real_time": 1100,
     "time_unit": "us", "iterations": 150},
    {"name": "residual_add/mixed/real_time", "run_type": "iteration", "real_time": 300, "time_unit": "us", "iterations": 600},
    {"name": "residual_add/cast_then_add/real_time", "run_type": "iteration", "real_time": 120, "time_unit": "us",
     "iterations": 1500},
    {"name": "tied_grad_add/transposed/real_time", "run_type": "iteration", "real_time": 900, "time_unit": "us",
     "iterations": 200},
    {"name": "tied_grad_add/contiguous/real_time", "run_type": "iteration", "real_time": 300, "time_unit": "us",
     "iterations": 600}]}
f = device_check.device_bench_figures(bench, link)
if (f["pinned_only_best_GBps"] != 50.0 or f["pinned_share_of_practical"] != round(50 / 57.61, 3)
        or f["residual_add"]["mixed_over_cast"] != 2.5 or f["tied_grad_add"]["transposed_over_contiguous"] != 3.0
        or f["augment_first_call_ms"] != 229.5):
    fail(f"device_bench figures: {f}")
if device_check.device_bench_figures(bench, None)["pinned_share_of_practical"] is not None:
    fail("without the link the pinned share must stay unjudged")

# The profile's top kernels keep their launch geometry and phases; older profiles keep what they had.
t = device_check.top_kernel({"name": "add", "share": 0.123456, "count": 48, "mean_us": 301.234, "grid": [49152, 1, 1],
                             "block": [128, 1, 1], "geometries": 1, "threads_per_call": 6291456.0,
                             "phases": {"forward": 0.4999, "backward": 0.5001}})
if t != {"name": "add", "share": 0.1235, "count": 48, "mean_us": 301.23, "grid": [49152, 1, 1], "block": [128, 1, 1],
         "geometries": 1, "threads_per_call": 6291456.0, "phases": {"forward": 0.5, "backward": 0.5}}:
    fail(f"top_kernel: {t}")
if device_check.top_kernel({"name": "k", "share": 0.5, "count": 3}) != {"name": "k", "share": 0.5, "count": 3}:
    fail("top_kernel of an older profile")

# 3. Bad arguments are one line.
p = run("--out", os.path.join(work, "bad"), "--only", "knob_trails")
if p.returncode == 0 or "unknown step 'knob_trails'" not in p.stderr:
    fail("an unknown step must be refused")
print("device-check CPU mode: ok")
