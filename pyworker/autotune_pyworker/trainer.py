"""One trial: the model trained under a config with PyTorch's own Python API, measured as the C++ worker measures
(workloads/engine/trainer.cpp): a warm-up until two blocks of steps agree, then windows of at least
window_min_seconds and window_min_steps, end to end; every step's loss; a proof of each knob read back."""
import contextlib
import math
import os
import time
import traceback

import torch

from . import compiled, ddp, host
from .build import POOL, Built
from .environment import environment
from .errors import Refused
from .settings import resolve, settings_of

GOLDEN = 0x9E3779B97F4A7C15
PHASES = ("data", "h2d", "forward", "backward", "optimizer", "other")


def data_seed(setup):
    """TrialSetup::data_seed (knobs/setup.h): the seed itself for data order 0, so both workers draw alike."""
    seed, order = int(setup.get("seed", 0)), int(setup.get("data_order", 0))
    return seed if order == 0 else (seed + GOLDEN * order) % (1 << 64)


def pick_device(setup, local_rank=0):
    """The trial's device; with ranks on a GPU host, the GPU of this process's local rank."""
    want = setup.get("device", "auto")
    if want == "cuda" and not torch.cuda.is_available():
        raise Refused("device cuda: no CUDA device is available to this process")
    if want in ("auto", "cuda") and torch.cuda.is_available():
        if local_rank >= torch.cuda.device_count():
            raise Refused(f"LOCAL_RANK={local_rank} has no GPU: this process sees {torch.cuda.device_count()}")
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def memory_record(cuda_device, faults_per_step, host_malloc="the Python interpreter's (glibc malloc, as started)"):
    """result.json `memory`: the process's peak RSS and, on a CUDA device, the caching allocator's figures."""
    c = cuda_device is not None
    return {"peak_rss_bytes": host.peak_rss_bytes(),
            "peak_device_bytes": torch.cuda.max_memory_allocated(cuda_device) if c else -1,
            "device_total_bytes": torch.cuda.get_device_properties(cuda_device).total_memory if c else -1,
            "host_total_bytes": host.host_total_bytes(),
            "alloc_retries": torch.cuda.memory_stats(cuda_device).get("num_alloc_retries", 0) if c else 0,
            "host_malloc": host_malloc, "minor_faults_per_step": faults_per_step}


class PhaseTimer:
    """Host milliseconds per phase over the measured steps (breakdown_ms); in a traced trial, each phase also a
    torch.profiler range of its name (what autotune-trace reads as the phase table)."""

    def __init__(self):
        self.on = False
        self.ranges = False
        self.total = dict.fromkeys(PHASES, 0.0)
        self.steps = 0
        self.t = 0.0
        self.phase = None
        self.range = None

    def begin(self, phase):
        self.t = time.perf_counter()
        self._open(phase)

    def switch(self, phase):
        """The running phase ends here and `phase` begins."""
        now = time.perf_counter()
        if self.on:
            self.total[self.phase] += now - self.t
        self.t = now
        self._close()
        self._open(phase)

    def end(self):
        self.switch(None)

    def _open(self, phase):
        self.phase = phase
        if self.ranges and phase:
            self.range = torch.autograd.profiler.record_function(phase)
            self.range.__enter__()

    def _close(self):
        if self.range is not None:
            self.range.__exit__(None, None, None)
            self.range = None

    def mean_ms(self):
        return {p: 1e3 * v / self.steps if self.steps else 0.0 for p, v in self.total.items()}


