#!/usr/bin/env python3
"""Settles version facts of the kubelet device manager by experiment.

Runs the real device manager of one kubernetes release (a kubelet-oracle
binary, see docs/oracle.md) against `devmgr sample-plugin` processes and
checks what that release is expected to do (the table in
docs/profiles.md, as settled in docs/oracle.md).

usage: facts_test.py PROFILE [PROFILE...]
  env ORACLE_DIR   directory with kubelet-oracle-<profile> (default build/kubelet-oracle)
      DEVMGR_BIN   the devmgr binary (default build/devmgr)
      ORACLE_SLOW=1 also run the experiments that wait out the 5-minute
                   endpoint grace period (wall clock)
Exit 0: every fact as expected; 1: a difference (printed); 77: no oracle binary.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_client import Oracle, OracleError  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ORACLE_DIR = os.environ.get("ORACLE_DIR", os.path.join(ROOT, "build", "kubelet-oracle"))
DEVMGR = os.environ.get("DEVMGR_BIN", os.path.join(ROOT, "build", "devmgr"))
RES = "example.com/gpu"


def minor(profile):
    return int(profile.split(".")[1])


def plugin_config(socket, ids, numa=None, extra=""):
    devs = "\n".join("  - {id: %s%s}" % (i, ", numa: %s" % json.dumps(numa) if numa is not None else "")
                     for i in ids)
    return ("resource: %s\nsocket: %s\ndevices:\n%s\n" % (RES, socket, devs)) + extra


def pod(uid, n, name="c"):
    return {"uid": uid, "containers": [{"name": name, "resources": {RES: n}}]}


def exp_basic(o):
    """One plugin, one pod: capacity, admission, devices, run options, checkpoint."""
    o.call("start")
    o.plugin(DEVMGR, plugin_config("a.sock", ["d0", "d1"], extra="allocate:\n  envs: {IDS: \"{{.DeviceIDs}}\"}\n"), "a")
    o.call("wait", resource=RES, capacity=2, allocatable=2)
    adm = o.call("admit", pod=pod("p1", 1))
    opts = o.call("run_options", uid="p1", container="c")
    cp = o.checkpoint()
    envs = [e for e in (opts.get("options") or {}).get("Envs") or []]
    return {"admitted": adm["admitted"],
            "devices": len(adm.get("devices", {}).get("c", {}).get(RES, [])),
            "env_ids_match": [e["Value"] for e in envs if e["Name"] == "IDS"] == adm["devices"]["c"][RES],
            "checkpoint_has_pod": cp is not None and b'"PodUID":"p1"' in cp}


def exp_per_socket(o):
    """Two plugins of one resource on two sockets; the first one stops.
    Before #135437 the old stream's end disconnects the resource (allocatable 0)."""
    o.call("start")
    a = o.plugin(DEVMGR, plugin_config("a.sock", ["a0", "a1"]), "a")
    o.call("wait", resource=RES, capacity=2, allocatable=2)
    o.plugin(DEVMGR, plugin_config("b.sock", ["b0", "b1", "b2"]), "b")
    o.call("wait", resource=RES, capacity=3, allocatable=3)
    a.stop()
    # The stream end is seen within milliseconds; 3 s bounds the negative case.
    r = o.call("wait", check=False, resource=RES, allocatable=0, timeout_ms=3000)
    adm = o.call("admit", pod=pod("p1", 1))
    return {"allocatable_after_old_plugin_stops": r["allocatable"], "admit_after": adm["admitted"],
            "admit_message": adm["message"]}


def exp_already_connected(o):
    """The same plugin calls Register again on its socket while connected."""
    o.call("start")
    p = o.plugin(DEVMGR, plugin_config("a.sock", ["d0"]), "a")
    o.call("wait", resource=RES, capacity=1, allocatable=1)
    p.wait_calls(lambda c: c["kind"] == "sent" and c["method"] == "Register")
    p.command("register")
    regs = p.wait_calls(lambda c: c["kind"] == "sent" and c["method"] == "Register")
    deadline = time.monotonic() + 10
    while len(regs) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
        regs = [c for c in p.calls() if c["kind"] == "sent" and c["method"] == "Register"]
    if len(regs) < 2:
        raise OracleError("second Register not seen")
    err = regs[1].get("error", "")
    err = err.replace(o.dir, "<dir>").replace("/var/lib/kubelet/device-plugins", "<dir>")
    r = o.call("wait", check=False, resource=RES, allocatable=1, timeout_ms=2000)
    return {"second_register_error": err, "second_register_code": regs[1].get("code", "OK"),
            "allocatable_after": r["allocatable"]}


