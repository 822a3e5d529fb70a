#!/usr/bin/env python3
"""Function definitions in the project's C++ sources, found without a compiler.

A small scanner shared by the structure checks (function_lengths.py, call_walk.py): it strips comments,
strings and character literals, tracks braces, and calls an opening brace a function body when the
statement before it has a parameter list and the brace opens at namespace or class level. Lambdas and
local classes count as part of the function that holds them.
"""
import os
import re

PARTS = ("knobs", "data", "reports", "profiler", "tuner", "workloads")
SOURCE_ENDINGS = (".h", ".hpp", ".cpp", ".cc")
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "static_assert",
             "defined", "noexcept", "throw", "new", "delete", "operator"}
_SCOPE_KEYWORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b")
_NAME_BEFORE_PARAMS = re.compile(r"([A-Za-z_~][\w:~]*(?:<[^()]*>)?|operator\s*[^\s(]+)\s*$")


def strip_code(text):
    """`text` with comments, string and character literals blanked (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.match(r'R"([^(\s]*)\(', text[i:i + 20]) if c == "R" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) else None
        if m:
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:end]))
            i = end
            continue
        if c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()) and i + 1 < n and text[i + 1].isalnum():
                out.append(c)  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * max(0, min(j, n) - i - 1) + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Function:
    def __init__(self, path, name, first, last, body_first):
        self.path, self.name, self.first, self.last = path, name, first, last
        self.body_first = body_first  # offset of the opening brace in the stripped text
        self.body = ""

    @property
    def lines(self):
        return self.last - self.first + 1

    def __repr__(self):
        return f"{self.path}:{self.first}-{self.last} {self.name} ({self.lines} lines)"


def _statement_before(code, pos):
    """The text of the statement that ends at the brace at `pos` (since the last ; { or })."""
    j = pos - 1
    depth = 0
    while j >= 0:
        ch = code[j]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
        elif depth == 0 and ch in ";{}":
            break
        j -= 1
    return code[j + 1:pos], j + 1


def _without_template_header(s):
    """`s` without a leading `template <...>` (its `class` parameters are not a class definition)."""
    while s.startswith("template"):
        k = s.find("<")
        if k < 0:
            return s
        depth = 0
        for j in range(k, len(s)):
            depth += {"<": 1, ">": -1}.get(s[j], 0)
            if depth == 0:
                s = s[j + 1:].lstrip()
                break
        else:
            return s
    return s


def _function_name(stmt):
    """The name of the function a statement declares before its body, or None (a control statement,
    a scope, an initializer)."""
    s = _without_template_header(" ".join(stmt.split()))
    if not s or s.startswith("#"):
        return None
    if s.startswith(("=", "return")) or s.endswith("="):
        return None
    # The parameter list: the first top-level (...) after the name. Constructors' initializer lists
    # (": a_(x), b_(y)") come after it.
    depth, start = 0, -1
    for k, ch in enumerate(s):
        if ch == "(":
            if depth == 0 and start < 0:
                start = k
            depth += 1
        elif ch == ")":
            depth -= 1
    if start <= 0:
        return None
    head = s[:start]
    if _SCOPE_KEYWORDS.search(head) and not re.search(r"\boperator\b", head):
        return None
    if "=" in head.replace("operator=", "").replace("==", "").replace("<=", "").replace(">=", "").replace("!=", ""):
        return None  # a variable initialised by a call, or a lambda assigned
    m = _NAME_BEFORE_PARAMS.search(head)
    if not m:
        return None
    name = m.group(1).strip()
    last = name.split("::")[-1]
    if last in _KEYWORDS or name in _KEYWORDS or last.startswith("["):
        return None
    return name


def scan(path, rel):
    """Every function definition in one file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    code = strip_code(text)
    line_of = [0] * (len(code) + 1)
    n = 1
    for k, ch in enumerate(code):
        line_of[k] = n
        if ch == "\n":
            n += 1
    line_of[len(code)] = n
    found = []
    stack = []  # (kind, Function or None)
    for k, ch in enumerate(code):
        if ch == "{":
            in_function = any(kind == "function" for kind, _ in stack)
            if in_function:
                stack.append(("block", None))
                continue
            stmt, start = _statement_before(code, k)
            name = _function_name(stmt)
            if name and not _SCOPE_KEYWORDS.search(_without_template_header(" ".join(stmt.split())).split("(")[0]):
                first_line = line_of[start + len(stmt) - len(stmt.lstrip())]
                fn = Function(rel, name, first_line, 0, k)
                stack.append(("function", fn))
            else:
                stack.append(("scope", None))
        elif ch == "}":
            if not stack:
                continue
            kind, fn = stack.pop()
            if kind == "function":
                fn.last = line_of[k]
                fn.body = code[fn.body_first:k + 1]
                found.append(fn)
    return found


def source_files(src, parts=PARTS):
    for part in parts:
        for dirpath, _, files in os.walk(os.path.join(src, part)):
            for name in sorted(files):
                if name.endswith(SOURCE_ENDINGS):
                    path = os.path.join(dirpath, name)
                    yield path, os.path.relpath(path, src)


def all_functions(src, parts=PARTS):
    out = []
    for path, rel in source_files(src, parts):
        out.extend(scan(path, rel))
    return out
