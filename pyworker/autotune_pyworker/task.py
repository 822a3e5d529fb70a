"""The user's training as a task file (`--task train.py`): plain functions describing it, each optional but `model`:

    model()              -> torch.nn.Module
    dataset()            -> a torch.utils.data.Dataset (map-style) or IterableDataset, samples of any structure
    val_dataset()        -> held-out samples of the same structure (converge's held-out loss, held_out.py)
    collate(samples)     -> a batch                              (default: torch.utils.data.default_collate)
    sampler(dataset)     -> a torch.utils.data.Sampler            (default: a seeded random order; ranks: their share)
    loss(model, batch)   -> a scalar tensor                      (default: (x, y) → cross-entropy of model(x) with y,
                                                                   or MSE for a floating y of model(x)'s shape;
                                                                   a dict → model(**batch).loss, as HF models return)
    optimizer(params)    -> a torch.optim.Optimizer              (default: AdamW at --lr)
    scheduler(optimizer) -> a torch.optim.lr_scheduler.LRScheduler, stepped after every optimizer step (default: none,
                            a constant rate); a trial at another rate (lr-sweep, converge) scales its whole schedule
    batch_size = 32         the user's batch (a module-level int)

A `model()` that returns a LightningModule is read as the same task without Lightning's Trainer loop: its loss is
training_step's, its optimizer (and learning-rate scheduler, kept and stepped) configure_optimizers', its dataset,
collate, sampler and batch from the DataLoader its train_dataloader() builds — or a `datamodule()` beside it —, its
held-out samples and their collate from val_dataloader()'s.

Here the file is loaded and checked, the user's dataset is fed through torch's own DataLoader with the loader knobs
(num_workers, prefetch_factor, pin_memory, persistent workers) and the user's collate and sampler, the loss is the
user's (or the default above) and the optimizer the user's, with optimizer_impl applied where its class takes
foreach / fused. Each refusal is one line naming the function and the cause."""
import inspect
import math

import torch

from .errors import Refused
from .feed import Feed
from .models import first_line, load_module, structure
from .spec import output_loss

FUNCTIONS = ("model", "dataset", "val_dataset", "collate", "sampler", "loss", "optimizer", "scheduler", "datamodule")


def is_task(ref):
    return ref.startswith("task:")


def batch_text(batch, name="batch"):
    """A batch's structure with each tensor's shape and dtype: "tuple(x (2, 3, 32, 32) float32, y (2,) int64)"."""
    def one(b):
        if isinstance(b, torch.Tensor):
            return f"{tuple(b.shape)} {str(b.dtype).replace('torch.', '')}"
        if isinstance(b, dict):
            return "dict(" + ", ".join(f"{k}: {one(v)}" for k, v in b.items()) + ")"
        if isinstance(b, (tuple, list)):
            return f"{type(b).__name__}(" + ", ".join(one(v) for v in b) + ")"
        return type(b).__name__
    return one(batch)


def dataset_size(d):
    return "iterable" if isinstance(d, torch.utils.data.IterableDataset) else f"{len(d):,} samples"


def to_device(batch, device, non_blocking=False):
    """Every tensor of a nested batch (tuples, lists, dicts, and objects with .to such as HF BatchEncoding) moved."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return type(batch)({k: to_device(v, device, non_blocking) for k, v in batch.items()}) \
            if type(batch) is dict else {k: to_device(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple
        return type(batch)(*(to_device(v, device, non_blocking) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(v, device, non_blocking) for v in batch)
    if hasattr(batch, "to") and callable(batch.to):
        return batch.to(device)
    return batch


def default_loss(model, batch):
    """(x, y): cross-entropy of model(x) with class indices y, MSE with a floating y of the output's shape; a dict:
    the model's own loss (model(**batch).loss, as Hugging Face models return it when the batch holds labels)."""
    if isinstance(batch, dict):
        out = model(**batch)
        loss = out.get("loss") if isinstance(out, dict) else getattr(out, "loss", None)
        if loss is None:
            raise Refused(f"loss(): the task has none and the model's output for a dict batch ({structure(out)}) has no "
                          "loss: give the batch its labels, or define loss(model, batch)")
        return loss
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        x, y = batch
        out = model(x)
        if not isinstance(out, torch.Tensor):
            raise Refused(f"loss(): the task has none and model(x) returned a {structure(out)}, not logits: define "
                          "loss(model, batch)")
        return output_loss(out, y, "mse" if y.is_floating_point() else "cross_entropy",
                           "loss(): the task has none (define loss(model, batch) for another than the default); model(x)")
    raise Refused(f"loss(): the task has none, and the batch is a {batch_text(batch)}: the default loss takes (x, y) or a "
                  "dict the model returns .loss for; define loss(model, batch)")


