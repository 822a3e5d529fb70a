"""The machine and torch this worker runs with (`autotune-worker-py info`; result.json `env`): the same fields as
the C++ worker's EnvFingerprint (knobs/worker_info.h)."""
import os
import platform
import socket
import sys

import torch

from . import VERSION


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def environment():
    cuda = torch.cuda.is_available()
    driver = ""
    if cuda:
        try:
            v = torch._C._cuda_getDriverVersion()  # e.g. 13000
            driver = f"{v // 1000}.{v % 1000 // 10}"
        except (AttributeError, RuntimeError):
            driver = ""
    return {
        "torch_version": torch.__version__.split("+")[0],
        "cuda_compiled": torch.version.cuda or "",
        "cuda_available": cuda,
        "device_count": torch.cuda.device_count() if cuda else 0,
        "device_name": torch.cuda.get_device_name(0) if cuda else cpu_model(),
        "driver": driver,
        "cpu_model": cpu_model(),
        "cpu_cores": len(os.sched_getaffinity(0)),
        "hostname": socket.gethostname(),
        "autotune_version": f"{VERSION} (python worker, Python {platform.python_version()})",
        "python": sys.executable,
        "python_version": platform.python_version(),
    }
