"""The user's model from a trial setup, built in Python as it is (nothing exported or traced): a factory
(`module:factory`, `file.py:Class`, with --model-kwargs) with its batch spec, or a Hugging Face model
(`hf:MODEL_TYPE` or a folder with a config.json, --model-task). Its loss, its synthetic batches and what the
tuner needs to know of it (`describe`: knobs/worker_info.h's WorkloadInfo)."""
import json
import os
import re

import torch

from . import spec as specs
from .errors import Refused
from .hf import HF_TASKS, hf_model
from .models import Select, batch_norm_count, file_digest, first_line, load_factory, structure, train_behaviour, weights_of
from .task import Task, batch_text, class_name, family, finite_scalar, is_task, probe_batch

POOL = 256  # synthetic samples kept on the training device, as the C++ worker keeps them (workloads/scripted.cpp)
TUNER_FLAGS = {"task": "--model-task", "kwargs": "--model-kwargs", "output": "--model-output", "seq": "--model-seq"}


def is_python_model(ref):
    """`hf:…`, `task:train.py`, `module:factory` or `file.py:Class`: a model this worker builds (a .pt file is
    TorchScript's)."""
    return ref.startswith(("hf:", "task:")) or (":" in ref and not ref.endswith((".pt", ".pt2", ".ts")))


def kwargs_of(setup):
    text = setup.get("model_kwargs") or "{}"
    try:
        kw = json.loads(text)
    except json.JSONDecodeError as e:
        raise Refused(f"--model-kwargs is not JSON ({e.msg}); e.g. '{{\"num_classes\": 10}}'") from None
    if not isinstance(kw, dict):
        raise Refused("--model-kwargs must be a JSON object of keyword arguments")
    return kw


def python_literal_kwargs(kw):
    return ", ".join(f"{k}={v!r}" for k, v in kw.items())