def exp_numa_hints(o):
    """Two NUMA nodes, devices only on node 0, best-effort policy: the hints."""
    o.call("start", numa_nodes=2, policy="best-effort")
    o.plugin(DEVMGR, plugin_config("a.sock", ["d0", "d1"], numa=[0]), "a")
    o.call("wait", resource=RES, capacity=2, allocatable=2)
    h = o.call("hints", pod=pod("p1", 1), container="c")["hints"]
    return {"hints": [(x["numa_nodes"], x["preferred"]) for x in h[RES]]}


def exp_empty_allocate(o):
    """Allocate answers with an empty message (no container responses)."""
    o.call("start")
    o.plugin(DEVMGR, plugin_config("a.sock", ["d0"], extra="faults:\n  allocate: {empty: true}\n"), "a")
    o.call("wait", resource=RES, capacity=1, allocatable=1)
    adm = o.call("admit", pod=pod("p1", 1))
    return {"admitted": adm["admitted"], "reason": adm["reason"], "message": adm["message"]}


def exp_empty_preferred(o):
    """GetPreferredAllocation answers with an empty message."""
    o.call("start")
    o.plugin(DEVMGR, plugin_config("a.sock", ["d0", "d1", "d2"], extra=(
        "options: {get_preferred_allocation_available: true}\n"
        "faults:\n  get_preferred_allocation: {empty: true}\n")), "a")
    o.call("wait", resource=RES, capacity=3, allocatable=3)
    adm = o.call("admit", pod=pod("p1", 2))
    return {"admitted": adm["admitted"], "reason": adm["reason"], "message": adm["message"],
            "devices": len(adm.get("devices", {}).get("c", {}).get(RES, []))}


def checkpoint_content(b):
    """The checkpoint without its checksum, device lists sorted."""
    if b is None:
        return None
    d = json.loads(b)
    d.pop("Checksum", None)
    data = d.get("Data", {})
    for k, v in (data.get("RegisteredDevices") or {}).items():
        data["RegisteredDevices"][k] = sorted(v)
    for e in data.get("PodDeviceEntries") or []:
        for k, v in (e.get("DeviceIDs") or {}).items():
            e["DeviceIDs"][k] = sorted(v)
    return json.dumps(d, sort_keys=True)


def exp_restart(o):
    """A kubelet restart on the same directory: the checkpoint keeps the
    running pod's devices; the plugin re-registers; a new pod gets the rest."""
    o.call("start")
    o.plugin(DEVMGR, plugin_config("a.sock", ["d0", "d1"]), "a")
    o.call("wait", resource=RES, capacity=2, allocatable=2)
    first = o.call("admit", pod=pod("p1", 1))["devices"]["c"][RES]
    before = o.checkpoint()
    o.call("restart")
    o.call("wait", resource=RES, capacity=2, allocatable=2)
    st = o.call("state")
    after = o.checkpoint()
    second = o.call("admit", pod=pod("p2", 1))
    got = second.get("devices", {}).get("c", {}).get(RES, [])
    return {"restored": st["pods"].get("p1", {}).get("c", {}).get(RES) == first,
            # Byte equality is not asserted: registeredDevices lists come from
            # Go sets (map order), and the checksum covers that order.
            "checkpoint_same_after_reregistration": checkpoint_content(before) == checkpoint_content(after),
            "checkpoint_bytes_equal": before == after,
            "second_admitted": second["admitted"], "disjoint": not set(got) & set(first)}


def exp_reset_extended(o):
    """ShouldResetExtendedResourceCapacity on a restart (the kubelet then
    zeroes the Node's extended resources): only for a directory that lists
    nothing; a corrupt checkpoint or a running plugin's socket keeps them."""
    o.call("start")
    p = o.plugin(DEVMGR, plugin_config("a.sock", ["d0"]), "a")
    o.call("wait", resource=RES, capacity=1, allocatable=1)
    o.call("admit", pod=pod("p1", 1))
    cp = os.path.join(o.dir, "kubelet_internal_checkpoint")
    with open(cp, "r+b") as f:  # a corrupt checkpoint: its checksum changed
        data = f.read().replace(b'"Checksum":', b'"Checksum":1')
        f.seek(0)
        f.write(data)
        f.truncate()
    corrupt = o.call("restart")["reset_extended_resources"]
    # The plugin registers again (its device list writes a checkpoint).
    o.call("wait", resource=RES, capacity=1, allocatable=1)
    os.unlink(cp)
    plugin_running = o.call("restart")["reset_extended_resources"]
    o.call("wait", resource=RES, capacity=1, allocatable=1)
    p.stop()
    o.call("wait", resource=RES, allocatable=0)
    if os.path.exists(cp):
        os.unlink(cp)
    empty = o.call("restart")["reset_extended_resources"]
    return {"corrupt_checkpoint": corrupt, "plugin_socket": plugin_running, "empty_dir": empty}


