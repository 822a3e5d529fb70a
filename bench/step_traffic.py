"""What one training step of the Python twin (bench/python_eager.py) must move and compute, at full size,
without running it: the step runs on fake tensors (shapes and dtypes only, no data, seconds on any CPU),
and every ATen op is charged the bytes of the tensors it reads and writes and, through torch's own FLOP
counter, its matmul / convolution / attention FLOPs. Each class of op then takes at least its bytes ÷ the
device's memory bandwidth, and matmuls at least their FLOPs ÷ the device's matmul throughput: the sum is
a lower bound on an eager step (every op a kernel of its own, each operand moved once), and the model's
FLOPs over it an upper bound on the MFU that eager execution can reach.

Autocast is CPU bf16 autocast, which casts these models' ops as CUDA's does (linear and matmul in bf16,
layer_norm and the loss in fp32). Lower bound, not a prediction: real kernels re-read operands, and
non-vectorised ones reach a fraction of the bandwidth (docs/results-gpu.md compares with the H100).

  python3 bench/step_traffic.py [--workload gpt2-124m] [--batch 32] [--vocab V] [--bandwidth-gbs 3350]
                                [--matmul-tflops 798] [--peak-tflops 989] [--json FILE]
"""
import argparse
import collections
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_eager as pe  # noqa: E402
from op_layouts import DataOps  # noqa: E402

# ATen op name (without the overload) -> class (views and metadata ops move nothing: DataOps skips them).
CLASSES = [
    ("matmul / conv", ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution",
                       "aten.convolution_backward")),
    ("attention", ("aten._scaled_dot_product",)),
    ("softmax / loss", ("aten._log_softmax", "aten._softmax", "aten.nll_loss")),
    ("copy / cast", ("aten._to_copy", "aten.copy_", "aten.clone")),
    ("normalization", ("aten.native_layer_norm", "aten.native_batch_norm", "aten._native_batch_norm",
                       "aten.native_batch_norm_backward")),
    ("optimizer", ("aten._fused_adamw", "aten._foreach")),
    ("embedding", ("aten.embedding",)),
    ("reduction", ("aten.sum", "aten.mean")),
]
# Inputs an op reads only a sliver of: nll_loss reads one log-probability per row (its target's), and its
# backward zero-fills the gradient and scatters into it; the *_like ops read nothing but the shape.
SHAPE_ONLY_INPUTS = {"aten.nll_loss_forward": (0,), "aten.nll_loss_backward": (1,), "aten.zeros_like": (0,),
                     "aten.empty_like": (0,), "aten.ones_like": (0,)}


def op_class(name):
    for cls, prefixes in CLASSES:
        if name.startswith(prefixes):
            return cls
    return "elementwise / other"


def tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from tensors(y)


def nbytes(t):
    return t.numel() * t.element_size()


class Traffic(DataOps):
    def __init__(self, logits_numel):
        super().__init__()
        self.logits_numel = logits_numel  # ops on a tensor this large are the LM head's and the loss's
        self.logits_bytes = 0
        self.bytes = collections.Counter()
        self.calls = collections.Counter()
        self.by_op = collections.Counter()

    def op(self, name, args, kwargs, out):
        base = name.rsplit(".", 1)[0] if name.count(".") > 1 else name
        skip = SHAPE_ONLY_INPUTS.get(base, ())
        ins = [t for i, a in enumerate(args) if i not in skip for t in tensors(a)]
        ins += [t for v in kwargs.values() for t in tensors(v)]
        seen = {id(t) for t in ins}
        outs = [t for t in tensors(out) if id(t) not in seen]  # in-place results are their input
        b = sum(nbytes(t) for t in ins) + sum(nbytes(t) for t in outs)
        cls = op_class(name)
        self.bytes[cls] += b
        self.calls[cls] += 1
        self.by_op[base] += b
        if any(t.numel() == self.logits_numel for t in ins + outs) and cls != "matmul / conv":
            self.logits_bytes += b


