#!/usr/bin/env python3
"""The arrows between autotune's parts, checked (docs/design.md, "Parts and arrows").

  check_arrows.py SOURCE_DIR LINKS_FILE     check the tree and the build's link graph; exit 1 on a violation
  check_arrows.py --self-test               prove the check fails on a tree that breaks each rule

A part is a top-level folder and the library built from it. A part may include and link only the
parts it is allowed to; LibTorch (and the CUDA runtime) only in workloads/, CUPTI also in profiler/.
The `autotune` binary must not reach LibTorch, the worker's library or the profiler, even indirectly.
Inside tuner/, its rooms are its folders, on floors (TUNER_FLOORS, bottom first, as docs/design.md draws them): a file
includes only its own floor and the floors below, and no two units (x.h/x.cpp) include each other — nothing reaches up
for a type.
"""
import os
import re
import sys
import tempfile

# part -> the parts it may use (includes and links). Nothing may use tuner/ or workloads/.
ALLOWED = {
    "knobs": set(),
    "data": {"knobs"},
    "reports": {"knobs"},
    "profiler": {"knobs"},
    "tuner": {"knobs", "reports", "data"},
    "workloads": {"knobs", "profiler", "data"},
}
LIBRARY = {p: "autotune_" + p for p in ALLOWED}
# tuner/'s rooms are its folders: a file's room is the folder it sits in under tuner/ ("" for tuner/ itself, which
# holds only the CLI's entry: cli and main). The floors, bottom first; folders on one floor may include each other
# (never in a cycle), a floor only the floors below it. docs/design.md draws the same floors (checked below).
TUNER_FLOORS = [
    ("measures",), ("exec",), ("search",), ("pricing",), ("options",), ("memory",), ("summary",),
    ("tune", "check", "converge"), ("commands", ""),
]
TUNER_INCLUDE = re.compile(r'#\s*include\s*"(tuner/[^"]+)"')
EXECUTABLES = {"autotune": "tuner", "autotune-worker": "workloads", "autotune-trace": "profiler", "autotune-resolve": "knobs"}
TORCH_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](torch|ATen|c10|caffe2)/')
CUDA_INCLUDE = re.compile(r'#\s*include\s*[<"](cuda|cuda_runtime|cupti)[^/]*\.h[>"]')
# gloo's headers (Debian's libgloo-dev) are older than the gloo compiled into LibTorch: only the one file
# that makes the Gloo backend may include them, through ProcessGroupGloo.hpp (its comment says why).
GLOO_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](gloo/|torch/csrc/distributed/c10d/ProcessGroupGloo)')
GLOO_FILE = "workloads/engine/dist/gloo_backend.cpp"
OUR_INCLUDE = re.compile(r'#\s*include\s*"([a-z_]+)/')
TORCH_LIB = re.compile(r"(^|/)(lib)?(torch|torch_cpu|torch_cuda|torch_library|c10|c10_cuda|nvrtc)(\.so)?$")