def family(opt):
    """The optimizer's family for the learning-rate rule of time to train: "sgd" (SGD-like: linear in the batch),
    "adam" (Adam-like: square root), or "unknown" (Adagrad, RMSprop, anything else: no rule is invented)."""
    name = type(opt).__name__.lower()
    if "sgd" in name or name == "lars":
        return "sgd"
    if "adam" in name:
        return "adam"
    return "unknown"


def lightning_base(m):
    """The LightningModule class in m's class hierarchy (lightning's or pytorch_lightning's), or None."""
    for c in type(m).__mro__:
        if c.__name__ == "LightningModule" and c.__module__.split(".")[0] in ("lightning", "pytorch_lightning"):
            return c
    return None


def class_name(obj):
    """torch.optim.SGD for torch's own (not torch.optim.sgd.SGD), module.Class for the rest."""
    cls = type(obj)
    where = "torch.optim" if cls.__module__.startswith("torch.optim") else cls.__module__
    return f"{where}.{cls.__name__}"


def hyper(opt):
    """The first param group's hyperparameters that say which training this is: "lr=0.05, momentum=0.9"."""
    g = opt.param_groups[0]
    keys = ("lr", "momentum", "nesterov", "betas", "eps", "weight_decay", "alpha", "lr_decay")
    return ", ".join(f"{k}={g[k]}" for k in keys if k in g and not (k == "nesterov" and not g[k]))


