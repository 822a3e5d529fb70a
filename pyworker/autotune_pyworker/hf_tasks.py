"""What an `hf:` model is asked to be, checked before anything is imported: the tasks autotune trains and exports, and
the refusals of a missing or unknown task and of an output other than logits or loss. No torch here, so a front end
refuses a wrong flag in a fraction of a second (scripts/export_model.py checks its flags with it before torch loads)."""
from .errors import Refused

HF_TASKS = {  # task → (transformers Auto class, what autotune trains on)
    "causal-lm": "AutoModelForCausalLM",
    "sequence-classification": "AutoModelForSequenceClassification",
    "image-classification": "AutoModelForImageClassification",
}


def check_hf_flags(where, task, output, flag=lambda name: '--' + name):
    """Raise Refused for `hf:where` without a task, with a task autotune does not export, or an output other than
    logits or loss; `flag` names the caller's option (the exporter's --task, the tuner's --model-task)."""
    if task is None:
        raise Refused(f"hf:{where} needs {flag('task')}; allowed: {', '.join(HF_TASKS)}")
    if task not in HF_TASKS:
        raise Refused(f"{flag('task')} {task} is not a task autotune exports; allowed: {', '.join(HF_TASKS)}")
    if output not in ("logits", "loss"):
        raise Refused(f"{flag('output')} {output}: a Hugging Face model is exported with logits or loss")
