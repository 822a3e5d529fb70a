#!/usr/bin/env python3
"""The front page stays true and short: every `autotune …` command README.md shows parses as written (the CLI's whole
validation, nothing run: AUTOTUNE_PARSE_ONLY=1, tuner/cli.cpp), every `make` target it names exists, every relative
link resolves, and it keeps to 120 lines of at most 200 characters.

    readme_commands_test.py AUTOTUNE_BINARY REPO_ROOT
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

MAX_LINES, MAX_WIDTH = 120, 200


def shell_blocks(text):
    """The lines of each fenced block that is not Python (the task file's example is Python, not commands)."""
    blocks, current, lang = [], None, ""
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current, lang = [], line[3:].strip()
            else:
                if lang not in ("python", "py"):
                    blocks.append(current)
                current = None
            continue
        if current is not None:
            current.append(line)
    return blocks


def commands(text, program):
    """Each `program …` line of the shell blocks (backslash continuations joined), as argv without the comment."""
    found = []
    for block in shell_blocks(text):
        if any(line.startswith("$ ") for line in block):  # a console: its commands follow "$ ", the rest is output
            block = [line[2:] for line in block if line.startswith("$ ")]
        joined, pending = [], ""
        for line in block:
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            joined.append(pending + line)
            pending = ""
        for line in joined:
            if line.split(" ", 1)[0] != program:
                continue
            words = shlex.split(line.strip(), comments=True)
            if words and words[0] == program:
                found.append(words)
    return found


def parse(binary, argv, cwd=None):
    env = dict(os.environ, AUTOTUNE_PARSE_ONLY="1")
    return subprocess.run([binary] + argv, capture_output=True, text=True, env=env, timeout=60, cwd=cwd)


def stand_ins(argv, folder):
    """The user's files a command names (train.py, mynet.py, my.pt …) as empty files in `folder`: the parse checks that
    a given file exists, and what is in it is the user's."""
    for word in argv:
        path = word.split(":", 1)[0] if word.endswith((".py", ".pt")) or ".py:" in word else ""
        if path and not os.path.isabs(path) and "/" not in path:
            open(os.path.join(folder, path), "a").close()


def main():
    binary, root = sys.argv[1], sys.argv[2]
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    failures = []
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        failures.append(f"README.md has {len(lines)} lines; the front page keeps to {MAX_LINES}")
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_WIDTH:
            failures.append(f"README.md:{n}: {len(line)} characters (at most {MAX_WIDTH})")

    # The check can fail: a misspelt option and a value out of range are refused with nothing run.
    for bad, why in ((["tune", "--budgt", "1m"], "unknown option '--budgt'"), (["check", "--reps", "0"], "--reps 0 is not allowed")):
        r = parse(binary, bad)
        if r.returncode != 2 or why not in r.stderr:
            failures.append(f"self-check: `autotune {' '.join(bad)}` gave {r.returncode} {r.stderr.strip()!r}, expected 2 and {why!r}")

    shown = commands(text, "autotune")
    if len(shown) < 5:
        failures.append(f"only {len(shown)} autotune commands found in README.md's blocks: the extraction is broken")
    folder = tempfile.mkdtemp(prefix="readme-commands-")
    for argv in shown:
        stand_ins(argv, folder)
        r = parse(binary, argv[1:], cwd=folder)
        if r.returncode != 0 or "the command line parses" not in r.stdout:
            failures.append(f"README.md shows `{shlex.join(argv)}`: exit {r.returncode}: {(r.stderr or r.stdout).strip()}")

    makefile = open(os.path.join(root, "Makefile"), encoding="utf-8").read()
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))
    for argv in commands(text, "make") + [["make", t] for t in re.findall(r"`make ([a-z][\w-]*)`", text)]:
        for t in argv[1:]:
            if "=" not in t and t not in targets:
                failures.append(f"README.md names `make {t}`, which the Makefile does not define (targets: {sorted(targets)})")

    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" not in target and not os.path.exists(os.path.join(root, target)):
            failures.append(f"README.md links {target}, which does not exist")

    shutil.rmtree(folder, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print(f"{len(shown)} autotune commands parsed, {len(lines)} lines")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