class Trial:
    def __init__(self, plan, started, verbose=False, work_dir="."):
        self.plan = plan
        self.work_dir = work_dir
        self.verbose = verbose
        self.setup = plan
        self.started = started
        self.group = None
        self.refused = None  # the Refused that building the model raised (a usage error, not the config's)
        self.result = {"schema": "autotune.result/1", "status": "error", "message": "", "config": plan.get("config", {}),
                       "applied": [], "skipped": [], "windows": [], "losses": [], "warmup_losses": [],
                       "non_finite_steps": 0, "scaler_skips": 0, "warmup_steps": 0, "warmup_seconds": 0.0}

    # Building ---------------------------------------------------------------------------------------------------
    def resolve(self, cuda):
        """What the plan's config means for this model on this device, from the knob rules (settings.py): the
        resolution is kept in the result (`resolved`) and read by the profile's verdict (`applicable`)."""
        plan = dict(self.plan)
        if self.denv.distributed and "ranks" not in plan.get("config", {}):  # the launcher says how many (as in C++)
            plan["config"] = dict(plan.get("config", {}), ranks=str(self.denv.world))
        self.env = environment()  # read once: the resolution's device facts and the result's `env`
        env = dict(self.env, cuda_available=cuda)  # the device this process picked, not only what exists
        launched = self.denv.distributed and self.denv.launcher != "autotune"  # srun/torchrun placed the ranks
        self.info = self.built.info()  # describe's facts of the model: what the rules read (conv, blocks, data, knobs)
        self.resolution = resolve(plan, self.info, env, launched)
        self.result["resolved"] = {k: self.resolution[k] for k in ("settings", "skipped", "applicable")}
        return self.resolution

    def build(self):
        self.denv = ddp.DistEnv()
        self.device = pick_device(self.setup, self.denv.local_rank)
        self.result["device"] = str(self.device)
        cuda = self.device.type == "cuda"
        try:
            self.built = Built(self.setup)
            self.built.probe()
        except Refused as e:  # the model, task or spec refused, exactly as `describe` refuses it: the worker exits 2
            self.refused = e
            raise
        s, skipped = settings_of(self.resolve(cuda))
        self.s = s
        self.denv.check(s.ranks)
        if self.built.task is not None and self.built.task.lightning and s.ranks > 1:
            raise Refused(f"ranks={s.ranks}: a LightningModule task trains in one process here (its training_step "
                          "calls the module itself, which DistributedDataParallel cannot wrap); ranks > 1 is a --model's")
        if self.setup.get("memory_cap"):  # before anything is allocated on the device
            from .memcap import apply_cap
            apply_cap(self.setup["memory_cap"], self.device)
        self.result["skipped"] = skipped
        info = self.info
        self.result.update(workload=info["name"], device=str(self.device), batch_size=s.batch_size,
                           flops_per_sample=info["flops_per_sample"], env=self.env)
        if s.threads != "default":
            torch.set_num_threads(int(s.threads))
        elif self.denv.local_world > 1:  # torch's default (a thread per core) in every rank would oversubscribe the cores
            torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // self.denv.local_world))
        if self.denv.distributed:
            if cuda:
                torch.cuda.set_device(self.device)
            self.group = ddp.Group(self.denv, cuda)
        if s.precision == "tf32":  # PyTorch 2.11's fp32_precision API (allow_tf32 is its deprecated form)
            torch.backends.cuda.matmul.fp32_precision = "tf32"
            torch.backends.cudnn.conv.fp32_precision = "tf32"
        torch.backends.cudnn.benchmark = s.cudnn_benchmark
        if self.setup.get("init_from"):  # the weights a converge trial saved (torch.save of the state_dict)
            self.load_weights(self.built.model, self.setup["init_from"])
        model = self.built.model.to(self.device)
        self.checkpointed = None
        if s.checkpointing != "none":
            from .blocks import Checkpointed
            self.checkpointed = Checkpointed(model, s.checkpointing)
        if s.memory_format == "channels_last":
            model = model.to(memory_format=torch.channels_last)
        self.comm = None
        if self.group:  # data parallel: DDP around the model, each bucket's collective timed
            model, self.comm = ddp.wrap(model, s, self.group, cuda, self.device)
        self.model = model
        self.amp = s.precision in ("amp_bf16", "amp_fp16")
        self.amp_dtype = torch.float16 if s.precision == "amp_fp16" else torch.bfloat16
        self.scaler = torch.amp.GradScaler(self.device.type) if s.precision == "amp_fp16" else None
        params = [p for p in model.parameters() if p.requires_grad]
        lr = float(self.setup.get("lr") or 0) or 1e-3
        betas = (float(self.setup.get("adam_beta1") or 0) or 0.9, float(self.setup.get("adam_beta2") or 0) or 0.999)
        eps = float(self.setup.get("adam_eps") or 0) or 1e-8
        if self.built.task is not None:  # the task's optimizer(), or AdamW when it has none
            self.opt, why = self.built.task.optimizer(params, s.optimizer_impl, lr, betas, eps, s.cuda_graphs)
            if why:
                self.result["skipped"].append({"knob": "optimizer_impl", "reason": why})
            self.built.task.build_scheduler(self.opt)  # the task's scheduler(), on the optimizer as built
            scale = float(self.setup.get("lr_scale") or 0)
            if scale > 0 and self.built.task.has("optimizer"):  # another rate (converge, lr-sweep): the whole schedule
                self.built.task.scale_rate(self.opt, scale)
        else:
            self.opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, foreach=s.optimizer_impl == "foreach",
                                         fused=s.optimizer_impl == "fused", capturable=s.cuda_graphs)
        self.feed = None  # real data, drawn on the host (their copy to the device is the step's)
        if self.built.dataset is not None:
            from .task import TaskFeed
            self.feed = TaskFeed(self.built.task, self.built.dataset, s.batch_size, data_seed(self.setup) + 2,
                                 s.num_workers, s.prefetch, s.pin_memory, self.denv.rank, self.denv.world)
        elif self.built.folder:
            x = self.built.spec["inputs"][0]
            from .images import ImageData
            self.feed = ImageData(self.built.folder, x["shape"][2], data_seed(self.setup) + 2, s.batch_size, s.num_workers,
                                  s.prefetch, s.pin_memory, self.denv.rank, self.denv.world)
        elif self.built.data:
            x = self.built.spec["inputs"][0]
            from .tokens import TokenData
            self.feed = TokenData(self.built.data, self.built.data_tokens, x["shape"][1], data_seed(self.setup) + 2,
                                  s.batch_size, s.num_workers, s.prefetch, s.pin_memory, self.denv.rank, self.denv.world)
        gen = torch.Generator().manual_seed(int(self.setup.get("seed", 0)) + 1)
        self.pool = None if self.feed else self.built.random_batch(POOL, gen, self.device)
        # each rank draws its own batches (a rank's seed is the data order's, moved by its rank)
        self.index_gen = torch.Generator(device=self.device).manual_seed(
            (data_seed(self.setup) + 2 + 1000003 * self.denv.rank) % (1 << 64))
        fn = self.forward_loss
        self.compile_mode = s.compile
        if s.compile != "off":
            fn = compiled.compile_fn(fn, s.compile)
        self.loss_fn = fn
        self.graphed = None
        task = self.built.task
        if s.cuda_graphs and task is not None and task.scheduler is not None:
            raise Refused(f"cuda_graphs=on: the task's {type(task.scheduler).__name__} changes the rate between steps, "
                          "which a captured step (its rate fixed at capture) would not follow; use cuda_graphs=off")
        if s.cuda_graphs:  # the whole step captured once and replayed (the knob rules let no config through that a graph cannot hold)
            from .cuda_graphs import GraphedStep
            self.graphed = GraphedStep(self)
        self.opt_steps, self.last_epoch = 0, 0
        self.timer = PhaseTimer()
        self.pending, self.pending_skips, self.losses, self.skips, self.reads = [], [], [], [], 0
        self.noise_log = None

    @staticmethod
    def load_weights(model, path):
        if not os.path.isfile(path):
            raise Refused(f"--init-from {path}: no such file")
        why = ""
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - not a file torch.save wrote (or one holding more than tensors)
            raise Refused(f"--init-from {path}: not a weights file torch.save wrote ({type(e).__name__}: "
                          f"{str(e).strip().splitlines()[0][:160] if str(e).strip() else 'unreadable'})") from None
        try:
            missing, unexpected = model.load_state_dict(state, strict=False)
            if missing or unexpected:
                why = (f"{len(missing)} of the model's tensors missing{f' ({missing[0]}, …)' if missing else ''}, "
                       f"{len(unexpected)} not the model's{f' ({unexpected[0]}, …)' if unexpected else ''}")
        except Exception as e:  # noqa: BLE001 - a file of another model or format: one line naming it
            text = [t.strip() for t in str(e).strip().splitlines() if t.strip()]
            why = f"{type(e).__name__}: {' '.join(text[:2])[:240]}"
        if why:
            raise Refused(f"--init-from {path}: not this model's weights as the Python worker saves them (torch.save of "
                          f"its state_dict): {why}")

    def forward_loss(self, inputs, target):
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp):
            return self.built.loss_of(self.model, inputs, target)

    # Steps ------------------------------------------------------------------------------------------------------
    def batch(self):
        n = self.s.batch_size
        if self.feed:
            return self.feed.next(n, self.device)
        idx = torch.randint(POOL, (n,), generator=self.index_gen, device=self.device)
        inputs, target = self.pool
        xs = [x.index_select(0, idx) for x in inputs]
        if self.s.memory_format == "channels_last":
            xs = [x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
        return xs, None if target is None else target.index_select(0, idx)

    def graphed_step(self):
        """A step of the captured graph: the batch copied in, one replay (forward, backward and optimizer in it)."""
        t = self.timer
        t.begin("data")
        inputs, target = self.batch()
        t.switch("forward")  # the replay: the C++ worker counts it as forward too (workloads/engine/stepper.cpp)
        self.end_step(self.graphed.step(inputs, target))

    def step(self):
        if self.graphed:
            return self.graphed_step()
        t = self.timer
        t.begin("data")
        accum = self.s.grad_accum
        step_loss = None
        for i in range(accum):
            if i:
                t.switch("data")
            inputs, target = self.batch()
            t.switch("forward")
            # data parallel: the micro-steps before the last accumulate locally (DDP's no_sync)
            quiet = self.model.no_sync() if self.comm and i < accum - 1 else contextlib.nullcontext()
            with quiet:
                loss = self.loss_fn(inputs, target)
                if accum > 1:
                    loss = loss / accum
                t.switch("backward")
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            if self.noise_log:
                self.noise_log.micro_batch_done()
            step_loss = loss.detach() if step_loss is None else step_loss + loss.detach()
        t.switch("optimizer")
        if self.noise_log:  # before the optimizer: the step's gradients, the loss scale undone
            self.noise_log.step(loss=step_loss, grad_scale=self.scaler.get_scale() if self.scaler else 1.0)
        if self.scaler:
            before = self.scaler._scale.clone()  # a skipped step lowers the scale (torch/amp/grad_scaler.py)
            self.scaler.step(self.opt)
            self.scaler.update()
            self.pending_skips.append(self.scaler._scale < before)
        else:
            self.opt.step()
        self.opt.zero_grad(set_to_none=self.s.zero_grad == "none")
        task = self.built.task
        if task is not None and task.scheduler is not None:  # the task's or Lightning's scheduler, stepped as it says
            self.opt_steps += 1
            epoch = self.feed.epoch if self.feed else 0
            task.after_step(self.opt_steps, epoch if epoch != self.last_epoch else 0)
            self.last_epoch = epoch
        self.end_step(step_loss)

    def end_step(self, step_loss):
        """The step's loss kept on the device, read every log_every steps (the "other" phase), and the step counted."""
        t = self.timer
        t.switch("other")
        self.pending.append(step_loss.float())
        if len(self.pending) >= self.s.log_every:
            self.flush()
        t.end()
        if t.on:
            t.steps += 1

    def flush(self):
        if not self.pending:
            return
        self.losses += torch.stack(self.pending).cpu().tolist()
        if self.pending_skips:
            self.skips += torch.stack(self.pending_skips).cpu().tolist()
        self.pending, self.pending_skips = [], []
        self.reads += 1

    def timed_steps(self, n):
        """Mean seconds per step of `n` steps, their losses read and the device synchronised at both ends."""
        self.sync()
        t0 = time.perf_counter()
        for _ in range(n):
            self.step()
        self.flush()
        self.sync()
        return (time.perf_counter() - t0) / n

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # The trial --------------------------------------------------------------------------------------------------
    def applied(self, knob, requested, observed):
        self.result["applied"].append({"knob": knob, "requested": str(requested), "observed": observed})

    def warm_up(self):
        """Blocks of steps until two consecutive blocks agree within settle_tolerance, at least warmup_min_steps and
        warmup_min_seconds, at most warmup_max_steps (compiling happens here, never in a measured window)."""
        m = self.plan.get("measure", {})
        min_steps, max_steps = int(m.get("warmup_min_steps", 5)), int(m.get("warmup_max_steps", 500))
        min_seconds, tol = float(m.get("warmup_min_seconds", 0.3)), float(m.get("settle_tolerance", 0.10))
        block = max(2, min_steps // 2)
        w0 = time.perf_counter()
        # The first step alone: what compiling costs shows against the steady step time found below.
        self.step()
        self.flush()
        self.sync()
        first = time.perf_counter() - w0
        after_first = compiled.counters() if self.compile_mode != "off" else None
        steps, prev, per_step = 1, -1.0, first
        while True:
            per_step = self.timed_steps(block)
            steps += block
            settled = prev > 0 and abs(per_step - prev) <= tol * prev
            prev = per_step
            done = (settled and steps >= min_steps and time.perf_counter() - w0 >= min_seconds) or steps >= max_steps
            if self.group:  # every rank steps alike: the warm-up ends when every rank has settled
                done = self.group.max(0.0 if done else 1.0) == 0.0
            if done:
                break
        self.result["warmup_steps"] = steps
        self.result["warmup_seconds"] = time.perf_counter() - w0
        if self.group:  # the windows' step count comes from the slowest rank's pace
            per_step = self.group.max(per_step)
        self.first_step, self.steady, self.after_first = first, per_step, after_first
        grads = [p.grad for p in self.model.parameters() if p.requires_grad]
        self.applied("zero_grad", self.s.zero_grad,
                     "grads undefined after zero_grad" if grads[0] is None else "grads defined after zero_grad (zeros)")
        self.result["warmup_losses"] = list(self.losses)
        bad = [x for x in self.losses if not math.isfinite(x)]
        self.losses, self.skips = [], []
        if bad:
            raise NonFinite(f"non-finite loss ({bad[0]}) during warm-up")

    def measure(self):
        m = self.plan.get("measure", {})
        windows, min_seconds, min_steps = int(m.get("windows", 3)), float(m.get("window_min_seconds", 1.0)), \
            int(m.get("window_min_steps", 5))
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        reads0, faults0 = self.reads, host.minor_faults()
        forwards0 = self.checkpointed.forwards if self.checkpointed else 0
        cpus0 = host.read_cpus()
        self.timer.on = True
        measured = 0
        world = self.denv.world
        per_step_samples = self.s.batch_size * self.s.grad_accum * world  # all ranks' samples: global throughput
        # With ranks every rank runs the same steps: a window is a step count fixed from the warm-up's pace.
        fixed = max(min_steps, math.ceil(min_seconds / max(1e-6, self.steady))) if self.group else 0
        self.comm_steps = []
        if self.comm:
            self.comm.on = True
        for _ in range(windows):
            self.sync()
            s0 = time.perf_counter()
            n = 0
            while (n < fixed) if self.group else (n < min_steps or time.perf_counter() - s0 < min_seconds):
                self.step()
                if self.comm:
                    self.comm_steps.append(self.comm.take(settle=0.0))
                n += 1
            self.sync()
            sec = time.perf_counter() - s0
            self.result["windows"].append({"steps": n, "samples": n * per_step_samples, "seconds": sec,
                                           "samples_per_s": n * per_step_samples / sec})
            measured += n
        self.timer.on = False
        if self.comm:
            self.comm.on = False
        load = host.host_load_between(cpus0, host.read_cpus())
        if load and not self.group:  # ranks share the host: the others' load is the trial's own
            self.result["host_load"] = load
        faults = host.minor_faults() - faults0
        self.flush()
        r = self.result
        r["losses"] = [x if math.isfinite(x) else None for x in self.losses]
        r["non_finite_steps"] = sum(not math.isfinite(x) for x in self.losses)
        r["scaler_skips"] = sum(bool(x) for x in self.skips)
        r["breakdown_ms"] = self.timer.mean_ms()
        r["memory"] = memory_record(self.device if cuda else None, faults / measured if measured else -1)
        if self.built.folder:  # too many bad images fail the trial (the C++ worker's rule)
            self.feed.check(float(self.setup.get("max_bad_share", 0.01)))
        self.proofs(measured, reads0)
        if self.group:
            self.result["dist"] = self.dist_record(measured)
        if self.checkpointed:  # each wrapped block runs forward twice per micro-batch: once, and again in backward
            ck = self.checkpointed
            per = (ck.forwards - forwards0) / (measured * self.s.grad_accum * len(ck.wrapped)) if measured else 0
            self.applied("checkpointing", self.s.checkpointing,
                         f"{len(ck.wrapped)} of {len(ck.blocks)} blocks recompute in backward: {per:.2f} forwards per block "
                         "per micro-batch")
        if r["non_finite_steps"]:
            r["status"] = "non_finite"
            r["message"] = f"{r['non_finite_steps']} of {len(self.losses)} measured losses are non-finite"
        else:
            r["status"] = "ok"

    def proofs(self, measured, reads0):
        s, cuda = self.s, self.device.type == "cuda"
        self.applied("batch_size", self.plan.get("config", {}).get("batch_size", "workload default"), str(s.batch_size))
        self.applied("threads", s.threads, f"torch.get_num_threads() = {torch.get_num_threads()}")
        a = torch.ones(8, 8, device=self.device)
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp):
            obs = "autocast matmul dtype " + str((a @ a).dtype).replace("torch.", "")
        if self.scaler:
            obs += f", GradScaler scale {self.scaler.get_scale()}"
        if cuda:
            obs += f", CUDA matmul fp32 precision {torch.backends.cuda.matmul.fp32_precision}"
        self.applied("precision", s.precision, obs)
        d = self.opt.defaults
        impl = "fused" if d.get("fused") else "foreach" if d.get("foreach") else "for-loop"
        from .task import class_name, hyper
        task = self.built.task
        sched = "" if task is None or task.scheduler is None else \
            f"; scheduler {type(task.scheduler).__name__} (interval {task.sched_interval}) stepped to lr {self.opt.param_groups[0]['lr']}"
        self.applied("optimizer_impl", s.optimizer_impl,
                     f"{class_name(self.opt)} {impl} (foreach={d.get('foreach')}, fused={d.get('fused')}; {hyper(self.opt)}){sched}")
        self.applied("grad_accum", s.grad_accum, f"{s.grad_accum} micro-batches of {s.batch_size} per optimizer step")
        if self.built.conv_model:
            conv = next(m for m in self.model.modules() if isinstance(m, torch.nn.modules.conv._ConvNd))
            self.applied("memory_format", s.memory_format,
                         f"first conv weight channels_last = "
                         f"{str(conv.weight.dim() == 4 and conv.weight.is_contiguous(memory_format=torch.channels_last)).lower()}")
        if cuda and self.built.conv_model:
            self.applied("cudnn_benchmark", str(s.cudnn_benchmark).lower(),
                         f"torch.backends.cudnn.benchmark = {torch.backends.cudnn.benchmark}")
        self.applied("log_every", s.log_every, f"{self.reads - reads0} loss reads for {measured} measured steps")
        if self.feed:  # the input pipeline, read back from the DataLoader and the processes it runs
            import multiprocessing
            alive = len(multiprocessing.active_children())
            self.applied("num_workers", s.num_workers, f"DataLoader(num_workers={self.feed.loader.num_workers}): {alive} "
                         "worker process(es) alive after the windows")
            self.applied("prefetch", s.prefetch, f"DataLoader(prefetch_factor={self.feed.loader.prefetch_factor})")
            if cuda:
                self.applied("pin_memory", str(s.pin_memory).lower(), f"batch is_pinned() = {self.feed.pinned}")
        if self.graphed:
            g = self.graphed
            self.applied("cuda_graphs", "on", f"torch.cuda.CUDAGraph captured after {g.eager} eager steps; {g.replays} replays")
        if self.compile_mode != "off":
            rec = compiled.record(self.compile_mode, self.first_step, self.steady, self.after_first, compiled.counters())
            self.result["compile"] = rec
            self.applied("compile", self.compile_mode,
                         f"torch.compile(mode={self.compile_mode!r}): {rec['graphs']} graph(s), {rec['graph_breaks']} graph "
                         f"break(s), {rec['recompiles']} recompile(s); first step {rec['first_step_seconds']:.2f} s")
        else:
            self.applied("compile", "off", "eager: the model is not compiled")

    def dist_record(self, measured):
        """result.json `dist`: how the ranks met and ran, and every rank's figures (rank 0's result carries them all)."""
        g, s, cuda = self.group, self.s, self.device.type == "cuda"
        buckets = ddp.proofs(self, self.model, s)
        timed = g.backend != "nccl"  # NCCL's futures complete on the GPU's stream: the traced profile measures it
        n = len(self.comm_steps) or 1
        comm = [ddp.union_and_hidden(iv) for iv in self.comm_steps]
        calls = sum(len(iv) for iv in self.comm_steps) / n
        nbytes = sum(b for iv in self.comm_steps for _, _, b in iv) / n
        secs = sum(w["seconds"] for w in self.result["windows"])
        me = {"rank": self.denv.rank, "host": ddp.host_name(), "step_ms": 1e3 * secs / measured if measured else 0.0,
              "comm_ms_per_step": 1e3 * sum(c[0] for c in comm) / n if timed else 0.0,
              "overlap_ms_per_step": 1e3 * sum(c[1] for c in comm) / n if timed else 0.0, "comm_timed": timed,
              "collectives_per_step": calls, "comm_bytes_per_step": nbytes, "peak_rss_bytes": host.peak_rss_bytes(),
              "peak_device_bytes": torch.cuda.max_memory_allocated(self.device) if cuda else -1}
        self.applied("ranks", s.ranks, f"{self.denv.world} processes over {g.backend} ({g.store_kind}; this rank on "
                                       f"{g.interface}); {calls:.1f} "
                                       f"collectives and {nbytes / 1e6:.2f} MB per step on rank {self.denv.rank}")
        ranks = ddp.gather(g, me) or [me]
        total = sum(r["comm_ms_per_step"] for r in ranks)
        return {"world": self.denv.world, "backend": g.backend, "backend_version": g.version, "launcher": self.denv.launcher,
                "store": g.store_kind, "bucket_bytes": buckets, "ranks": ranks,
                "comm_ms_per_step": total / len(ranks),
                "overlap_share": sum(r["overlap_ms_per_step"] for r in ranks) / total if total > 0 else 0.0,
                "comm_timed": all(r["comm_timed"] for r in ranks)}

    def noise(self):
        if self.group:
            raise Refused("a noise-scale trial runs in one process (ranks=1)")
        from .noise import noise_trial
        log_path = os.path.join(self.work_dir, "noise-steps.jsonl")
        if os.path.exists(log_path):
            os.remove(log_path)  # a re-run of the same trial folder: the log is this trial's own
        rec = noise_trial(self, self.plan["noise"], log_path)
        self.result["noise"] = rec
        if rec["steps"] and rec["dropped"] == len(rec["steps"]):
            self.result.update(status="non_finite",
                               message=f"every one of {rec['dropped']} noise-scale steps had a non-finite gradient norm")
        else:
            self.result["status"] = "ok"

    def trace(self):
        """A traced trial (never a timed one): the profile of a few steps under torch.profiler, and its trace."""
        from .traced import run_traced
        self.result["profile"] = run_traced(self, self.plan["trace"], int(self.plan.get("trace_steps", 5)))
        self.result["status"] = "ok"

    def converge(self):
        """A converge trial: from the first step to the target loss (or the limits), the whole curve recorded."""
        from .converge import run_converge
        rec, samples, seconds = run_converge(self, self.plan["converge"])
        r = self.result
        r["converge"] = rec
        r["losses"] = [x if math.isfinite(x) else None for x in self.losses]
        r["non_finite_steps"] = sum(not math.isfinite(x) for x in self.losses)
        if seconds > 0:  # its one window: the whole run, for its samples/s
            r["windows"] = [{"steps": len(rec["points"]), "samples": samples, "seconds": seconds,
                             "samples_per_s": samples / seconds}]
        cuda = self.device.type == "cuda"
        r["memory"] = memory_record(self.device if cuda else None, -1)
        if rec["stopped"] == "non_finite":
            r.update(status="non_finite", message=f"non-finite loss after {samples} samples")
        else:
            r["status"] = "ok"

    def run(self):
        try:
            self.build()
            if self.plan.get("noise"):  # untimed, from the first step: no warm-up to settle
                self.noise()
            elif self.plan.get("converge"):
                self.converge()
            else:
                self.warm_up()
                self.trace() if self.plan.get("trace") else self.measure()
        except NonFinite as e:
            self.result.update(status="non_finite", message=str(e))
        except torch.OutOfMemoryError as e:
            self.result.update(status="oom", message=f"out of memory: {str(e).strip().splitlines()[0][:200]}")
        except Refused as e:
            self.result.update(status="error", message=str(e))
        except Exception as e:  # noqa: BLE001 - the model or torch failed mid-trial: the result says so in one line
            if self.verbose:
                traceback.print_exception(e)
            text = str(e).strip().splitlines()
            self.result.update(status="error", message=f"{type(e).__name__}: {text[0][:300] if text else ''}")
        if "memory" not in self.result:  # a trial that ended before its windows: the process's figures only
            self.result["memory"] = memory_record(None, -1, host_malloc="")
        if getattr(self, "feed", None):
            self.result["data"] = self.feed.stats()
        if "env" not in self.result:  # a trial that ended before it was built: read the machine now (once)
            self.result["env"] = getattr(self, "env", None) or environment()
        self.result.setdefault("workload", self.setup.get("model", ""))
        self.result.setdefault("device", "")
        self.result.setdefault("batch_size", 0)
        self.result.setdefault("flops_per_sample", 0.0)
        self.result.setdefault("breakdown_ms", dict.fromkeys(PHASES, 0.0))
        self.result["wall_seconds"] = time.perf_counter() - self.started
        if self.group:
            self.group.close()
        return self.result


class NonFinite(Exception):
    pass


