"""What the process and the host did during the measured windows, read as the C++ worker reads it: peak RSS,
minor page faults, and the CPU time on this process's CPUs that was not its own (knobs/host_load.cpp)."""
import os
import resource
import time


def peak_rss_bytes():
    """VmHWM of /proc/self/status (the process's peak resident set), -1 when unreadable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def host_total_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return -1


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def read_cpus():
    """(wall, own CPU seconds, busy seconds of the CPUs this process may run on, how many CPUs)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    own = u.ru_utime + u.ru_stime
    wall = time.monotonic()
    allowed = os.sched_getaffinity(0)
    tick = os.sysconf("SC_CLK_TCK")
    busy, cpus = 0.0, 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                if not (line.startswith("cpu") and len(line) > 3 and line[3].isdigit()):
                    continue
                fields = line.split()
                cpu = int(fields[0][3:])
                if cpu not in allowed:
                    continue
                user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
                busy += (user + nice + system + irq + softirq + steal) / tick
                cpus += 1
    except OSError:
        return None
    return wall, own, busy, cpus


def host_load_between(before, after):
    """The result's `host_load`: other processes' CPU time on this process's CPUs, in cores; None when unknown."""
    if before is None or after is None or before[3] == 0 or before[3] != after[3] or after[0] <= before[0]:
        return None
    wall = after[0] - before[0]
    others = (after[2] - before[2]) - (after[1] - before[1])
    return {"other_cores": max(others, 0.0) / wall, "cpus": after[3], "seconds": wall}
