#!/usr/bin/env python3
"""How much a batch ramp can gain over the best fixed batch, in the time model autotune prices it with
(knobs/batch_ramp.h; docs/time-to-train.md, "A batch ramp").

    scripts/autotune-python.sh bench/ramp_bound.py

A run of E samples at the user's batch B0; the noise scale grows along it as B(e) = B_end · (e/E)^alpha. A batch B with
samples/s X(B) needs ∫ (B + B(e)) / (B0 + B(e)) de of its own samples; a ramp takes the cheapest batch at each e. Two
throughput curves: X(B) = B / (B + 64), every power of two from 16 to 4096 (micro-batches that fill a device), and
grad_accum 1, 2, 4 at one micro-batch of 64 with the optimizer step shared (× 1, 1.49, 1.75 — the fake worker's
FAKE_ACCUM_GAIN=1, and about what a small model's AdamW step costs). Prints a Markdown table: the best fixed batch, its
time and the ramp's (both relative to staying at B0), and the ramp's gain over the best fixed batch.
"""
import numpy as np

B0 = 64
CURVES = {
    "micro-batches 16–4096, X ∝ B/(B+64)": {b: b / (b + 64) for b in [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]},
    "grad_accum 1, 2, 4 at micro-batch 64": {64: 1.0, 128: 1.49, 256: 1.75},
}


def times(xs, alpha, b_end):
    e = np.linspace(0, 1, 400001)
    bn = b_end * e ** alpha
    cost = {b: (b + bn) / (B0 + bn) / x for b, x in xs.items()}
    fixed = {b: np.trapezoid(c, e) for b, c in cost.items()}
    ramp = np.trapezoid(np.min(np.array(list(cost.values())), axis=0), e)
    base = fixed.get(B0, np.trapezoid(np.ones_like(e) / xs.get(B0, 1.0), e))
    best = min(fixed, key=fixed.get)
    return best, fixed[best] / base, ramp / base, fixed[best] / ramp


print("| throughput curve | B(e) | best fixed batch | its time (÷ B0's) | ramp's time | ramp ÷ best fixed |")
print("|---|---|---:|---:|---:|---:|")
for name, xs in CURVES.items():
    for alpha in (0.5, 1.0):
        for b_end in (300, 2000, 10000):
            best, tf, tr, gain = times(xs, alpha, b_end)
            print(f"| {name} | {b_end:,}·(e/E)^{alpha} | {best} | {tf:.3f} | {tr:.3f} | **{gain:.3f}×** |")