def exp_grace_log(o):
    """#133724: the log line at grace-period expiry (needs 5 min of wall clock)."""
    o.call("start")
    p = o.plugin(DEVMGR, plugin_config("a.sock", ["d0"]), "a")
    o.call("wait", resource=RES, capacity=1, allocatable=1)
    p.stop()
    o.call("wait", resource=RES, allocatable=0)
    time.sleep(5 * 60 + 2)  # the kubelet's endpointStopGracePeriod is a wall-clock constant
    st = o.call("state")
    lines = o.logs()
    return {"deleted": st["deleted"],
            "out_of_sync_logged": any("became out of sync" in l for l in lines)}


# expected(profile minor) -> dict of observed values that must match
EXPERIMENTS = [
    ("basic", exp_basic, lambda m: {"admitted": True, "devices": 1, "env_ids_match": True,
                                    "checkpoint_has_pod": True}),
    ("per_socket", exp_per_socket, lambda m: (
        {"allocatable_after_old_plugin_stops": 3, "admit_after": True} if m >= 37 else
        {"allocatable_after_old_plugin_stops": 0, "admit_after": False})),
    ("already_connected", exp_already_connected, lambda m: (
        {"second_register_error": "device plugin already connected: <dir>/a.sock",
         "second_register_code": "UNKNOWN", "allocatable_after": 1} if m >= 37 else
        {"second_register_error": "", "second_register_code": "OK", "allocatable_after": 1})),
    ("numa_hints", exp_numa_hints, lambda m: (
        {"hints": [([0], True)]} if m >= 36 else {"hints": [([0], True), ([0, 1], False)]})),
    # The response is printed with %v: gogo's String() before 1.34, protoc's
    # (empty text for an empty message) from 1.34 (#133028).
    ("empty_allocate", exp_empty_allocate, lambda m: {
        "admitted": False, "reason": "UnexpectedAdmissionError",
        "message": "Allocate failed due to no containers return in allocation response " + (
            ", which is unexpected" if m >= 34 else
            "&AllocateResponse{ContainerResponses:[]*ContainerAllocateResponse{},}, which is unexpected")}),
    ("restart", exp_restart, lambda m: {"restored": True, "second_admitted": True, "disjoint": True,
                                        "checkpoint_same_after_reregistration": True}),
    ("empty_preferred", exp_empty_preferred, lambda m: {"admitted": True, "devices": 2}),
    ("reset_extended", exp_reset_extended, lambda m: {"corrupt_checkpoint": False,
                                                      "plugin_socket": False, "empty_dir": True}),
]
SLOW = [
    ("grace_log", exp_grace_log, lambda m: {"deleted": [RES], "out_of_sync_logged": m <= 34}),
]


def normalize(v):
    return json.loads(json.dumps(v))


def main(argv):
    profiles = argv[1:] or ["1.33", "1.37"]
    only = os.environ.get("ORACLE_ONLY", "")
    exps = EXPERIMENTS + (SLOW if os.environ.get("ORACLE_SLOW") == "1" else [])
    if only:
        exps = [e for e in exps if e[0] in only.split(",")]
    if not os.access(DEVMGR, os.X_OK):
        print("SKIP: no devmgr binary at %s" % DEVMGR)
        return 77
    failures = 0
    for profile in profiles:
        binary = os.path.join(ORACLE_DIR, "kubelet-oracle-" + profile)
        if not os.access(binary, os.X_OK):
            print("SKIP: no %s (run make kubelet-oracle)" % binary)
            return 77
        for name, fn, expect in exps:
            try:
                o = Oracle(binary)
            except OracleError as e:
                if "private mount namespace" in str(e):
                    print("SKIP: %s" % e)
                    return 77
                raise
            try:
                got = normalize(fn(o))
            except OracleError as e:
                got = {"error": str(e)}
            finally:
                o.close()
            want = normalize(expect(minor(profile)))
            diff = {k: (want[k], got.get(k)) for k in want if got.get(k) != want[k]}
            status = "ok" if not diff else "DIFFERENT"
            print("%s %-18s %s %s" % (profile, name, status, json.dumps(got, sort_keys=True)))
            for k, (w, g) in diff.items():
                print("    %s: expected %s, observed %s" % (k, json.dumps(w), json.dumps(g)))
            failures += bool(diff)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
