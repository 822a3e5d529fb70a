#!/usr/bin/env python3
"""The search study (docs/search.md): how far each strategy's pick is from the exhaustive grid's optimum,
what it costs, and whether default-length trials rank configurations the way 10x longer runs do.

Steps, each writing JSON under DIR (one folder per workload):

  grid      ground truth: every config of the space (and the tuner's baseline) as a fresh `autotune trial`
            process, REPS interleaved repetitions (each repetition a new shuffled order)   -> grid.json
  fidelity  NCONF configs spread over the ground-truth ranking, each once with windows LONG x longer,
            shuffled; compared with the grid's default-length trials                      -> fidelity.json
  fit       the landscape the fake worker replays: per config its mean throughput and trial wall
            time, the pooled process-to-process and window-to-window noise              -> landscape.json
  simulate  `autotune tune` with each strategy over SEEDS seeds against the landscape (the real tuner,
            the fake worker in FAKE_LANDSCAPE mode): regret of the pick vs the grid optimum, cost in
            measured trial seconds as a share of the grid strategy's                     -> simulation.json
  real      `autotune tune --strategy S` with the real worker, RUNS times: the same regret and cost
            measured end to end                                                         -> real-S.json
  recheck   the grid's top configs and the real runs' picks re-measured now, interleaved -> recheck.json
  timeline  the best two configs, a middle one and any --key: REPS fresh runs of 40 one-second windows
            each, the host's CPU split (user, system, steal) and page faults sampled meanwhile: do rates
            change late in a run, and at the same point in every run?                   -> timeline.json
  report    tables (Markdown, stdout) and the regret-vs-cost plot (SVG) from all of the above

  search_study.py grid --autotune build/bin/autotune --workload gpt-mini --out docs/search-runs/study/gpt-mini \\
      --knobs batch_size=8,16,32,64 threads=1,2 precision=fp32,amp_bf16 optimizer_impl=loop,foreach,fused --reps 3
  (bench/search_study.sh runs every step for both workloads of docs/search.md)
"""
import argparse
import itertools
import json
import math
import os
import random
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor


# ---------------------------------------------------------------------------------------------- helpers

def load(path):
    with open(path) as f:
        return json.load(f)


def save(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def parse_space(items):
    space = []
    for kv in items:
        if "=" not in kv:
            sys.exit(f"search_study: '{kv}' is not knob=v1,v2,…")
        k, vs = kv.split("=", 1)
        space.append((k, vs.split(",")))
    return space


def key_of(config, knobs, aliases=None):
    """The study's key of a config; `aliases` maps a value to the one it runs as (threads=default → 2)."""
    aliases = aliases or {}
    return " ".join(f"{k}={aliases.get(k, {}).get(config.get(k, ''), config.get(k, ''))}" for k in knobs)


def physical_cores():
    """Cores PyTorch's intra-op pool uses by default: one per physical core of the CPUs this process may use."""
    cores = set()
    for cpu in os.sched_getaffinity(0):
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(base + "physical_package_id") as a, open(base + "core_id") as b:
                cores.add((a.read().strip(), b.read().strip()))
        except OSError:
            cores.add(("0", str(cpu)))
    return len(cores)


def median(xs):
    return statistics.median(xs) if xs else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def kendall_tau_b(x, y):
    n, conc, disc, tx, ty = len(x), 0, 0, 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + tx) * (conc + disc + ty)) ** 0.5
    return (conc - disc) / denom if denom else 0.0


def bootstrap_mean_ci(xs, n=2000, seed=1):
    if not xs:
        return [None, None]
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(xs) for _ in xs) / len(xs) for _ in range(n))
    return [means[int(0.025 * n)], means[int(0.975 * n) - 1]]


def run_trial(autotune, workload, config, setup, window_scale=1.0, windows=None, base_window=1.0):
    """One fresh `autotune trial` process; returns the result's windows and the process's wall time.
    Windows last `base_window` x `window_scale` seconds (1 s, the tuner's default, unless the grid set another)."""
    args = [autotune, "trial", "--workload", workload, "--json"] + list(setup)
    for k, v in sorted(config.items()):
        args += ["--set", f"{k}={v}"]
    if base_window * window_scale != 1.0:
        args += ["--window-seconds", f"{base_window * window_scale:g}"]
    if windows:
        args += ["--windows", str(windows)]
    t = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - t
    row = {"config": config, "wall_s": wall, "status": "error", "windows": []}
    try:
        res = json.loads(r.stdout)
    except json.JSONDecodeError:
        row["message"] = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    row["status"] = res.get("status")
    row["device"] = res.get("device")
    row["windows"] = [w["samples"] / w["seconds"] for w in res.get("windows", [])]
    row["window_seconds"] = [w["seconds"] for w in res.get("windows", [])]
    row["effective"] = res.get("effective")
    if row["windows"]:
        row["rate"] = median(row["windows"])
        row["drift"] = row["windows"][-1] / row["windows"][0] - 1
    return row


# The study measures the C++ worker, so its tunes take LibTorch's defaults as the baseline (`--frontend libtorch`):
# the same on CPU and CUDA, and the landscapes hold them (Python's CUDA default, foreach AdamW, is not in every one).
FRONTEND = "libtorch"


def tuner_baseline(autotune, workload, knobs):
    """The tuner's baseline for these knobs under --frontend libtorch, batch size at the workload's."""
    catalog = {k["name"]: k for k in json.loads(subprocess.run([autotune, "knobs", "--json"], capture_output=True,
                                                                  text=True, check=True).stdout)}
    infos = json.loads(subprocess.run([autotune, "workloads", "--json"], capture_output=True, text=True,
                                      check=True).stdout)
    info = next(w for w in infos if w["name"] == workload)
    base = {}
    for k in knobs:
        d = catalog[k]["pytorch_defaults"][f"{FRONTEND}/cpu"]["value"]
        base[k] = str(info["default_batch_size"]) if d == "workload" else d
    return base, info


STOPPED = 3  # exit status of a step that stopped at --stop-at with work left (run it again to continue)


def out_of_time(a, expected_s):
    """True when --stop-at (seconds since the epoch) would pass during the next piece of work."""
    return bool(getattr(a, "stop_at", None)) and time.time() + expected_s > a.stop_at


# ---------------------------------------------------------------------------------------------- steps

def step_grid(a):
    os.makedirs(a.out, exist_ok=True)
    space = parse_space(a.knobs)
    knobs = [k for k, _ in space]
    configs = [dict(zip(knobs, vs)) for vs in itertools.product(*[v for _, v in space])]
    baseline, info = tuner_baseline(a.autotune, a.workload, knobs)
    in_grid = any(c == baseline for c in configs)
    todo = configs + ([] if in_grid else [baseline])
    path = os.path.join(a.out, "grid.json")
    # Resumable: a study interrupted part-way keeps the trials it finished.
    g = load(path) if os.path.exists(path) else {"workload": a.workload, "knobs": knobs, "space": dict(space),
                                                 "setup": a.setup, "window_seconds": a.window_seconds,
                                                 "reps": a.reps, "baseline": baseline,
                                                 "baseline_in_grid": in_grid, "workload_info": info, "trials": []}
    save(g, path)
    done = {(t["rep"], key_of(t["config"], knobs)) for t in g["trials"]}
    t0 = time.monotonic()
    total = len(todo) * a.reps
    for rep in range(a.reps):
        order = list(todo)
        random.Random(a.seed * 1000 + rep).shuffle(order)
        for c in order:
            k = key_of(c, knobs)
            if (rep, k) in done:
                continue
            walls = [t["wall_s"] for t in g["trials"]]
            if out_of_time(a, 1.5 * max(walls) if walls else 30):
                print(f"grid: stopped at --stop-at, {len(g['trials'])} of {total} trials done", file=sys.stderr)
                sys.exit(STOPPED)
            row = run_trial(a.autotune, a.workload, c, a.setup, base_window=g.get("window_seconds", 1.0))
            row["rep"] = rep
            row["key"] = k
            g["trials"].append(row)
            save(g, path)
            n = len(g["trials"])
            print(f"[{n}/{total}] rep {rep + 1} {k}: {row.get('rate', row['status'])!s:.8} samples/s "
                  f"({row['wall_s']:.1f} s, {time.monotonic() - t0:.0f} s so far)", file=sys.stderr, flush=True)
    print(path)


