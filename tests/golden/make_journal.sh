#!/usr/bin/env bash
# Writes tests/golden/journal.sql: the journal of one real tuning run (mlp, --strategy auto, CPU),
# as SQL text, so report tests start from a fixed journal that a real run produced. Run once from
# the repository root after `make build`; then regenerate the golden outputs with
#   AUTOTUNE_UPDATE_GOLDEN=1 build/tests/reports_golden_test
set -euo pipefail
BUILD_DIR=${BUILD_DIR:-build}
run=$(mktemp -d)/run
"$BUILD_DIR/bin/autotune" tune --workload mlp --strategy auto --budget 100s --window-seconds 0.3 --out "$run"
python3 - "$run/journal.sqlite" tests/golden/journal.sql <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
with open(sys.argv[2], "w") as f:
    for line in con.iterdump():
        f.write(line + "\n")
PY
echo "wrote tests/golden/journal.sql from $run"