class Task:
    """The loaded task file and what it defines."""

    def __init__(self, ref):
        self.path = ref[len("task:"):]
        self.mod = load_module(self.path)
        self.fns = {n: getattr(self.mod, n) for n in FUNCTIONS if callable(getattr(self.mod, n, None))}
        self.own = list(self.fns)  # what the file itself defines (a LightningModule's parts are added to fns by bind)
        if "model" not in self.fns:
            raise Refused(f"--task {self.path}: no model() function (a task defines model() → torch.nn.Module; this file "
                          f"defines {', '.join(self.own) if self.own else 'none of ' + ', '.join(FUNCTIONS)})")
        bs = getattr(self.mod, "batch_size", None)
        if bs is not None and (isinstance(bs, bool) or not isinstance(bs, int) or bs < 1):
            raise Refused(f"--task {self.path}: batch_size = {bs!r}: the user's batch must be an integer ≥ 1")
        self.batch_size = bs
        self.lightning, self.lit, self.scheduler, self.sched_interval, self.sched_every, self.batch_idx = \
            None, None, None, "epoch", 1, 0
        self.dm = None  # the datamodule() a Lightning task's loaders come from, built once

    def has(self, name):
        return name in self.fns

    # A LightningModule ----------------------------------------------------------------------------------------------
    def bind(self, model):
        """When `model` is a LightningModule: its training_step, configure_optimizers and train_dataloader (or the
        task's datamodule()) stand in for loss, optimizer, dataset, collate, sampler and batch_size."""
        base = lightning_base(model)
        if base is None:
            return
        self.lightning = type(model).__name__
        import warnings  # training_step's self.log() without a Trainer: Lightning warns, and the value goes nowhere
        warnings.filterwarnings("ignore", message=r".*self\.log\(\)`? but the `self\.trainer` reference.*")
        if getattr(type(model), "training_step", None) is getattr(base, "training_step", None):
            raise Refused(f"--task {self.path}: the LightningModule {self.lightning} has no training_step: it is the loss "
                          "autotune trains with")
        self.lit = model
        self.fns.setdefault("loss", self._lit_loss)
        self.fns.setdefault("optimizer", self._lit_optimizer)
        if "dataset" not in self.fns:
            loader = self._lit_loader()
            if loader is not None:
                self.fns["dataset"] = lambda: loader.dataset
                if loader.collate_fn is not torch.utils.data.default_collate and "collate" not in self.fns:
                    self.fns["collate"] = loader.collate_fn
                kind = type(getattr(loader, "sampler", None)).__name__
                if kind not in ("RandomSampler", "SequentialSampler", "_InfiniteConstantSampler") and "sampler" not in self.fns:
                    self.fns["sampler"] = lambda d: loader.sampler
                if self.batch_size is None and loader.batch_size:
                    self.batch_size = int(loader.batch_size)

    def _lit_loader(self, which="train"):
        """The DataLoader a LightningModule (or the task's datamodule()) builds for `which` ("train", "val"); None when
        it builds none."""
        if self.has("datamodule"):
            if self.dm is None:
                self.dm = self.call("datamodule")
                for step in ("prepare_data", "setup"):
                    fn = getattr(self.dm, step, None)
                    if callable(fn):
                        try:
                            fn() if step == "prepare_data" else fn("fit")
                        except Exception as e:  # noqa: BLE001
                            raise Refused(f"--task {self.path}: datamodule().{step}() raises {type(e).__name__}: "
                                          f"{first_line(e)}", e) from None
            where, make = f"datamodule().{which}_dataloader()", getattr(self.dm, f"{which}_dataloader", None)
        else:
            where, make = f"{self.lightning}.{which}_dataloader()", getattr(self.lit, f"{which}_dataloader", None)
        if getattr(getattr(make, "__func__", None), "__module__", "").startswith(("lightning.", "pytorch_lightning.")):
            return None  # Lightning's own hook, not overridden: it builds nothing (it raises, telling the Trainer so)
        try:
            loader = make() if callable(make) else None
        except NotImplementedError:
            return None
        except Exception as e:  # noqa: BLE001
            raise Refused(f"--task {self.path}: {where} raises {type(e).__name__}: {first_line(e)}", e) from None
        if loader is None:
            return None
        if not isinstance(loader, torch.utils.data.DataLoader):
            raise Refused(f"--task {self.path}: {where} returned {type(loader).__name__}, not a torch.utils.data.DataLoader")
        return loader

    def _lit_loss(self, model, batch):
        out = model.training_step(batch, self.batch_idx)
        self.batch_idx += 1
        if isinstance(out, dict):
            out = out.get("loss")
        if out is None:
            raise Refused(f"--task {self.path}: {self.lightning}.training_step returned no loss (manual optimization, or a "
                          "skipped batch): autotune tunes a training_step that returns its loss")
        return out

    def _lit_optimizer(self, params):
        """configure_optimizers(): an optimizer, a list of one, a dict {"optimizer", "lr_scheduler"} or
        ([optimizers], [schedulers]); the scheduler is kept (stepped by after_step)."""
        got = self.lit.configure_optimizers()
        sched = None
        if isinstance(got, dict):
            got, sched = got.get("optimizer"), got.get("lr_scheduler")
        elif isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[0], (list, tuple)):
            got, sched = got[0], got[1]
        if isinstance(got, (list, tuple)):
            if len(got) != 1:
                raise Refused(f"--task {self.path}: {self.lightning}.configure_optimizers returns {len(got)} optimizers; "
                              "autotune trains with one")
            got = got[0]
        if isinstance(sched, (list, tuple)):
            sched = sched[0] if sched else None
        if isinstance(sched, dict):
            self.sched_interval = sched.get("interval", "epoch")
            self.sched_every = int(sched.get("frequency", 1))
            sched = sched.get("scheduler")
        self.scheduler = sched
        return got

    def build_scheduler(self, opt):
        """The task's scheduler(optimizer), stepped after every optimizer step (a Lightning task's comes with its
        optimizer from configure_optimizers)."""
        if not self.has("scheduler") or "scheduler" not in self.own:
            return
        if self.lightning:
            raise Refused(f"--task {self.path}: scheduler() beside a LightningModule: its configure_optimizers() names "
                          "the scheduler; define it there")
        sched = self.call("scheduler", opt)
        if not isinstance(sched, torch.optim.lr_scheduler.LRScheduler) or \
                isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau):
            raise Refused(f"--task {self.path}: scheduler() returned {type(sched).__name__}, not a "
                          "torch.optim.lr_scheduler.LRScheduler stepped without a metric (ReduceLROnPlateau needs a "
                          "validation metric each epoch, which a trial does not have)")
        if getattr(sched, "optimizer", None) is not opt:
            raise Refused(f"--task {self.path}: scheduler() returned a scheduler of another optimizer: build it on the "
                          "optimizer it is given")
        self.scheduler, self.sched_interval, self.sched_every = sched, "step", 1

    def scale_rate(self, opt, scale):
        """Every rate of the optimizer and its schedule × `scale` (another rate for the same training: an lr-sweep's or
        converge's arm): the groups' current, initial, peak and floor rates and each scheduler's base rates, so the
        schedule keeps its shape around a scaled peak."""
        for g in opt.param_groups:
            for key in ("lr", "initial_lr", "max_lr", "min_lr"):
                if isinstance(g.get(key), (int, float)):
                    g[key] = g[key] * scale
        todo = [self.scheduler] if self.scheduler is not None else []
        while todo:
            sched = todo.pop()
            if hasattr(sched, "base_lrs"):
                sched.base_lrs = [b * scale for b in sched.base_lrs]
            if hasattr(sched, "_last_lr"):
                sched._last_lr = [g["lr"] for g in opt.param_groups]
            todo += list(getattr(sched, "_schedulers", []))  # SequentialLR, ChainedScheduler

    def after_step(self, steps, epoch_ended):
        """A Lightning scheduler stepped as the Trainer steps it: each `frequency` optimizer steps (interval "step")
        or epochs (interval "epoch")."""
        if self.scheduler is None:
            return
        if self.sched_interval == "step" and steps % self.sched_every == 0:
            self.scheduler.step()
        elif self.sched_interval != "step" and epoch_ended and epoch_ended % self.sched_every == 0:
            self.scheduler.step()

    def call(self, name, *args):
        try:
            return self.fns[name](*args)
        except Refused:
            raise
        except Exception as e:  # noqa: BLE001 - the user's function fails: one line naming it
            raise Refused(f"--task {self.path}: {name}() raises {type(e).__name__}: {first_line(e)}", e) from None

    def model(self):
        m = self.call("model")
        if not isinstance(m, torch.nn.Module):
            raise Refused(f"--task {self.path}: model() returned {type(m).__name__}, not a torch.nn.Module")
        return m

    def dataset(self):
        return self._checked_dataset(self.call("dataset"), "dataset")

    def _checked_dataset(self, d, name):
        what = f"{name}()" if name.isidentifier() else name
        if not isinstance(d, torch.utils.data.Dataset):
            raise Refused(f"--task {self.path}: {what} returned {type(d).__name__}, not a torch.utils.data.Dataset "
                          "(map-style, with __getitem__ and __len__) or IterableDataset")
        iterable = isinstance(d, torch.utils.data.IterableDataset)
        if not iterable:
            try:
                n = len(d)
            except TypeError:
                raise Refused(f"--task {self.path}: {what} returned a map-style {type(d).__name__} without __len__") from None
            if n < 1:
                raise Refused(f"--task {self.path}: {what} is empty")
        return d

    def held_out(self):
        """(dataset, collate, words) of the task's held-out samples — its val_dataset() with its collate, or a Lightning
        task's val_dataloader() dataset with that loader's collate_fn — or None when it has none."""
        if self.has("val_dataset"):
            d = self._checked_dataset(self.call("val_dataset"), "val_dataset")
            return d, self.collate(), f"the task's val_dataset() ({type(d).__name__}, {dataset_size(d)})"
        if self.lit is None:
            return None
        loader = self._lit_loader("val")
        if loader is None:
            return None
        d = self._checked_dataset(loader.dataset, f"{self.lightning}'s val_dataloader() dataset")
        return d, loader.collate_fn, f"{self.lightning}'s val_dataloader() dataset ({type(d).__name__}, {dataset_size(d)})"

    def collate(self):
        if not self.has("collate"):
            return torch.utils.data.default_collate
        fn = self.fns["collate"]
        path = self.path

        def collate(samples):  # in a DataLoader worker too: a failure names the function
            try:
                return fn(samples)
            except Exception as e:  # noqa: BLE001
                raise RuntimeError(f"--task {path}: collate() raises {type(e).__name__}: {first_line(e)}") from e
        return collate

    def sampler(self, dataset):
        if not self.has("sampler"):
            return None
        s = self.call("sampler", dataset)
        if not isinstance(s, (torch.utils.data.Sampler, list, tuple, range)):
            raise Refused(f"--task {self.path}: sampler() returned {type(s).__name__}, not a torch.utils.data.Sampler")
        return s

    def loss(self, model, batch):
        if self.has("loss"):
            loss = self.call("loss", model, batch)
        else:
            try:
                loss = default_loss(model, batch)
            except Refused as e:
                raise Refused(f"--task {self.path}: {e}", e.cause) from None
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            what = f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise Refused(f"--task {self.path}: loss() returned {what}, not a scalar tensor")
        return loss.reshape(())

    def optimizer(self, params, impl, lr, betas, eps, capturable=False):
        """(optimizer, skipped reason or None): the user's optimizer() — or AdamW at --lr — with optimizer_impl's
        foreach / fused set in place where its class's constructor takes them."""
        params = list(params)
        if not self.has("optimizer"):
            opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, foreach=impl == "foreach", fused=impl == "fused",
                                    capturable=capturable)
            return opt, None
        opt = self.call("optimizer", iter(params))
        if not isinstance(opt, torch.optim.Optimizer):
            raise Refused(f"--task {self.path}: optimizer() returned {type(opt).__name__}, not a torch.optim.Optimizer")
        mine = {id(p) for p in params}
        seen = [p for g in opt.param_groups for p in g["params"]]
        if not seen:
            raise Refused(f"--task {self.path}: optimizer() holds no parameters: build it from the params it is given")
        if not any(id(p) in mine for p in seen):
            raise Refused(f"--task {self.path}: optimizer() holds none of the model's parameters: build it from the "
                          "params it is given, not from a model of its own")
        cls = type(opt)
        takes = set(inspect.signature(cls.__init__).parameters)
        want = {"loop": {"foreach": False, "fused": False}, "foreach": {"foreach": True, "fused": False},
                "fused": {"foreach": False, "fused": True}}[impl]
        want = {k: v for k, v in want.items() if k in takes}
        if impl != "loop" and impl not in want:
            return opt, (f"optimizer_impl={impl}: {class_name(opt)} takes no {impl}= argument; ran as "
                         "the task's optimizer() built it")
        if not want:
            return opt, None
        # Set in place — the object the task (and a Lightning scheduler) holds —, once the class's own constructor has
        # accepted the same groups with it (a device or dtype it lacks is refused there, not mid-trial).
        kwargs = {k: v for k, v in opt.defaults.items() if k in takes and k not in ("params",)}
        kwargs.update(want)
        groups = [dict(g, **{k: v for k, v in want.items() if k in g}) for g in opt.param_groups]
        try:
            check = cls(groups, **kwargs)
        except Exception as e:  # noqa: BLE001 - torch refuses the implementation here (a device or dtype it lacks)
            return opt, (f"optimizer_impl={impl}: {cls.__name__}({impl}=True) refused here ({type(e).__name__}: "
                         f"{first_line(e, 160)}); ran as the task's optimizer() built it")
        for g in opt.param_groups:
            g.update({k: v for k, v in want.items()})
        opt.defaults.update(want)
        if getattr(check, "_step_supports_amp_scaling", False):
            opt._step_supports_amp_scaling = True
        return opt, None