def truth_table(g):
    """Per config key: geometric mean of its repetitions' medians and their spread."""
    by = {}
    for t in g["trials"]:
        if t["status"] == "ok" and t.get("rate"):
            by.setdefault(t["key"], []).append(t)
    table = {}
    for k, ts in by.items():
        rates = [t["rate"] for t in ts]
        table[k] = {"rate": geomean(rates), "reps": rates, "wall_s": statistics.mean(t["wall_s"] for t in ts),
                    "measure_s": statistics.mean(sum(t["window_seconds"]) for t in ts)}
    return table


def grid_keys(g):
    """Every config key of the space (grid.json or landscape.json: both hold space and knobs)."""
    space = g["space"]
    knobs = g["knobs"]
    return [key_of(dict(zip(knobs, vs)), knobs) for vs in itertools.product(*[space[k] for k in knobs])]


def ranked_keys(g, table):
    """The space's configs the grid measured, fastest first by the ground truth (truth_table's rates)."""
    return sorted((k for k in grid_keys(g) if k in table), key=lambda k: -table[k]["rate"])


def step_fidelity(a):
    g = load(os.path.join(a.out, "grid.json"))
    table = truth_table(g)
    ranked = ranked_keys(g, table)
    # NCONF configs spread evenly over the ground-truth ranking, best and worst included.
    n = min(a.configs, len(ranked))
    pick = [ranked[round(i * (len(ranked) - 1) / (n - 1))] for i in range(n)]
    path = os.path.join(a.out, "fidelity.json")
    f = load(path) if os.path.exists(path) else {"long_factor": a.long, "configs": pick, "long": []}
    done = {(r["key"], r.get("rep", 0)) for r in f["long"]}
    runs = [(k, rep) for k in f["configs"] for rep in range(a.long_reps)]
    random.Random(a.seed).shuffle(runs)
    cfg = {t["key"]: t["config"] for t in g["trials"]}
    base = g.get("window_seconds", 1.0)
    # A long run costs a default trial's wall plus the extra windows (3 windows, the worker's default).
    expected = 1.5 * (max(t["wall_s"] for t in g["trials"]) + 3 * base * (f["long_factor"] - 1))
    for i, (k, rep) in enumerate(runs, 1):
        if (k, rep) in done:
            continue
        if out_of_time(a, expected):
            print(f"fidelity: stopped at --stop-at, {len(f['long'])} of {len(runs)} long runs done", file=sys.stderr)
            sys.exit(STOPPED)
        row = run_trial(a.autotune, g["workload"], cfg[k], g["setup"], window_scale=f["long_factor"], base_window=base)
        row["key"] = k
        row["rep"] = rep
        f["long"].append(row)
        save(f, path)
        print(f"[{i}/{len(runs)}] x{f['long_factor']:g} {k}: {row.get('rate', row['status'])!s:.8} samples/s "
              f"({row['wall_s']:.1f} s)", file=sys.stderr, flush=True)
    print(path)


def fidelity_numbers(g, f):
    table = truth_table(g)
    longs = {}
    for r in f["long"]:
        if r["status"] == "ok":
            longs.setdefault(r["key"], []).append(r["rate"])
    keys = [k for k in f["configs"] if k in longs and k in table]
    long_rate = {k: geomean(longs[k]) for k in keys}
    out = {"configs": len(keys), "long_factor": f["long_factor"], "per_rep": []}

    def compare(short):
        ks = [k for k in keys if k in short]
        s = [short[k] for k in ks]
        lg = [long_rate[k] for k in ks]
        rs = sorted(ks, key=lambda k: -short[k])
        rl = sorted(ks, key=lambda k: -long_rate[k])
        return {"tau_b": kendall_tau_b(s, lg), "top1": rs[0] == rl[0], "top3": len(set(rs[:3]) & set(rl[:3])),
                "n": len(ks)}

    reps = sorted({t["rep"] for t in g["trials"]})
    for rep in reps:
        short = {t["key"]: t["rate"] for t in g["trials"] if t["rep"] == rep and t["status"] == "ok"}
        out["per_rep"].append(compare(short))
    out["mean_of_reps"] = compare({k: table[k]["rate"] for k in keys})
    # The tuner's own policy replayed on the three repetitions (in the order they ran): an attempt that is
    # noisy (window IQR/median > 5%) — or, with the drift check, drifting (|last ÷ first − 1| > 5%) — is
    # re-measured in a fresh process up to twice; the first quiet attempt is used, else the last.
    def rel_iqr(w):
        w = sorted(w)
        n = len(w)
        q = lambda p: w[int(p * (n - 1))] + (w[min(int(p * (n - 1)) + 1, n - 1)] - w[int(p * (n - 1))]) * (p * (n - 1) % 1)
        return (q(0.75) - q(0.25)) / statistics.median(w)

    for name, use_drift in (("noise_remeasure", False), ("noise_and_drift_remeasure", True)):
        short, attempts = {}, 0
        for k in keys:
            tries = sorted((t for t in g["trials"] if t["key"] == k and t["status"] == "ok"), key=lambda t: t["rep"])
            used = tries[-1]
            for i, t in enumerate(tries):
                quiet = rel_iqr(t["windows"]) <= 0.05 and (not use_drift or abs(t.get("drift", 0)) <= 0.05)
                if quiet:
                    used = t
                    break
            attempts += tries.index(used) + 1
            short[k] = used["rate"]
        out[name] = compare(short)
        out[name]["attempts_per_config"] = attempts / len(keys)
    taus = [r["tau_b"] for r in out["per_rep"]]
    out["tau_single_mean"] = statistics.mean(taus)
    out["tau_single_min"] = min(taus)
    # Long vs short per config: how much a default trial misses its long run, and its own drift flag.
    out["rows"] = []
    for k in keys:
        shorts = [t for t in g["trials"] if t["key"] == k and t["status"] == "ok"]
        out["rows"].append({"key": k, "long": long_rate[k], "default_reps": [t["rate"] for t in shorts],
                            "drift_reps": [t.get("drift") for t in shorts]})
    # Does a trial's drift flag predict that it misses its long run? Error = |log(default / long)| of the
    # trials with |drift| at most / beyond each threshold.
    out["drift_vs_error"] = []
    for thr in (0.03, 0.05, 0.10, 0.15):
        inside, beyond = [], []
        for k in keys:
            for t in g["trials"]:
                if t["key"] == k and t["status"] == "ok" and t.get("drift") is not None:
                    (beyond if abs(t["drift"]) > thr else inside).append(abs(math.log(t["rate"] / long_rate[k])))
        out["drift_vs_error"].append({"threshold": thr, "flagged": len(beyond), "of": len(inside) + len(beyond),
                                      "error_within": statistics.median(inside) if inside else None,
                                      "error_flagged": statistics.median(beyond) if beyond else None})
    # Test-retest: default trials of the same configs against each other (repetition i vs j). If short vs long
    # agree about as well as short vs short, what reorders a short ranking is run-to-run noise, not warm-up.
    pairs = []
    for i in reps:
        for j in reps:
            if i < j:
                si = {t["key"]: t["rate"] for t in g["trials"] if t["rep"] == i and t["status"] == "ok"}
                sj = {t["key"]: t["rate"] for t in g["trials"] if t["rep"] == j and t["status"] == "ok"}
                ks = [k for k in keys if k in si and k in sj]
                pairs.append(kendall_tau_b([si[k] for k in ks], [sj[k] for k in ks]))
    out["tau_retest"] = pairs
    # The long runs' own drift (first vs last of their windows) tells whether the machine keeps changing.
    out["long_drift"] = [r.get("drift") for r in f["long"] if r["status"] == "ok"]
    out["wall_s"] = {"default_per_trial": statistics.mean(t["wall_s"] for t in g["trials"]),
                     "long_per_trial": statistics.mean(r["wall_s"] for r in f["long"])}
    return out


