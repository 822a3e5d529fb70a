"""The knobs this worker applies, their values from a plan's config, and PyTorch 2.11's defaults for the ones a
config leaves unset (the same table as the C++ catalog's: knobs/knob.cpp, `autotune knobs --json`)."""
from dataclasses import dataclass

from .errors import Refused

# What this worker applies, through PyTorch's own Python API. A knob not listed here that a config sets to
# anything but its default runs with the default and is reported as skipped (result.json `skipped`).
APPLIED = ("batch_size", "threads", "precision", "optimizer_impl", "zero_grad", "grad_accum", "log_every",
           "checkpointing", "memory_format", "cudnn_benchmark", "compile", "num_workers", "prefetch", "pin_memory",
           "ranks", "bucket_mb", "first_bucket_mb", "grad_as_bucket_view", "static_graph", "broadcast_buffers", "comm_hook",
           "cuda_graphs")
DDP_KNOBS = ("bucket_mb", "first_bucket_mb", "grad_as_bucket_view", "static_graph", "broadcast_buffers", "comm_hook")

COMPILE_MODES = ("off", "default", "reduce-overhead", "max-autotune")

# Every catalog knob's default where it is not the workload's or the frontend's own (knobs/knob.cpp).
CATALOG_DEFAULTS = {
    "threads": "default", "precision": "fp32", "grad_accum": "1", "log_every": "1", "checkpointing": "none",
    "memory_format": "contiguous", "pin_memory": "false", "decode": "jpeg_full", "num_workers": "0", "prefetch": "2",
    "augment_device": "cpu", "cuda_graphs": "off", "cudnn_benchmark": "false", "ranks": "1", "bucket_mb": "25",
    "first_bucket_mb": "1", "grad_as_bucket_view": "false", "static_graph": "false", "broadcast_buffers": "true",
    "comm_hook": "allreduce", "compile": "off", "optimizer_impl": "loop", "zero_grad": "zeros",
}


def frontend_default(knob, frontend, cuda):
    """PyTorch 2.11's default of `knob` for a plain script of `frontend` (python | libtorch; "" = the catalog's)."""
    if frontend and knob == "zero_grad":
        return "none"  # zero_grad(set_to_none=True) since 2.0, in torch/optim/optimizer.py and LibTorch alike
    if frontend == "python" and knob == "optimizer_impl":
        return "foreach" if cuda else "loop"  # _default_to_fused_or_foreach: foreach for CUDA tensors
    return CATALOG_DEFAULTS[knob]


@dataclass
class Settings:
    batch_size: int
    threads: str
    precision: str
    optimizer_impl: str
    zero_grad: str
    grad_accum: int
    log_every: int
    memory_format: str
    cudnn_benchmark: bool
    compile: str
    checkpointing: str = "none"
    num_workers: int = 0
    prefetch: int = 2
    pin_memory: bool = False
    ranks: int = 1
    bucket_mb: int = 25
    first_bucket_mb: int = 1
    grad_as_bucket_view: bool = False
    static_graph: bool = False
    broadcast_buffers: bool = True
    comm_hook: str = "allreduce"
    cuda_graphs: bool = False


def int_value(knob, value, lo, hi):
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise Refused(f"config: {knob}={value!r} is not an integer") from None
    if not lo <= n <= hi:
        raise Refused(f"config: {knob}={n} is out of range; allowed: {lo}..{hi}")
    return n


def choice(knob, value, allowed):
    if value not in allowed:
        raise Refused(f"config: {knob}={value!r} is not allowed; allowed: {', '.join(allowed)}")
    return value


def why_not(knob, v, base, cuda, conv_model, block_model, real_data, ranks=2):
    """Why this worker, on this device and model, cannot run `knob` at `v` (None: it can)."""
    if knob == "decode" and v != base:
        return ("the Python worker decodes whole JPEGs (torchvision.io.decode_jpeg); jpeg_crop_scale's DCT-scaled crop "
                "and the pre-decoded cache are the C++ worker's (--trainer cpp)")
    if knob == "augment_device" and v != base:
        return "augmenting on the GPU reads the C++ worker's pre-decoded cache (--trainer cpp, decode=cache)"
    if knob not in APPLIED and v != base:
        return "the Python trainer does not apply it yet"
    if knob in DDP_KNOBS and v != base and ranks < 2:
        return "needs ranks > 1"
    if knob == "precision" and v in ("tf32", "amp_fp16") and not cuda:
        return "needs CUDA"
    if knob == "cudnn_benchmark" and v == "true" and not (cuda and conv_model):
        return "needs CUDA and a convolutional model"
    if knob == "memory_format" and v == "channels_last" and not conv_model:
        return "needs a convolutional model"
    if knob in ("num_workers", "prefetch") and v != base and not real_data:
        return "needs real data (--data): the synthetic batches have no loader to tune"
    if knob == "pin_memory" and v == "true" and not (cuda and real_data):
        return "needs CUDA and real data (--data)"
    if knob == "cuda_graphs" and v == "on" and not cuda:
        return "needs CUDA"
    if knob == "checkpointing" and v != "none" and not block_model:
        return "needs a model built of repeated blocks (none found: no ModuleList/Sequential of ≥ 2 same-class modules)"
    return None


