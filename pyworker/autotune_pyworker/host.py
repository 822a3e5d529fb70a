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


def descendants_cpu_seconds():
    """CPU seconds of this process's live descendants (DataLoader worker processes, compile workers): the trial's own
    work, not another program's. Read from /proc/<pid>/stat (utime + stime); 0 where /proc cannot be read."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                text = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, …; utime, stime are 14, 15
        parent[int(p)] = int(fields[1])
        cpu[int(p)] = (int(fields[11]) + int(fields[12])) / tick
    me, total = os.getpid(), 0.0
    for pid in cpu:
        q, seen = parent.get(pid), 0
        while q and q != me and seen < 64:
            q, seen = parent.get(q), seen + 1
        if q == me:
            total += cpu[pid]
    return total


def read_cpus():
    """(wall, own CPU seconds — this process's, its reaped children's and its live descendants' —, busy seconds of the
    CPUs this process may run on, how many CPUs, of the busy seconds the steal: the hypervisor's for other guests)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = u.ru_utime + u.ru_stime + c.ru_utime + c.ru_stime + descendants_cpu_seconds()
    wall = time.monotonic()
    allowed = os.sched_getaffinity(0)
    tick = os.sysconf("SC_CLK_TCK")
    busy, cpus, stolen = 0.0, 0, 0.0
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
                stolen += steal / tick
                cpus += 1
    except OSError:
        return None
    return wall, own, busy, cpus, stolen


def host_load_between(before, after):
    """The result's `host_load`: other processes' CPU time on this process's CPUs, in cores, and of it the hypervisor's
    steal (knobs/host_load.h); None when unknown."""
    if before is None or after is None or before[3] == 0 or before[3] != after[3] or after[0] <= before[0]:
        return None
    wall = after[0] - before[0]
    others = max((after[2] - before[2]) - (after[1] - before[1]), 0.0) / wall
    return {"other_cores": others, "cpus": after[3], "seconds": wall,
            "steal_cores": min(max(after[4] - before[4], 0.0) / wall, others)}
