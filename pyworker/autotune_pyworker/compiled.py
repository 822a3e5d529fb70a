"""torch.compile as a knob: the loss function compiled in a mode, and what compiling cost and did — the seconds the
first step spent beyond a steady one, the graph breaks (with their reasons), the frames compiled again after the
first step (recompiles) and the inductor cache's hits and misses (a warm cache compiles faster)."""
import torch

from .errors import Refused


def known_modes():
    """The modes this torch's inductor knows (torch._inductor.list_mode_options), plus "default"."""
    try:
        from torch._inductor import list_mode_options
        return ["default"] + [m for m in list_mode_options() if m != "default"]
    except ImportError:
        return ["default", "reduce-overhead", "max-autotune"]


def compile_fn(fn, mode):
    """`fn` compiled in `mode` ("default" = torch.compile's own); refused in one line when this torch does not know it."""
    if mode not in known_modes():
        raise Refused(f"compile={mode}: torch {torch.__version__} does not know this mode; it knows: "
                      f"{', '.join(known_modes())}")
    return torch.compile(fn, mode=None if mode == "default" else mode)


def counters():
    """A snapshot of dynamo's counters: frames compiled, graph-break sites, unique graphs, inductor cache use."""
    from torch._dynamo.utils import counters as c
    breaks = dict(c.get("graph_break", {}))
    breaks.update(c.get("unimplemented", {}))
    return {"frames": int(c["frames"].get("total", 0)), "breaks": breaks,
            "graphs": int(c["stats"].get("unique_graphs", 0)),
            "cache_hits": int(c["inductor"].get("fxgraph_cache_hit", 0)),
            "cache_misses": int(c["inductor"].get("fxgraph_cache_miss", 0))}


def record(mode, first_step_seconds, steady_step_seconds, after_first, at_end):
    """The result's `compile` object."""
    reasons = [k.strip().splitlines()[0][:160] for k in at_end["breaks"]]
    return {"mode": mode,
            "seconds": max(0.0, first_step_seconds - steady_step_seconds),
            "first_step_seconds": first_step_seconds,
            "graphs": at_end["graphs"],
            "graph_breaks": sum(at_end["breaks"].values()),
            "break_reasons": reasons,
            "recompiles": at_end["frames"] - after_first["frames"],
            "cache_hits": at_end["cache_hits"], "cache_misses": at_end["cache_misses"]}
