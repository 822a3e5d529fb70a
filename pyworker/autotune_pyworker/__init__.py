"""autotune's Python worker: trains a PyTorch nn.Module as it is, on the same plan.json / result.json contract as the
C++ worker (docs/protocol.md), with the knobs applied through PyTorch's own Python API (docs/models.md)."""

# The oldest torch this worker runs on: torch.amp.GradScaler("cuda"), fused AdamW on the CPU and
# torch.compile's modes as used here are all there from 2.4.
MIN_TORCH = (2, 4)
VERSION = "0.1.0"
