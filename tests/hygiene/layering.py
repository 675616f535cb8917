#!/usr/bin/env python3
"""Checks the #include arrows between devmgr's libraries (docs/architecture.md, "Dependencies").

    layering.py [--doc docs/architecture.md] REPO_DIR

Reads the dependency table of docs/architecture.md: one row per directory of src/ (plus `bench`,
and `proto` and `grpc` for the generated API headers), its third column the directories it
includes directly. A directory may include itself and everything reachable through those arrows.
Then reads every `#include "..."` of every .cc and .h file under src/ and bench/ and fails on an
include the table does not allow, naming file:line and the arrow. An include names a directory
by its first path component ("manager/manager.h" is `manager`); generated headers are `proto`
("deviceplugin/v1beta1/api.pb.h") or `grpc` ("*.grpc.pb.h", "grpcpp/..."); anything else
("absl/...", "fmt/...") is a third-party library and not checked.

Also fails when the table names a directory that does not exist, leaves one out, or has a cycle.
"""
import argparse
import os
import re
import sys

HEADING = "## Dependencies"
PSEUDO = {"proto", "grpc", "bench"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def parse_table(doc_path):
    """Returns {dir: set(direct deps)} from the first table after HEADING."""
    rows, seen_heading, in_table = {}, False, False
    with open(doc_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith(HEADING):
                seen_heading = True
                continue
            if not seen_heading:
                continue
            if line.startswith("|"):
                in_table = True
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                m = re.fullmatch(r"`([a-z_]+)`", cells[0]) if cells else None
                if not m:
                    continue  # the header and separator rows
                if len(cells) < 3:
                    sys.exit(f"{doc_path}:{n}: a row needs 3 cells: {line.strip()}")
                rows[m.group(1)] = set(re.findall(r"`([a-z_]+)`", cells[2]))
            elif in_table:
                break
    if not rows:
        sys.exit(f"{doc_path}: no dependency table after '{HEADING}'")
    return rows


def check_table(rows, src_dirs):
    errors = []
    for d in sorted(set(src_dirs) - set(rows)):
        errors.append(f"src/{d}/ is not in the dependency table")
    for d, deps in sorted(rows.items()):
        if d not in src_dirs and d not in PSEUDO:
            errors.append(f"the table names `{d}`, which is not a directory of src/")
        for t in sorted(deps - set(rows)):
            errors.append(f"`{d}` includes `{t}`, which has no row")
    # Cycles: depth-first search over the direct arrows.
    state = {}

    def visit(d, path):
        if state.get(d) == "done":
            return
        if state.get(d) == "open":
            errors.append("cycle: " + " -> ".join(path[path.index(d):] + [d]))
            return
        state[d] = "open"
        for t in sorted(rows.get(d, ())):
            visit(t, path + [d])
        state[d] = "done"

    for d in sorted(rows):
        visit(d, [])
    return errors


def reachable(rows):
    out = {}
    for d in rows:
        seen, todo = set(), list(rows[d])
        while todo:
            t = todo.pop()
            if t not in seen:
                seen.add(t)
                todo.extend(rows.get(t, ()))
        out[d] = seen | {d}
    return out


def target_of(include, src_dirs):
    if include.endswith(".grpc.pb.h") or include.startswith("grpcpp/"):
        return "grpc"
    if include.endswith(".pb.h"):
        return "proto"
    first = include.split("/")[0]
    return first if "/" in include and first in src_dirs else None


def check_includes(repo, rows, src_dirs):
    allowed = reachable(rows)
    errors = []
    for top in ("src", "bench"):
        for dirpath, _, files in sorted(os.walk(os.path.join(repo, top))):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, repo)
                owner = rel.split(os.sep)[1] if top == "src" else "bench"
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        t = target_of(m.group(1), src_dirs)
                        if t is None or t in allowed.get(owner, {owner}):
                            continue
                        direct = ", ".join(sorted(rows.get(owner, ()))) or "nothing"
                        errors.append(f'{rel}:{n}: {owner} -> {t} ("{m.group(1)}") is not '
                                      f"allowed: {owner} includes {direct} (and what they include)")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", default="docs/architecture.md", help="relative to REPO_DIR")
    ap.add_argument("repo")
    args = ap.parse_args()
    src_dirs = sorted(d for d in os.listdir(os.path.join(args.repo, "src"))
                      if os.path.isdir(os.path.join(args.repo, "src", d)))
    doc = os.path.join(args.repo, args.doc)
    rows = parse_table(doc)
    errors = [f"{args.doc}: {e}" for e in check_table(rows, src_dirs)]
    if not errors:
        errors = check_includes(args.repo, rows, src_dirs)
    for e in errors:
        print(e)
    if errors:
        print(f"layering: {len(errors)} problem(s); the table is in {args.doc} ('{HEADING}')")
        return 1
    print(f"layering: {len(rows)} rows, every #include under src/ and bench/ follows them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
