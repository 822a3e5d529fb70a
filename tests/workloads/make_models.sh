#!/usr/bin/env bash
# CTest fixture: the TorchScript models (and not-models) the user-model tests load, and torchvision's
# resnet18 exported by scripts/export_model.py when torchvision is installed.
#   make_models.sh OUT_DIR          exit 77 (skipped) without a Python that has torch
# The folder is kept when nothing it is made from changed: this script, make_models.py, the exporter and the Python
# worker's package it imports, the Python, and its torch and torchvision (their version.py). OUT_DIR/inputs.sha256
# records them; any difference, or a missing file, makes the folder again from nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=$("$root/scripts/autotune-python.sh")
# Where torch and torchvision are, without importing them (an import of torch costs seconds).
found=$("$PY" - <<'PYEOF' 2>/dev/null || true
import importlib.util as iu, os
for name in ("torch", "torchvision"):
    spec = iu.find_spec(name)
    print(os.path.join(os.path.dirname(spec.origin), "version.py") if spec and spec.origin else "-")
PYEOF
)
torch_version=$(sed -n 1p <<<"$found")
vision_version=$(sed -n 2p <<<"$found")
if [ -z "$torch_version" ] || [ "$torch_version" = - ]; then
  echo "no Python with torch: user-model tests skipped"
  exit 77
fi
inputs() {
  echo "python $PY"
  sha256sum "$here/make_models.sh" "$here/make_models.py" "$root/scripts/export_model.py" \
            "$root"/pyworker/autotune_pyworker/*.py "$torch_version"
  if [ "$vision_version" != - ]; then sha256sum "$vision_version"; fi
}
key=$(inputs)
if [ -f "$1/inputs.sha256" ] && [ "$(cat "$1/inputs.sha256")" = "$key" ] && [ -f "$1/done" ]; then
  echo "test models in $1 are up to date (nothing they are made from changed)"
  exit 0
fi
rm -rf "$1"
"$PY" "$here/make_models.py" "$1"
if [ "$vision_version" != - ]; then
  "$PY" "$root/scripts/export_model.py" torchvision.models:resnet18 "$1/resnet18.pt" --input B,3,64,64:float32 --target classes:1000
else
  echo "torchvision not installed: resnet18.pt not exported (its test skips)"
fi
printf '%s\n' "$key" > "$1/inputs.sha256"
touch "$1/done"