def include_violations(src):
    """(file:line, message) for every include that crosses an arrow the design does not allow."""
    found = []
    for part, allowed in ALLOWED.items():
        root = os.path.join(src, part)
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                if not name.endswith((".h", ".hpp", ".cpp", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = OUR_INCLUDE.search(line)
                        if m and m.group(1) in ALLOWED and m.group(1) != part and m.group(1) not in allowed:
                            found.append((f"{rel}:{n}", f"{part} includes {m.group(1)} ({line.strip()})"))
                        if m and m.group(1) == "tests":
                            found.append((f"{rel}:{n}", f"{part} includes test code ({line.strip()})"))
                        if TORCH_INCLUDE.search(line) and part != "workloads":
                            found.append((f"{rel}:{n}", f"{part} includes LibTorch ({line.strip()})"))
                        if GLOO_INCLUDE.search(line) and rel != GLOO_FILE:
                            found.append((f"{rel}:{n}", f"only {GLOO_FILE} may include gloo ({line.strip()})"))
                        if CUDA_INCLUDE.search(line) and part not in ("workloads", "profiler"):
                            found.append((f"{rel}:{n}", f"{part} includes a CUDA header ({line.strip()})"))
    return found


def unit_of(path):
    """tuner/exec/plan.cpp -> tuner/exec/plan: a header and its source are one unit."""
    return re.sub(r"\.(h|hpp|cpp|cc)$", "", path)


def folder_of(path):
    """tuner/search/ranking.h -> "search"; tuner/cli.cpp -> "" (the tuner's own folder)."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else ""


def room_of(path):
    """The floor (index into TUNER_FLOORS) of a tuner file, or None when its folder is on no floor."""
    for floor, folders in enumerate(TUNER_FLOORS):
        if folder_of(path) in folders:
            return floor
    return None


def floor_name(floor):
    return "+".join(f or "(root)" for f in TUNER_FLOORS[floor])


def drawn_floors(src):
    """The floors docs/design.md draws: each row of the table under "The tuner's rooms" that starts with a floor number,
    its backticked folders (`search/`; `./` is tuner/ itself). None when the document or the table is missing."""
    path = os.path.join(src, "docs", "design.md")
    if not os.path.exists(path):
        return None
    text = open(path, encoding="utf-8").read()
    if "### The tuner's rooms" not in text:
        return None
    section = text.split("### The tuner's rooms", 1)[1].split("\n#", 1)[0]
    rows = [l for l in section.splitlines() if re.match(r"^\|\s*\d+\s*\|", l)]
    return [tuple("" if f == "./" else f[:-1] for f in re.findall(r"`([\w.]+/)`", r.split("|")[2])) for r in rows]


def tuner_room_violations(src):
    """(file:line, message) for an include inside tuner/ that goes up a floor, a file in no room, and two units of
    one room that include each other (directly or in a cycle)."""
    found, edges = [], {}
    root = os.path.join(src, "tuner")
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith((".h", ".hpp", ".cpp", ".cc")):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            here = room_of(rel)
            if here is None:
                found.append((rel, f"tuner folder '{folder_of(rel) or '.'}' is on no floor of TUNER_FLOORS "
                                   "(tests/arrows/check_arrows.py): give it one, and draw it in docs/design.md"))
                continue
            with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = TUNER_INCLUDE.search(line)
                    if not m:
                        continue
                    there = room_of(m.group(1))
                    if there is not None and there > here:
                        found.append((f"{rel}:{n}", f"tuner room {floor_name(here)} includes the room above it, "
                                                    f"{floor_name(there)} ({line.strip()})"))
                    if unit_of(m.group(1)) != unit_of(rel):
                        edges.setdefault(unit_of(rel), set()).add(unit_of(m.group(1)))
    # A cycle among units: one of them reaches back up for a type of the other.
    state = {}

    def visit(u, stack):
        state[u] = 1
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                cycle = stack[stack.index(v):] + [v]
                found.append((u, "units include each other: " + " -> ".join(cycle)))
            elif v not in state:
                visit(v, stack + [v])
        state[u] = 2

    for u in sorted(edges):
        if u not in state:
            visit(u, [u])
    return found


def tuner_rooms_used(src):
    """floor -> the floors below it that its files include, for the report."""
    used = {k: set() for k in range(len(TUNER_FLOORS))}
    for dirpath, _, files in os.walk(os.path.join(src, "tuner")):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            here = room_of(rel)
            if here is None or not name.endswith((".h", ".cpp")):
                continue
            with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
                for m in TUNER_INCLUDE.finditer(f.read()):
                    there = room_of(m.group(1))
                    if there is not None and there != here:
                        used[here].add(there)
    return used


def read_links(path):
    links = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if ":" in line:
                target, libs = line.split(":", 1)
                links[target.strip()] = [l for l in libs.strip().split(";") if l]
    return links


def link_violations(links):
    """(target, message) for every link that crosses an arrow, and for the tuner reaching LibTorch."""
    found = []
    part_of = {lib: part for part, lib in LIBRARY.items()}
    part_of.update(EXECUTABLES)
    for target, libs in links.items():
        part = part_of.get(target)
        if part is None:
            continue
        for lib in libs:
            used = part_of.get(lib)
            if used and used != part and used not in ALLOWED[part]:
                found.append((target, f"{part} links {used} ({lib})"))
            if TORCH_LIB.search(lib) and part != "workloads":
                found.append((target, f"{part} links LibTorch ({lib})"))
    # What the tuner binary reaches, directly or not.
    seen, todo = set(), ["autotune"]
    while todo:
        t = todo.pop()
        for lib in links.get(t, []):
            if lib not in seen:
                seen.add(lib)
                todo.append(lib)
    for lib in sorted(seen):
        if lib in (LIBRARY["workloads"], LIBRARY["profiler"]) or TORCH_LIB.search(lib):
            found.append(("autotune", f"the tuner binary reaches {lib}"))
    return found


def arrows_used(src, links):
    """part -> the parts it includes or links, for the report."""
    used = {p: set() for p in ALLOWED}
    for part in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(src, part)):
            for name in files:
                if name.endswith((".h", ".cpp")):
                    with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                        for m in OUR_INCLUDE.finditer(f.read()):
                            if m.group(1) in ALLOWED and m.group(1) != part:
                                used[part].add(m.group(1))
        for lib in links.get(LIBRARY[part], []):
            for other, other_lib in LIBRARY.items():
                if lib == other_lib:
                    used[part].add(other)
    return used


def check(src, links_file, out=sys.stdout):
    links = read_links(links_file)
    problems = include_violations(src) + link_violations(links) + tuner_room_violations(src)
    drawn = drawn_floors(src)
    if drawn is not None and drawn != TUNER_FLOORS:
        problems.append(("docs/design.md", f"the tuner's rooms are drawn as {drawn}, but TUNER_FLOORS enforces {TUNER_FLOORS}"))
    for part, uses in arrows_used(src, links).items():
        built = "built" if LIBRARY[part] in links else "not built here"
        out.write(f"  {part:<10} -> {', '.join(sorted(uses)) or '(nothing of ours)':<26} allowed: "
                  f"{', '.join(sorted(ALLOWED[part])) or 'nothing'} [{built}]\n")
    if os.path.isdir(os.path.join(src, "tuner")):
        for floor, below in tuner_rooms_used(src).items():
            out.write(f"  tuner/{floor_name(floor):<23} -> {', '.join(floor_name(b) for b in sorted(below)) or '(none)'}\n")
    for where, what in problems:
        out.write(f"arrows: {where}: {what}\n")
    out.write("arrows: ok\n" if not problems else f"arrows: {len(problems)} violation(s)\n")
    return 0 if not problems else 1


def self_test():
    """Each rule, broken once in a scratch tree: the check must name it."""
    with tempfile.TemporaryDirectory() as d:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        put("knobs/a.h", '#include "tuner/tune/tune.h"\n')
        put("reports/b.cpp", "#include <torch/torch.h>\n    \"#include <torch/script.h>\\n\"  // text it prints\n")
        put("data/c.cpp", '#include "knobs/error.h"\n#include <cuda_runtime.h>\n')
        put("tuner/d.cpp", '#include "workloads/registry.h"\n#include "reports/x.h"\n')
        put("workloads/engine/ddp.cpp", "#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>\n")
        put("workloads/engine/dist/gloo_backend.cpp", "#include <gloo/context.h>\n")
        put("tuner/search/ranking.h", '#include "tuner/summary/summarize.h"\n#include "tuner/measures/statistics.h"\n')
        put("tuner/search/stability.cpp", '#include "tuner/search/strategy.h"\n')
        put("tuner/search/strategy.h", '#include "tuner/search/stability.h"\n')
        put("tuner/stray/x.cpp", "")
        put("docs/design.md", "### The tuner's rooms\n\n| floor | folders |\n|---|---|\n| 1 | `measures/` |\n")
        put("links.txt", "autotune_reports: autotune_knobs;autotune_tuner\n"
                         "autotune_tuner: autotune_knobs;autotune_data\nautotune_data: autotune_profiler\n"
                         "autotune_profiler: torch_cpu\nautotune: autotune_tuner\n")
        import io
        buf = io.StringIO()
        status = check(d, os.path.join(d, "links.txt"), buf)
        text = buf.getvalue()
        expected = [
            "knobs/a.h:1: knobs includes tuner",
            "reports/b.cpp:1: reports includes LibTorch",
            "data/c.cpp:2: data includes a CUDA header",
            "tuner/d.cpp:1: tuner includes workloads",
            "workloads/engine/ddp.cpp:1: only workloads/engine/dist/gloo_backend.cpp may include gloo",
            "autotune_reports: reports links tuner",
            "autotune_data: data links profiler",
            "autotune_profiler: profiler links LibTorch",
            "autotune: the tuner binary reaches autotune_profiler",
            "autotune: the tuner binary reaches torch_cpu",
            "tuner/search/ranking.h:1: tuner room search includes the room above it, summary",
            "units include each other: tuner/search/stability -> tuner/search/strategy -> tuner/search/stability",
            "tuner/stray/x.cpp: tuner folder 'stray' is on no floor",
            "docs/design.md: the tuner's rooms are drawn as [('measures',)], but TUNER_FLOORS enforces",
        ]
        missing = [e for e in expected if e not in text]
        allowed_ok = ("tuner/d.cpp:2" not in text and "data/c.cpp:1" not in text and "gloo_backend.cpp:1" not in text
                      and "tuner/search/ranking.h:2" not in text and "reports/b.cpp:2" not in text)  # allowed arrows stay quiet
        if status != 1 or missing or not allowed_ok:
            sys.stdout.write(text)
            sys.stdout.write(f"self-test FAILED: status {status}, not reported: {missing}, allowed flagged: {not allowed_ok}\n")
            return 1
        sys.stdout.write(f"self-test: all {len(expected)} broken arrows reported, allowed ones not\n")
        return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1], sys.argv[2]))
