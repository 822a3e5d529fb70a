"""The knobs this worker applies, as the knob rules resolve them — resolved by the rules' one home, not here.

The catalog (defaults, domains, PyTorch's defaults per frontend and device), which values apply on which device and
model, and what a value other knobs rule out falls back to, with its reason, are knobs/knob.cpp and knobs/resolve.cpp.
Which knobs this worker applies is the catalog's too (a knob only the C++ worker has requires it there). This worker
builds the model, picks its device, and asks `autotune-resolve` (knobs/resolve_main.cpp) what the plan's config means
there; it applies the answer. What only Python can know — whether the user's optimizer class takes foreach= or fused=,
which torch.compile modes the installed torch has — it reports as a skip of its own, with the reason.
"""
import json
import os
import shutil
import subprocess
import sys
import types

from .errors import Refused


class Settings(types.SimpleNamespace):
    """Each knob's value as the resolution gives it, typed as the resolution types it (the C++ `Settings`,
    knobs/resolve.h): every knob of the catalog, so a mechanism reads `s.<knob>` and nothing here lists them. Which
    knobs this worker applies is the catalog's too (a knob only the C++ worker has says so, knobs/knob.h)."""

    def __getattr__(self, name):  # only for a name the resolution did not give
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"the resolution has no value for {name}: autotune-resolve is older than this worker")


def resolver():
    """autotune-resolve: $AUTOTUNE_RESOLVER (the launcher next to `autotune` sets it), else on PATH, else beside this
    Python (a pip install puts it in the environment's bin/), else a checkout's default build (build/bin/)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for tool in (os.environ.get("AUTOTUNE_RESOLVER"), shutil.which("autotune-resolve"),
                 os.path.join(os.path.dirname(sys.executable), "autotune-resolve"),
                 os.path.join(here, "..", "..", "build", "bin", "autotune-resolve")):
        if tool and os.access(tool, os.X_OK):
            return tool
    raise RuntimeError("autotune-resolve not found (the launcher next to `autotune` sets AUTOTUNE_RESOLVER; or put it "
                       "on PATH): the knob rules live there, and this worker keeps none of its own")


def ask(query):
    """autotune-resolve's answer to `query` (JSON): a refusal (exit 2: the plan or the flags are wrong) is the user's
    error, in its own words; anything else is the tool's."""
    r = subprocess.run([resolver()], input=json.dumps(query), capture_output=True, text=True, timeout=60)
    if r.returncode == 2:
        raise Refused((r.stderr.strip().splitlines() or ["autotune-resolve refused the input"])[-1]
                      .removeprefix("autotune-resolve: "))
    if r.returncode != 0:
        raise RuntimeError(f"autotune-resolve failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout)


def resolve(plan, workload, env, launcher_ranks=False):
    """The resolution of `plan`'s config for this worker's model (`workload`: describe's JSON) and device (`env`)."""
    return ask({"plan": plan, "workload": workload, "env": env, "launcher_ranks": launcher_ranks})


def model_flags(model_input, model_target):
    """--model-input / --model-target in the spec JSON's form ({"inputs": [...]}, {"target": {...}}), parsed where their
    grammar lives (knobs/model_spec.h, through autotune-resolve): this worker parses neither."""
    return ask({"model_flags": {"model_input": model_input or "", "model_target": model_target or ""}})


def settings_of(resolution):
    """(Settings, skipped[]) from a resolution: the values as resolved, typed as the resolution types them."""
    return Settings(**resolution["settings"]), list(resolution["skipped"])
