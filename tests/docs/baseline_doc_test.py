#!/usr/bin/env python3
"""docs/baseline.md is the knob catalog's sourced defaults (`autotune knobs --json`, pytorch_defaults) as a table:
the test fails when the committed table differs; --write regenerates it.

    baseline_doc_test.py AUTOTUNE DOCS_BASELINE_MD [--write]
"""
import json
import subprocess
import sys

HEAD = """# The baseline: PyTorch 2.11's defaults, value by value

A tuning run's baseline is what a plain training script does when it sets nothing, for the user's
frontend (`autotune tune --frontend python|libtorch`, Python by default) and device, each value cited to
PyTorch's own source. The table below is the knob catalog's (`knobs/knob.cpp`, `cite_defaults`; `autotune
knobs --json`, field `pytorch_defaults`); `tests/docs/baseline_doc_test.py` keeps it true (regenerate:
`python3 tests/docs/baseline_doc_test.py build/bin/autotune docs/baseline.md --write`).

Where the frontends differ — AdamW's implementation on CUDA — the report names the frontend its baseline is
for. A task whose own `optimizer()` builds another torch.optim optimizer (SGD, Adam, …) gets the same rule under its
class's name in the report's baseline table: every torch.optim optimizer with a foreach path picks it the same way when
foreach and fused are left unset (tuner/options/run_context.cpp). `autotune trial`, `check`, `memory`, `profile` and `apply` train the same values for every knob not given
(`--frontend`, Python by default). Runs from before the sourced baseline used the catalog's first values
(zero_grad=zeros, the per-parameter AdamW loop everywhere) and report that way; their plans resume with them.

| knob | Python, CUDA | Python, CPU | LibTorch, CUDA | LibTorch, CPU | why |
|---|---|---|---|---|---|
"""


def main():
    autotune, doc = sys.argv[1], sys.argv[2]
    knobs = json.loads(subprocess.run([autotune, "knobs", "--json"], capture_output=True, text=True, check=True).stdout)
    rows = []
    for k in knobs:
        d = k["pytorch_defaults"]
        cols = [d[f]["value"] for f in ("python/cuda", "python/cpu", "libtorch/cuda", "libtorch/cpu")]
        why = []
        for f in ("python/cuda", "python/cpu", "libtorch/cuda", "libtorch/cpu"):
            if d[f]["source"] and d[f]["source"] not in why:
                why.append(d[f]["source"])
        cells = ["`workload default`" if v == "workload" else f"`{v}`" for v in cols]
        rows.append(f"| `{k['name']}` | " + " | ".join(cells) + " | " + "; ".join(w.replace("|", "\\|") for w in why) + " |")
    text = HEAD + "\n".join(rows) + "\n"
    if len(sys.argv) > 3 and sys.argv[3] == "--write":
        open(doc, "w").write(text)
        return 0
    if open(doc).read() != text:
        print(f"FAIL: {doc} is out of date: regenerate it (see its first paragraph)")
        return 1
    if any(not all(k["pytorch_defaults"][f]["source"] for f in k["pytorch_defaults"]) for k in knobs):
        print("FAIL: a knob's default has no source")
        return 1
    print(f"{len(knobs)} knobs, every default sourced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