class Built:
    """The model and everything a trial needs to feed it and to make its loss."""

    def __init__(self, setup):
        self.ref = setup.get("model", "")
        self.task, self.dataset = None, None  # a task file's (task.py), else none
        self.builtin = "" if self.ref else setup.get("workload", "mlp")
        if self.builtin:
            self._build_builtin(setup)
            return
        if not is_python_model(self.ref):
            raise Refused(f"--model {self.ref!r}: the Python worker builds module:factory, file.py:Class or hf:MODEL_TYPE "
                          "(a TorchScript file runs in the C++ worker: --trainer cpp)")
        kw = kwargs_of(setup)
        torch.manual_seed(int(setup.get("seed", 0)))
        self.python_build, self.python_forward, self.weights = [], None, "random"
        if is_task(self.ref):
            if self._build_task(setup):
                return
        elif self.ref.startswith("hf:"):
            self._build_hf(setup, kw)
        else:
            self._build_factory(setup, kw)
        self._finish(setup, kw)

    def _build_task(self, setup):
        """A task file (task.py): its model, and its dataset when it has one (then the batch spec flags do not apply:
        returns True, the build done); without dataset() the model takes synthetic batches from the spec flags."""
        if setup.get("model_kwargs") or setup.get("model_task") or setup.get("model_output"):
            raise Refused(f"--task: --model-kwargs, --model-task and --model-output are for --model; a task's model() "
                          "builds the model itself")
        self.task = Task(self.ref)
        t = self.task
        self.model = t.model()
        self.weights = weights_of(t.model, self.model)
        torch.manual_seed(int(setup.get("seed", 0)))
        self.model = t.model()  # built from the setup's seed (weights_of drew another)
        t.bind(self.model)  # a LightningModule: its training_step, configure_optimizers and train_dataloader
        doc = " ".join((self.task.mod.__doc__ or "").split()).split(". ")[0].rstrip(".")
        self.description = f"task {t.path}" + (f": {doc}" if doc else "")
        self.source = f"task {t.path}{file_digest(t.path)}: " + ", ".join(n + "()" for n in t.own) + \
            (f" — model() is the LightningModule {t.lightning}" if t.lightning else "")
        self.output = ""
        if not t.has("dataset"):
            self.spec = specs.load_spec_file(setup["model_spec"]) if setup.get("model_spec") else {}
            if t.batch_size:
                self.spec.setdefault("default_batch_size", t.batch_size)
            return False
        if setup.get("data") or setup.get("model_input") or setup.get("model_spec") or setup.get("model_target"):
            raise Refused(f"--task {t.path}: its dataset() is the data; --data, --model-input, --model-target and "
                          "--model-spec are for a task without dataset()")
        self.dataset = t.dataset()
        self.spec = {"inputs": [], "target": {"kind": "none"}, "loss": "task" if t.has("loss") else "task default",
                     "default_batch_size": t.batch_size or 32}
        self.kwargs, self.data, self.folder = {}, "task", None
        self.model.train(True)
        self._check_parameters()
        self.conv_model = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in self.model.modules())
        from .blocks import repeated_blocks
        self.block_count = len(repeated_blocks(self.model))
        return True

    def task_batch(self, inputs, target):
        """The batch a task's loss() takes: the dataset's batch whole, or (x…, y) of synthetic inputs."""
        if self.dataset is not None or (len(inputs) == 1 and target is None):
            return inputs[0]
        return tuple(inputs) + ((target,) if target is not None else ())

    def _finish(self, setup, kw):
        self.spec = specs.with_overrides(self.spec, setup)
        if not self.spec.get("inputs"):
            raise Refused(f"--model {self.ref}: a Python model needs its inputs: --model-input B,3,224,224:float32 "
                          "(';' between several) or --model-spec FILE")
        self.kwargs = kw
        self.data = setup.get("data") or ""
        self.folder = None
        if self.data and self.token_model():
            x = self.spec["inputs"][0]
            from .tokens import check_token_file
            self.data_tokens = check_token_file(self.data, x["shape"][1], x["vocab"])  # size and vocabulary, once
        elif self.data and self.image_model():
            from .images import Folder
            self.folder = Folder(self.data)  # scanned once
            n = self.spec["target"]["classes"]
            if len(self.folder.classes) > n:
                raise Refused(f"--data {self.data}: {len(self.folder.classes)} classes, but the model's target has {n} "
                              f"(classes:{n}); give --model-target classes:{len(self.folder.classes)} or a model with as many")
        elif self.data:
            raise Refused(f"--data {self.data}: the Python worker reads a token file for a token model (one (B, T) int64 "
                          "input, classes (B, T)) or an image folder for an image model (one (B, 3, S, S) input, classes)")
        self.model.train(True)
        self._check_parameters()
        self.conv_model = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in self.model.modules())
        from .blocks import repeated_blocks
        self.block_count = len(repeated_blocks(self.model))

    def _build_builtin(self, setup):
        """A built-in workload's Python twin (builtin.py), its spec from the table and the setup's image size."""
        from .builtin import BUILTINS
        if self.builtin not in BUILTINS:
            raise Refused(f"unknown workload '{self.builtin}'; the Python worker's built-in workloads: {', '.join(BUILTINS)}")
        factory, kw, inputs, target, batch, self.description = BUILTINS[self.builtin]
        size = int(setup.get("image_size") or 0) or 224
        torch.manual_seed(int(setup.get("seed", 0)))
        self.model, self.python_build, self.python_forward, self.weights = factory(**kw), [], None, "random"
        self.spec = {"inputs": [dict(inputs(size), name="input0")], "target": target, "default_batch_size": batch}
        self.spec["loss"] = specs.default_loss(self.spec["target"])
        self.ref = f"workload {self.builtin}"
        self.source, self.output = "", ""
        self._finish(setup, {})
        self.kwargs = {}

    def _build_hf(self, setup, kw):
        task = setup.get("model_task") or None
        seq = int(setup.get("model_seq") or 128)
        output = setup.get("model_output") or "logits"
        if task is not None and task not in HF_TASKS:
            raise Refused(f"--model-task {task} is not a task autotune trains; allowed: {', '.join(HF_TASKS)}")
        model, inputs, target, loss, build, forward = hf_model(self.ref[3:], task, kw, seq, output,
                                                               lambda name: TUNER_FLAGS[name])
        self.model, self.python_build, self.python_forward = model, build, forward
        self.spec = {"inputs": inputs, "target": target, "loss": loss}
        self.description = f"{self.ref} {task} (Hugging Face transformers, built from its config, random weights)"
        self.source = f"Python model {self.ref} --model-task {task}" + (f" --model-kwargs {json.dumps(kw)}" if kw else "")

    def _build_factory(self, setup, kw):
        if setup.get("model_task"):
            raise Refused("--model-task is for hf: models only")
        try:
            factory = load_factory(self.ref)
        except Refused as e:
            raise Refused(f"--model {self.ref}: {e}", e.cause) from None
        try:
            model = factory(**kw)
        except Exception as e:  # noqa: BLE001 - the user's factory fails: one line naming it
            raise Refused(f"--model {self.ref}: the factory fails: {type(e).__name__}: {first_line(e)}", e) from None
        if not isinstance(model, torch.nn.Module):
            raise Refused(f"--model {self.ref}: the factory returned {type(model).__name__}, not a torch.nn.Module")
        self.model = model  # built from the setup's seed
        self.weights = weights_of(lambda: factory(**kw), model)
        output = setup.get("model_output") or ""
        if output:
            self.model = Select(self.model, output)
        self.spec = specs.load_spec_file(setup["model_spec"]) if setup.get("model_spec") else {}
        self.description = self.spec.get("description") or f"{self.ref} (Python, trained as it is)"
        self.source = f"Python model {self.ref}{file_digest(self.ref.rsplit(':', 1)[0])}" + (f" with {python_literal_kwargs(kw)}" if kw else "")
        self.output = output

    def _check_parameters(self):
        params = list(self.model.parameters())
        if not params:
            raise Refused(f"--model {self.ref}: the model has no parameters: nothing to train")
        if not any(p.requires_grad for p in params):
            raise Refused(f"--model {self.ref}: every parameter has requires_grad=False (a frozen model): nothing to train")

    def image_model(self):
        """One (B, 3, S, S) floating input and a class per sample: what an image folder feeds."""
        x, t = self.spec["inputs"][0], self.spec["target"]
        return len(self.spec["inputs"]) == 1 and x["dtype"] != "int64" and len(x["shape"]) == 4 and x["shape"][1] == 3 and \
            x["shape"][2] == x["shape"][3] and t["kind"] == "classes" and len(t.get("shape", ["B"])) == 1

    def token_model(self):
        x, t = self.spec["inputs"][0], self.spec["target"]
        return len(self.spec["inputs"]) == 1 and x["dtype"] == "int64" and len(x["shape"]) == 2 and \
            t["kind"] == "classes" and len(t.get("shape", [])) == 2

    # Batches and the loss -------------------------------------------------------------------------------------
    def random_batch(self, n, generator, device):
        inputs = [specs.example(s, n, generator).to(device) for s in self.spec["inputs"]]
        target = specs.target_example(self.spec["target"], n, generator)
        return inputs, None if target is None else target.to(device)

    def loss_of(self, model, inputs, target):
        """The training loss of one batch: the model's own (loss "model"), or cross-entropy / MSE of its output."""
        if self.task is not None and (self.dataset is not None or self.task.has("loss")):
            return self.task.loss(model, self.task_batch(inputs, target))
        loss_kind = self.spec["loss"]
        args = list(inputs) + ([target] if loss_kind == "model" and target is not None else [])
        out = model(*args)
        if loss_kind == "model":
            if isinstance(out, torch.Tensor) and out.numel() == 1:
                return out.reshape(())
            scalars = [o for o in (out if isinstance(out, (tuple, list)) else []) if isinstance(o, torch.Tensor) and o.numel() == 1]
            if len(scalars) == 1:
                return scalars[0].reshape(())
            raise Refused(f"--model {self.ref}: with loss \"model\", forward must return the loss (a scalar tensor); "
                          f"it returned a {structure(out)}")
        if not isinstance(out, torch.Tensor):
            raise Refused(f"--model {self.ref}: forward returns a {structure(out)}; autotune trains on one tensor: name it "
                          "with --model-output (a key or an index)")
        return specs.output_loss(out, target, loss_kind, f"--model {self.ref}: forward")

    def probe(self):
        """One forward on a batch of 2 (no gradients): the spec fits the forward, the loss is finite; the training
        FLOPs per sample counted by torch.utils.flop_counter (forward × 3)."""
        from torch.utils.flop_counter import FlopCounterMode
        if self.dataset is not None:
            return self._probe_task(FlopCounterMode(display=False))
        gen = torch.Generator().manual_seed(0)
        inputs, target = self.random_batch(2, gen, "cpu")
        counter = FlopCounterMode(display=False)
        try:
            with torch.no_grad(), counter:
                loss = self.loss_of(self.model, inputs, target)
        except Refused:
            raise
        except Exception as e:  # noqa: BLE001 - the forward does not take the spec's inputs: one line
            raise Refused(f"--model {self.ref}: the forward does not take the spec's inputs ({specs.text(self.spec)}): "
                          f"{type(e).__name__}: {first_line(e)}", e) from None
        if not torch.isfinite(loss):
            raise Refused(f"--model {self.ref}: the loss is {loss.item()} at step 0 (before any training): check the "
                          "model's initialisation and the spec's input ranges")
        given = float(self.spec.get("flops_per_sample") or 0)
        self.flops_basis = "given in the spec" if given > 0 else "counted by torch.utils.flop_counter (forward × 3)"
        self.flops_per_sample = given if given > 0 else 3.0 * counter.get_total_flops() / 2

    def _probe_task(self, counter):
        """The task's first two samples through its collate, one forward and loss without gradients: the model takes
        them, the loss is a finite scalar; the FLOPs counted as for a factory model."""
        t = self.task
        batch = probe_batch(t, self.dataset)
        self.first_batch = batch_text(batch)
        try:
            with torch.no_grad(), counter:
                loss = t.loss(self.model, batch)
        except Refused:
            raise
        except Exception as e:  # noqa: BLE001 - the model cannot take the first batch: name its shapes
            where = "loss()" if t.has("loss") else "the model"
            raise Refused(f"--task {t.path}: {where} cannot take the first batch ({self.first_batch}): "
                          f"{type(e).__name__}: {first_line(e)}", e) from None
        finite_scalar(t, loss)
        self.flops_basis = "counted by torch.utils.flop_counter (forward × 3)"
        self.flops_per_sample = 3.0 * counter.get_total_flops() / 2

    def info(self, parameters=False):
        """What `describe` prints: the C++ WorkloadInfo's fields (knobs/worker_info.h)."""
        if self.dataset is not None:
            return self._task_info(parameters)
        x = self.spec["inputs"][0]
        t = self.spec["target"]
        one = len(self.spec["inputs"]) == 1
        image = self.image_model()
        name = self.builtin or re.sub(r"[^A-Za-z0-9_.-]+", "_", self.ref.replace("hf:", "hf_").rsplit(":", 1)[-1])
        w = {"name": name, "description": self.description, "default_batch_size": int(self.spec.get("default_batch_size", 32)),
             "flops_per_sample": self.flops_per_sample, "loss": self.spec["loss"],
             "data": f"image folder {self.data} ({len(self.folder.files)} images, {len(self.folder.classes)} classes)"
             if self.folder else f"token file {self.data}" if self.data else
             f"synthetic batches from the spec ({POOL} samples kept on the training device)",
             "conv_model": self.conv_model, "image_data": bool(image), "block_model": self.block_count >= 2,
             "default_image_size": x["shape"][2] if image else 0,
             "batch_spec": specs.text(self.spec), "flops_basis": self.flops_basis, "trainer": "python",
             "train_mode": train_behaviour(self.model, any(
                 isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in self.model.modules())),
             "random_weights": self.weights == "random", "batch_norms": batch_norm_count(self.model)}
        if self.source:
            w["source"] = self.source
        if self.builtin:
            pass  # a built-in workload: the report names it as the C++ worker's (no factory of the user's)
        elif self.task is not None:
            w["python_task"] = os.path.abspath(self.task.path)
        elif self.ref.startswith("hf:"):
            w["python_build"] = "\n".join(self.python_build)
            w["python_forward"] = self.python_forward
        else:
            # A file's factory by its absolute path: the report's snippet imports it from any folder (reports/apply.cpp).
            where, _, name = self.ref.rpartition(":")
            w["python_factory"] = f"{os.path.abspath(where)}:{name}" if where.endswith(".py") else self.ref
            if self.kwargs:
                w["python_kwargs"] = python_literal_kwargs(self.kwargs)
        if one and x["dtype"] == "int64" and len(x["shape"]) == 2 and t["kind"] == "classes" and len(t.get("shape", [])) == 2:
            w["token_vocab"], w["block_size"] = x["vocab"], x["shape"][1]
        if parameters:
            trainable = [p for p in self.model.parameters() if p.requires_grad]
            w["parameters"] = sum(p.numel() for p in trainable)
            w["parameter_tensors"] = len(trainable)
        return w


    def _task_info(self, parameters):
        """`describe` of a task with its own dataset: its data is real (the loader knobs apply), its batch the first
        one collated."""
        t, d = self.task, self.dataset
        size = "iterable" if isinstance(d, torch.utils.data.IterableDataset) else f"{len(d):,} samples"
        w = {"name": os.path.splitext(os.path.basename(t.path))[0], "description": self.description,
             "default_batch_size": int(self.spec["default_batch_size"]), "flops_per_sample": self.flops_per_sample,
             "loss": f"{t.lightning}.training_step's loss" if t.lightning else "the task's loss()" if t.has("loss") else
             "the task's default loss (cross-entropy of (x, y), or a dict's model(**batch).loss)",
             "data": f"{t.lightning}'s train_dataloader() dataset ({type(d).__name__}, {size})" if t.lightning and
             "dataset" not in t.own else f"the task's dataset() ({type(d).__name__}, {size})", "task_data": True,
             "conv_model": self.conv_model, "image_data": False, "block_model": self.block_count >= 2,
             "default_image_size": 0, "batch_spec": f"the task's batch: {self.first_batch} (2 samples shown)",
             "flops_basis": self.flops_basis, "trainer": "python",
             "train_mode": train_behaviour(self.model, False), "random_weights": self.weights == "random",
             "batch_norms": batch_norm_count(self.model),
             "source": self.source, "python_task": os.path.abspath(t.path), "task_functions": list(t.own),
             "task_iterable": isinstance(d, torch.utils.data.IterableDataset)}
        if t.lightning:
            w["task_lightning"] = t.lightning
        held = t.held_out()  # its held-out samples, checked here as dataset() is
        if held is not None:
            w["held_out"] = held[2]
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        opt, _ = t.optimizer(trainable, "loop", 1e-3, (0.9, 0.999), 1e-8)  # the user's optimizer() checked once here
        w["optimizer"], w["optimizer_family"] = class_name(opt), family(opt)
        if t.has("optimizer"):
            w["optimizer_lr"] = float(opt.param_groups[0]["lr"])
        if parameters:
            w["parameters"] = sum(p.numel() for p in trainable)
            w["parameter_tensors"] = len(trainable)
        return w