def build(workload, batch, vocab=0):
    V, T, L, H, C = (50304, 1024, 12, 12, 768) if workload == "gpt2-124m" else (512, 64, 4, 4, 128)
    V = vocab or V
    model = pe.GptMini(vocab=V, T=T, L=L, H=H, C=C)
    x, y = torch.randint(V, (batch, T)), torch.randint(V, (batch, T))
    # Training FLOPs per token as the worker counts them (workloads/models/gpt.cpp): 6N + 12·L·C·T, N
    # without the position embedding.
    per_token = 6 * (sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()) + 12 * L * C * T
    return model, x, lambda out: F.cross_entropy(out.view(-1, V), y.view(-1)), batch * T, per_token, (L, C, T, V)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", choices=["gpt2-124m", "gpt-mini"], default="gpt2-124m")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=0, help="another vocabulary size (0: the workload's)")
    ap.add_argument("--bandwidth-gbs", type=float, default=3350.0, help="memory bandwidth (H100 SXM HBM3: 3,350)")
    ap.add_argument("--matmul-tflops", type=float, default=798.0,
                    help="bf16 matmul throughput reached (the H100 measured 798 on an 8192^3 matmul)")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="the MFU's dense bf16 peak (H100 SXM: 989)")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    with FakeTensorMode():
        model, x, loss_fn, tokens, per_token, (L, C, T, V) = build(a.workload, a.batch, a.vocab)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
        params = sum(p.numel() for p in model.parameters())
        traffic, flops = Traffic(tokens * V), FlopCounterMode(display=False)
        with traffic, flops:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    counted = flops.get_flop_counts().get("Global", {})
    matmul_flops = sum(n for op, n in counted.items() if op_class(str(op)) == "matmul / conv")  # keys: "aten.mm", …
    # Attention as a causal flash kernel runs it: QK^T and PV, forward and backward (12·L·C·T per token, as
    # the MFU counts it), of which the masked half is skipped.
    attention_flops = 12 * L * C * T * tokens / 2
    bw, mm = a.bandwidth_gbs * 1e9, a.matmul_tflops * 1e12
    rows = []
    for cls in sorted(traffic.bytes, key=lambda c: -traffic.bytes[c]):
        f = matmul_flops if cls == "matmul / conv" else attention_flops if cls == "attention" else 0
        memory_ms, compute_ms = traffic.bytes[cls] / bw * 1e3, f / mm * 1e3
        rows.append({"class": cls, "calls": traffic.calls[cls], "gb": round(traffic.bytes[cls] / 1e9, 3),
                     "flops": f, "tflop": round(f / 1e12, 2), "ms_memory": round(memory_ms, 2), "ms_compute": round(compute_ms, 2),
                     "ms_bound": round(max(memory_ms, compute_ms), 2)})
    bound_ms = sum(r["ms_bound"] for r in rows)
    model_flops = per_token * tokens
    out = {"workload": a.workload, "batch": a.batch, "tokens": tokens, "parameters": params,
           "model_flops": model_flops, "bandwidth_gbs": a.bandwidth_gbs, "matmul_tflops": a.matmul_tflops,
           "peak_tflops": a.peak_tflops, "classes": rows,
           "matmul_attention_ms": round(sum(r["ms_bound"] for r in rows if r["flops"] > 0), 2),
           "other_ms": round(sum(r["ms_bound"] for r in rows if r["flops"] == 0), 2),
           "step_lower_bound_ms": round(bound_ms, 2),
           "mfu_upper_bound": round(model_flops / (bound_ms / 1e3) / (a.peak_tflops * 1e12), 3),
           "logits_elementwise_bytes": traffic.logits_bytes,
           "logits_elementwise_gb": round(traffic.logits_bytes / 1e9, 2),
           "logits_elementwise_ms": round(traffic.logits_bytes / bw * 1e3, 2),
           "top_ops_gb": {k: round(v / 1e9, 2) for k, v in traffic.by_op.most_common(12)}}
    print(f"{a.workload} batch {a.batch} ({tokens} tokens), {params / 1e6:.1f}M parameters, bf16 autocast, fused AdamW")
    print(f"{'class':22} {'calls':>6} {'GB':>8} {'TFLOP':>6} {'ms (memory)':>12} {'ms (compute)':>13}")
    for r in rows:
        print(f"{r['class']:22} {r['calls']:6} {r['gb']:8.2f} {r['tflop']:6.2f} {r['ms_memory']:12.2f} {r['ms_compute']:13.2f}")
    print(f"at {a.bandwidth_gbs:.0f} GB/s and {a.matmul_tflops:.0f} TFLOP/s: matmul + attention {out['matmul_attention_ms']:.1f} ms, "
          f"everything else {out['other_ms']:.1f} ms")
    print(f"of which on the logits ({tokens}×{V}) outside the matmuls: {out['logits_elementwise_gb']:.1f} GB, "
          f"{out['logits_elementwise_ms']:.1f} ms (casts, log_softmax, nll_loss and their backward)")
    print(f"eager step lower bound {bound_ms:.1f} ms; MFU upper bound {100 * out['mfu_upper_bound']:.1f}% "
          f"(model FLOPs {model_flops / 1e12:.1f} T at {a.peak_tflops:.0f} TFLOP/s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
