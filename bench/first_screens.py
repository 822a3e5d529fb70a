#!/usr/bin/env python3
"""Hugging Face first screens, quiet and beside a CPU burner: what `autotune tune` prints and reports for a user's model.

    first_screens.py BUILD_DIR OUT_DIR [--budget 120] [--models deit,qwen2,swin,gpt_neox,distilbert] [--hosts quiet,busy] [--work DIR]

Each model is exported with scripts/export_model.py (small configs: a 2-core VM trains them in seconds), then tuned
twice with the default space and objective: on a quiet host, and beside a process that keeps one core busy for the
whole run (as a second program on a workstation or a CI runner would). OUT_DIR gets each run's console output
(MODEL-quiet.txt, MODEL-busy.txt), its report's first screen (everything before "## Why it wins") and summary.md, a
table of what each first screen said: the pick, its speedup and interval, whether the host was named busy. The
exported models and the run folders go to --work (default /tmp/first-screens).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = {
    "deit": ["hf:deit", "--task", "image-classification", "--kwargs",
             json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128,
                         "image_size": 32, "patch_size": 4, "num_labels": 10})],
    "qwen2": ["hf:qwen2", "--task", "causal-lm", "--seq", "32", "--kwargs",
              json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                          "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 64})],
    "swin": ["hf:swin", "--task", "image-classification", "--kwargs",
             json.dumps({"image_size": 32, "patch_size": 4, "window_size": 4, "embed_dim": 32, "depths": [1, 2],
                         "num_heads": [2, 4], "num_labels": 10, "drop_path_rate": 0.1})],
    "gpt_neox": ["hf:gpt_neox", "--task", "causal-lm", "--seq", "32", "--kwargs",
                 json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128,
                             "vocab_size": 512, "max_position_embeddings": 64})],
    # Full size (transformers' default config: 6 layers × 768, 66 M parameters): one trial takes minutes here.
    "distilbert": ["hf:distilbert", "--task", "sequence-classification", "--seq", "128"],
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("out")
    p.add_argument("--budget", type=int, default=120)
    p.add_argument("--models", default="deit,qwen2")
    p.add_argument("--work", default="/tmp/first-screens")
    p.add_argument("--hosts", default="quiet,busy", help="which runs: quiet, busy or both (a rerun of one keeps the other's files)")
    a = p.parse_args()
    py = subprocess.run([os.path.join(ROOT, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
    autotune = os.path.join(os.path.abspath(a.build), "bin/autotune")
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for name in a.models.split(","):
        model = os.path.join(a.work, name + ".pt")
        e = subprocess.run([py, os.path.join(ROOT, "scripts/export_model.py"), MODELS[name][0], model] + MODELS[name][1:],
                           capture_output=True, text=True)
        if e.returncode != 0:
            sys.exit(f"{name}: export failed: {e.stderr.strip()[-500:]}")
        for mode in a.hosts.split(","):
            run = os.path.join(a.work, f"run-{name}-{mode}")
            subprocess.run(["rm", "-rf", run])
            burner = None
            if mode == "busy":  # one core kept busy for the whole run
                burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                time.sleep(1)
            t0 = time.time()
            try:
                t = subprocess.run([autotune, "tune", "--model", model, "--budget", f"{a.budget}s", "--out", run],
                                   capture_output=True, text=True, timeout=10 * a.budget)
            finally:
                if burner:
                    burner.kill()
                    burner.wait()
            wall = time.time() - t0
            with open(os.path.join(a.out, f"{name}-{mode}.txt"), "w") as f:
                f.write(t.stdout + t.stderr)
            md = open(os.path.join(run, "report.md")).read() if os.path.exists(os.path.join(run, "report.md")) else ""
            with open(os.path.join(a.out, f"{name}-{mode}-first-screen.md"), "w") as f:
                f.write(md.split("## Why it wins")[0])
            winner = next((l for l in t.stdout.splitlines() if l.startswith("winner: ")), "winner: none")
            speedup = next((l for l in t.stdout.splitlines() if l.startswith("speedup over the baseline: ")), "")
            pick = next((l for l in t.stdout.splitlines() if l.startswith("why this pick: ")), "")
            rows.append({"model": name, "host": mode, "exit": t.returncode, "wall_s": round(wall),
                         "winner": winner[len("winner: "):].split(" — ")[0],
                         "speedup": re.sub(r", from .*", "", speedup[len("speedup over the baseline: "):]),
                         "busy_named": "busy host:" in t.stdout, "pick_note": pick[len("why this pick: "):][:160]})
            print(json.dumps(rows[-1]), flush=True)
            with open(os.path.join(a.out, f"{name}-{mode}.json"), "w") as f:  # the summary reads every run's row
                json.dump(rows[-1], f)
    rows = []  # each model's runs, this call's and an earlier call's (--hosts reruns one of them)
    for name in a.models.split(","):
        for mode in ("quiet", "busy"):
            path = os.path.join(a.out, f"{name}-{mode}.json")
            if os.path.exists(path):
                rows.append(json.load(open(path)))
    with open(os.path.join(a.out, f"summary-{'-'.join(a.models.split(','))}.md"), "w") as f:
        f.write(f"# First screens, quiet and beside a one-core burner (budget {a.budget} s each)\n\n"
                "| model | host | exit | wall s | winner | speedup over the baseline | busy host named | why this pick |\n"
                "|---|---|---:|---:|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['host']} | {r['exit']} | {r['wall_s']} | `{r['winner']}` | {r['speedup']} | "
                    f"{'yes' if r['busy_named'] else 'no'} | {r['pick_note'].replace('|', '/')} |\n")


if __name__ == "__main__":
    main()
