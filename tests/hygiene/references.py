#!/usr/bin/env python3
"""Checks that comments stand on their own (docs/architecture.md, "Comments").

    references.py REPO_DIR

Reads the comments of every tracked source, script and build file (src/, bench/, tests/, scripts/,
CMakeLists.txt, Makefile, .ci/; C++ `//` and `/* */` comments, `#` comments elsewhere, and
Python docstrings) and fails on:
  * a citation of an issue tracker a reader of the repository cannot see: "issue #N", or "(#N"
    with N under 10000 (upstream kubernetes items are cited with their own, larger numbers,
    e.g. "kubernetes#133335" or "(#133335)");
  * a file that is not in the repository: a path into the research notes kept beside the
    repository (their "shared" directory), an absolute path under /work, /home or /root, or
    a Markdown file name that names no file of the repository (looked up from the repository
    root, the comment's directory and docs/).
Each problem is printed as file:line: what.
"""
import os
import re
import subprocess
import sys

SKIP = ("tests/fuzz/corpus/", "tests/fuzz/regressions/", "tests/testdata/")
CPP = (".cc", ".h", ".go", ".proto")
HASH = (".py", ".sh", ".txt", ".cmake", ".yaml", ".yml")
TRACKER = [
    (re.compile(r"\bissues? #\d+", re.I), "cites an issue tracker"),
    (re.compile(r"\(#\d{1,4}\b"), "cites an issue tracker"),
]
OUTSIDE = [
    (re.compile(r"(?<![\w./-])(?:\.\./)*shared/[\w./-]+"), "names a file outside the repository"),
    (re.compile(r"(?<![\w.-])/(?:work|home|root)/[\w./-]+"), "names a path of one machine"),
]
MARKDOWN = re.compile(r"(?<![\w./-])([\w./-]*[\w-]\.md)\b")


def comments(path, text):
    """Yields (line number, comment text) pairs."""
    lines = text.split("\n")
    if path.endswith(CPP):
        in_block = False
        for n, line in enumerate(lines, 1):
            if in_block:
                end = line.find("*/")
                yield n, line if end < 0 else line[:end]
                in_block = end < 0
                continue
            i = line.find("//")
            j = line.find("/*")
            if i >= 0 and (j < 0 or i < j):
                yield n, line[i:]
            elif j >= 0:
                end = line.find("*/", j + 2)
                yield n, line[j:] if end < 0 else line[j:end]
                in_block = end < 0
        return
    in_doc = None
    for n, line in enumerate(lines, 1):
        if path.endswith(".py"):
            stripped = line.strip()
            if in_doc:
                yield n, line
                if in_doc in stripped:
                    in_doc = None
                continue
            for q in ('"""', "'''"):
                if stripped.startswith(q):
                    yield n, line
                    if stripped.count(q) == 1:
                        in_doc = q
                    break
            else:
                i = line.find("#")
                if i >= 0:
                    yield n, line[i:]
            continue
        i = line.find("#")
        if i >= 0:
            yield n, line[i:]


def is_checked(rel):
    if rel.startswith(SKIP):
        return False
    base = os.path.basename(rel)
    return (rel.endswith(CPP + HASH) or base in ("CMakeLists.txt", "Makefile")
            or rel.startswith((".ci/", "scripts/")))


def problems(repo, rel, text):
    for n, comment in comments(rel, text):
        for rx, what in TRACKER + OUTSIDE:
            for m in rx.finditer(comment):
                yield f"{rel}:{n}: {what}: {m.group(0)}"
        for m in MARKDOWN.finditer(comment):
            name = m.group(1)
            if name.startswith(("shared/", "../")):
                continue  # reported above
            here = os.path.dirname(rel)
            if not any(os.path.isfile(os.path.join(repo, d, name)) for d in ("", here, "docs")):
                yield f"{rel}:{n}: names a file that is not in the repository: {name}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    repo = sys.argv[1]
    files = subprocess.run(["git", "-C", repo, "ls-files", "src", "bench", "tests", "scripts",
                            "CMakeLists.txt", "Makefile", ".ci"],
                           check=True, capture_output=True, text=True).stdout.split()
    found, checked = [], 0
    for rel in files:
        if not is_checked(rel) or not os.path.isfile(os.path.join(repo, rel)):
            continue
        with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        checked += 1
        found.extend(problems(repo, rel, text))
    for p in found:
        print(p)
    if found:
        print(f"references: {len(found)} comment(s) to fix in {checked} files: a comment must "
              "stand on its own (cite kubelet code, a kubernetes PR, or a file of the repository)")
        return 1
    print(f"references: {checked} files, no comment cites an issue tracker or an outside file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