def expected_tau(land, keys, processes, window_scale=1.0, draws=400, seed=1):
    """Kendall tau-b between the landscape's means of `keys` and a ranking measured with `processes` fresh
    processes per config (median of 3 windows each, windows `window_scale` x longer), under the fitted noise."""
    rng = random.Random(seed)
    sp, sw = land["sigma_process"], land["sigma_window"] / math.sqrt(window_scale)
    truth = [land["configs"][k]["rate"] for k in keys]
    taus = []
    for _ in range(draws):
        meas = []
        for mu in truth:
            runs = [mu * math.exp(rng.gauss(0, sp)) * statistics.median(math.exp(rng.gauss(0, sw)) for _ in range(3))
                    for _ in range(processes)]
            meas.append(geomean(runs))
        taus.append(kendall_tau_b(meas, truth))
    return statistics.mean(taus)


def tau_ceiling_vs_long(land, keys, sigma_default, sigma_long, reps=(1, 2, 3, 5, 10), draws=2000, seed=1):
    """Expected Kendall tau-b between a default ranking and single long runs of the same configs when each
    measurement errs by a log-normal sigma around the landscape's mean: the long side with `sigma_long`, the
    default side with `sigma_default` / sqrt(r) for r interleaved repetitions (independent draws), and with
    no error at all ("perfect"): the most any default could reach against one long run per config."""
    rng = random.Random(seed)
    truth = [land["configs"][k]["rate"] for k in keys]

    def tau(sa):
        ts = []
        for _ in range(draws):
            a = [m * math.exp(rng.gauss(0, sa)) for m in truth] if sa > 0 else truth
            b = [m * math.exp(rng.gauss(0, sigma_long)) for m in truth]
            ts.append(kendall_tau_b(a, b))
        return statistics.mean(ts)

    return {"perfect": tau(0), "reps": {r: tau(sigma_default / math.sqrt(r)) for r in reps}}


def sigma_at_length(by_length, windows):
    """sigma_by_length (timeline_numbers) at `windows` consecutive windows, log-log interpolated."""
    pts = sorted((int(w), v) for w, v in by_length.items())
    for (w0, v0), (w1, v1) in zip(pts, pts[1:]):
        if w0 <= windows <= w1:
            t = (math.log(windows) - math.log(w0)) / (math.log(w1) - math.log(w0))
            return math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0)))
    return pts[-1][1] if windows > pts[-1][0] else pts[0][1]


def step_fit(a):
    g = load(os.path.join(a.out, "grid.json"))
    table = truth_table(g)
    # Process-to-process noise: the spread of log(rate) around each config's mean over the repetitions;
    # window noise: the spread of log(window) around each trial's mean log(window).
    proc, win = [], []
    for k, t in table.items():
        logs = [math.log(r) for r in t["reps"]]
        if len(logs) >= 2:
            m = statistics.mean(logs)
            proc += [(x - m) ** 2 * len(logs) / (len(logs) - 1) for x in logs]
    for t in g["trials"]:
        if t["status"] == "ok" and len(t["windows"]) >= 2:
            logs = [math.log(w) for w in t["windows"]]
            m = statistics.mean(logs)
            win += [(x - m) ** 2 * len(logs) / (len(logs) - 1) for x in logs]
    sigma_w = math.sqrt(statistics.mean(win)) if win else 0.01
    # The process spread above includes window noise averaged by the median of 3: remove that share.
    sigma_p = math.sqrt(max(0.0, statistics.mean(proc) - sigma_w ** 2 / 3)) if proc else 0.0
    # threads=default runs with one thread per physical core: the same as that explicit count, which the grid
    # measured (the baseline's own measurement against its explicit twin is reported as the check of this).
    aliases = {"threads": {"default": str(physical_cores())}} if "threads" in g["knobs"] else {}
    # The device the grid ran on: the fake worker replaying a GPU grid must offer CUDA, or the tuner would resolve
    # the CUDA-only knobs (cudnn_benchmark, …) to their CPU fallbacks (grids before this field: the CPU).
    devices = [t.get("device") or "cpu" for t in g["trials"] if t["status"] == "ok"]
    device = max(set(devices), key=devices.count) if devices else "cpu"
    land = {"workload": g["workload"], "workload_info": g["workload_info"], "knobs": g["knobs"], "device": device,
            "space": g["space"], "baseline": g["baseline"], "aliases": aliases,
            "sigma_process": sigma_p, "sigma_window": sigma_w,
            "window_seconds": g.get("window_seconds", 1.0), "configs": {k: {"rate": t["rate"], "wall_s": t["wall_s"],
                                                     "measure_s": t["measure_s"]} for k, t in table.items()}}
    path = os.path.join(a.out, "landscape.json")
    save(land, path)
    print(f"{path}: {len(table)} configs, sigma_process {sigma_p:.3f}, sigma_window {sigma_w:.3f}")


def trial_cost(land, plan):
    """Seconds a trial of the plan's config took in the grid measurement, its windows scaled as planned."""
    c = land["configs"].get(key_of(plan["config"], land["knobs"], land.get("aliases")))
    if not c:
        return 0.0
    scale = plan.get("window_min_seconds", 1.0) / land.get("window_seconds", 1.0)
    return c["wall_s"] - c["measure_s"] + c["measure_s"] * scale


def read_run(run_dir, land, truth):
    """Pick, its ground truth, and cost (measured-trial seconds) of one finished tune run."""
    best = load(os.path.join(run_dir, "best.json"))
    db = sqlite3.connect(os.path.join(run_dir, "journal.sqlite"))
    kinds, cost, search_cost = {}, 0.0, 0.0
    for kind, plan_json in db.execute("SELECT kind, plan_json FROM trials"):
        plan = json.loads(plan_json)
        cst = trial_cost(land, plan)
        cost += cst
        if kind in ("baseline", "search", "remeasure"):
            search_cost += cst
        kinds[kind] = kinds.get(kind, 0) + 1
    db.close()
    out = {"trials": kinds, "cost_s": cost, "search_cost_s": search_cost,
           "elapsed_s": best.get("search", {}).get("elapsed_seconds")}
    if best.get("status") == "ok" and best.get("config"):
        k = key_of(best["config"], land["knobs"], land.get("aliases"))
        out["pick"] = k
        out["pick_rate"] = truth.get(k)
    return out


def tune_args(autotune, land, strategy, seed, out, extra):
    knobs = [f"{k}={','.join(v)}" for k, v in land["space"].items()]
    window = land.get("window_seconds", 1.0)  # the grid's window length (1 s, the tuner's default, unless set)
    return ([autotune, "tune", "--workload", land["workload"], "--strategy", strategy, "--seed", str(seed),
             "--out", out, "--budget", "10h", "--objective", "throughput", "--frontend", FRONTEND, "--knobs"] + knobs +
            (["--window-seconds", f"{window:g}"] if window != 1.0 else []) + list(extra))


