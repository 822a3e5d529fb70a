"""--memory-cap in the Python worker: on CUDA the caching allocator's memory fraction
(torch.cuda.set_per_process_memory_fraction), so a trial that needs more than the cap ends out of memory as it would on
a device of that size. On the CPU the cap is the C++ worker's counting allocator (workloads/engine/device_memory.h):
PyTorch's Python API has no hook into the CPU allocator, so the Python worker cannot cap or count CPU tensor memory and
refuses such a plan in one line rather than run uncapped."""
import re

import torch

from .errors import Refused

UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
         "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}


def parse_size(text):
    """knobs/memory.cpp parse_size: "512M", "1.5G", "4000000000" → bytes (K, M, G, T are powers of 1024)."""
    m = re.fullmatch(r"([0-9.]+)\s*([A-Za-z]*)", text.strip())
    try:
        value = float(m.group(1)) * UNITS[m.group(2).upper()] if m else 0
    except (KeyError, ValueError):
        value = 0
    if not 1 <= value <= 9.0e18:
        raise Refused(f"--memory-cap '{text}' is not a size; allowed: a positive number of bytes with an optional suffix "
                      "K, M, G or T (powers of 1024), e.g. 512M or 1.5G")
    return int(round(value))


def apply_cap(text, device):
    """The cap in bytes, in force on `device`; refused on the CPU."""
    cap = parse_size(text)
    if device.type != "cuda":
        raise Refused(f"--memory-cap {text}: on the CPU the cap is the C++ worker's counting allocator (--trainer cpp); "
                      "the Python worker cannot cap CPU tensor memory (PyTorch's Python API has no CPU allocator hook)")
    total = torch.cuda.get_device_properties(device).total_memory
    if cap > total:
        raise Refused(f"--memory-cap {text}: more than this GPU's {total / 2**30:.1f} GiB")
    torch.cuda.set_per_process_memory_fraction(cap / total, device)
    return cap
