#!/usr/bin/env python3
"""Every bad input we know of, tried on the real binaries: command lines, space files, plans, results,
check files, journals, data, caches, model files and plugins. Each must end within 60 s, by exiting (not by
a signal), with the expected status and exactly one line on stderr that contains the expected words
(what is wrong, and where it applies, what is allowed). The table of docs/bad-inputs.md is this test's
output: the test fails when the committed table differs, and --write regenerates it.

    bad_inputs_test.py BUILD_DIR SOURCE_DIR [--write docs/bad-inputs.md]
Model-file cases use BUILD_DIR/test-models (made by make_models.sh); without it they are listed as not run.
"""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time

from python_worker_common import has_modules, share_warm_worker  # noqa: E402


def tune_with_log(log, *more):
    """`autotune tune` of the mlp workload under the time objective, priced by the noise log {D}/LOG (fixtures below)."""
    return ["{A}", "tune", "--workload", "mlp", "--objective", "time", "--noise-log", "{D}/" + log, *more, "--out", "{D}/nl-run"]


# (id, what, argv, exit status, words stderr must contain). {A} autotune, {W} autotune-worker, {T} autotune-trace,
# {S} scripts/slurm-cluster.sh, {F} fake worker,
# {D} the test's folder (fixtures below), {M} the test models, {P} the project's Python (scripts/autotune-python.sh),
# {E} scripts/export_model.py.
CASES = [
    # --- autotune command lines
    ("cli-no-command", "no command", ["{A}"], 2, ["tune"]),
    ("cli-unknown-command", "unknown command", ["{A}", "tunee"], 2, ["unknown command 'tunee'", "did you mean 'tune'"]),
    ("cli-unknown-option", "unknown option", ["{A}", "tune", "--budgt", "5m"], 2, ["unknown option '--budgt'", "--budget"]),
    ("cli-budget-unit", "budget with a unit it does not know", ["{A}", "tune", "--budget", "5x"], 2, ["budget '5x' is not a duration", "90s, 10m"]),
    ("cli-budget-negative", "negative budget", ["{A}", "tune", "--budget", "-1s"], 2, ["budget '-1s' is not a duration"]),
    ("cli-run-length-zero", "run length zero", ["{A}", "tune", "--run-length", "0"], 2, ["run-length '0' is not a count above 0", "3epochs"]),
    ("cli-run-length-nan", "run length not a number", ["{A}", "tune", "--run-length", "nan"], 2, ["run-length 'nan' is not a count above 0"]),
    ("cli-run-length-unit", "run length in an unknown unit", ["{A}", "tune", "--run-length", "3weeks"], 2,
     ["unknown unit 'weeks'", "epochs or tokens"]),
    ("cli-adam-rule", "converge with an Adam rule it does not know", ["{A}", "converge", "--adam-rule", "lars"], 2,
     ["--adam-rule", "none, sde"]),
    ("cli-noise-log-missing", "a noise log that is not there",
     tune_with_log("nope.jsonl"), 2,
     ["nope.jsonl: cannot read it (no such file"]),
    ("cli-noise-log-truncated", "a noise log cut short (its last line half written)",
     tune_with_log("log-cut.jsonl"), 2,
     ["truncated: its last line (line 12) is cut short", "a whole record"]),
    ("cli-noise-log-model", "a noise log of another model",
     tune_with_log("log-ok.jsonl"), 2,
     ["it is from another model: 4,810 trainable parameters in 4 tensors; workload mlp has 1,585,162 in 6"]),
    ("cli-noise-log-one", "a noise log of one micro-batch per step",
     tune_with_log("log-one.jsonl"), 2,
     ["it has 1 micro-batch per step; the noise scale needs at least 2"]),
    ("cli-noise-log-and-scale", "a noise scale given twice: as a number and as a log",
     ["{A}", "tune", "--noise-scale", "100", "--noise-log", "{D}/log-ok.jsonl"], 2,
     ["give the noise scale once: --noise-scale N or --noise-log FILE, not both"]),
    ("cli-noise-log-throughput", "a noise log for a run ranked by samples/s",
     ["{A}", "tune", "--objective", "throughput", "--noise-log", "{D}/log-ok.jsonl"], 2,
     ["--noise-log prices a changed batch by time to train; it needs --objective time"]),
    ("cli-noise-log-run-length", "a run length shorter than the noise log's own training",
     tune_with_log("log-mlp.jsonl", "--run-length", "100"), 2,
     ["--run-length 100 samples is 100 samples, shorter than the 640 samples your noise log"]),
    ("cli-noise-log-report-model", "a finished run re-priced by a noise log of another model",
     ["{A}", "report", "{D}/done", "--noise-log", "{D}/log-ok.jsonl"], 2,
     ["it is from another model: 4,810 trainable parameters in 4 tensors", "(mlp) has 1,585,162 in 6"]),
    ("cli-ramp-phases-order", "a hand ramp whose phases do not rise",
     ["{A}", "apply", "--set", "batch_size=8", "--ramp-phases", "0:1:1e-3,0:2:1e-3"], 2,
     ["--ramp-phases '0:1:1e-3,0:2:1e-3'", "does not start after the one before", "SAMPLES:GRAD_ACCUM:LR"]),
    ("cli-ramp-phases-one", "a hand ramp of one phase", ["{A}", "apply", "--set", "batch_size=8", "--ramp-phases", "0:1:1e-3"], 2,
     ["at least two phases"]),
    ("cli-ramp-phases-range", "a converge ramp with grad_accum 0", ["{A}", "converge", "--ramp-phases", "0:1,100:0"], 2,
     ["phase '100:0' is out of range", "grad_accum ≥ 1"]),
    ("cli-ramp-no-run", "apply --ramp without a tune run", ["{A}", "apply", "--ramp"], 2, ["--ramp", "--from-run DIR"]),
    ("cli-lr-sweep-at-no-run", "a sweep at the changed batch without a tune run", ["{A}", "lr-sweep", "--at", "changed-batch"], 2,
     ["--at changed-batch: needs --from-run"]),
    ("cli-lr-sweep-set-from-run", "a sweep of a tune run's config with knobs of its own",
     ["{A}", "lr-sweep", "--from-run", "{D}", "--set", "batch_size=8"], 2, ["--set does not combine with --from-run"]),
    ("cli-lr-sweep-data-from-run", "a sweep of a tune run given other data (the run's own would train)",
     ["{A}", "lr-sweep", "--from-run", "{D}", "--data", "{D}"], 2, ["--data does not combine with --from-run", "--lr"]),
    ("cli-lr-sweep-tokens-no-seq", "a sweep's run length in tokens for a model that takes no tokens",
     ["{A}", "lr-sweep", "-w", "resnet18", "--data", "{D}/corrupt", "--run-length", "3e6tokens", "--out", "{D}/sweep-tokens"], 2,
     ["--run-length 3,000,000 tokens: tokens need the model's sequence length", "give samples or epochs"]),
    ("cli-converge-workload-from-sweep", "converge of a sweep given another workload (the sweep's own would train)",
     ["{A}", "converge", "--from-sweep", "{D}", "-w", "mlp"], 2, ["--workload does not combine with --from-sweep"]),
    ("cli-converge-from-sweep", "converge from a folder that is not a sweep", ["{A}", "converge", "--from-sweep", "{D}"], 2,
     ["not an lr-sweep folder", "lr-sweep.json"]),
    ("cli-converge-val-data-cpp", "held-out data for a workload of the C++ worker",
     ["{A}", "converge", "-w", "gpt-mini", "--data", "{D}/tokens.bin", "--candidate-set", "batch_size=8", "--val-data",
      "{D}/tokens.bin", "--out", "{D}/val-cpp"], 2, ["the C++ worker does not evaluate on held-out data", "Python worker"]),
    ("cli-converge-val-every-none", "a held-out cadence without held-out data",
     ["{A}", "converge", "-w", "gpt-mini", "--data", "{D}/tokens.bin", "--candidate-set", "batch_size=8", "--val-every", "512",
      "--out", "{D}/val-none"], 2, ["--val-every 512: there is no held-out data", "val_dataset()"]),
    ("cli-converge-val-every-zero", "held-out data that would never be evaluated",
     ["{A}", "converge", "--candidate-set", "batch_size=8", "--val-data", "{D}/afile", "--val-every", "0"], 2,
     ["--val-every 0", "never be evaluated"]),
    ("cli-knob-unknown", "unknown knob", ["{A}", "tune", "--knobs", "batchsize=32"], 2, ["batchsize", "batch_size"]),
    ("cli-knob-not-int", "knob value not a number", ["{A}", "tune", "--knobs", "batch_size=abc"], 2, ["batch_size", "abc"]),
    ("cli-knob-zero", "batch size 0", ["{A}", "trial", "--set", "batch_size=0"], 2, ["batch_size", "0"]),
    ("cli-knob-enum", "value outside a knob's choices", ["{A}", "tune", "--knobs", "precision=fp8"], 2, ["precision", "fp8", "bf16"]),
    ("cli-set-no-equals", "--set without '='", ["{A}", "trial", "--set", "batch_size"], 2, ["batch_size", "knob=value"]),
    ("cli-knobs-empty-list", "--knobs with no values", ["{A}", "tune", "--knobs", "batch_size="], 2, ["batch_size"]),
    ("cli-strategy", "unknown strategy", ["{A}", "tune", "--strategy", "genetic"], 2, ["genetic", "grid"]),
    ("cli-workload", "unknown workload", ["{A}", "trial", "--workload", "resnet99"], 2, ["resnet99", "resnet18"]),
    ("cli-resume-missing", "--resume a folder with no run", ["{A}", "tune", "--resume", "{D}/nothing"], 2, ["no journal.sqlite", "nothing to resume"]),
    ("cli-resume-knobs", "--resume with --knobs", ["{A}", "tune", "--resume", "{D}/done", "--knobs", "batch_size=8"], 2, ["--knobs cannot change a resumed run"]),
    ("cli-out-file", "--out naming a file", ["{A}", "tune", "--out", "{D}/afile"], 2, ["is a file", "directory"]),
    ("cli-out-holds-run", "--out holding a finished run", ["{A}", "tune", "--worker", "{F}", "--out", "{D}/done"], 2, ["already holds a run", "--resume"]),
    ("cli-space-dir", "--space naming a folder", ["{A}", "tune", "--space", "{D}"], 2, ["is a directory", "YAML or JSON"]),
    ("cli-space-missing", "--space file missing", ["{A}", "tune", "--space", "{D}/nope.yaml"], 2, ["nope.yaml"]),
    ("cli-timeout-negative", "negative trial timeout", ["{A}", "trial", "--trial-timeout", "-5"], 2, ["--trial-timeout"]),
    ("cli-threads-word", "threads not a number", ["{A}", "trial", "--set", "threads=many"], 2, ["threads", "many"]),
    ("cli-launcher-template", "launcher template without {cmd}", ["{A}", "trial", "--launcher", "srun -n 2"], 2, ["--launcher", "{cmd}"]),
    ("cli-parallel-zero", "--parallel 0", ["{A}", "tune", "--worker", "{F}", "--parallel", "0"], 2, ["--parallel 0", "at least one slot", "allowed: 1 to"]),
    ("cli-parallel-too-many", "more slots than CPUs", ["{A}", "tune", "--worker", "{F}", "--parallel", "999"], 2, ["--parallel 999", "more slots than CPUs", "--pin off"]),
    ("cli-executor-unknown", "unknown executor", ["{A}", "tune", "--worker", "{F}", "--executor", "cloud"], 2, ["--executor cloud", "allowed: local, slurm-steps, slurm-jobs"]),
    ("cli-slurm-steps-outside", "Slurm steps outside an allocation (or without srun)", ["{A}", "tune", "--worker", "{F}", "--executor", "slurm-steps"], 2, ["--executor slurm-steps", "allowed"]),
    ("cli-resume-parallel", "--resume with --parallel", ["{A}", "tune", "--resume", "{D}/done", "--parallel", "2"], 2, ["--parallel cannot change a resumed run"]),
    ("cli-effective-batch", "effective batch that no batch size divides", ["{A}", "tune", "--effective-batch", "7", "--knobs", "batch_size=2,4"], 2, ["--effective-batch", "reachable nearby: 6, 8"]),
    ("cli-effective-batch-out", "unreachable effective batch with --out: refused before the folder exists", ["{A}", "tune", "--worker", "{F}", "--effective-batch", "7", "--knobs", "batch_size=2,4", "--out", "{D}/eb-refused"], 2, ["--effective-batch", "reachable nearby"]),
    ("cli-float-nan", "--window-seconds nan", ["{A}", "tune", "--worker", "{F}", "--window-seconds", "nan"], 2, ["--window-seconds nan is not allowed", "allowed: 0.05..600"]),
    ("cli-percent-inf", "--loss-tolerance inf", ["{A}", "tune", "--worker", "{F}", "--loss-tolerance", "inf"], 2, ["--loss-tolerance inf is not allowed"]),
    ("cli-seed-overflow", "--seed beyond 2^64 - 1", ["{A}", "trial", "--seed", "99999999999999999999"], 2, ["--seed 99999999999999999999 is out of range", "0..18446744073709551615"]),
    ("cli-lr-zero", "--lr 0", ["{A}", "trial", "--lr", "0"], 2, ["--lr 0 is not allowed", "1e-12..10"]),
    ("cli-objective", "unknown objective", ["{A}", "tune", "--objective", "speed"], 2, ["--objective", "time", "throughput"]),
    ("cli-frontend", "unknown frontend", ["{A}", "tune", "--frontend", "jax"], 2, ["--frontend", "python", "libtorch"]),
    ("check-run-other-model", "check: a run's winner against another workload", ["{A}", "check", "--worker", "{F}", "--workload", "gpt-mini", "--candidate-run", "{D}/done", "--out", "{D}/c-other"], 2, ["a check compares one model", "workload mlp"]),
    ("weights-not-a-file", "--init-from a file that is not a weights file", ["{A}", "trial", "--init-from", "{D}/afile"], 2, ["--init-from", "not a weights file"]),
    ("weights-missing", "--init-from a file that does not exist", ["{A}", "trial", "--init-from", "{D}/nope.pt"], 2, ["--init-from", "no such file"]),
    ("weights-other-model", "--init-from weights of another model", ["{A}", "trial", "--workload", "gpt-mini", "--init-from", "{D}/mlp-weights.pt"], 2, ["does not match the model", "nothing was loaded"]),
    ("cli-ranks-too-many", "more ranks than any machine", ["{A}", "trial", "--set", "ranks=4096"], 2, ["ranks", "1..1024"]),
    ("cli-apply-lang", "apply --lang with another language", ["{A}", "apply", "--lang", "rust"], 2, ["'rust' is not allowed", "python, cpp"]),
    ("cli-apply-knob", "apply an unknown knob", ["{A}", "apply", "--set", "rankz=2"], 2, ["unknown knob 'rankz'", "did you mean 'ranks'"]),
    ("cli-check-inconclusive", "check --inconclusive with another word", ["{A}", "check", "--inconclusive", "maybe"], 2, ["'maybe' is not allowed", "pass, fail"]),
    ("cli-alpha", "check --alpha out of range", ["{A}", "check", "--alpha", "2"], 2, ["--alpha 2 is not allowed", "1e-06..0.5"]),
    ("cli-check-reps", "check --reps 0", ["{A}", "check", "--reps", "0"], 2, ["--reps"]),
    ("cli-check-floor", "check --floor 150%", ["{A}", "check", "--floor", "150%"], 2, ["--floor", "150%", "below 100%"]),
    ("cli-check-out-busy", "check --out holding files", ["{A}", "check", "--worker", "{F}", "--out", "{D}/done"], 2, ["not empty", "nothing is overwritten"]),
    ("cli-check-baseline-twice", "both --baseline-run and --baseline-stored", ["{A}", "check", "--baseline-run", "{D}/done", "--baseline-stored", "{D}/check-bad.json"], 2, ["give the baseline once"]),
    ("cli-profile-trace-exists", "profile --trace over an existing file", ["{A}", "profile", "--worker", "{F}", "--trace", "{D}/afile"], 2, ["already exists", "--force"]),
    ("cli-prepare-missing", "prepare-data from a missing folder", ["{A}", "prepare-data", "--from", "{D}/nope", "--to", "{D}/c.bin"], 2, ["nope", "does not exist"]),
    ("cli-report-no-run", "report of a folder without a run", ["{A}", "report", "{D}/nothing"], 2, ["journal"]),
    # --- the worker's own command line and plans
    ("worker-command", "worker: unknown command", ["{W}", "rnu"], 2, ["commands: run, info, workloads, describe"]),
    ("worker-no-plan", "worker: run without --plan", ["{W}", "run"], 2, ["--plan"]),
    ("plan-missing", "plan file missing", ["{W}", "run", "--plan", "{D}/nope.json", "--result", "{D}/r.json"], 2, ["nope.json"]),
    ("plan-not-json", "plan not JSON", ["{W}", "run", "--plan", "{D}/plan-broken.json", "--result", "{D}/r.json"], 2, ["plan-broken.json"]),
    ("plan-unknown-knob", "plan with an unknown knob", ["{W}", "run", "--plan", "{D}/plan-knob.json", "--result", "{D}/r.json"], 2, ["batchsize"]),
    ("plan-bad-value", "plan with a bad knob value", ["{W}", "run", "--plan", "{D}/plan-value.json", "--result", "{D}/r.json"], 2, ["precision", "fp8"]),
    ("plan-wrong-type", "plan with a number where text belongs", ["{W}", "run", "--plan", "{D}/plan-type.json", "--result", "{D}/r.json"], 2, ["plan-type.json", "'workload'", "must be string"]),
    ("plan-huge-number", "plan with 1e308 where an integer belongs", ["{W}", "run", "--plan", "{D}/plan-huge.json", "--result", "{D}/r.json"], 2, ["plan-huge.json", "'seed'", "out of range"]),
    ("plan-workload", "plan naming an unknown workload", ["{W}", "run", "--plan", "{D}/plan-workload.json", "--result", "{D}/r.json"], 2, ["resnet99"]),
    # --- space files
    ("space-syntax", "space file: YAML syntax error", ["{A}", "tune", "--space", "{D}/syntax.yaml"], 2, ["syntax.yaml"]),
    ("space-empty", "space file: empty", ["{A}", "tune", "--space", "{D}/empty.yaml"], 2, ["empty.yaml", "knobs"]),
    ("space-not-map", "space file: knobs is not a map", ["{A}", "tune", "--space", "{D}/notmap.yaml"], 2, ["notmap.yaml", "knobs"]),
    ("space-unknown-knob", "space file: unknown knob", ["{A}", "tune", "--space", "{D}/unknown.yaml"], 2, ["unknown.yaml", "batchsize", "batch_size"]),
    ("space-empty-list", "space file: a knob with no values", ["{A}", "tune", "--space", "{D}/nolist.yaml"], 2, ["nolist.yaml", "batch_size"]),
    ("space-bad-value", "space file: a value a knob does not take", ["{A}", "tune", "--space", "{D}/badvalue.yaml"], 2, ["badvalue.yaml", "fp8"]),
    ("space-json-type", "space file (JSON): an object where values belong", ["{A}", "tune", "--space", "{D}/wrongtype.json"], 2, ["wrongtype.json", "batch_size", "a value must be a number or a word"]),
    ("space-unknown-key", "space file: unknown top-level key", ["{A}", "tune", "--space", "{D}/key.yaml"], 2, ["key.yaml", "knbos"]),
    # --- results, checks, journals
    ("check-stored-not-json", "--baseline-stored not JSON", ["{A}", "check", "--worker", "{F}", "--baseline-stored", "{D}/check-bad.json", "--out", "{D}/c1"], 2, ["--baseline-stored", "check-bad.json"]),
    ("check-stored-schema", "--baseline-stored of another schema", ["{A}", "check", "--worker", "{F}", "--baseline-stored", "{D}/check-schema.json", "--out", "{D}/c2"], 2, ["schema", "autotune.check/1"]),
    ("check-run-no-best", "--baseline-run folder without best.json", ["{A}", "check", "--worker", "{F}", "--baseline-run", "{D}/nothing", "--out", "{D}/c3"], 2, ["no best.json"]),
    ("check-run-bad-best", "--baseline-run with a damaged best.json", ["{A}", "check", "--worker", "{F}", "--baseline-run", "{D}/badbest", "--out", "{D}/c4"], 2, ["best.json"]),
    ("journal-damaged", "report of a damaged journal", ["{A}", "report", "{D}/damaged"], 1, ["damaged", "left as it is"]),
    ("journal-foreign", "resume of a folder whose journal is another SQLite file", ["{A}", "tune", "--resume", "{D}/foreign"], 1, ["not an autotune journal"]),
    ("result-truncated", "a worker's result.json cut short", ["{A}", "trial", "--worker", "{D}/truncating-worker"], 1, ["result is unusable", "result.json"]),
    # --- data and caches
    ("data-tokens-odd", "token file with an odd byte count", ["{A}", "trial", "--workload", "gpt-mini", "--data", "{D}/odd.bin"], 2, ["odd.bin", "not a whole number of uint16 tokens"]),
    ("tune-data-text", "tune with raw text as a token file", ["{A}", "tune", "--workload", "gpt-mini", "--data", "{D}/raw.txt", "--out", "{D}/t3"], 2, ["raw.txt", "this is text, not uint16 tokens", "prepare-data --tokens-from"]),
    ("tune-data-odd", "tune with a token file of an odd byte count", ["{A}", "tune", "--workload", "gpt-mini", "--data", "{D}/odd.bin", "--out", "{D}/t1"], 2, ["odd.bin", "not a whole number"]),
    ("data-tokens-vocab", "token ids beyond the model's vocabulary", ["{A}", "trial", "--workload", "gpt-mini", "--data", "{D}/vocab.bin"], 2, ["vocab.bin", "outside the model's vocabulary"]),
    ("data-tokens-short", "token file shorter than one window", ["{A}", "trial", "--workload", "gpt-mini", "--data", "{D}/short.bin"], 2, ["short.bin", "need at least"]),
    ("data-folder-empty", "image folder with no images", ["{A}", "trial", "--workload", "resnet18", "--data", "{D}/noimages"], 2, ["noimages", "ROOT/<class>/<image>.jpg"]),
    ("data-folder-corrupt", "image folder whose images are all corrupt", ["{A}", "trial", "--workload", "resnet18", "--data", "{D}/corrupt"], 1, ["no decodable image", "truncated"]),
    ("cache-foreign", "--cache that is not a cache", ["{A}", "trial", "--workload", "resnet18", "--data", "{D}/corrupt", "--cache", "{D}/afile", "--set", "decode=cache"], 2, ["afile", "not an autotune image cache"]),
    ("cache-truncated", "--cache cut short", ["{A}", "trial", "--workload", "resnet18", "--cache", "{D}/cut.cache", "--set", "decode=cache"], 2, ["cut.cache"]),
    ("data-missing", "--data that does not exist", ["{A}", "trial", "--workload", "resnet18", "--data", "{D}/nope"], 2, ["nope"]),
    # --- model files and plugins
    ("model-missing", "--model that does not exist", ["{A}", "trial", "--model", "{D}/nope.pt"], 2, ["nope.pt"]),
    ("model-empty", "--model: empty file", ["{A}", "trial", "--model", "{D}/empty.pt"], 2, ["empty.pt"]),
    ("model-not-zip", "--model: a text file", ["{A}", "trial", "--model", "{D}/afile"], 2, ["afile"]),
    ("model-dir", "--model: a folder", ["{A}", "trial", "--model", "{D}"], 2, ["is a directory", "TorchScript"]),
    ("model-pickle", "--model: a torch.save() pickle", ["{A}", "trial", "--model", "{M}/pickled.pt"], 2, ["torch.save()"]),
    ("model-state-dict", "--model: a state dict", ["{A}", "trial", "--model", "{M}/state_dict.pt"], 2, ["torch.save()"]),
    ("model-export", "--model: a torch.export .pt2", ["{A}", "trial", "--model", "{M}/program.pt2"], 2, ["torch.export"]),
    ("model-no-params", "--model: no parameters", ["{A}", "trial", "--model", "{M}/no_params.pt"], 2, ["no parameters"]),
    ("model-frozen", "--model: frozen (nothing to train)", ["{A}", "trial", "--model", "{M}/frozen.pt"], 2, ["frozen"]),
    ("model-spec-rank", "--model-input with the wrong rank", ["{A}", "trial", "--model", "{M}/cnn.pt", "--model-input", "B,3,32:float32"], 2, ["forward"]),
    ("plugin-not-so", "--plugin that is not a shared library", ["{A}", "trial", "--plugin", "{D}/afile"], 2, ["afile"]),
    ("memory-cap-not-size", "--memory-cap that is not a size", ["{A}", "tune", "--memory-cap", "12Q"], 2, ["12Q", "not a size", "allowed"]),
    ("memory-cap-zero", "--memory-cap of zero bytes", ["{A}", "trial", "--memory-cap", "0"], 2, ["'0'", "not a size"]),
    ("memory-no-cap-cpu", "autotune memory on a CPU host without a capacity", ["{A}", "memory", "--workload", "mlp", "--device", "cpu"], 2,
     ["--memory-cap"]),
    ("memory-batch-flag", "autotune memory with batch_size in --knobs", ["{A}", "memory", "--memory-cap", "1G", "--knobs", "batch_size=8,16"], 2,
     ["--batch-sizes"]),
    ("memory-model-value", "--memory-model with an unknown value", ["{A}", "tune", "--memory-model", "maybe"], 2, ["maybe"]),
    # --- the exporter (scripts/export_model.py, run with the project's Python): Hugging Face models
    ("export-hf-no-task", "export: hf: model without --task", ["{P}", "{E}", "hf:gpt2", "{D}/x.pt"], 2, ["hf:gpt2 needs --task", "allowed: causal-lm"]),
    ("export-hf-wrong-task", "export: a --task that is not one", ["{P}", "{E}", "hf:gpt2", "{D}/x.pt", "--task", "causal_lm"], 2,
     ["--task causal_lm is not a task", "allowed: causal-lm, sequence-classification, image-classification"]),
    ("export-hf-no-head", "export: a task the model has no head for", ["{P}", "{E}", "hf:gpt2", "{D}/x.pt", "--task", "image-classification"], 2,
     ["no image-classification model", "allowed for gpt2: causal-lm, sequence-classification"]),
    ("export-hf-unknown-type", "export: an unknown model type", ["{P}", "{E}", "hf:gtp2", "{D}/x.pt", "--task", "causal-lm"], 2,
     ["hf:gtp2", "unknown model type"]),
    ("export-hf-foreign-key", "export: another model's config key (gpt2's n_layer to qwen2)",
     ["{P}", "{E}", "hf:qwen2", "{D}/x.pt", "--task", "causal-lm", "--kwargs", '{"n_layer": 2}'], 2,
     ["'n_layer' is not a field of Qwen2Config", "did you mean 'num_hidden_layers'"]),
    ("export-hf-misspelt-key", "export: a misspelt config key", ["{P}", "{E}", "hf:bert", "{D}/x.pt", "--task", "sequence-classification",
                                                                 "--kwargs", '{"num_hidden_layer": 2}'], 2,
     ["'num_hidden_layer' is not a field of BertConfig", "did you mean 'num_hidden_layers'"]),
    ("export-hf-encoder-decoder", "export: an encoder-decoder model", ["{P}", "{E}", "hf:t5", "{D}/x.pt", "--task", "sequence-classification"], 2,
     ["hf:t5 is an encoder-decoder model", "not supported yet"]),
    ("export-hf-config-rejected", "export: a config transformers rejects", ["{P}", "{E}", "hf:bert", "{D}/x.pt", "--task", "sequence-classification",
                                                                           "--kwargs", '{"hidden_size": 30}'], 2,
     ["BertForSequenceClassification cannot be built", "not a multiple of the number of attention heads", "--verbose"]),
    # --- the Python worker (pyworker/, autotune-worker-py), through the tuner: a Python model ({D}/models.py)
    ("py-factory-import", "Python model: a module that does not import", ["{A}", "trial", "--model", "nosuchmod:make", "--model-input", "B,4:float32"], 2,
     ["--model nosuchmod:make", "cannot import nosuchmod"]),
    ("py-factory-missing", "Python model: a file without that name", ["{A}", "trial", "--model", "{D}/models.py:missing", "--model-input", "B,4:float32"], 2,
     ["models.py has no missing"]),
    ("py-factory-not-module", "Python model: a factory that returns no module", ["{A}", "trial", "--model", "{D}/models.py:not_a_module",
                                                                                 "--model-input", "B,4:float32"], 2,
     ["the factory returned int, not a torch.nn.Module"]),
    ("py-factory-raises", "Python model: a factory that raises", ["{A}", "trial", "--model", "{D}/models.py:boom", "--model-input", "B,4:float32"], 2,
     ["the factory fails: RuntimeError: factory exploded", "AUTOTUNE_VERBOSE=1"]),
    ("py-forward-inputs", "Python model: a forward that does not take the spec's inputs",
     ["{A}", "trial", "--model", "{D}/models.py:TakesTwo", "--model-input", "B,4:float32", "--model-target", "classes:2"], 2,
     ["the forward does not take the spec's inputs", "missing 1 required positional argument: 'mask'"]),
    ("py-no-inputs", "Python model: no --model-input", ["{A}", "trial", "--model", "{D}/models.py:TakesTwo"], 2,
     ["a Python model needs its inputs: --model-input"]),
    ("py-no-torch", "Python worker: a Python without torch", ["/usr/bin/env", "PYTHONPATH={D}/notorch", "{A}", "trial", "--model",
                                                              "{D}/models.py:Breaks", "--model-input", "B,8:float32"], 2,
     ["has no torch", "needs torch ≥ 2.4", "AUTOTUNE_PYTHON"]),
    ("py-old-torch", "Python worker: a torch older than it supports", ["/usr/bin/env", "PYTHONPATH={D}/oldtorch", "{A}", "trial", "--model",
                                                                       "{D}/models.py:Breaks", "--model-input", "B,8:float32"], 2,
     ["has torch 2.1.0", "needs torch ≥ 2.4"]),
    ("py-compile-mode", "compile: a mode that is not one", ["{A}", "trial", "--model", "{D}/models.py:Breaks", "--model-input", "B,8:float32",
                                                            "--set", "compile=fast"], 2,
     ["knob 'compile': 'fast' is not allowed", "off, default, reduce-overhead, max-autotune"]),
    ("py-unknown-workload", "Python worker: a built-in workload it does not have", ["{A}", "trial", "--trainer", "python",
                                                                                   "--workload", "resnet19"], 2,
     ["unknown workload 'resnet19'", "mlp, resnet18, resnet50, gpt-mini, gpt2-124m"]),
    ("py-memory-cap-cpu", "Python worker: --memory-cap on the CPU", ["{A}", "trial", "--model", "{D}/models.py:Breaks",
                                                                     "--model-input", "B,8:float32", "--model-target", "classes:4",
                                                                     "--memory-cap", "1G"], 1,
     ["--memory-cap 1G: on the CPU the cap is the C++ worker's counting allocator", "--trainer cpp"]),
    ("py-trainer-cpp", "a Python model given to the C++ worker", ["{A}", "trial", "--model", "{D}/models.py:Breaks", "--trainer", "cpp",
                                                                  "--model-input", "B,8:float32"], 2,
     ["a Python model is trained by the Python worker", "TorchScript files"]),
    ("check-trainer", "check: a side's trainer that is not one", ["{A}", "check", "--workload", "mlp", "--candidate-trainer", "rust"], 2,
     ["--candidate-trainer", "rust", "allowed: cpp, python"]),
    ("slurm-nodes-zero", "test cluster: a node count of 0", ["{S}", "start", "--nodes", "0", "{D}/cluster"], 2,
     ["--nodes '0' is not a node count this machine can hold", "allowed: 1.."]),
    ("slurm-nodes-many", "test cluster: more nodes than cores", ["{S}", "start", "--nodes", "999", "{D}/cluster"], 2,
     ["--nodes '999' is not a node count this machine can hold", "each node gets at least one"]),
    # --- autotune-trace (the profiler's analysis of a torch.profiler trace)
    ("trace-not-json", "autotune-trace: a file that is not JSON", ["{T}", "analyze", "{D}/notes.json"], 2,
     ["notes.json: not JSON"]),
    ("trace-no-events", "autotune-trace: JSON that is not a trace", ["{T}", "analyze", "{D}/plan-like.json"], 2,
     ["no traceEvents array", "export_chrome_trace"]),
    ("trace-gzipped", "autotune-trace: a gzipped trace", ["{T}", "analyze", "{D}/trace.json.gz"], 2, ["gunzip it first"]),
    ("trace-precision", "autotune-trace: a precision it has no peak for", ["{T}", "analyze", "{D}/plan-like.json", "--precision", "fp8"], 2,
     ["--precision", "fp8", "amp_bf16"]),
    ("export-kwargs-not-json", "export: --kwargs that is not JSON", ["{P}", "{E}", "hf:gpt2", "{D}/x.pt", "--task", "causal-lm", "--kwargs", "n_layer=2"], 2,
     ["--kwargs is not JSON"]),
]


