#!/usr/bin/env python3
"""Lists production functions longer than a limit (docs/architecture.md, "Long functions").

    function_lengths.py [--limit 80] [--check] SRC_DIR

Scans every non-test .cc file under SRC_DIR. A function is a brace block opened at namespace
level (or at class level inside a class body) after a parameter list; its length is counted
from the line of the signature's name to the closing brace. Comments and string literals are
blanked before braces are counted. With --check, exits 1 when a function over the limit is
not in the allowlist below (functions that follow one kubelet function step for step); the
allowlist is the table in docs/architecture.md.
"""
import argparse
import os
import re
import sys

# Functions that mirror one kubelet function step for step (docs/architecture.md).
ALLOWED = {
    "ManagerImpl::DevicesToAllocate",
    "ManagerImpl::AllocateContainerResources",
}
# Declaration tables, not logic (docs/architecture.md).
TABLES = {
    "AddServeCommand", "AddCheckpointCommand", "AddConformanceCommand",
    "KubeletMetrics::KubeletMetrics", "AllocateChecks",
}


def blank(text):
    """Replaces comments, string and char literals by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i)
            j = end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


NAME = re.compile(r"([~\w:]+(?:<[^<>]*>)?)\s*\((?:[^()]|\([^()]*\))*\)[^;{}()]*$", re.S)


def functions(path):
    text = blank(open(path, encoding="utf-8").read())
    stack = []  # kinds of open braces: "scope" (namespace/class/extern), "func", "other"
    start = {}
    results = []
    seg_start = 0
    for i, c in enumerate(text):
        if c == "{":
            head = text[seg_start:i]
            kind = "other"
            if all(k == "scope" for k in stack):
                if re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", head) or \
                   re.search(r'extern\s+""\s*$', head):
                    kind = "scope"
                else:
                    m = NAME.search(head.strip())
                    if m and not re.search(r"=\s*$", head.strip()):
                        kind = "func"
                        name = m.group(1)
                        # A constructor's initializer list: the name is the first X::Y( .
                        q = re.search(r"([\w:]+::~?\w+)\s*\(", head)
                        if q and re.search(r"\)\s*:", head[q.end():]):
                            name = q.group(1)
                        line = text.count("\n", 0, seg_start + head.find(name.split("::")[-1])) + 1
                        start[len(stack)] = (name, line)
            stack.append(kind)
            seg_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "other"
            if kind == "func":
                name, line = start.pop(len(stack))
                end = text.count("\n", 0, i) + 1
                results.append((name, line, end - line + 1))
            seg_start = i + 1
        elif c == ";" and all(k == "scope" for k in stack):
            seg_start = i + 1
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("src")
    args = ap.parse_args()
    long_ones = []
    for root, _, files in os.walk(args.src):
        for f in sorted(files):
            if not f.endswith(".cc") or f.endswith("_test.cc") or "testutil" in f:
                continue
            path = os.path.join(root, f)
            for name, line, length in functions(path):
                if length > args.limit:
                    long_ones.append((length, name, os.path.relpath(path, args.src), line))
    bad = 0
    for length, name, path, line in sorted(long_ones, reverse=True):
        short = name.split("::", 1)[-1] if name.count("::") > 1 else name
        tag = ""
        if any(name.endswith(a) for a in ALLOWED):
            tag = "  (follows the kubelet)"
        elif any(name.endswith(t) for t in TABLES):
            tag = "  (declaration table)"
        else:
            bad += 1
        print(f"{length:4d}  {path}:{line}  {short}{tag}")
    if args.check and bad:
        print(f"function_lengths: {bad} function(s) over {args.limit} lines "
              "(split them, or list them in docs/architecture.md and here)", file=sys.stderr)
        return 1
    print(f"function_lengths: {len(long_ones)} over {args.limit} lines, {bad} not allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
