#!/usr/bin/env python3
"""A real consumer of our trace format: Holistic Trace Analysis (PyPI: HolisticTraceAnalysis) loads
DIR/trace/trace.json (written by write_sample_trace from a training-like stream) and computes its temporal
breakdown and idle-time breakdown; the GPU time HTA finds must match our own analysis of the same
stream (DIR/summary.json); then loads the two-rank folder DIR/ranks as a multi-rank trace and checks its
communication/computation overlap per rank against ours (DIR/ranks.json). Exit 77 (CTest: skipped) when HTA is not installed."""
import json
import sys

try:
    from hta.trace_analysis import TraceAnalysis
except Exception as e:  # noqa: BLE001 - any import failure means "not available here"
    print(f"SKIP: Holistic Trace Analysis is not importable ({e}); pip install HolisticTraceAnalysis")
    sys.exit(77)

d = sys.argv[1]
ours = json.load(open(f"{d}/summary.json"))
analyzer = TraceAnalysis(trace_dir=f"{d}/trace", include_last_profiler_step=True)
tb = analyzer.get_temporal_breakdown(visualize=False)
print(tb.to_string())
row = tb.iloc[0]
hta_gpu_us = float(row["compute_time(us)"]) + float(row["non_compute_time(us)"])
window_us = ours["step_ms"] * 1000 * ours["steps"]
our_busy_us = ours["busy_share"] * window_us
print(f"HTA GPU time {hta_gpu_us:.1f} us, ours {our_busy_us:.1f} us (window {window_us:.0f} us)")
failures = []
if abs(hta_gpu_us - our_busy_us) > 0.01 * our_busy_us:
    failures.append(f"GPU busy time differs: HTA {hta_gpu_us:.1f} us vs ours {our_busy_us:.1f} us")
idle = analyzer.get_idle_time_breakdown(visualize=False)
idle_df = idle[0] if isinstance(idle, tuple) else idle
print(idle_df.to_string())
if len(idle_df) == 0:
    failures.append("HTA found no idle-time categories in the trace")
else:
    # The idle split: HTA measures from the first to the last GPU op, we over the step windows, so
    # the shares differ at the edges; the dominant category must agree.
    hta_top = idle_df.groupby("idle_category")["idle_time"].sum().idxmax()
    ours_split = {"host_wait": ours["host_wait_share"], "kernel_wait": ours["kernel_wait_share"], "other": ours["other_idle_share"]}
    ours_top = max(ours_split, key=ours_split.get)
    print(f"dominant idle category: HTA {hta_top}, ours {ours_top} {ours_split}")
    if hta_top != ours_top:
        failures.append(f"dominant idle category differs: HTA {hta_top} vs ours {ours_top}")
# The two-rank set: HTA must key the folder's files by their distributedInfo rank, and its
# communication/computation overlap per rank must be our hidden share of the NCCL time.
ours_ranks = {r["rank"]: r for r in json.load(open(f"{d}/ranks.json"))}
multi = TraceAnalysis(trace_dir=f"{d}/ranks", include_last_profiler_step=True)
if sorted(multi.t.get_ranks()) != sorted(ours_ranks):
    failures.append(f"HTA loaded ranks {sorted(multi.t.get_ranks())}, the folder holds {sorted(ours_ranks)}")
overlap = multi.get_comm_comp_overlap(visualize=False)
print(overlap.to_string())
for _, row in overlap.iterrows():
    mine = 100 * ours_ranks[int(row["rank"])]["hidden_share"]
    print(f"rank {int(row['rank'])}: HTA overlap {row['comp_comm_overlap_pctg']:.2f}%, ours hidden {mine:.2f}%")
    if abs(float(row["comp_comm_overlap_pctg"]) - mine) > 0.5:
        failures.append(f"rank {int(row['rank'])}: HTA's comm/comp overlap {row['comp_comm_overlap_pctg']}% vs our hidden {mine:.2f}%")
if len(overlap) == 2 and abs(ours_ranks[0]["hidden_share"] - ours_ranks[1]["hidden_share"]) < 0.2:
    failures.append("the two sample ranks should differ in overlap (the comparison would not discriminate)")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