# Cases whose refusal must leave nothing behind: the --out folder they name is not created (a retry would be
# refused as "already holds a run", and --resume would find no options).
LEAVES_NOTHING = {"cli-effective-batch-out": "{D}/eb-refused", "cli-lr-sweep-tokens-no-seq": "{D}/sweep-tokens", "tune-data-odd": "{D}/t1", "export-hf-foreign-key": "{D}/x.pt",
                  "export-hf-config-rejected": "{D}/x.pt"}


def fixtures(d, fake, autotune):
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_models.py"), os.path.join(d, "models.py"))
    for name, text in (("notes.json", "step times: 21 ms\n"), ("plan-like.json", '{"schema": "autotune.plan/1"}\n'),
                       ("trace.json.gz", "")):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    for stub, text in (("notorch", "raise ImportError('No module named torch (a stub)')\n"), ("oldtorch", "__version__ = '2.1.0'\n")):
        os.makedirs(os.path.join(d, stub, "torch"))
        with open(os.path.join(d, stub, "torch", "__init__.py"), "w") as f:
            f.write(text)

    def w(name, text, mode="w"):
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, mode) as f:
            f.write(text)
    w("afile", "x")
    w("syntax.yaml", "knobs: [unclosed\n")
    w("empty.yaml", "")
    w("notmap.yaml", "knobs: 5\n")
    w("unknown.yaml", "knobs:\n  batchsize: [32, 64]\n")
    w("nolist.yaml", "knobs:\n  batch_size: []\n")
    w("badvalue.yaml", "knobs:\n  precision: [fp32, fp8]\n")
    w("wrongtype.json", '{"knobs": {"batch_size": {"a": 1}}}')
    w("key.yaml", "knbos:\n  batch_size: [32]\n")
    w("plan-broken.json", "{")
    w("check-bad.json", "{\"schema\": ")
    w("check-schema.json", '{"schema": "autotune.check/0", "a": {}, "b": {}}')
    w("badbest/best.json", "[1, 2")
    w("odd.bin", b"\x01\x02\x03", "wb")
    w("raw.txt", b"It was the best of times, it was the worst of times.\n" * 100, "wb")
    w("short.bin", b"\x01\x00" * 4, "wb")
    w("tokens.bin", b"".join((i % 512).to_bytes(2, "little") for i in range(8192)), "wb")  # inside gpt-mini's vocabulary
    w("vocab.bin", b"\xff\xff" * 4096, "wb")  # token 65535, beyond every built-in vocabulary
    w("cut.cache", b"ATUNEIMG" + b"\1\0\0\0" + b"\0" * 36, "wb")
    os.makedirs(os.path.join(d, "noimages"), exist_ok=True)
    w("noimages/readme.txt", "no images here")
    for i in range(3):
        w(f"corrupt/cls{i}/x.jpg", b"\xff\xd8\xff\xe0 not really a jpeg", "wb")
    w("empty.pt", "")
    header = {"autotune_noise_log": 1, "logger": "python", "mode": "accumulation", "micro_batch": 8, "micro_batches": 4,
              "parameters": 4810, "tensors": 4, "started": "random init"}
    steps = "".join(json.dumps({"step": i, "samples": 32 * i, "small_sq": 1.5, "big_sq": 1.0}) + "\n" for i in range(1, 21))
    w("log-ok.jsonl", json.dumps(header) + "\n" + steps)
    w("log-cut.jsonl", json.dumps(header) + "\n" + steps[: steps.index('{"step": 11')] + '{"step": 11, "samp')
    w("log-one.jsonl", json.dumps(dict(header, micro_batches=1)) + "\n" + steps)
    w("log-mlp.jsonl", json.dumps(dict(header, parameters=1585162, tensors=6)) + "\n" + steps)  # the mlp workload's
    # A damaged journal, a foreign SQLite file, a finished run (fake worker) and a plan to mutate.
    env = dict(os.environ, FAKE_SLEEP="0")
    r = subprocess.run([autotune, "tune", "--worker", fake, "--knobs", "batch_size=32,64", "--out", os.path.join(d, "done")],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    os.makedirs(os.path.join(d, "damaged"))
    with open(os.path.join(d, "done", "journal.sqlite"), "rb") as f:
        head = f.read(3000)
    w("damaged/journal.sqlite", head + b"\0garbage" * 200, "wb")
    import sqlite3
    os.makedirs(os.path.join(d, "foreign"))
    db = sqlite3.connect(os.path.join(d, "foreign", "journal.sqlite"))
    db.execute("CREATE TABLE photos(id INTEGER)")
    db.commit()
    db.close()
    plan = json.load(open(os.path.join(d, "done", "trials", "0001", "plan.json")))
    def mutated(name, f):
        p = json.loads(json.dumps(plan))
        f(p)
        w(name, json.dumps(p))
    mutated("plan-knob.json", lambda p: p["config"].update({"batchsize": "32"}))
    mutated("plan-value.json", lambda p: p["config"].update({"precision": "fp8"}))
    mutated("plan-type.json", lambda p: p.update({"workload": 5}))
    mutated("plan-huge.json", lambda p: p.update({"seed": 1e308}))
    mutated("plan-workload.json", lambda p: p.update({"workload": "resnet99"}))
    # Weights of an mlp (a converge trial of the real worker saves them), for a model they do not fit.
    worker = os.path.join(os.path.dirname(autotune), "autotune-worker")
    if os.path.exists(worker):
        w("converge-plan.json", json.dumps({"schema": "autotune.plan/1", "workload": "mlp", "device": "cpu", "config": {"batch_size": "8"},
                                            "converge": {"max_seconds": 0.2, "save_checkpoint": os.path.join(d, "mlp-weights.pt")}}))
        r = subprocess.run([worker, "run", "--plan", os.path.join(d, "converge-plan.json"), "--result", os.path.join(d, "converge-result.json")],
                           capture_output=True, text=True)
        assert r.returncode == 0 and os.path.exists(os.path.join(d, "mlp-weights.pt")), r.stderr
    w("truncating-worker", f"#!/bin/sh\n# writes half a result.json and exits 0\nfor a; do [ \"$prev\" = --result ] && r=$a; prev=$a; done\n"
      f"case \"$1\" in run) printf '{{\"status\": \"ok\", \"windows\": [' > \"$r\"; exit 0;; *) exec {fake} \"$@\";; esac\n")
    os.chmod(os.path.join(d, "truncating-worker"), 0o755)


def one_line(s):
    return s.strip().replace("\n", "⏎")


def main():
    build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    write = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--write" else None
    autotune, worker, fake, tracer = (os.path.join(build, "bin", b) for b in ("autotune", "autotune-worker", "fake-worker", "autotune-trace"))
    models = os.path.join(build, "test-models")
    py = subprocess.run([os.path.join(source, "scripts/autotune-python.sh")], capture_output=True, text=True).stdout.strip()
    exporter = os.path.join(source, "scripts", "export_model.py")
    has_transformers = has_modules(py, "transformers")
    share_warm_worker(build)  # the Python cases' autotune commands fork from one server: torch imported once, not per case
    d = tempfile.mkdtemp(prefix="autotune-bad-inputs-")
    failures, table, took = [], [], {}
    try:
        fixtures(d, fake, autotune)
        seen = set()
        for cid, what, argv, want, words in CASES:
            assert cid not in seen, cid
            seen.add(cid)
            if any("{M}" in a for a in argv) and not os.path.exists(os.path.join(models, "cnn.pt")):
                table.append((cid, what, " ".join(argv), "—", "not run here: no test models (make_models.sh needs torch)"))
                continue
            if "{P}" in argv and not has_transformers:
                table.append((cid, what, " ".join(argv), "—", "not run here: the project's Python has no transformers"))
                continue
            args = [a.replace("{A}", autotune).replace("{W}", worker).replace("{F}", fake).replace("{D}", d).replace("{M}", models)
                    .replace("{P}", py).replace("{E}", exporter).replace("{T}", tracer)
                    .replace("{S}", os.path.join(source, "scripts", "slurm-cluster.sh")) for a in argv]
            env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
            t0 = time.time()
            try:
                r = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env, cwd=d)
                took[cid] = time.time() - t0
            except subprocess.TimeoutExpired:
                failures.append(f"{cid}: hung (no exit within 60 s)")
                continue
            err = r.stderr
            shown = err if err.strip() else r.stdout
            if r.returncode < 0:
                failures.append(f"{cid}: killed by signal {-r.returncode}: {one_line(err)[-300:]}")
            elif r.returncode != want:
                failures.append(f"{cid}: exit {r.returncode}, want {want}: {one_line(err)[-300:]}")
            if want != 0 and (err.count("\n") != 1 or not err.strip()):
                failures.append(f"{cid}: stderr is not one line: {err!r}")
            for word in words:
                if word not in err:
                    failures.append(f"{cid}: stderr lacks {word!r}: {one_line(err)}")
            if cid in LEAVES_NOTHING and os.path.exists(LEAVES_NOTHING[cid].replace("{D}", d)):
                failures.append(f"{cid}: the refused run left {LEAVES_NOTHING[cid]} behind")
            msg = one_line(shown if want != 0 else r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "")
            # the machine's own paths, so that the table is the same on every machine (py: another HOME, another cache)
            for path, name in ((d, "DIR"), (models, "MODELS"), (build, "BUILD"), (py, "PYTHON")):
                msg = msg.replace(path, name) if path else msg
            msg = re.sub(r"/tmp/autotune-trial-\d+", "TMP", msg)  # a trial's temporary folder (its pid)
            shown_argv = " ".join(a if " " not in a else f"'{a}'" for a in argv).replace("{A}", "autotune").replace(
                "{W}", "autotune-worker").replace("{T}", "autotune-trace").replace("{S}", "scripts/slurm-cluster.sh").replace("{F}", "fake-worker").replace("{D}", "DIR").replace("{M}", "MODELS").replace(
                "{P} {E}", "scripts/export_model.py")
            table.append((cid, what, shown_argv, str(r.returncode), msg))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    md = ["| # | bad input | command | exit | what it prints (one line) |", "|---:|---|---|---:|---|"]
    for i, (cid, what, argv, code, msg) in enumerate(table, 1):
        md.append(f"| {i} | {what} | `{argv.replace('|', '∣')}` | {code} | {msg.replace('|', '∣')} |")
    text = "\n".join(md) + "\n"
    doc = os.path.join(source, "docs", "bad-inputs.md")
    header = ("# Every bad input tried, and what it gets\n\nGenerated by `tests/integration/bad_inputs_test.py` (CTest "
              "`bad_inputs_test`), which runs each case on the real binaries and fails on a crash, a hang, another exit "
              "status, more than one line, or a message missing the words it must name; it also fails when this table "
              "is out of date. Regenerate: `python3 tests/integration/bad_inputs_test.py build . --write docs/bad-inputs.md`. "
              "DIR is the test's folder, MODELS the test models (build/test-models), PYTHON the project's Python "
              "(scripts/autotune-python.sh).\n\n")
    if write:
        with open(write, "w") as f:
            f.write(header + text)
    elif not failures:
        committed = open(doc).read() if os.path.exists(doc) else ""
        if committed != header + text:
            import difflib
            diff = "".join(difflib.unified_diff(committed.splitlines(True), (header + text).splitlines(True), "committed",
                                                "now", n=0))
            failures.append("docs/bad-inputs.md is out of date: regenerate it (see its first paragraph)\n" + diff[:3000])
    print(text)
    slow = sorted(took.items(), key=lambda kv: -kv[1])[:8]
    print(f"{len(table)} bad inputs in {sum(took.values()):.0f} s, {len(failures)} problems; the slowest: " +
          ", ".join(f"{c} {t:.1f} s" for c, t in slow))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
