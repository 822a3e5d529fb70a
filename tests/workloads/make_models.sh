#!/usr/bin/env bash
# CTest fixture: the TorchScript models (and not-models) the user-model tests load, and torchvision's
# resnet18 exported by scripts/export_model.py when torchvision is installed.
#   make_models.sh OUT_DIR          exit 77 (skipped) without a Python that imports torch
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PY=$("$here/../../scripts/autotune-python.sh")
"$PY" -c "import torch" 2>/dev/null || { echo "no Python with torch: user-model tests skipped"; exit 77; }
rm -rf "$1"
"$PY" "$here/make_models.py" "$1"
if "$PY" -c "import torchvision" 2>/dev/null; then
  "$PY" "$here/../../scripts/export_model.py" torchvision.models:resnet18 "$1/resnet18.pt" --input B,3,64,64:float32 --target classes:1000
else
  echo "torchvision not installed: resnet18.pt not exported (its test skips)"
fi
