"""Hugging Face transformers models built from a config (`hf:MODEL_TYPE` or a folder holding a config.json) with
random weights, wrapped so that a batch of autotune's spec goes in and logits or the model's own loss comes out."""
import difflib
import inspect
import json
import os

import torch

from .errors import Refused
from .hf_tasks import HF_TASKS, check_hf_flags


class HfCausalLm(torch.nn.Module):
    """A causal LM as autotune trains it: token ids in; the logits (KV cache off), or with a target the loss
    Hugging Face's own loss computes. autotune's token target is already the next token (y[t] = x[t+1]:
    data/tokens.h); HF's loss shifts its `labels` itself (logits[:, t] against labels[:, t+1]), so the labels
    handed to it are y moved back by one: [x[:, 0], y[:, :-1]] — for a real token window exactly input_ids,
    which is what a Python training script passes."""

    def __init__(self, model, output):
        super().__init__()
        self.model = model
        self.output = output

    def forward(self, input_ids, target=None):
        if self.output == "loss":
            labels = torch.cat([input_ids[:, :1], target[:, :-1]], dim=1)
            return self.model(input_ids=input_ids, labels=labels, use_cache=False, return_dict=True)["loss"]
        return self.model(input_ids=input_ids, use_cache=False, return_dict=True)[self.output]


class HfClassifier(torch.nn.Module):
    """A sequence or image classifier: one input in (token ids or pixels); its logits, or with a target HF's loss."""

    def __init__(self, model, input_name, output):
        super().__init__()
        self.model = model
        self.input_name = input_name
        self.output = output

    def forward(self, x, target=None):
        kw = {self.input_name: x, "return_dict": True}
        if self.output == "loss":
            return self.model(labels=target, **kw)["loss"]
        return self.model(**kw)[self.output]



# Names other model families give a config field, and the field most configs call it: a did-you-mean that
# spelling distance alone misses (gpt2's n_layer is qwen2's num_hidden_layers).
CONFIG_SYNONYMS = {
    "n_layer": "num_hidden_layers", "n_layers": "num_hidden_layers", "num_layers": "num_hidden_layers",
    "n_embd": "hidden_size", "d_model": "hidden_size", "dim": "hidden_size", "n_embed": "hidden_size",
    "n_head": "num_attention_heads", "n_heads": "num_attention_heads", "num_heads": "num_attention_heads",
    "n_positions": "max_position_embeddings", "n_ctx": "max_position_embeddings", "max_seq_len": "max_position_embeddings",
    "n_inner": "intermediate_size", "ffn_dim": "intermediate_size", "hidden_dim": "intermediate_size", "d_ff": "intermediate_size",
    "dropout": "hidden_dropout_prob", "resid_pdrop": "hidden_dropout_prob",
}


def init_args(cls):
    """The named arguments of cls.__init__, in order."""
    return [k for k in inspect.signature(cls.__init__).parameters if k not in ("self", "kwargs")]


def config_keys(config):
    """Every field a config of this class takes: its values, its aliases (attribute_map), its constructor's arguments."""
    keys = set(config.to_dict()) | set(getattr(type(config), "attribute_map", {})) | set(init_args(type(config)))
    keys |= {k for k in dir(config) if not k.startswith("_") and not callable(getattr(config, k, None))}
    return keys


def refuse_unknown_keys(where, config, kwargs, flag=lambda name: '--' + name):
    """--kwargs that the config does not define are refused (transformers would keep them as unused attributes:
    gpt2's n_layer handed to qwen2 leaves its 32 default layers)."""
    keys = config_keys(config)
    from transformers import PretrainedConfig
    generic = set(init_args(PretrainedConfig))
    own = [k for k in init_args(type(config)) if k not in generic]
    for k in kwargs:
        if k in keys:
            continue
        near = [CONFIG_SYNONYMS[k]] if CONFIG_SYNONYMS.get(k) in keys else []
        near += [n for n in difflib.get_close_matches(k, sorted(keys), n=2, cutoff=0.75) if n not in near]
        raise Refused(f"hf:{where}: {flag('kwargs')} {k!r} is not a field of {type(config).__name__}"
             + (f"; did you mean {' or '.join(repr(n) for n in near[:3])}?" if near else "")
             + (f" (its own fields: {', '.join(own[:14])}{', …' if len(own) > 14 else ''})" if own else ""))


