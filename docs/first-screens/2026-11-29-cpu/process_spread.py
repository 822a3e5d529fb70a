#!/usr/bin/env python3
"""Reads process-spread.sh's OUT_DIR: the long process's windows, the fresh processes' medians, their spread and order."""
import glob
import json
import statistics as st
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
def steal(line):  # /proc/stat "cpu" line: user nice system idle iowait irq softirq steal
    v = [int(x) for x in line.split()[1:]]; return v[7], sum(v)
L = json.load(open(f"{d}/long.json")); lw = [w["samples_per_s"] for w in L["windows"]]
print("long process: %d windows of 1 s: median %.0f, min %.0f, max %.0f, CV %.1f%%" % (len(lw), st.median(lw), min(lw), max(lw), 100*st.pstdev(lw)/st.mean(lw)))
print("  by 10-s block:", [round(st.median(lw[i:i+10])) for i in range(0, len(lw), 10)])
s0, s1 = open(f"{d}/stat0").read(), open(f"{d}/stat1").read()
a, b = steal(s0), steal(s1); print("  steal over it: %.2f%% of CPU time" % (100*(b[0]-a[0])/max(1, b[1]-a[1])))
rows = []
for line in open(f"{d}/fresh.log"):
    i, rest = line.split(" ", 1); t0, s0, s1 = rest.split("|")
    r = json.load(open(f"{d}/f{i}.json")); w = [x["samples_per_s"] for x in r["windows"]]
    a, b = steal(s0), steal(s1)
    rows.append((int(i), st.median(w), 100*(max(w)-min(w))/st.median(w), 100*(b[0]-a[0])/max(1, b[1]-a[1]), r["host_load"]["other_cores"]))
med = [r[1] for r in rows]
print("fresh processes: %d, median of medians %.0f, min %.0f, max %.0f, CV %.1f%%, max/min %.2f" % (len(med), st.median(med), min(med), max(med), 100*st.pstdev(med)/st.mean(med), max(med)/min(med)))
print("  within-process window range (median): %.1f%%; steal max %.2f%%; other programs' cores max %.2f" % (st.median(r[2] for r in rows), max(r[3] for r in rows), max(r[4] for r in rows)))
m = st.mean(med); num = sum((med[k]-m)*(med[k+1]-m) for k in range(len(med)-1)); den = sum((x-m)**2 for x in med)
print("  lag-1 autocorrelation of consecutive processes: %.2f" % (num/den))
print("  each:", " ".join("%d:%.0f" % (r[0], r[1]) for r in rows))
nr = sorted(glob.glob(f"{d}/norand/f*.json"))
if nr:
    m = [st.median(x["samples_per_s"] for x in json.load(open(f))["windows"]) for f in nr]
    print("address-space randomisation off (setarch -R): %d processes, median %.0f, min %.0f, max %.0f, CV %.1f%%"
          % (len(m), st.median(m), min(m), max(m), 100 * st.pstdev(m) / st.mean(m)))
