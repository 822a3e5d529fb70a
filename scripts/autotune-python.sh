#!/usr/bin/env bash
# Prints the Python autotune's test fixtures and scripts run: the one scripts/setup-deps.sh recorded
# (PYTHON in ${AUTOTUNE_CACHE:-~/.cache/autotune}/deps.env, which imports torch 2.11.0), else python3.
CACHE=${AUTOTUNE_CACHE:-$HOME/.cache/autotune}
PY=python3
if [ -f "$CACHE/deps.env" ]; then
  # shellcheck disable=SC1091
  source "$CACHE/deps.env"
  PY=${PYTHON:-python3}
fi
echo "$PY"
