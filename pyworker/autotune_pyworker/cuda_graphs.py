"""The `cuda_graphs` knob in the Python worker, as the C++ worker's GraphedStep (workloads/engine/cuda_graph_step.h) and
PyTorch's whole-network capture: the step — forward under autocast (its weight cache off: cached casts would be stale
across replays), backward, the fused AdamW step (capturable=True, its step counters on the device) — runs 3 times
eagerly on a side stream (cuBLAS workspaces, cuDNN autotuning, the allocator), is then captured into one
torch.cuda.CUDAGraph, and every later step copies its batch into the captured input tensors and replays the graph. Each
call is one optimizer step on its batch, captured or not, so the losses match eager steps.

What a graph cannot hold falls back before anything is built, by the knob rules (knobs/resolve.cpp: one home)."""
import torch

EAGER_STEPS = 3


class GraphedStep:
    def __init__(self, trial):
        self.t = trial
        self.inputs, self.target, self.graph, self.static_loss = None, None, None, None
        self.eager, self.replays = 0, 0

    def body(self):
        t = self.t
        with torch.autocast(t.device.type, dtype=t.amp_dtype, enabled=t.amp, cache_enabled=False):
            loss = t.built.loss_of(t.model, self.inputs, self.target)
        loss.backward()
        t.opt.step()
        return loss.detach()

    def step(self, inputs, target):
        """One optimizer step on this batch; its loss, on the device."""
        if self.inputs is None:  # every tensor of the batch gets a static copy of its shape
            self.inputs = [torch.empty_like(x) for x in inputs]
            self.target = None if target is None else torch.empty_like(target)
        if [x.shape for x in inputs] != [x.shape for x in self.inputs]:
            raise RuntimeError(f"CUDA graph replay needs the captured input shapes {[tuple(x.shape) for x in self.inputs]}, "
                               f"got {[tuple(x.shape) for x in inputs]}")
        for s, x in zip(self.inputs, inputs):
            s.copy_(x, non_blocking=True)
        if target is not None:
            self.target.copy_(target, non_blocking=True)
        if self.graph is None:
            current, side = torch.cuda.current_stream(), torch.cuda.Stream()
            side.wait_stream(current)
            loss = None
            with torch.cuda.stream(side):  # capture must not happen on the default stream
                # Grads are None before each of these steps: the captured backward allocates them from the graph's
                # pool and every replay overwrites (not accumulates) them.
                self.t.opt.zero_grad(set_to_none=True)
                if self.eager < EAGER_STEPS:
                    loss = self.body()
                    self.eager += 1
                else:
                    graph = torch.cuda.CUDAGraph()
                    # thread_local: a DataLoader's pinning thread may touch CUDA while this thread captures
                    with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
                        self.static_loss = self.body()
                    self.graph = graph
            current.wait_stream(side)
            if loss is not None:
                return loss
        self.graph.replay()  # (the capture ran nothing: this replay is its step)
        self.replays += 1
        return self.static_loss.clone()  # the next replay overwrites static_loss