# A value other than the default for each knob whose use depends on the device or the model (applicable()).
_OTHER_VALUE = {"precision": "amp_bf16", "cudnn_benchmark": "true", "memory_format": "channels_last",
                "num_workers": "2", "prefetch": "4", "pin_memory": "true", "checkpointing": "blocks"}


def applicable(cuda, conv_model, block_model, real_data, ranks=1):
    """The knobs this worker can set to something other than their default here: what a profile's verdict may name."""
    return [k for k in APPLIED
            if not why_not(k, _OTHER_VALUE.get(k, "x"), "", cuda, conv_model, block_model, real_data, ranks)]


def settings_of(config, default_batch, frontend, cuda, conv_model, block_model=False, real_data=False):
    """(Settings, skipped[]) for a plan's config: each applied knob's value or its default, and a `skipped` entry
    for a value this worker or this device cannot run (the trial runs with the default and says so)."""
    skipped = []
    config = {k: str(v) for k, v in config.items()}

    def value(knob):
        base = str(default_batch) if knob == "batch_size" else frontend_default(knob, frontend, cuda)
        v = config.get(knob, base)
        why = why_not(knob, v, base, cuda, conv_model, block_model, real_data, ranks)
        if not why and knob == "first_bucket_mb" and v != base and config.get("bucket_mb", "25") != "25":
            why = "PyTorch's DDP caps the first bucket at bucket_cap_mb once bucket_cap_mb is given (bucket_mb ≠ 25)"
        if why:
            skipped.append({"knob": knob, "reason": f"{knob}={v}: {why}; ran with {base}"})
            return base
        return v

    ranks = int_value("ranks", config.get("ranks", "1"), 1, 1024)
    for knob in config:
        if knob not in APPLIED:
            value(knob)
    threads = value("threads")
    if threads != "default":
        int_value("threads", threads, 1, 1024)
    s = Settings(
        batch_size=int_value("batch_size", value("batch_size"), 1, 1 << 20),
        threads=threads,
        precision=choice("precision", value("precision"), ("fp32", "tf32", "amp_fp16", "amp_bf16")),
        optimizer_impl=choice("optimizer_impl", value("optimizer_impl"), ("loop", "foreach", "fused")),
        zero_grad=choice("zero_grad", value("zero_grad"), ("zeros", "none")),
        grad_accum=int_value("grad_accum", value("grad_accum"), 1, 1024),
        log_every=int_value("log_every", value("log_every"), 1, 100000),
        memory_format=choice("memory_format", value("memory_format"), ("contiguous", "channels_last")),
        cudnn_benchmark=choice("cudnn_benchmark", value("cudnn_benchmark"), ("false", "true")) == "true",
        compile=choice("compile", value("compile"), COMPILE_MODES),
        checkpointing=choice("checkpointing", value("checkpointing"), ("none", "blocks", "every_2")),
        num_workers=int_value("num_workers", value("num_workers"), 0, 256),
        prefetch=int_value("prefetch", value("prefetch"), 1, 64),
        pin_memory=choice("pin_memory", value("pin_memory"), ("false", "true")) == "true",
        ranks=ranks,
        bucket_mb=int_value("bucket_mb", value("bucket_mb"), 1, 4096),
        first_bucket_mb=int_value("first_bucket_mb", value("first_bucket_mb"), 1, 4096),
        grad_as_bucket_view=choice("grad_as_bucket_view", value("grad_as_bucket_view"), ("false", "true")) == "true",
        static_graph=choice("static_graph", value("static_graph"), ("false", "true")) == "true",
        broadcast_buffers=choice("broadcast_buffers", value("broadcast_buffers"), ("true", "false")) == "true",
        comm_hook=choice("comm_hook", value("comm_hook"), ("allreduce", "fp16", "bf16")),
        cuda_graphs=choice("cuda_graphs", value("cuda_graphs"), ("off", "on")) == "on",
    )
    if s.cuda_graphs:  # what a captured step cannot hold, given the rest of the config
        from .cuda_graphs import why_not as graph_why_not
        why = graph_why_not(s, cuda)
        if why:
            skipped.append({"knob": "cuda_graphs", "reason": f"cuda_graphs=on: {why}; ran with off"})
            s.cuda_graphs = False
    return s, skipped
