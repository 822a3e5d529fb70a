#!/usr/bin/env python3
"""HTA's multi-rank load of a real two-rank Gloo trace folder (tests/profiler/hta_ddp_check.sh): every
rank found under its own number, the traced steps as HTA's profiler steps, and each rank's gloo:allreduce
events there — as many as rank 0's profile counted (result.json's profile.comm). HTA's communication
analyses are GPU-kernel based (NCCL); on a CPU trace they have nothing to measure, so they are not asked.
Exit 77 (CTest: skipped) when HTA is not installed."""
import json
import sys

try:
    from hta.trace_analysis import TraceAnalysis
except Exception as e:  # noqa: BLE001 - any import failure means "not available here"
    print(f"SKIP: Holistic Trace Analysis is not importable ({e}); pip install HolisticTraceAnalysis")
    sys.exit(77)

folder, result_path = sys.argv[1], sys.argv[2]
result = json.load(open(result_path))
prof = result["profile"]
failures = []
a = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
ranks = a.t.get_ranks()
print("ranks", ranks)
if ranks != [0, 1]:
    failures.append(f"HTA found ranks {ranks} in {folder}, expected [0, 1]")
steps = a.get_profiler_steps()
print("profiler steps", list(map(int, steps)))
if len(steps) != prof["steps"]:
    failures.append(f"HTA found {len(steps)} profiler steps, the profile traced {prof['steps']}")
names = a.t.symbol_table.get_sym_table()
for r in ranks:
    df = a.t.get_trace(r)
    gloo = df[df["name"].map(lambda i: names[i]) == "gloo:allreduce"]
    print(f"rank {r}: {len(gloo)} gloo:allreduce events, {gloo['dur'].sum() / 1e3:.2f} ms")
    expected = round(prof["comm"]["calls_per_step"] * prof["steps"]) if r == 0 else None
    if len(gloo) == 0:
        failures.append(f"rank {r}: no gloo:allreduce events")
    # rank 0's profile counts every collective (allreduces and any broadcast); its allreduces are at most that
    if expected is not None and not 0 < len(gloo) <= expected:
        failures.append(f"rank 0: {len(gloo)} allreduce events, the profile counted {expected} collectives")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
