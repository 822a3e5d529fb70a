#!/usr/bin/env bash
# A scripted stand-in for autotune-worker, for the trial runner's failure classification.
# Behaviour comes from $FAKE_WORKER_MODE: ok | crash | segv | hang | usage | garbage | silent.
#   autotune-worker run --plan P --result R
plan="" result=""
while [ $# -gt 0 ]; do
  case "$1" in
    --plan) plan="$2"; shift 2 ;;
    --result) result="$2"; shift 2 ;;
    *) shift ;;
  esac
done
case "${FAKE_WORKER_MODE:-ok}" in
  ok)
    cat > "$result" <<JSON
{"schema":"autotune.result/1","status":"ok","workload":"mlp","config":{},"batch_size":64,
 "windows":[{"steps":10,"samples":640,"seconds":1.0},{"steps":10,"samples":640,"seconds":1.0},{"steps":10,"samples":640,"seconds":1.0}],
 "losses":[1.0,0.9],"wall_seconds":0.01}
JSON
    ;;
  crash) echo "fatal: something went badly wrong" >&2; exit 3 ;;
  segv) echo "about to crash" >&2; kill -SEGV $$ ;;
  hang) trap '' TERM; sleep 60 ;;   # ignores SIGTERM: the runner must escalate to SIGKILL
  usage) echo "autotune-worker: error: unknown workload 'nope'" >&2; exit 2 ;;
  garbage) echo "{not json" > "$result" ;;
  silent) ;;                          # exits 0 and writes nothing
esac
