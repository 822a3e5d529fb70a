"""A loss curve's smoothing: the converge stopping rule's arithmetic, written in C++ at knobs/converge.cpp (the tuner
prices and reports with it, the C++ worker stops with it). The Python worker stops inside its training loop, at every
loss read, where asking another program is too slow, so the rule is written here a second time;
tests/knobs/resolution_cross_test.py holds the two to the same numbers on random curves (autotune-resolve computes the
C++ side). Imports nothing of torch."""
import math


def smoothed_loss(points, i, window):
    """knobs/converge.cpp smoothed_loss: the mean loss over the samples (points[i].samples - window, points[i].samples],
    each step weighted by its samples; NaN when one of them is non-finite."""
    start = points[i][0] - window
    total = n = 0.0
    for j in range(i, -1, -1):
        before = points[j - 1][0] if j > 0 else 0
        loss = points[j][2]
        if not math.isfinite(loss):
            return float("nan")
        w = points[j][0] - before
        total += loss * w
        n += w
        if before <= start:
            break
    return total / n if n > 0 else float("nan")


def reached_target(points, i, target, window):
    """knobs/converge.cpp time_to_target's test at point i: the window full (at least `window` samples trained) and the
    smoothed loss at or below the target."""
    return target > 0 and points[i][0] >= window and smoothed_loss(points, i, window) <= target
