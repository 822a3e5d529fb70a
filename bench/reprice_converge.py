#!/usr/bin/env python3
"""Re-price an earlier `autotune converge` run with a tune run's noise scale (docs/time-to-train.md).

Reads a converge folder's converge.md (its runs table: each run's global batch and samples/s, and each candidate's
measured time ratio) and a tune folder's best.json (time_to_train.noise_scale: B̄ and its band), and prints, per
candidate, the prediction the tune's B̄ makes from the converge runs' own samples/s — ratio × (B0 + B̄)/(B + B̄) —
beside the measured time ratio. Nothing is trained: the converge runs are the measurement, the tune the prediction.

    bench/reprice_converge.py CONVERGE_DIR TUNE_DIR
"""
import json
import re
import sys
from pathlib import Path


def runs_table(md):
    """The runs table's rows; the samples/s column found by its header (runs since the β2, ε column have one more)."""
    rows, col = [], 4
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "run" and "samples/s" in cells:
            col = cells.index("samples/s")
        elif len(cells) >= 10 and cells[2].isdigit():
            rows.append({"run": cells[0], "change": cells[1].strip("`"), "batch": int(cells[2]),
                         "samples_s": float(cells[col].replace(",", ""))})
    return rows


def measured(md):
    out = {}
    for m in re.finditer(r"^- `([^`]*)` \(([^)]*)\).*? measured ([0-9.]+)× the baseline's speed", md, re.M):
        out[m.group(1)] = float(m.group(3))
    return out


def main():
    conv, tune = Path(sys.argv[1]), Path(sys.argv[2])
    md = (conv / "converge.md").read_text()
    best = json.loads((tune / "best.json").read_text())
    ns = best["time_to_train"]["noise_scale"]
    b0 = best["time_to_train"]["user_batch"]
    bn = ns["value"]
    lo, hi = ns["ci95"][0], ns["ci95"][1]
    band_lo, band_hi = min(bn / 2, lo), max(bn * 2, hi if hi is not None else float("inf"))
    rows = runs_table(md)
    base = [r["samples_s"] for r in rows if r["change"] == "(baseline)"]
    x0 = sum(base) / len(base)
    along = ns.get("along_run", {})
    print(f"tune {tune}: B̄ = {bn:,.0f} (band {band_lo:,.0f}–{band_hi:,.0f}); "
          f"{'over ' + along['run_basis'] if along.get('over_run') else 'the trial value'}; B0 = {b0}")
    print("| candidate | global batch | samples/s vs baseline | predicted (B̄) | predicted (band) | measured | measured ÷ predicted |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for change, got in measured(md).items():
        r = next(x for x in rows if x["change"] == change)
        ratio = r["samples_s"] / x0
        eff = lambda b: (b0 + b) / (r["batch"] + b) if b != float("inf") else 1.0
        p = ratio * eff(bn)
        ends = sorted([ratio * eff(band_lo), ratio * eff(band_hi)])
        print(f"| `{change}` | {r['batch']} | {ratio:.2f}× | {p:.2f}× | {ends[0]:.2f}–{ends[1]:.2f}× | {got:.2f}× | {got / p - 1:+.0%} |")


if __name__ == "__main__":
    main()