def step_simulate(a):
    land = load(a.landscape)
    truth = {k: v["rate"] for k, v in land["configs"].items()}
    best_rate = max(truth[k] for k in grid_keys(land) if k in truth)
    env = dict(os.environ, FAKE_LANDSCAPE=os.path.abspath(a.landscape), FAKE_SLEEP="0")
    if land.get("device", "cpu").startswith("cuda"):
        env["FAKE_CUDA"] = "1"
    drift = None
    if a.host_drift:  # the host's slow drift, fitted to the grid next to the landscape, replayed by the fake worker
        drift = fit_host_drift(load(os.path.join(os.path.dirname(a.landscape), "grid.json")))
        env["FAKE_HOST_DRIFT"] = f"{drift['rho']},{drift['share']}"
        print(f"host drift: rho {drift['rho']:.2f} per trial, {drift['share']:.0%} of the process variance", flush=True)
    tmp = tempfile.mkdtemp(prefix="search-sim-")

    def one(job):
        strategy, seed = job
        run_dir = os.path.join(tmp, f"{strategy}-{seed}")
        r = subprocess.run(tune_args(a.autotune, land, strategy, seed, run_dir, ["--worker", a.fake] + a.tune_args),
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return strategy, seed, {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
        res = read_run(run_dir, land, truth)
        shutil.rmtree(run_dir, ignore_errors=True)
        return strategy, seed, res

    jobs = [(s, seed) for s in a.strategies for seed in range(1, a.seeds + 1)]
    results = {s: [] for s in a.strategies}
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for strategy, seed, res in ex.map(one, jobs):
            res["seed"] = seed
            results[strategy].append(res)
    shutil.rmtree(tmp, ignore_errors=True)
    sim = {"workload": land["workload"], "seeds": a.seeds, "best_rate": best_rate,
           "sigma_process": land["sigma_process"], "sigma_window": land["sigma_window"],
           "seconds": time.monotonic() - t0, "strategies": {}}
    # The yardstick: a grid run with the tuner's default flags (its cost hardly depends on the seed).
    if "grid" in results and not a.tune_args:
        grid_runs = [r for r in results["grid"] if "cost_s" in r]
    else:
        saved, a.tune_args = a.tune_args, []
        grid_runs = [one(("grid", 1))[2]]
        a.tune_args = saved
    grid_cost = statistics.median(r["cost_s"] for r in grid_runs)
    grid_search = statistics.median(r["search_cost_s"] for r in grid_runs)
    for s, rs in results.items():
        sim["strategies"][s] = summarize_strategy(rs, best_rate, grid_cost, grid_search)
    sim["grid_cost_s"] = grid_cost
    sim["grid_search_cost_s"] = grid_search
    sim["tune_args"] = a.tune_args
    sim["host_drift"] = drift
    path = a.result or os.path.join(os.path.dirname(a.landscape), "simulation.json")
    save(sim, path)
    for s, v in sim["strategies"].items():
        print(f"{land['workload']:>10} {s:>10}: within 3% {v['within3']:.0%}  mean regret {v['regret_mean']:.1%} "
              f"cost {v['cost_share']:.0%} of grid  trials {v['trials_median']}  errors {v['errors']}")
    print(f"{path} ({sim['seconds']:.0f} s)")
    # --expect STRATEGY:MIN_WITHIN3:MAX_COST_SHARE:MAX_MEAN_REGRET — the bounds a test holds a strategy to.
    failed = []
    for e in a.expect:
        s, lo, hi, rg = e.split(":")
        v = sim["strategies"].get(s)
        if v is None or v["errors"] or v["within3"] < float(lo) or v["cost_share"] > float(hi) or v["regret_mean"] > float(rg):
            failed.append(f"{s}: within 3% in {v and v['within3']:.0%} of seeds (need ≥ {float(lo):.0%}), cost "
                          f"{v and v['cost_share']:.0%} of the grid (need ≤ {float(hi):.0%}), mean regret "
                          f"{v and v['regret_mean']:.1%} (need ≤ {float(rg):.1%}), errors {v and v['errors']}")
    for f in failed:
        print(f"search_study: {land['workload']}: {f}", file=sys.stderr)
    return 1 if failed else 0


def summarize_strategy(rs, best_rate, grid_cost, grid_search):
    ok = [r for r in rs if "cost_s" in r]
    regrets = [1 - (r.get("pick_rate") or 0) / best_rate for r in ok]
    n = len(ok)
    return {"runs": len(rs), "errors": len(rs) - n,
            "regret_mean": statistics.mean(regrets) if regrets else None,
            "regret_ci95": bootstrap_mean_ci(regrets),
            "regret_median": median(regrets), "regret_max": max(regrets) if regrets else None,
            "within3": sum(1 for x in regrets if x <= 0.03) / n if n else 0,
            "within3_count": sum(1 for x in regrets if x <= 0.03),
            "cost_share": statistics.median(r["cost_s"] for r in ok) / grid_cost if ok else None,
            "search_cost_share": statistics.median(r["search_cost_s"] for r in ok) / grid_search if ok else None,
            "trials_median": median([sum(r["trials"].values()) for r in ok]),
            "picks": sorted({r.get("pick", "none") for r in ok})[:20],
            # per seed: what it picked, its regret and trials (to study the misses)
            "per_seed": [{"seed": r["seed"], "pick": r.get("pick"), "regret": round(1 - (r.get("pick_rate") or 0) / best_rate, 4),
                          "trials": r["trials"]} for r in ok]}


def step_real(a):
    land = load(os.path.join(a.out, "landscape.json"))
    g = load(os.path.join(a.out, "grid.json"))
    truth = {k: v["rate"] for k, v in land["configs"].items()}
    best_rate = max(truth[k] for k in grid_keys(g) if k in truth)
    path = os.path.join(a.out, f"real-{a.strategy}.json")
    real = load(path) if os.path.exists(path) else {"strategy": a.strategy, "runs": []}
    done = {r["seed"] for r in real["runs"]}
    # A run's expected wall: what the runs so far took, else about 60% of one pass over the grid (docs/search.md).
    walls = [r["wall_s"] for r in real["runs"]]
    expected = 1.3 * max(walls) if walls else 0.6 * sum(c["wall_s"] for c in land["configs"].values())
    for i in range(a.runs):
        if i + 1 in done:  # resumable: seeds already run are kept
            continue
        if out_of_time(a, expected):
            print(f"real: stopped at --stop-at, {len(real['runs'])} of {a.runs} runs done", file=sys.stderr)
            sys.exit(STOPPED)
        run_dir = os.path.join(a.out, f"real-{a.strategy}-{i + 1}")
        shutil.rmtree(run_dir, ignore_errors=True)
        t = time.monotonic()
        r = subprocess.run(tune_args(a.autotune, land, a.strategy, i + 1, run_dir, g["setup"]), capture_output=True,
                           text=True)
        wall = time.monotonic() - t
        res = {"seed": i + 1, "wall_s": wall, "rc": r.returncode}
        if r.returncode == 0:
            res.update(read_run(run_dir, land, truth))
            res["regret"] = 1 - (res.get("pick_rate") or 0) / best_rate
        real["runs"].append(res)
        real["runs"].sort(key=lambda r: r["seed"])
        save(real, path)
        shutil.rmtree(run_dir, ignore_errors=True)
        print(f"real {a.strategy} {i + 1}: pick {res.get('pick')} regret {res.get('regret', float('nan')):.1%} "
              f"wall {wall:.0f} s", file=sys.stderr, flush=True)
    print(path)


def step_recheck(a):
    """Is the ground truth still this host's? The grid's top configs and every pick of the real runs
    (real-*.json), re-measured now in `rounds` interleaved rounds of fresh processes (a new shuffled order
    each round); writes recheck.json and prints each config's rate now against the grid's."""
    g = load(os.path.join(a.out, "grid.json"))
    table = truth_table(g)
    keys = ranked_keys(g, table)[:a.top]
    for f in sorted(os.listdir(a.out)):
        if f.startswith("real-") and f.endswith(".json"):
            for r in load(os.path.join(a.out, f)).get("runs", []):
                if r.get("pick") and r["pick"] not in keys:
                    keys.append(r["pick"])
    cfg = {t["key"]: t["config"] for t in g["trials"]}  # what each key ran as in the grid
    rng = random.Random(a.seed)
    trials = []
    for rnd in range(a.rounds):
        order = list(keys)
        rng.shuffle(order)
        for k in order:
            row = run_trial(a.autotune, g["workload"], cfg[k], g["setup"], base_window=g.get("window_seconds", 1.0))
            row.update(key=k, round=rnd)
            trials.append(row)
            print(f"[round {rnd + 1}] {k}: {row.get('rate', row['status'])!s:.8} samples/s", file=sys.stderr, flush=True)
    out = {"workload": g["workload"], "date": time.strftime("%Y-%m-%d %H:%M"), "rounds": a.rounds, "trials": trials,
           "configs": {}}
    for k in keys:
        rates = [t["rate"] for t in trials if t["key"] == k and t.get("rate")]
        out["configs"][k] = {"grid_rate": table[k]["rate"], "now": geomean(rates) if rates else None, "rates": rates}
    save(out, os.path.join(a.out, "recheck.json"))
    best_now = max((v["now"] for v in out["configs"].values() if v["now"]), default=None)
    print(f"| config | grid (ground truth) | now, geo-mean of {a.rounds} | now vs the best now |")
    print("|---|---|---|---|")
    for k, v in out["configs"].items():
        now = v["now"]
        print(f"| {k} | {v['grid_rate']:.1f} | {now or float('nan'):.1f} | "
              f"{(now / best_now - 1) if now else float('nan'):+.1%} |")


def host_counters():
    """This machine's CPU time so far (jiffies: user, system, idle, steal) and its page faults; None off Linux."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        faults = 0
        with open("/proc/vmstat") as f:
            for line in f:
                name, n = line.split()
                if name == "pgfault":
                    faults = int(n)
        return {"t": time.monotonic(), "user": v[0] + v[1], "system": v[2] + v[5] + v[6], "idle": v[3] + v[4],
                "steal": v[7] if len(v) > 7 else 0, "faults": faults}
    except (OSError, ValueError, IndexError):
        return None


def host_delta(a, b):
    """Shares of the CPU time between two host_counters() (user, system, idle, steal) and faults per second."""
    if not a or not b:
        return None
    d = {k: b[k] - a[k] for k in ("user", "system", "idle", "steal")}
    total = sum(d.values()) or 1
    out = {f"{k}_share": v / total for k, v in d.items()}
    out["faults_per_s"] = (b["faults"] - a["faults"]) / max(b["t"] - a["t"], 1e-9)
    return out


def run_trial_watched(autotune, workload, config, setup, windows, period=1.0):
    """run_trial() with the host's counters sampled every `period` seconds meanwhile: row["host"] is the
    whole trial's host_delta(), row["host_series"] one [seconds, user, system, idle, steal, faults/s] per period."""
    stop = threading.Event()
    series = []
    first = host_counters()

    def sample():
        prev = first
        while not stop.wait(period):
            now = host_counters()
            d = host_delta(prev, now)
            if d:
                series.append([round(now["t"] - first["t"], 2)] + [round(d[f"{k}_share"], 3) for k in
                                                                     ("user", "system", "idle", "steal")] +
                              [round(d["faults_per_s"])])
            prev = now

    th = threading.Thread(target=sample, daemon=True)
    if first:
        th.start()
    try:
        row = run_trial(autotune, workload, config, setup, windows=windows)
    finally:
        stop.set()
        if first:
            th.join()
    row["host"] = host_delta(first, host_counters())
    row["host_series"] = series
    return row


def step_timeline(a):
    """Do rates change late in a run? The grid's best two configs, one from the middle of its ranking and any
    --key, each run `reps` times (a new shuffled order per repetition) as one fresh trial of `windows` windows
    of 1 s, with the host's CPU time split (user, system, steal) and page faults sampled meanwhile; writes
    timeline.json. A warm-up effect (allocator, page faults, caches) would show the same change at the same
    point of every run of a config; the host's own episodes would not."""
    g = load(os.path.join(a.out, "grid.json"))
    ranked = ranked_keys(g, truth_table(g))
    keys = [ranked[0], ranked[1], ranked[len(ranked) // 2]]
    keys += [k for k in a.key if k not in keys]
    cfg = {t["key"]: t["config"] for t in g["trials"]}
    unknown = [k for k in keys if k not in cfg]
    if unknown:
        sys.exit(f"search_study timeline: --key {unknown[0]!r} is not a config of {a.out}/grid.json")
    path = os.path.join(a.out, "timeline.json")
    t = load(path) if os.path.exists(path) else {"workload": g["workload"], "windows": a.windows, "configs": keys,
                                                 "date": time.strftime("%Y-%m-%d %H:%M"), "runs": []}
    done = {(r["key"], r["rep"]) for r in t["runs"]}
    rng = random.Random(a.seed)
    runs = []
    for rep in range(a.reps):
        order = list(t["configs"])
        rng.shuffle(order)
        runs += [(k, rep) for k in order]
    for i, (k, rep) in enumerate(runs, 1):
        if (k, rep) in done:
            continue
        row = run_trial_watched(a.autotune, g["workload"], cfg[k], g["setup"], t["windows"])
        row.update(key=k, rep=rep)
        t["runs"].append(row)
        save(t, path)
        w = row["windows"]
        print(f"[{i}/{len(runs)}] {k}: first 3 windows {median(w[:3]) if w else 0:.1f}, all {row.get('rate', 0):.1f} "
              f"samples/s; steal {((row['host'] or {}).get('steal_share') or 0):.1%}", file=sys.stderr, flush=True)
    print(path)


def timeline_numbers(t, head=3, span=5, episode=0.10):
    """Per run: what a default trial (its first `head` windows) would have measured, the run's median and its
    last 10 windows, the largest excursion of a rolling `span`-window median from the first `head` windows and
    when it began (the first rolling median beyond ±episode, in seconds from the first window); overall: the
    geo-mean of last-10 ÷ first-3 with a bootstrap CI (a systematic late effect moves it off 1), the
    between-run σ of a config's run medians and the within-run σ of its windows (log scale)."""
    out = {"runs": [], "windows": t["windows"]}
    logs = []
    by_key = {}
    for r in t["runs"]:
        w = r.get("windows") or []
        if r.get("status") != "ok" or len(w) < head + span:
            continue
        h, whole, tail = median(w[:head]), median(w), median(w[-10:])
        roll = [median(w[i:i + span]) for i in range(len(w) - span + 1)]
        dev = [x / h - 1 for x in roll]
        worst = max(dev, key=abs)
        onset = next((i for i, d in enumerate(dev) if abs(d) > episode), None)
        secs = r.get("window_seconds") or [1.0] * len(w)
        host = r.get("host") or {}
        series = r.get("host_series") or []
        # The process's start-up (model build, first touch) faults heavily for a second or two: the median
        # second is the steady state.
        out["runs"].append({"key": r["key"], "rep": r["rep"], "head": h, "whole": whole, "tail": tail,
                            "worst": worst, "onset_s": sum(secs[:onset]) if onset is not None else None,
                            "steal_share": host.get("steal_share"), "system_share": host.get("system_share"),
                            "steal_max_second": max((x[4] for x in series), default=None),
                            "faults_per_s": median([x[5] for x in series]) if series else host.get("faults_per_s")})
        logs.append(math.log(tail / h))
        by_key.setdefault(r["key"], []).append([math.log(x) for x in w])
    out["tail_vs_head"] = math.exp(sum(logs) / len(logs)) if logs else None
    ci = bootstrap_mean_ci(logs)
    out["tail_vs_head_ci95"] = [math.exp(x) for x in ci] if logs else [None, None]
    out["episodes"] = sum(1 for r in out["runs"] if r["onset_s"] is not None)
    between, within = [], []
    for k, runs in by_key.items():
        meds = [median(x) for x in runs]
        if len(meds) > 1:
            between.append(statistics.stdev(meds))
        within += [statistics.stdev(x) for x in runs]
    out["sigma_between_runs"] = math.sqrt(sum(x * x for x in between) / len(between)) if between else None
    out["sigma_within_run"] = math.sqrt(sum(x * x for x in within) / len(within)) if within else None
    # How the error of a measurement shrinks with its length: σ (log) of the mean of W consecutive windows
    # (non-overlapping blocks of every run) around its config's mean, pooled over configs, each config's
    # sum of squares scaled by n/(n − 1) for the mean estimated from its own n blocks. Independent windows
    # would give σ₁/√W; a per-process draw would stop falling at the process σ.
    out["sigma_by_length"] = {}
    for w in (1, 3, 5, 10, 20, 40):
        ss, n_all = 0.0, 0
        for runs in by_key.values():
            blocks = [sum(run[i:i + w]) / w for run in runs for i in range(0, len(run) - w + 1, w)]
            if len(blocks) < 2:
                continue
            mu = sum(blocks) / len(blocks)
            ss += sum((b - mu) ** 2 for b in blocks) * len(blocks) / (len(blocks) - 1)
            n_all += len(blocks)
        if n_all:
            out["sigma_by_length"][w] = math.sqrt(ss / n_all)
    return out


# ---------------------------------------------------------------------------------------------- report

def svg_plot(points, path, title):
    """Regret (y) vs cost share of the grid (x), one marker per strategy and workload; no plotting library."""
    W, H, L, B, T, R = 560, 340, 60, 50, 30, 150
    xmax = max(1.05, max(p["x"] for p in points) * 1.05)
    ymax = max(0.05, max(p["y"] for p in points) * 1.15)
    px = lambda x: L + (W - L - R) * x / xmax
    py = lambda y: T + (H - T - B) * (1 - y / ymax)
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    shapes = {}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="13">{title}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for i in range(6):
        x = xmax * i / 5
        out.append(f'<text x="{px(x):.0f}" y="{H - B + 15}" text-anchor="middle">{x:.0%}</text>')
        y = ymax * i / 5
        out.append(f'<text x="{L - 5}" y="{py(y) + 4:.0f}" text-anchor="end">{y:.0%}</text>')
    out.append(f'<line x1="{L}" y1="{py(0.03):.0f}" x2="{W - R}" y2="{py(0.03):.0f}" stroke="#999" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{W - R - 3}" y="{py(0.03) - 3:.0f}" text-anchor="end" fill="#666">3%</text>')
    out.append(f'<line x1="{px(0.25):.0f}" y1="{T}" x2="{px(0.25):.0f}" y2="{H - B}" stroke="#999" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{W / 2 - 40}" y="{H - 12}">cost (trial seconds) as a share of the grid\'s</text>')
    out.append(f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">mean regret vs grid optimum</text>')
    strategies = sorted({p["strategy"] for p in points})
    workloads = sorted({p["workload"] for p in points})
    for p in points:
        c = colors[strategies.index(p["strategy"]) % len(colors)]
        x, y = px(p["x"]), py(p["y"])
        if workloads.index(p["workload"]) == 0:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{c}"/>')
        else:
            out.append(f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{c}"/>')
    ly = T + 5
    for s in strategies:
        out.append(f'<circle cx="{W - R + 15}" cy="{ly}" r="5" fill="{colors[strategies.index(s) % len(colors)]}"/>')
        out.append(f'<text x="{W - R + 25}" y="{ly + 4}">{s}</text>')
        ly += 16
    ly += 8
    for i, w in enumerate(workloads):
        shape = (f'<circle cx="{W - R + 15}" cy="{ly}" r="5" fill="#555"/>' if i == 0 else
                 f'<rect x="{W - R + 10}" y="{ly - 5}" width="10" height="10" fill="#555"/>')
        out.append(shape)
        out.append(f'<text x="{W - R + 25}" y="{ly + 4}">{w}</text>')
        ly += 16
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def oracle_pair_trials(land, windows=3, confidence=0.9):
    """Trials per config that even an oracle told which two configs of the space are the best needs to rank them right
    with `confidence`, under the fitted noise (one trial = one process draw × the median of `windows`
    window draws; var(median of 3 normals) ≈ 0.449 σ²): n ≥ 2 (z σ ÷ Δ)², Δ = ln(best ÷ second)."""
    rates = sorted((land["configs"][k]["rate"] for k in grid_keys(land) if k in land["configs"]), reverse=True)
    delta = math.log(rates[0] / rates[1])
    median_var = {1: 1.0, 3: 0.449, 5: 0.287}.get(windows, 1.57 / windows)
    sigma = math.sqrt(land["sigma_process"] ** 2 + median_var * land["sigma_window"] ** 2)
    z = statistics.NormalDist().inv_cdf(confidence)
    return {"gap": rates[0] / rates[1] - 1, "sigma_trial": sigma, "trials_per_config": max(1, math.ceil(2 * (z * sigma / delta) ** 2))}


def run_order_residuals(g):
    """The grid's finished trials in the order they ran, and each one's residual: its log rate minus its
    config's mean log rate over the other repetitions (None for a config measured once)."""
    tr = [t for t in g["trials"] if t["status"] == "ok" and t.get("rate")]
    by = {}
    for t in tr:
        by.setdefault(t["key"], []).append(math.log(t["rate"]))
    res = []
    for t in tr:
        v = by[t["key"]]
        x = math.log(t["rate"])
        res.append(x - (sum(v) - x) / (len(v) - 1) if len(v) > 1 else None)
    return tr, res


def residual_autocorrelation(g, lags=(1, 2, 3, 5, 10)):
    """Host drift in the grid: each trial's log rate minus its config's mean over the other repetitions,
    in the order the trials ran; its autocorrelation at a few lags (0 = independent draws) and the mean
    residual per repetition."""
    tr, res = run_order_residuals(g)
    r = [x for x in res if x is not None]
    m = statistics.mean(r)

    def ac(lag):
        pairs = [(res[i] - m, res[i + lag] - m) for i in range(len(res) - lag) if res[i] is not None and res[i + lag] is not None]
        num = sum(x * y for x, y in pairs)
        den = math.sqrt(sum(x * x for x, _ in pairs) * sum(y * y for _, y in pairs))
        return num / den if den else 0.0

    reps = sorted({t["rep"] for t in tr})
    per_rep = [statistics.mean(res[i] for i, t in enumerate(tr) if t["rep"] == rep and res[i] is not None) for rep in reps]
    return {"lags": {lag: ac(lag) for lag in lags}, "per_rep": per_rep}


def drift_correction_bound(g, ks=(1, 2, 4, 8)):
    """The most a drift correction could remove from the grid's trial noise: each trial's residual (as in
    residual_autocorrelation) minus the mean residual of its k nearest trials in run order — other configs,
    whose true means the ground truth knows, the best references a search could have at no cost. `before`
    uses only the k trials before it (what a search knows when it ranks a trial), `around` k each side.
    Returns the residual variance left, as a share of the uncorrected variance (< 1: the correction helps)."""
    tr, res = run_order_residuals(g)
    base = statistics.pvariance([x for x in res if x is not None])
    out = {}
    for k in ks:
        for side in ("before", "around"):
            left = []
            for i, x in enumerate(res):
                if x is None:
                    continue
                idx = list(range(i - k, i)) + (list(range(i + 1, i + 1 + k)) if side == "around" else [])
                nb = [res[j] for j in idx if 0 <= j < len(res) and res[j] is not None]
                if len(nb) == len(idx):
                    left.append(x - statistics.mean(nb))
            out[f"{side}_{k}"] = statistics.pvariance(left) / base if len(left) > 2 and base > 0 else None
    return out


def fit_host_drift(g):
    """AR(1) host drift fitted to the grid's residual autocorrelation: ac(k) ≈ share × rho^k over lags 1, 2, 3,
    5, 10 (least squares on a grid of rho and share). `share` is the part of the trial variance that is the
    host's slow drift, `rho` its correlation from one trial to the next."""
    ac = residual_autocorrelation(g)["lags"]
    best = None
    for i in range(100):
        rho = i / 100
        for j in range(101):
            share = j / 100
            err = sum((v - share * rho ** k) ** 2 for k, v in ac.items())
            if best is None or err < best[0]:
                best = (err, rho, share)
    return {"rho": best[1], "share": best[2], "autocorrelation": ac}


def step_report(a):
    points, lines = [], []
    for d in a.dirs:
        g = load(os.path.join(d, "grid.json"))
        table = truth_table(g)
        ranked = ranked_keys(g, table)
        best = table[ranked[0]]["rate"]
        within = [k for k in ranked if table[k]["rate"] >= 0.97 * best]
        base_key = key_of(g["baseline"], g["knobs"])
        grid_wall = sum(t["wall_s"] for t in g["trials"]) / g["reps"]
        lines.append(f"### {g['workload']} ({len(ranked)} configs, {g['reps']} interleaved repetitions)\n")
        lines.append(f"Grid optimum **{ranked[0]}**: {best:.1f} samples/s (repetitions "
                     f"{', '.join(f'{x:.1f}' for x in table[ranked[0]]['reps'])}); {len(within)} config(s) within 3% of it; "
                     f"baseline {base_key}: {table.get(base_key, {}).get('rate', float('nan')):.1f}; slowest "
                     f"{table[ranked[-1]]['rate']:.1f}. One pass over the grid took {grid_wall:.0f} s of trials.\n")
        lines.append("| rank | config | samples/s (geo-mean) | repetitions |")
        lines.append("|---|---|---|---|")
        for i, k in enumerate(ranked[:8]):
            lines.append(f"| {i + 1} | {k} | {table[k]['rate']:.1f} | {', '.join(f'{x:.1f}' for x in table[k]['reps'])} |")
        lines.append("")
        drifts = [abs(t["drift"]) for t in g["trials"] if t.get("drift") is not None]
        if drifts:
            lines.append(f"Drift (|last window ÷ first − 1|) over the {len(drifts)} grid trials: median "
                         f"{statistics.median(drifts):.1%}, 90th percentile {sorted(drifts)[int(0.9 * len(drifts))]:.1%}, "
                         f"max {max(drifts):.1%}; beyond 5%: {sum(x > 0.05 for x in drifts)}, beyond 10%: "
                         f"{sum(x > 0.10 for x in drifts)}.\n")
        lp = os.path.join(d, "landscape.json")
        land = load(lp) if os.path.exists(lp) else None
        if land:
            lines.append(f"Fitted noise: process-to-process σ {land['sigma_process']:.1%} (log scale), window σ "
                         f"{land['sigma_window']:.1%}.\n")
            o = oracle_pair_trials(land)
            lines.append(f"Oracle bound: the optimum is {o['gap']:.1%} ahead of the runner-up and one trial's σ is "
                         f"{o['sigma_trial']:.1%}, so even a search told which two configs are the best needs "
                         f"{o['trials_per_config']} trials of each to pick the right one in 90% of runs "
                         f"({2 * o['trials_per_config']} trials; one grid pass is {len(ranked)}).\n")
        ac = residual_autocorrelation(g)
        lines.append("Host drift: residuals (a trial's log rate minus its config's mean over the other repetitions) "
                     "in run order have autocorrelation " + ", ".join(f"{v:+.2f} at lag {k}" for k, v in ac["lags"].items()) +
                     "; mean residual per repetition " + ", ".join(f"{x:+.1%}" for x in ac["per_rep"]) +
                     " (independent draws would show about 0).\n")
        dc = drift_correction_bound(g)
        lines.append("Drift correction, upper bound: subtracting the mean residual of the k trials just before (as a "
                     "search could, with free references of known truth) leaves " + ", ".join(
                         f"{dc[f'before_{k}']:.2f}" for k in (1, 2, 4, 8)) + " of the residual variance for k = 1, 2, 4, 8; "
                     "of the k trials each side " + ", ".join(f"{dc[f'around_{k}']:.2f}" for k in (1, 2, 4, 8)) +
                     " (< 1 would help; real references cost a trial each and carry their own noise).\n")
        fp = os.path.join(d, "fidelity.json")
        fid = load(fp) if os.path.exists(fp) else None
        fid_keys = [k for k in fid["configs"] if k in land["configs"]] if fid and land else []  # in the landscape
        if fid:
            fn = fidelity_numbers(g, fid)
            taus = ", ".join("%.2f" % r["tau_b"] for r in fn["per_rep"])
            retest = ", ".join("%.2f" % x for x in fn["tau_retest"])
            lines.append(f"Test-retest τ-b between default repetitions of the same {fn['configs']} configs: {retest}. "
                         f"The tuner's re-measure policy replayed on the repetitions: noise only τ-b "
                         f"{fn['noise_remeasure']['tau_b']:.2f} ({fn['noise_remeasure']['attempts_per_config']:.2f} "
                         f"attempts per config); noise + drift τ-b {fn['noise_and_drift_remeasure']['tau_b']:.2f} "
                         f"({fn['noise_and_drift_remeasure']['attempts_per_config']:.2f} attempts).\n")
            lines.append("Drift flag vs error (|log(default ÷ long)|, median): " + "; ".join(
                f"±{d['threshold']:.0%}: {d['flagged']}/{d['of']} flagged, error {d['error_flagged'] or 0:.1%} flagged vs "
                f"{d['error_within']:.1%} not" for d in fn["drift_vs_error"]) + ".\n")
            if land:
                ceil = {n: expected_tau(land, fid_keys, n) for n in (1, 2, 3, 5, 10)}
                ceil_long = expected_tau(land, fid_keys, 1, window_scale=10)
                lines.append("Expected τ-b against the true order under the fitted noise (Monte Carlo): " + ", ".join(
                    f"{n} process{'es' if n > 1 else ''} per config {t:.2f}" for n, t in ceil.items()) +
                             f"; one process with 10× windows {ceil_long:.2f}.\n")
            lines.append(f"Ranking fidelity, {fn['configs']} configs spread over the ranking, default trials vs "
                         f"{fn['long_factor']:g}× longer windows: Kendall τ-b per single default repetition "
                         f"{taus} (mean {fn['tau_single_mean']:.2f}); "
                         f"mean of the {len(fn['per_rep'])} repetitions {fn['mean_of_reps']['tau_b']:.2f}; top-1 agrees "
                         f"{sum(r['top1'] for r in fn['per_rep'])}/{len(fn['per_rep'])} single repetitions, top-3 overlap "
                         f"{', '.join(str(r['top3']) for r in fn['per_rep'])}. Trial wall: default "
                         f"{fn['wall_s']['default_per_trial']:.1f} s, long {fn['wall_s']['long_per_trial']:.1f} s.\n")
        tp = os.path.join(d, "timeline.json")
        if os.path.exists(tp):
            tn = timeline_numbers(load(tp))
            ci = tn["tail_vs_head_ci95"]
            lines.append(f"Long runs ({len(tn['runs'])} fresh trials of {tn['windows']} windows of 1 s, the best two configs, "
                         f"a middle one and any named; timeline.json): the last 10 windows ÷ the first 3 (what a default "
                         f"trial measures) {tn['tail_vs_head']:.3f} geo-mean [{ci[0]:.3f}, {ci[1]:.3f}]; "
                         f"{tn['episodes']} of {len(tn['runs'])} runs had a 5-window median more than 10% off their first 3 "
                         f"windows; σ (log) of a config's run medians between runs {tn['sigma_between_runs'] or 0:.1%}, of "
                         f"its windows within a run {tn['sigma_within_run'] or 0:.1%}. σ (log) of the mean of W consecutive "
                         f"windows around its config's mean: " + ", ".join(
                             f"W = {w} {v:.1%}" for w, v in tn["sigma_by_length"].items()) +
                         " (independent windows would divide W = 1's by √W).\n")
            if fid_keys and tn["sigma_by_length"]:
                long_windows = 3 * fid["long_factor"]  # a long run: 3 windows, each long_factor x 1 s
                s_def, s_long = sigma_at_length(tn["sigma_by_length"], 3), sigma_at_length(tn["sigma_by_length"], long_windows)
                c = tau_ceiling_vs_long(land, fid_keys, s_def, s_long)
                lines.append(f"τ-b against single {fid['long_factor']:g}× runs, expected from these errors (default "
                             f"trial σ {s_def:.1%}, a {long_windows:g}-second run σ {s_long:.1%}, the {len(fid_keys)} fidelity "
                             f"configs' true means): a perfect default ranking {c['perfect']:.2f}; the default with r "
                             f"interleaved repetitions per config " + ", ".join(
                                 f"r = {r} {v:.2f}" for r, v in c["reps"].items()) + ".\n")
            lines.append("| config | run | first 3 windows | all | last 10 | largest 5-window excursion | began at | steal (worst second) | system | faults/s (median second) |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|")
            for r in sorted(tn["runs"], key=lambda r: (r["key"], r["rep"])):
                onset = f"{r['onset_s']:.0f} s" if r["onset_s"] is not None else "–"
                lines.append(f"| {r['key']} | {r['rep'] + 1} | {r['head']:.1f} | {r['whole']:.1f} | {r['tail']:.1f} | "
                             f"{r['worst']:+.1%} | {onset} | {r['steal_share'] or 0:.1%} ({r['steal_max_second'] or 0:.1%}) | "
                             f"{r['system_share'] or 0:.1%} | "
                             f"{r['faults_per_s'] or 0:.0f} |")
            lines.append("")
        sp = os.path.join(d, "simulation.json")
        if os.path.exists(sp):
            sim = load(sp)
            lines.append(f"Strategies on the fitted landscape ({sim['seeds']} seeds each, the real tuner with the fake "
                         f"worker; {sim['seconds']:.0f} s for all):\n")
            # Two yardsticks for cost: one `--strategy grid` run (which itself misses the optimum on a noisy host),
            # and the ground truth this study measured (every config in g["reps"] interleaved fresh processes).
            truth_wall = sum(t["wall_s"] for t in g["trials"])
            lines.append(f"| strategy | pick within 3% | mean regret [95% CI] | worst | cost vs a grid run (all trials) | "
                         f"search only | vs the ground truth ({g['reps']} passes, {truth_wall:.0f} s) | trials (median) |")
            lines.append("|---|---|---|---|---|---|---|---|")
            for s, v in sim["strategies"].items():
                ci = v["regret_ci95"]
                lines.append(f"| {s} | {v['within3']:.0%} ({v['within3_count']}/{v['runs'] - v['errors']}) | "
                             f"{v['regret_mean']:.1%} [{ci[0]:.1%}, {ci[1]:.1%}] | {v['regret_max']:.1%} | "
                             f"{v['cost_share']:.0%} | {v['search_cost_share']:.0%} | "
                             f"{v['cost_share'] * sim['grid_cost_s'] / truth_wall:.0%} | {v['trials_median']:g} |")
                points.append({"strategy": s, "workload": g["workload"], "x": v["cost_share"], "y": v["regret_mean"]})
            lines.append("")
        for s in ("auto", "coordinate"):
            rp = os.path.join(d, f"real-{s}.json")
            if os.path.exists(rp):
                real = load(rp)
                runs = [r for r in real["runs"] if r.get("rc") == 0]
                lines.append(f"Real `--strategy {s}` runs (real worker, end to end): " + "; ".join(
                    f"pick {r.get('pick')} regret {r['regret']:.1%}, {r['wall_s']:.0f} s wall, "
                    f"{sum(r['trials'].values())} trials" for r in runs) + ".\n")
    print("\n".join(lines))
    if points and a.plot:
        svg_plot(points, a.plot, "Regret vs cost of each strategy (simulated on the measured grids)")
        print(f"<!-- plot: {a.plot} -->")


def add_stop_at(p):
    """--stop-at of the steps that measure (grid, fidelity, real): see out_of_time()."""
    p.add_argument("--stop-at", type=float, help="seconds since the epoch: start no trial that would end later "
                   f"(exit {STOPPED} with work left; run the step again to continue)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("grid")
    p.add_argument("--autotune", required=True)
    p.add_argument("--workload", required=True)
    p.add_argument("--knobs", nargs="+", required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--setup", action="append", default=[],
                   help="an extra trial flag, repeatable, e.g. --setup=--image-size=32 --setup=--device=cuda")
    p.add_argument("--window-seconds", type=float, default=1.0,
                   help="window length of every trial (the tuner's default 1 s; shorter only to rehearse the study)")
    add_stop_at(p)
    p.add_argument("--out", required=True)
    p = sub.add_parser("fidelity")
    p.add_argument("--autotune", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--configs", type=int, default=12)
    p.add_argument("--long", type=float, default=10)
    p.add_argument("--long-reps", type=int, default=1)
    add_stop_at(p)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("fit")
    p.add_argument("--out", required=True)
    p = sub.add_parser("simulate")
    p.add_argument("--autotune", required=True)
    p.add_argument("--fake", required=True)
    p.add_argument("--landscape", required=True, help="landscape.json from the fit step")
    p.add_argument("--result", help="where to write simulation.json (default: next to the landscape)")
    p.add_argument("--expect", nargs="*", default=[], help="STRATEGY:MIN_WITHIN3:MAX_COST_SHARE:MAX_MEAN_REGRET, e.g. auto:0.9:0.25:0.03")
    p.add_argument("--tune-args", type=shlex.split, default=[],
                   help="more `autotune tune` flags in one string, e.g. --tune-args='--confirm-top=4 --max-drift=10'")
    p.add_argument("--grid-cost", type=float, help="the grid's cost in seconds (default: simulated with the same flags)")
    p.add_argument("--strategies", nargs="+", default=["grid", "auto", "coordinate", "random", "halving"])
    p.add_argument("--host-drift", action="store_true",
                   help="replay the host's slow drift too (AR(1) fitted to the grid's residuals; the grid run used as "
                        "the cost yardstick then drifts as well)")
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p = sub.add_parser("real")
    p.add_argument("--autotune", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--strategy", default="auto")
    p.add_argument("--runs", type=int, default=2)
    add_stop_at(p)
    p = sub.add_parser("recheck")
    p.add_argument("--autotune", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--top", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("timeline")
    p.add_argument("--autotune", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--key", nargs="*", default=[], help="more grid configs to follow, as keys of grid.json")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--windows", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("report")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--plot")
    a = ap.parse_args()
    return {"grid": step_grid, "fidelity": step_fidelity, "fit": step_fit, "simulate": step_simulate,
            "real": step_real, "recheck": step_recheck, "timeline": step_timeline, "report": step_report}[a.step](a)


if __name__ == "__main__":
    sys.exit(main())
