#!/usr/bin/env bash
# The task-file runs of docs/task-runs/2026-11-28-cpu/summary.md (issue 63's must-show list, on this 2-core CPU):
#   run.sh BUILD_DIR OUT_DIR
# Each block is one `autotune` command as a user types it; the logs and run folders land in OUT_DIR.
set -u
B=${1:-build}/bin
O=${2:-/tmp/task-runs}
T=$(cd "$(dirname "$0")/../../../tests/integration/tasks" && pwd)
mkdir -p "$O"
at() { echo "\$ autotune $*" | tee -a "$O/commands.log"; "$B/autotune" "$@"; echo "exit $?" | tee -a "$O/commands.log"; }

# 1. Photos decoded by PIL through torchvision transforms in the task's own Dataset, a small CNN at 64 px with
#    SGD + momentum: the loader knobs searched; the profile before (num_workers=0) and after (the winner's).
# The test photos under 1.5 MB (the GPU kit carries the same), each 4 times an epoch.
mkdir -p "$O/photos-in"
find "${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/test-images/photos" -name '*.jpg' -size -1500k -exec cp {} "$O/photos-in/" \;
export TASK_PHOTOS="$O/photos-in" TASK_REPEAT=4
#    Windows of 3 s: a step's decode cost varies with the photos its crops come from.
at tune --task "$T/photo_task.py" --knobs num_workers=0,1,2 --objective throughput --window-seconds 3 --budget 5m \
   --out "$O/photos" > "$O/photos.log" 2>&1
at profile --task "$T/photo_task.py" --set num_workers=0 --trace "$O/photos-nw0.json" > "$O/photos-profile-nw0.log" 2>&1
at profile --task "$T/photo_task.py" --set num_workers=2 --trace "$O/photos-nw2.json" > "$O/photos-profile-nw2.log" 2>&1

# 2. Text: a dict dataset padded by the task's own collate, the model's own loss, Adam(β2 0.98): the noise scale
#    measured on the task's data and loss, the batch ranked by time to train; then converge of its pick.
at tune --task "$T/text_task.py" --knobs batch_size=8,16,32 --window-seconds 2 --budget 4m --out "$O/text" > "$O/text.log" 2>&1
at converge --from-run "$O/text" --seconds 30 --reruns 1 --out "$O/text-converge" > "$O/text-converge.log" 2>&1

# 3. A custom loss (two heads, weighted sum) with SGD + Nesterov momentum.
at tune --task "$T/two_heads_task.py" --knobs optimizer_impl=loop,foreach zero_grad=none,zeros --objective throughput \
   --budget 2m --out "$O/two-heads" > "$O/two-heads.log" 2>&1

# 4. A LightningModule (SGD + StepLR from configure_optimizers, train_dataloader's batch and collate): tuned, and its
#    printed Trainer/DataLoader arguments run.
at tune --task "$T/lightning_task.py" --knobs num_workers=0,1 optimizer_impl=loop,foreach --objective throughput \
   --budget 2m --out "$O/lightning" > "$O/lightning.log" 2>&1
at apply --from-run "$O/lightning" > "$O/lightning-apply.py" 2>&1
python=$("$(dirname "$0")/../../../scripts/autotune-python.sh")
(cd "$O" && "$python" lightning-apply.py > lightning-apply.log 2>&1; echo "apply script exit $?" >> lightning-apply.log)
