#!/usr/bin/env python3
"""How often a reader who follows the calls from one function bounces back to a file already left.

  call_walk.py SOURCE_DIR FUNCTION [--parts tuner,...] [--max N] [--trace]

The walk reads FUNCTION's body, and at each call of a function defined in the named parts (tuner by
default) opens that function, depth first, in the order the calls appear; every function is opened once.
A header and its source count as one file. A "stay" is a function opened in the file the reader is already in; a "jump" opens it in another file; a
jump to a file the reader had already left is a "return" (a bounce: A calls B, B calls back into A).
Coming back from a call is not counted: the reader closes the callee and is where they were.

Not followed: tuner/measures/statistics (the arithmetic — medians, intervals, quantiles — read like a library) and
one-line accessors (a body of one statement: the name says it all). Calls are matched by name: a name defined once in the parts is that function; a member call (x.f(),
x->f()) resolves only to a member function of that name; a plain call to a free function of that name, else a
member. A name defined more than once resolves to the one in the caller's file, when there is exactly one there;
otherwise (and for names too common to tell apart) the call is not followed. With --max N it exits 1 when the returns exceed N.
"""
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import functions  # noqa: E402

CALL = re.compile(r"(?<![\w.>:])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*\(|(?:\.|->)([A-Za-z_]\w*)\s*\(")
# Names that are everywhere (containers, strings, JSON) and would tie unrelated functions together.
LOCAL = re.compile(r"\b(?:auto|const auto|double|int|bool)\s*&?\s*([A-Za-z_]\w*)\s*=")
# What a reader does not open: the arithmetic (medians, intervals, quantiles: read like a library) and one-line
# accessors (their body is their name).
LIBRARY_FILES = ("tuner/measures/statistics.",)


def skipped(fn):
    if fn.path.startswith(LIBRARY_FILES):
        return True
    return fn.body.count(";") <= 1 and fn.body.count("\n") <= 2


COMMON = {"get", "set", "add", "find", "size", "empty", "at", "value", "push_back", "emplace_back", "begin", "end",
          "count", "erase", "insert", "clear", "key", "str", "c_str", "data", "front", "back", "has", "values",
          "run", "name", "format", "describe", "to_string", "from_json", "to_json", "parse", "dump", "main", "make",
          "options", "path", "reset", "start", "wait", "close", "open", "write", "read", "next", "all", "slots"}


def index(src, parts):
    free, member = defaultdict(list), defaultdict(list)
    for fn in functions.all_functions(src, parts):
        short = fn.name.split("::")[-1]
        if "::" in fn.name and fn.name.split("::")[-2][:1].isupper():
            member[short].append(fn)
        else:
            free[short].append(fn)
    return free, member


def walk(src, start, parts):
    free, member = index(src, parts)
    roots = free.get(start, []) or member.get(start, [])
    if len(roots) != 1:
        raise SystemExit(f"call_walk: {start}: {len(roots)} definitions found in {', '.join(parts)}")
    seen, path, stack_bounces = set(), [], []
    stack = []  # the units of the functions open below the one being read

    def resolve(name, is_member, caller):
        short = name.split("::")[-1]
        if short in COMMON:
            return None
        # x.f() / x->f(): a member function; f(): a free function, else a member of the caller's own class.
        cands = member.get(short, []) if is_member else free.get(short, []) or member.get(short, [])
        if len(cands) > 1:  # several of that name: the one in the caller's own file, if it is the only one there
            cands = [c for c in cands if unit(c.path) == unit(caller.path)]
        return cands[0] if len(cands) == 1 else None

    def visit(fn):
        local = set(LOCAL.findall(fn.body))  # lambdas and variables named like a function: not calls of one
        key = (fn.path, fn.first)
        if key in seen:
            return
        seen.add(key)
        here = unit(fn.path)
        if stack and here != stack[-1] and here in stack:
            stack_bounces.append(f"{stack[-1]} -> {here} ({fn.name})")
        path.append(fn)
        stack.append(here)
        for m in CALL.finditer(fn.body):
            if m.group(1) in local:
                continue
            callee = resolve(m.group(1), False, fn) if m.group(1) else resolve(m.group(2), True, fn)
            if callee is not None and not skipped(callee):
                visit(callee)
        stack.pop()

    visit(roots[0])
    return path, stack_bounces


def unit(path):
    """A header and its source are one file to the reader (x.h beside x.cpp)."""
    return re.sub(r"\.(h|hpp|cpp|cc)$", "", path)


def count(path):
    stays = jumps = returns = 0
    left, current, bounces = set(), None, []
    for fn in path:
        here = unit(fn.path)
        if current is None:
            current = here
            continue
        if here == current:
            stays += 1
            continue
        jumps += 1
        left.add(current)
        if here in left:
            returns += 1
            bounces.append(f"{current} -> {here} ({fn.name})")
        current = here
    return stays, jumps, returns, bounces


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "1") for a in argv if a.startswith("--"))
    if len(args) != 2:
        print(__doc__)
        return 2
    src, start = args
    parts = tuple(opts.get("parts", "tuner").split(","))
    path, back_calls = walk(src, start, parts)
    stays, jumps, returns, bounces = count(path)
    files = sorted({unit(fn.path) for fn in path})
    if "trace" in opts:
        for fn in path:
            print(f"  {fn.path}:{fn.first} {fn.name}")
    print(f"call_walk {start}: {len(path)} functions in {len(files)} files; {stays} stays, {jumps} jumps, {returns} returns")
    for b in bounces:
        print(f"  return: {b}")
    print(f"call_walk {start}: {len(back_calls)} calls back into a file still open below the caller (a bounce)")
    for b in back_calls:
        print(f"  bounce: {b}")
    if "max" in opts and returns > int(opts["max"]):
        print(f"call_walk: {returns} returns to a file already left; at most {opts['max']} allowed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
