#!/usr/bin/env bash
# The Python worker on this CPU (docs/models.md, "Two workers"): (A) torch.compile as a candidate on two models, each
# tuned with compile=off,default; (B) the same resnet18 trained by both workers — the C++ built-in and torchvision's
# in Python — at the same seed, knobs and image size, interleaved; (C) Hugging Face models tuned without export, one
# per task, and longformer, which the TorchScript path refuses. summarize.py prints the tables docs/models.md quotes.
#   docs/python-worker-runs/2026-11-27-cpu/run.sh OUT_DIR [BUILD_DIR]
set -euo pipefail
OUT=$(realpath -m "${1:?usage: run.sh OUT_DIR [BUILD_DIR]}")
B=$(realpath "${2:-build}")
A=$B/bin/autotune
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
M=(--windows 3 --window-seconds 1)
# (A) compile as a candidate
"$A" tune --model torchvision.models:resnet18 --model-kwargs '{"num_classes": 10}' --model-input B,3,64,64:float32 \
  --model-target classes:10 --knobs compile=off,default --objective throughput --budget 4m "${M[@]}" --out "$OUT/compile-resnet18"
"$A" tune --model hf:gpt2 --model-task causal-lm --model-kwargs '{"n_layer": 2, "n_embd": 128, "n_head": 4, "vocab_size": 4096}' \
  --model-seq 64 --knobs compile=off,default --objective throughput --budget 4m "${M[@]}" --out "$OUT/compile-gpt2"
# (B) one model, two workers, interleaved
for round in 1 2 3; do
  "$A" trial --workload resnet18 --image-size 64 --set batch_size=32 "${M[@]}" --out "$OUT/workers/cpp-$round"
  "$A" trial --model torchvision.models:resnet18 --model-input B,3,64,64:float32 --model-target classes:1000 \
    --set batch_size=32 "${M[@]}" --out "$OUT/workers/python-$round"
done
# (C) Hugging Face models, no export
T=(--knobs batch_size=8,16 --objective throughput --budget 75s --windows 3 --window-seconds 0.5)
"$A" tune --model hf:bert --model-task sequence-classification \
  --model-kwargs '{"num_hidden_layers": 2, "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4, "num_labels": 3}' \
  --model-seq 64 "${T[@]}" --out "$OUT/hf-bert"
"$A" tune --model hf:vit --model-task image-classification \
  --model-kwargs '{"num_hidden_layers": 2, "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4, "image_size": 64, "patch_size": 8, "num_labels": 10}' \
  "${T[@]}" --out "$OUT/hf-vit"
"$A" tune --model hf:longformer --model-task sequence-classification \
  --model-kwargs '{"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 1000, "attention_window": [8, 8]}' \
  --model-seq 32 "${T[@]}" --out "$OUT/hf-longformer"
python3 "$HERE/summarize.py" "$OUT"
