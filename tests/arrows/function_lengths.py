#!/usr/bin/env python3
"""Functions a reader can hold (docs/design.md, "Reading the code"): none of the project's functions is longer
than 100 lines, and at most 5 are longer than 80 — data tables aside (a table of knobs, settings, options or
snippets is read row by row, not held whole).

  function_lengths.py SOURCE_DIR     exit 1 naming every function over the limits
  function_lengths.py --self-test    prove the check fails on a tree that breaks each rule

A function's length counts its lines from its signature to its closing brace (tests/arrows/functions.py finds them).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import functions  # noqa: E402

LIMIT = 100
LONG = 80
MOST_LONG = 5
# (file, function): data tables — one row per knob, setting, option or snippet.
TABLES = {
    ("knobs/knob.cpp", "make_catalog"),
    ("knobs/setup.h", "TrialSetup::visit"),
    ("tuner/options/tune_options.h", "TuneOptions::visit"),
    ("reports/apply.cpp", "snippets"),
}


def violations(src):
    fns = [f for f in functions.all_functions(src) if (f.path, f.name) not in TABLES]
    fns.sort(key=lambda f: -f.lines)
    found = [f"{f.path}:{f.first} {f.name} is {f.lines} lines; at most {LIMIT} allowed" for f in fns if f.lines > LIMIT]
    long = [f for f in fns if LONG < f.lines <= LIMIT]
    if len(long) > MOST_LONG:
        found.append(f"{len(long)} functions are over {LONG} lines; at most {MOST_LONG} allowed: " +
                     ", ".join(f"{f.path}:{f.first} {f.name} ({f.lines})" for f in long))
    return found, fns


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "tuner"))
        body = "\n".join(f"  x += {i};" for i in range(LIMIT + 5))
        with open(os.path.join(d, "tuner", "long.cpp"), "w") as f:
            f.write("int too_long(int x) {\n" + body + "\n  return x;\n}\n")
            for k in range(MOST_LONG + 1):
                f.write(f"int rather_long_{k}(int x) {{\n" + "\n".join(f"  x += {i};" for i in range(LONG + 2)) + "\n  return x;\n}\n")
            f.write("struct S {\n  int method(int y) const {\n    return y;\n  }\n};\n")
        found, fns = violations(d)
        names = {f.name for f in fns}
        ok = (any("too_long" in v for v in found) and any(f"{MOST_LONG + 1} functions are over" in v for v in found)
              and "method" in names)
    print("function_lengths self-test:", "ok" if ok else "FAILED", found)
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    found, fns = violations(argv[1])
    long = [f for f in fns if f.lines > LONG]
    print(f"function_lengths: {len(fns)} functions (data tables aside); the longest: " +
          ", ".join(f"{f.path} {f.name} ({f.lines})" for f in fns[:6]))
    print(f"  over {LONG} lines: {len(long)} (at most {MOST_LONG})")
    for v in found:
        print("  " + v)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
