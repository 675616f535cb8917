#!/usr/bin/env python3
"""Runs a real device plugin built from its Go module (build.sh) against devmgr.

  peer_test.py conformance PEER RELEASE KUBELET_VERSION
      `devmgr conformance --private-mount` over the whole catalogue; every
      check's verdict (and message, where given) must be the one
      PEER/verdicts.txt names for it.
  peer_test.py conformance-VARIANT PEER RELEASE KUBELET_VERSION
      The same with PEER/verdicts.VARIANT.txt, whose `#! env K=V` lines set
      the plugin's environment and `#! focus RE` selects the checks.
  peer_test.py dra-conformance PEER RELEASE KUBELET_VERSION
      `devmgr conformance --dra` over the DRA catalogue (KUBELET_VERSION may be
      a list or `all`); every check's verdict for every version must be the
      one PEER/dra-verdicts.txt names for it. Its `#! command` line is the
      driver's command, `{binary}` standing for the built driver; a line
      `CHECK-ID@RELEASE ...` holds that check's verdict for one release,
      `CHECK-ID@1.35 ...` for one kubelet version, `CHECK-ID@RELEASE@1.35` both.
  peer_test.py scenarios PEER RELEASE KUBELET_VERSION
      `devmgr run` over scenarios/PEER*.yaml, with the plugin's binary in
      the environment variable named after PEER (upper case, '-' as '_':
      E2E_SAMPLE for e2e-sample).

Environment: DEVMGR_BIN, PEERS_DIR (where build.sh put the binaries).
Exit 77 (skipped) when the peer was not built (no Go toolchain or module
proxy) or when this machine cannot make a private mount namespace.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def peer_binary(peer, release):
    """The peer's binary, run from a copy under /tmp in a directory whose name
    has a space: a clone under /tmp (where the plugin's private /tmp is bound
    over the host's) and a path with a space must work as any other."""
    peers_dir = os.environ.get("PEERS_DIR", os.path.join(HERE, "..", "..", "build", "peers"))
    path = os.path.join(peers_dir, f"{peer}-{release}")
    if not os.access(path, os.X_OK):
        skip(f"{path} was not built (tests/peers/build.sh: no Go toolchain or module proxy?)")
    copy_dir = tempfile.mkdtemp(prefix="dmpeer bin-", dir="/tmp")
    atexit.register(shutil.rmtree, copy_dir, ignore_errors=True)
    copy = os.path.join(copy_dir, os.path.basename(path))
    shutil.copy2(path, copy)
    return copy


def run_bounded(argv, **kwargs):
    """subprocess.run with output captured, ended 30 s before ctest's 300 s would kill this
    script: a run that hangs fails here with what it printed so far (the step it hung in)."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=270, **kwargs)
    except subprocess.TimeoutExpired as e:
        for out, stream in ((e.stdout, sys.stdout), (e.stderr, sys.stderr)):
            if out:
                print(out.decode(errors="replace") if isinstance(out, bytes) else out, file=stream)
        sys.exit(f"FAIL: still running after {e.timeout} s (killed): {' '.join(argv)}")


def private_mount_unavailable(output):
    return "--private-mount" in output and ("needs root" in output or "namespace" in output)


def read_verdicts(peer, name):
    """Returns ({check: (statuses, regex)}, {env}, [extra conformance flags])."""
    want, env, flags = {}, {}, []
    with open(os.path.join(HERE, peer, name)) as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#! env "):
                k, _, v = line[len("#! env "):].strip().partition("=")
                env[k] = v
                continue
            if line.startswith("#! command "):
                flags += ["--command", line[len("#! command "):].strip()]
                continue
            if line.startswith("#! focus "):
                flags += ["--focus", line[len("#! focus "):].strip()]
                continue
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            statuses = parts[1].split("|") if len(parts) > 1 else []
            if not statuses or any(st not in ("PASS", "FAIL", "SKIP") for st in statuses):
                sys.exit(f"{peer}/{name}:{lineno}: want 'CHECK-ID PASS|FAIL|SKIP [regex]'")
            want[parts[0]] = (statuses, re.compile(parts[2].strip()) if len(parts) > 2 else None)
    return want, env, flags


def conformance(peer, release, kubelet, verdicts="verdicts.txt"):
    binary = peer_binary(peer, release)
    devmgr = os.environ["DEVMGR_BIN"]
    want, plugin_env, flags = read_verdicts(peer, verdicts)
    helper = os.path.join(HERE, "private-tmp.sh")
    with tempfile.TemporaryDirectory(prefix="dmpeer-") as work:
        report = os.path.join(work, "report.json")
        # The plugin's /tmp and /run are the test's own (private-tmp.sh).
        os.makedirs(os.path.join(work, "peer-run", "cdi"))
        env_words = "".join(f"{k}='{v}' " for k, v in plugin_env.items())
        cmd = f"{env_words}exec sh '{helper}' --tmp '{work}/peer-tmp' --run '{work}/peer-run' '{binary}'"
        argv = [devmgr, "conformance", "--plugin", cmd, "--private-mount",
                "--kubelet-version", kubelet, "--dir", os.path.join(work, "dp"),
                "--json", report, "--observe", "1", "-q"] + flags
        print("$", " ".join(argv), flush=True)
        run = run_bounded(argv)
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        if run.returncode == 3 and private_mount_unavailable(run.stdout + run.stderr):
            skip("no private mount namespace here (needs root or unprivileged user namespaces)")
        with open(report) as f:
            got = {c["id"]: c for c in json.load(f)["checks"]}
    failures = []
    for cid, c in got.items():
        if cid not in want:
            failures.append(f"{cid}: {c['status']} ({c['message']!r}), but {peer}/{verdicts} names no verdict for it")
            continue
        statuses, rx = want[cid]
        if c["status"] not in statuses:
            failures.append(f"{cid}: {c['status']} ({c['message']!r}), want {' or '.join(statuses)}")
        elif rx is not None and not rx.search(c["message"]):
            failures.append(f"{cid}: message {c['message']!r} does not match /{rx.pattern}/")
    for cid in want:
        if cid not in got:
            failures.append(f"{cid}: in {peer}/{verdicts} but not run")
    # The exit code follows the MUST verdicts.
    must_fail = any(c["status"] == "FAIL" and c["level"] == "MUST" for c in got.values())
    if run.returncode != (1 if must_fail else 0):
        failures.append(f"exit code {run.returncode}, want {1 if must_fail else 0}")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(got) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def judge(peer, verdicts, want, got, returncode):
    """Compares the report's checks (ids "ID" or "ID [V]") with the verdicts; a verdict
    "ID [V]" (from an "ID@V" line) is that kubelet version's, else "ID"'s holds."""
    failures = []
    for cid, c in got.items():
        base = re.sub(r" \[[0-9.]+\]$", "", cid)
        if base not in want and cid not in want:
            failures.append(f"{cid}: {c['status']} ({c['message']!r}), but {peer}/{verdicts} names no verdict for it")
            continue
        statuses, rx = want[cid] if cid in want else want[base]
        if c["status"] not in statuses:
            failures.append(f"{cid}: {c['status']} ({c['message']!r}), want {' or '.join(statuses)}")
        elif rx is not None and not rx.search(c["message"]):
            failures.append(f"{cid}: message {c['message']!r} does not match /{rx.pattern}/")
    run_bases = {re.sub(r" \[[0-9.]+\]$", "", cid) for cid in got}
    for cid in want:
        # A kubelet version's verdict ("ID [V]") of a run without that version is no miss.
        if cid not in run_bases and cid not in got and re.sub(r" \[[0-9.]+\]$", "", cid) not in run_bases:
            failures.append(f"{cid}: in {peer}/{verdicts} but not run")
    must_fail = any(c["status"] == "FAIL" and c["level"] == "MUST" for c in got.values())
    if returncode != (1 if must_fail else 0):
        failures.append(f"exit code {returncode}, want {1 if must_fail else 0}")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(got) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def dra_conformance(peer, release, kubelet, verdicts="dra-verdicts.txt"):
    binary = peer_binary(peer, release)
    devmgr = os.environ["DEVMGR_BIN"]
    want, _, flags = read_verdicts(peer, verdicts)
    # "CHECK-ID@RELEASE" lines hold the verdict of that driver release only (v1.34.4);
    # "CHECK-ID@KUBELET" (1.35) that of that kubelet version, the report's "CHECK-ID [1.35]";
    # "CHECK-ID@RELEASE@KUBELET" both.
    # The more pins, the later (so the more specific wins); a run of one kubelet version
    # reports plain ids, which its pins then hold.
    for key in sorted([k for k in want if "@" in k], key=lambda k: k.count("@")):
        check, *pins = key.split("@")
        value = want.pop(key)
        rels = [p for p in pins if p.startswith("v")]
        kubelets = [p for p in pins if not p.startswith("v")]
        if any(r != release for r in rels):
            continue
        if not kubelets or kubelets[0] == kubelet:
            want[check] = value
        elif not re.fullmatch(r"1\.[0-9]+", kubelet):
            want[f"{check} [{kubelets[0]}]"] = value
    if "--command" not in flags:
        sys.exit(f"{peer}/{verdicts}: no '#! command' line")
    i = flags.index("--command")
    command = flags[i + 1].replace("{binary}", binary)
    flags = flags[:i] + flags[i + 2:]
    with tempfile.TemporaryDirectory(prefix="dmpeer-") as work:
        report = os.path.join(work, "report.json")
        argv = [devmgr, "conformance", "--dra", "--plugin", command, "--kubelet-version", kubelet,
                "--dir", os.path.join(work, "k"), "--json", report, "-q"] + flags
        print("$", " ".join(argv), flush=True)
        run = run_bounded(argv)
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        with open(report) as f:
            got = {c["id"]: c for c in json.load(f)["checks"]}
    return judge(peer, verdicts, want, got, run.returncode)


def scenarios(peer, release, kubelet):
    binary = peer_binary(peer, release)
    devmgr = os.environ["DEVMGR_BIN"]
    files = sorted(os.path.join(HERE, "scenarios", f) for f in os.listdir(os.path.join(HERE, "scenarios"))
                   if f.startswith(peer) and f.endswith(".yaml"))
    if not files:
        sys.exit(f"no scenarios/{peer}*.yaml")
    env = dict(os.environ)
    env[peer.upper().replace("-", "_")] = binary
    argv = [devmgr, "run", "--kubelet-version", kubelet] + files
    print("$", " ".join(argv), flush=True)
    run = run_bounded(argv, env=env)
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    if run.returncode == 3 and "private" in (run.stdout + run.stderr):
        skip("no private mount namespace here (needs root or unprivileged user namespaces)")
    return run.returncode


def main():
    if len(sys.argv) != 5 or not re.fullmatch(r"conformance(-[a-z0-9]+)?|scenarios|dra-conformance",
                                              sys.argv[1]):
        sys.exit(__doc__)
    mode, peer, release, kubelet = sys.argv[1:]
    if mode == "scenarios":
        sys.exit(scenarios(peer, release, kubelet))
    if mode == "dra-conformance":
        sys.exit(dra_conformance(peer, release, kubelet))
    variant = mode.partition("-")[2]
    sys.exit(conformance(peer, release, kubelet, f"verdicts.{variant}.txt" if variant else "verdicts.txt"))


if __name__ == "__main__":
    main()
