"""Every ATen op of one training step of the Python twin (bench/python_eager.py) with its operands' dtypes,
shapes and layouts, and a summary of the mixed-dtype elementwise ops: which of them have a strided or
broadcast operand. On CUDA such an add runs ATen's generic casting kernel (`elementwise_kernel<128, 4,
gpu_kernel_impl<…>>`); a contiguous one runs the unrolled casting kernel (docs/results-gpu.md). Runs on the
CPU under CPU bf16 autocast, whose casts for these models' ops match CUDA's (linear and matmul in bf16,
layer_norm on its fp32 input); small model dimensions keep it fast, the layouts do not depend on them.

  python3 bench/op_layouts.py [--workload gpt-mini|resnet18] [--precision amp_bf16|fp32] [--quiet]
"""
import argparse
import collections
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_eager as pe  # noqa: E402

VIEWS = ("view", "detach", "alias", "expand", "transpose", "aten.t.", "split", "slice", "select", "permute",
         "as_strided", "unsqueeze", "squeeze", "prim.", "unbind", "reshape")
ELEMENTWISE = ("aten.add.", "aten.add_.", "aten.mul.", "aten.mul_.", "aten.sub.", "aten.div.", "aten.addcmul", "aten.where")


def layout(t):
    s = f"{str(t.dtype).replace('torch.', '')}{tuple(t.shape)}"
    return s if t.is_contiguous() else s + f" strided{tuple(t.stride())}"


class DataOps(TorchDispatchMode):
    """Runs every ATen op and hands the ones that move data (views and metadata ops left out) to
    self.op(name, args, kwargs, out); bench/step_traffic.py uses it too."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func)
        if not any(v in name for v in VIEWS):
            self.op(name, args, kwargs or {}, out)
        return out


class OpLog(DataOps):
    def __init__(self, quiet):
        super().__init__()
        self.phase, self.quiet = "forward", quiet
        self.mixed = collections.Counter()

    def op(self, name, args, kwargs, out):
        ins = [a for a in args if isinstance(a, torch.Tensor)]
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
        if not self.quiet:
            print(f"{self.phase:8} {name} {[layout(a) for a in ins]} -> {[layout(o) for o in outs]}")
        if name.startswith(ELEMENTWISE) and len({a.dtype for a in ins + outs}) > 1:
            shape = outs[0].shape if outs else None
            strided = any(not a.is_contiguous() or a.shape != shape for a in ins)
            self.mixed[(self.phase, name, "strided or broadcast" if strided else "contiguous")] += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", choices=["gpt-mini", "resnet18"], default="gpt-mini")
    ap.add_argument("--precision", choices=["fp32", "amp_bf16"], default="amp_bf16")
    ap.add_argument("--quiet", action="store_true", help="only the summary")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.workload == "gpt-mini":
        V, T = 512, 64
        model = pe.GptMini(vocab=V, T=T, L=2, H=4, C=128)
        x, y = torch.randint(V, (2, T)), torch.randint(V, (2, T))
        loss_fn = lambda out: F.cross_entropy(out.view(-1, V), y.view(-1))  # noqa: E731
    else:
        model = pe.ResNet18(depth=18)
        x, y = torch.randn(2, 3, 32, 32), torch.randint(1000, (2,))
        loss_fn = lambda out: F.cross_entropy(out, y)  # noqa: E731
    log = OpLog(a.quiet)
    with log:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "amp_bf16"):
            loss = loss_fn(model(x))
        log.phase = "backward"
        loss.backward()
    print(f"mixed-dtype elementwise ops ({a.workload}, {a.precision}):")
    for (phase, name, kind), n in sorted(log.mixed.items()):
        print(f"  {phase} {name}: {n} {kind}")
    strided = sum(n for (_, _, kind), n in log.mixed.items() if kind != "contiguous")
    print(f"mixed-dtype elementwise ops with a strided or broadcast operand: {strided}")


if __name__ == "__main__":
    main()
