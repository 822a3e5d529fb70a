"""autotune's noise logger for your own PyTorch training loop (docs/time-to-train.md, "Your own training loop").

Copy this file next to your training script. It records, per optimizer step, what the gradient noise scale needs: the
mean squared norm of the step's micro-batch gradients and the squared norm of their mean (the step's gradient). Then

    autotune tune   --objective time --noise-log noise.jsonl …     # prices a changed batch with your loop's noise scale
    autotune report RUN_DIR --noise-log noise.jsonl                 # re-prices a finished tune with it

Usage, with gradient accumulation over K ≥ 2 micro-batches of b samples (the loss divided by K, as usual):

    from autotune_noise_log import NoiseLog
    with NoiseLog("noise.jsonl", model, micro_batch=b, micro_batches=K) as log:
        for step in range(steps):
            optimizer.zero_grad(set_to_none=True)
            for k in range(K):
                loss = loss_fn(model(x[k]), y[k]) / K
                loss.backward()
                log.micro_batch_done()
            log.step(loss=total_loss)        # before optimizer.step(): the gradients are the step's
            optimizer.step()

Cost: one extra copy of the gradients and a few passes over them per micro-batch, and a host sync for the norms;
`every=N` logs every N-th step only (the others cost nothing). With a GradScaler, pass grad_scale=scaler.get_scale().
The header records the model's trainable parameters (elements and tensors): autotune refuses a log of another model.
An existing file is never overwritten.
"""
import json
import math

import torch

FORMAT_VERSION = 1


class NoiseLog:
    def __init__(self, path, model, micro_batch, micro_batches, *, loss_divided=True, every=1, samples_before=0,
                 started="random init", data=""):
        """model: an nn.Module or an iterable of parameters. loss_divided: each micro-batch's loss was divided by
        micro_batches before backward (False: summed). samples_before: samples trained before this log began (a
        resumed run), so that its sample counts are since the first step of training; started: "random init" or
        "checkpoint". data: what the loop trains on, in words."""
        params = model.parameters() if hasattr(model, "parameters") else model
        self._params = [p for p in params if p.requires_grad]
        if not self._params:
            raise ValueError("NoiseLog: the model has no trainable parameters")
        if int(micro_batches) < 2:
            raise ValueError(f"NoiseLog: micro_batches={micro_batches}; the noise scale needs at least 2 micro-batches per step")
        if int(micro_batch) < 1:
            raise ValueError(f"NoiseLog: micro_batch={micro_batch}; allowed: 1 or more")
        if int(every) < 1:
            raise ValueError(f"NoiseLog: every={every}; allowed: 1 or more")
        if started not in ("random init", "checkpoint"):
            raise ValueError(f"NoiseLog: started={started!r}; allowed: 'random init', 'checkpoint'")
        self._b, self._k_total = int(micro_batch), int(micro_batches)
        self._divided, self._every = bool(loss_divided), int(every)
        self._samples = int(samples_before)
        self._step = 0
        self._k = 0
        self._small = 0.0
        self._prev = None
        self._file = open(path, "x")  # "x": an existing file is never overwritten
        header = {"autotune_noise_log": FORMAT_VERSION, "logger": "python", "mode": "accumulation",
                  "micro_batch": self._b, "micro_batches": self._k_total,
                  "parameters": sum(p.numel() for p in self._params), "tensors": len(self._params),
                  "started": started, "data": data}
        self._file.write(json.dumps(header) + "\n")
        self._file.flush()

    def _logging(self):
        return (self._step + 1) % self._every == 0

    def _grads(self):
        return [p.grad if p.grad is not None else torch.zeros_like(p) for p in self._params]

    @staticmethod
    def _sum_sq(tensors):
        norms = torch._foreach_norm([t.detach() for t in tensors])
        return float(torch.stack([n.double() for n in norms]).pow(2).sum())

    def micro_batch_done(self):
        """Call after each micro-batch's backward: this micro-batch's gradient is what the accumulated one grew by."""
        if self._k >= self._k_total:
            raise RuntimeError(f"NoiseLog: micro_batch_done() called {self._k + 1} times in one step; "
                               f"the log was opened with micro_batches={self._k_total}")
        if self._logging():
            with torch.no_grad():
                g = self._grads()
                diff = g if self._k == 0 else torch._foreach_sub(g, self._prev)  # zero_grad before the first
                scale = self._k_total if self._divided else 1
                self._small += self._sum_sq(diff) * scale * scale
                if self._prev is None:
                    self._prev = [t.detach().clone() for t in g]
                else:
                    torch._foreach_copy_(self._prev, g)
        self._k += 1

    def step(self, loss=None, grad_scale=1.0):
        """Call once per optimizer step, after the last micro-batch's backward and before optimizer.step()."""
        if self._k != self._k_total:
            raise RuntimeError(f"NoiseLog: step() after {self._k} micro_batch_done() calls; "
                               f"the log was opened with micro_batches={self._k_total}")
        self._samples += self._b * self._k_total
        if self._logging():
            with torch.no_grad():
                big = self._sum_sq(self._grads())
            if not self._divided:
                big /= self._k_total * self._k_total
            unscale = 1.0 / (float(grad_scale) ** 2)
            small = self._small / self._k_total * unscale
            big *= unscale
            rec = {"step": self._step + 1, "samples": self._samples,
                   "small_sq": small if math.isfinite(small) else None, "big_sq": big if math.isfinite(big) else None}
            if loss is not None:
                value = float(loss.detach()) if torch.is_tensor(loss) else float(loss)
                if math.isfinite(value):
                    rec["loss"] = value
            self._file.write(json.dumps(rec) + "\n")
            self._file.flush()
        self._step += 1
        self._k = 0
        self._small = 0.0

    def close(self):
        if not self._file.closed:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
