#!/bin/bash
# First screens of issue 64's list not yet in docs/first-screens: a Hugging Face model built from its config, quiet and
# beside a one-core burner, and a text task's tune with its converge on a quiet host — run as a user types them.
#   run.sh BUILD_DIR OUT_DIR
set -uo pipefail
A="$(cd "$1" && pwd)/bin/autotune"; OUT="$2"; HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$(cd "$HERE/../../.." && pwd)"
mkdir -p "$OUT"
at() { echo "\$ autotune $*" ; "$A" "$@"; echo "exit $?"; }
HF=(--model hf:roberta --model-task sequence-classification --model-seq 32 --model-kwargs
    '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 64, "num_labels": 3}')
at tune "${HF[@]}" --budget 150s --out "$OUT/roberta-quiet" > "$OUT/roberta-quiet.txt" 2>&1
python3 -c "while True: pass" & burner=$!
at tune "${HF[@]}" --budget 150s --out "$OUT/roberta-busy" > "$OUT/roberta-busy.txt" 2>&1
kill "$burner"; wait "$burner" 2>/dev/null; sleep 5
at tune --task "$ROOT/tests/integration/tasks/text_task.py" --knobs batch_size=8,16,32 --budget 150s --out "$OUT/text" > "$OUT/text.txt" 2>&1
at converge --from-run "$OUT/text" --compare changed-batch --seconds 40 > "$OUT/text-converge.txt" 2>&1