class TaskFeed(Feed):
    """The user's dataset through torch's DataLoader with the loader knobs (feed.py), whole batches of the task's
    collate in the task's sampler's order, endless (a new epoch when one ends)."""

    def __init__(self, task, dataset, batch, seed, num_workers=0, prefetch=2, pin_memory=False, rank=0, world=1):
        self.task, self.dataset = task, dataset
        self.iterable = isinstance(dataset, torch.utils.data.IterableDataset)
        self.sampler = None if self.iterable else task.sampler(dataset)
        self.sampler_kind = "the task's sampler()" if self.sampler is not None else ""
        if self.sampler is None and not self.iterable:
            if world > 1:
                self.sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True,
                                                                   seed=seed % (1 << 31), drop_last=True)
                self.sampler_kind = f"DistributedSampler (rank {rank} of {world}, shuffled)"
            else:
                gen = torch.Generator().manual_seed(seed % (1 << 63))
                self.sampler = torch.utils.data.RandomSampler(dataset, generator=gen)
                self.sampler_kind = "a seeded random order"
        if not self.iterable and len(dataset) < batch:
            raise Refused(f"--task {task.path}: dataset() has {len(dataset)} samples, fewer than a batch of {batch} "
                          "(batches are whole: drop_last)")
        extra = {"sampler": self.sampler} if self.sampler is not None else {}
        super().__init__(dataset, num_workers, prefetch, pin_memory, batch_size=int(batch), drop_last=True,
                         collate_fn=task.collate(), **extra)
        self.epoch = 0

    def fetch(self):
        try:
            return super().fetch()
        except RuntimeError as e:  # a worker that died, or the user's code failing inside one
            raise Refused(f"--task {self.task.path}: the DataLoader failed: {first_line(e, 300)}", e) from None

    def _next(self):
        try:
            return next(self.it)
        except StopIteration:
            self.epoch += 1
            if hasattr(self.sampler, "set_epoch"):
                self.sampler.set_epoch(self.epoch)
            self.it = iter(self.loader)
            try:
                return next(self.it)
            except StopIteration:
                raise Refused(f"--task {self.task.path}: dataset() yields no whole batch") from None

    def next(self, n, device):
        """([the batch on the device], None): the trainer's (inputs, target) form, the batch whole as its one input."""
        return [to_device(self.fetch(), device, self.pin)], None

    def stats(self):
        rec = self.record(f"task {self.task.path}: dataset() {type(self.dataset).__name__}", "task",
                          0 if self.iterable else len(self.dataset))
        rec["sampler"] = self.sampler_kind or "the iterable dataset's own order"
        return rec


def probe_batch(task, dataset, n=2):
    """A batch of `n` samples through the task's collate, without workers: what the probe and describe see."""
    collate = task.collate()
    try:
        if isinstance(dataset, torch.utils.data.IterableDataset):
            it = iter(dataset)
            samples = [next(it) for _ in range(n)]
        else:
            samples = [dataset[i] for i in range(min(n, len(dataset)))]
    except StopIteration:
        raise Refused(f"--task {task.path}: dataset() yields fewer than {n} samples") from None
    except Exception as e:  # noqa: BLE001 - the user's __getitem__ / __iter__ fails: one line
        raise Refused(f"--task {task.path}: dataset() fails to give a sample: {type(e).__name__}: {first_line(e)}", e) from None
    try:
        return collate(samples)
    except RuntimeError as e:
        raise Refused(first_line(e, 300) if str(e).startswith("--task") else
                      f"--task {task.path}: collating two samples fails: {first_line(e)}", e) from None


def finite_scalar(task, loss):
    if not math.isfinite(float(loss)):
        raise Refused(f"--task {task.path}: loss() is {float(loss)} at step 0 (before any training): check the model's "
                      "initialisation and the data")
