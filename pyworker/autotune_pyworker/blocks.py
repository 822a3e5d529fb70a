"""Activation checkpointing over a model's repeated blocks (the `checkpointing` knob): the outermost runs of two or more
sibling modules of one class in an nn.ModuleList or nn.Sequential (a transformer's layers, a ResNet stage's blocks),
each block's forward wrapped in torch.utils.checkpoint (use_reentrant=False), so its activations are recomputed in
backward instead of kept. The wrapper counts the block forwards a step runs: the proof that they ran twice."""
import torch
from torch.utils.checkpoint import checkpoint


def repeated_blocks(model):
    """The blocks, outermost first: members of a run of ≥ 2 consecutive same-class children of a ModuleList or
    Sequential, none inside another block."""
    found, inside = [], set()
    for m in model.modules():
        if id(m) in inside or not isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)):
            continue
        run = []
        for child in list(m.children()) + [None]:
            if child is not None and run and type(child) is type(run[-1]):
                run.append(child)
                continue
            if len(run) >= 2:
                found += run
                for b in run:
                    inside.update(id(x) for x in b.modules())
            run = [child] if child is not None else []
    return found


class Checkpointed:
    """`mode` "blocks" wraps every block, "every_2" every second one; `forwards` counts the wrapped blocks' forwards."""

    def __init__(self, model, mode):
        self.blocks = repeated_blocks(model)
        self.wrapped = self.blocks if mode == "blocks" else self.blocks[::2]
        self.forwards = 0
        for b in self.wrapped:
            self._wrap(b)

    def _wrap(self, block):
        inner = block.forward

        def counted(*args, **kwargs):
            self.forwards += 1
            return inner(*args, **kwargs)

        def forward(*args, **kwargs):
            if not torch.is_grad_enabled():
                return counted(*args, **kwargs)
            return checkpoint(counted, *args, use_reentrant=False, **kwargs)

        block.forward = forward
