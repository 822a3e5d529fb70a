#!/usr/bin/env python3
"""How many checks the tests make, counted in their source: GoogleTest's EXPECT_* / ASSERT_* in tests/**/*.cpp, and
in the Python tests (tests/**/*.py, and the bench/ scripts CTest runs as tests) their check(...) and fail(...) calls
and assert statements. A count of written checks, not of checks run (a loop's one check counts once).

    scripts/count-checks.py [--rev GIT_REV] [--by-file]

--rev counts the files as they were at a commit (git show), to compare a change's before and after.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPP = re.compile(r"\b(?:EXPECT|ASSERT)_[A-Z_]+\s*\(")
PY = re.compile(r"(?:^|[^\w.])(?:check|fail)\(|^\s*assert\s", re.M)
# bench/ scripts that CTest runs as tests (tests/CMakeLists.txt) and that check what they run
BENCH_TESTS = ["bench/search_study.py", "bench/fault_study.py", "bench/op_layouts.py"]


def files(rev):
    if rev:
        out = subprocess.run(["git", "-C", ROOT, "ls-tree", "-r", "--name-only", rev], capture_output=True, text=True,
                             check=True).stdout.split()
    else:
        out = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(os.path.join(ROOT, "tests")) for f in fs]
        out += [b for b in BENCH_TESTS if os.path.exists(os.path.join(ROOT, b))]
    return sorted(f for f in out if (f.startswith("tests/") and f.endswith((".cpp", ".py"))) or f in BENCH_TESTS)


def text(path, rev):
    if rev:
        return subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{path}"], capture_output=True, text=True).stdout
    return open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()


def count(source, path):
    # comments are not checks
    if path.endswith(".cpp"):
        source = re.sub(r"//[^\n]*", "", source)
        return len(CPP.findall(source))
    source = "\n".join(l.split("#")[0] if not l.lstrip().startswith(("'", '"')) else l for l in source.splitlines())
    return len(PY.findall(source)) - len(re.findall(r"^def (?:check|fail)\(", source, re.M))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="", help="count the files as they were at this commit")
    ap.add_argument("--by-file", action="store_true")
    a = ap.parse_args()
    per = {f: count(text(f, a.rev), f) for f in files(a.rev)}
    cpp = sum(n for f, n in per.items() if f.endswith(".cpp"))
    py = sum(n for f, n in per.items() if f.endswith(".py"))
    if a.by_file:
        for f, n in sorted(per.items(), key=lambda x: -x[1]):
            if n:
                print(f"{n:6d}  {f}")
    print(f"{a.rev or 'working tree'}: {cpp + py} checks ({cpp} GoogleTest EXPECT/ASSERT, {py} Python check/fail/assert) "
          f"in {sum(1 for n in per.values() if n)} files")


if __name__ == "__main__":
    sys.exit(main())