def hf_model(where, task, kwargs, seq, output, flag=lambda name: '--' + name):
    """(wrapper module, inputs, target, loss, python build lines, python loss expression) for `hf:where`; `flag`
    names the caller's option for a setting in messages (the exporter's --task, the tuner's --model-task)."""
    try:
        import transformers
    except ImportError:
        raise Refused("hf:… needs the transformers package (scripts/setup-deps.sh installs it into "
                 "~/.cache/autotune/venv-torch-2.11.0; or pip install transformers)")
    check_hf_flags(where, task, output, flag)
    from transformers import AutoConfig
    transformers.logging.set_verbosity_error()  # config notes about unused tokens etc. are not the user's concern here
    try:
        if os.path.isdir(where):
            config = AutoConfig.from_pretrained(where)
            config_src = f"AutoConfig.from_pretrained({where!r}{''.join(f', {k}={v!r}' for k, v in kwargs.items())})"
        else:
            config = AutoConfig.for_model(where)
            config_src = f"AutoConfig.for_model({where!r}{''.join(f', {k}={v!r}' for k, v in kwargs.items())})"
    except (ValueError, OSError, TypeError, KeyError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if "Unrecognized model identifier" in msg:
            from transformers import CONFIG_MAPPING
            close = difflib.get_close_matches(where, list(CONFIG_MAPPING), n=3, cutoff=0.6)
            near = [t for t in CONFIG_MAPPING if t.startswith(where[:3])][:8] or ["gpt2", "bert", "vit", "llama"]
            msg = ((f"unknown model type; did you mean {' or '.join(close)}? " if close else "unknown model type ") +
                   f"(transformers {transformers.__version__} knows {len(list(CONFIG_MAPPING))} types"
                   f"{'' if close else ', e.g. ' + ', '.join(near)}; or give a directory with a config.json)")
        raise Refused(f"hf:{where}: {msg[:300]}")
    refuse_unknown_keys(where, config, kwargs, flag)
    try:  # built again with the overrides: a config derives some fields from others (head_dim from hidden_size)
        config = AutoConfig.from_pretrained(where, **kwargs) if os.path.isdir(where) else AutoConfig.for_model(where, **kwargs)
    except Exception as e:  # noqa: BLE001 - a config that rejects a value: one line
        raise Refused(f"hf:{where}: {flag('kwargs')} {json.dumps(kwargs)}: {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", e)
    if getattr(config, "is_encoder_decoder", False):
        raise Refused(f"hf:{where} is an encoder-decoder model (its decoder takes inputs and labels of its own); "
                 "not supported yet: export an encoder-only or decoder-only model (bert, vit, gpt2, llama, …)")
    if hasattr(config, "use_cache"):
        config.use_cache = False  # no KV cache: training never reuses it, and a cache object cannot be traced
    auto = getattr(transformers, HF_TASKS[task])
    try:
        model_cls = auto._model_mapping[type(config)]
    except KeyError:
        tasks = [t for t, c in HF_TASKS.items() if type(config) in getattr(transformers, c)._model_mapping]
        raise Refused(f"hf:{where} has no {task} model in transformers {transformers.__version__}; "
                 f"allowed for {where}: {', '.join(tasks) if tasks else 'none of ' + ', '.join(HF_TASKS)}")
    # One class per config, or several (deit: with and without a distillation teacher): the first is the plain head.
    model_cls = model_cls[0] if isinstance(model_cls, (tuple, list)) else model_cls
    try:
        model = model_cls._from_config(config)
    except Exception as e:  # noqa: BLE001 - transformers' own error, in one line
        raise Refused(f"hf:{where} {flag('task')} {task}: {model_cls.__name__} cannot be built from this config: {type(e).__name__}: "
             f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}", e)
    if isinstance(auto._model_mapping[type(config)], (tuple, list)):  # the class by name: the auto class cannot choose
        cls, make = model_cls.__name__, f"{model_cls.__name__}({config_src})"
    else:
        cls, make = HF_TASKS[task], f"{HF_TASKS[task]}.from_config({config_src})"
    build = [f"from transformers import AutoConfig, {cls}", f"model = {make}  # random weights, as tuned"]
    if task == "causal-lm":
        vocab, t = config.vocab_size, seq
        limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
        if limit and limit > 0 and t > limit:
            raise Refused(f"{flag('seq')} {t} is longer than the model's {limit} positions")
        inputs = [{"name": "input_ids", "shape": ["B", t], "dtype": "int64", "vocab": vocab}]
        target = {"kind": "classes", "classes": vocab, "shape": ["B", t]}
        wrapper = HfCausalLm(model, output)
        py_loss = ("model(input_ids=x, labels=x, use_cache=False).loss  # HF shifts the labels itself"
                   if output == "loss" else None)
        py_logits = "model(input_ids=x, use_cache=False).logits"
    else:
        n = config.num_labels
        if task == "sequence-classification":
            inputs = [{"name": "input_ids", "shape": ["B", seq], "dtype": "int64", "vocab": config.vocab_size}]
            name = "input_ids"
        else:
            size = config.image_size if isinstance(config.image_size, int) else config.image_size[0]
            inputs = [{"name": "pixel_values", "shape": ["B", getattr(config, "num_channels", 3), size, size],
                       "dtype": "float32", "range": [-1.0, 1.0]}]
            name = "pixel_values"
        target = {"kind": "classes", "classes": n}
        wrapper = HfClassifier(model, name, output)
        py_loss = f"model({name}=x, labels=y).loss" if output == "loss" else None
        py_logits = f"model({name}=x).logits"
    loss = "model" if output == "loss" else "cross_entropy"
    return wrapper, inputs, target, loss, build, py_loss or py_logits
