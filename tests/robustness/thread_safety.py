#!/usr/bin/env python3
"""`make check-thread-safety`: clang's thread-safety analysis over every devmgr source file.

Usage: thread_safety.py BUILD_DIR JOBS [PATH_SUBSTRING...]   (substrings: only matching files)

BUILD_DIR is configured by the Makefile with clang and DEVMGR_THREAD_SAFETY=ON, so its
compile_commands.json carries -Wthread-safety -Werror=thread-safety. The analysis runs in clang's
front end, so each source (src/, tests/; not the generated protobuf code) is checked with
-fsyntax-only: no code generation, no linking. Prints every diagnostic; exits 1 on any error.
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def main():
    build, jobs, only = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    cmds = []
    seen = set()
    for e in entries:
        src = e["file"]
        if "/gen/" in src or src in seen or (only and not any(o in src for o in only)):
            continue
        seen.add(src)
        args = shlex.split(e["command"])
        if os.path.basename(args[0]) == "ccache":
            args = args[1:]
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MT", "-MF"):
                skip = True
                continue
            if a in ("-MD", "-c") or a.startswith("-g") or a.startswith("-fsanitize"):
                continue
            out.append(a)
        cmds.append((src, out + ["-fsyntax-only"], e["directory"]))  # out still names src

    def run(c):
        src, args, cwd = c
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
        return src, p.returncode, p.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        for src, rc, err in ex.map(run, cmds):
            if err.strip():
                sys.stdout.write(err)
                sys.stdout.flush()
            if rc != 0:
                failed += 1
    print(f"thread-safety analysis: {len(cmds)} files, {failed} with errors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
