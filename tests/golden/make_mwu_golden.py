#!/usr/bin/env python3
"""Writes tests/golden/mann_whitney.json: one-sided Mann-Whitney U p-values from SciPy, the reference
the regression gate's own implementation (tuner/measures/gate.cpp) is tested against. Run once:

    python3 -m venv /tmp/v && /tmp/v/bin/pip install scipy statsmodels && /tmp/v/bin/python tests/golden/make_mwu_golden.py

Cases: small samples without ties (SciPy's exact distribution), samples with ties and large samples
(its normal approximation with tie and continuity correction), and Holm-adjusted p-values (statsmodels).
"""
import json
import random

import scipy
import statsmodels
from scipy.stats import mannwhitneyu
from statsmodels.stats.multitest import multipletests

rng = random.Random(20261123)
cases = []
def case(x, y, method):
    r = mannwhitneyu(x, y, alternative="less", method=method)
    cases.append({"x": x, "y": y, "method": method, "u": float(r.statistic), "p_less": float(r.pvalue)})

for n, m, shift in [(5, 5, 0.0), (5, 5, -1.0), (10, 10, 0.0), (10, 10, -0.05), (10, 10, -0.5), (7, 12, 0.2), (3, 4, -2.0),
                    (10, 10, -1.5), (20, 20, -0.3)]:
    x = [round(rng.gauss(1.0 + shift, 0.4), 6) for _ in range(n)]
    y = [round(rng.gauss(1.0, 0.4), 6) for _ in range(m)]
    case(x, y, "exact")
for n, m in [(10, 10), (6, 9), (15, 15)]:  # ties: rounded values
    x = [round(rng.gauss(0.9, 0.5), 1) for _ in range(n)]
    y = [round(rng.gauss(1.0, 0.5), 1) for _ in range(m)]
    case(x, y, "asymptotic")
for n, m in [(60, 60), (80, 55)]:
    x = [round(rng.gauss(0.97, 0.1), 6) for _ in range(n)]
    y = [round(rng.gauss(1.0, 0.1), 6) for _ in range(m)]
    case(x, y, "asymptotic")


holm_cases = [{"p": p, "adjusted": [float(x) for x in multipletests(p, method="holm")[1]]} for p in ([0.01, 0.04, 0.03, 0.005], [0.2, 0.001], [0.5], [0.04, 0.04, 0.04])]
with open("tests/golden/mann_whitney.json", "w") as f:
    json.dump({"scipy": scipy.__version__, "statsmodels": statsmodels.__version__, "mann_whitney_less": cases, "holm": holm_cases}, f, indent=1)
    f.write("\n")
print(f"wrote {len(cases)} Mann-Whitney cases and {len(holm_cases)} Holm cases (SciPy {scipy.__version__})")
