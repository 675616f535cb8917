#!/usr/bin/env python3
"""The DRA side of the kubelet oracle: a check that it works, and the
experiments that settle DRA facts per release.

Each experiment runs the kubelet's own DRA manager of one release (a
kubelet-oracle binary, see docs/oracle.md) on a fresh oracle process with
fresh tests/dra-driver processes.

usage: dra_test.py PROFILE [PROFILE...]          the check (ctest)
       dra_test.py --facts PROFILE [PROFILE...]  every experiment, results as JSON
       dra_test.py --testdata DIR PROFILE...     also write the checkpoints the
                                                 kubelet wrote, and DIR/MANIFEST.tsv
  env ORACLE_DIR      directory with kubelet-oracle-<profile> (default build/kubelet-oracle)
      DRA_DRIVER_BIN  the test driver (default build/dra-driver/dra-driver)
Exit 0: as expected; 1: a difference (printed); 77: an oracle binary or the
driver is missing.
"""
import base64
import json
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_client import Oracle, OracleError  # noqa: E402
from dra_client import DRADriver, SERVICES, claim, pod, dra_checkpoint, short_method  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ORACLE_DIR = os.environ.get("ORACLE_DIR", os.path.join(ROOT, "build", "kubelet-oracle"))
DRIVER = os.environ.get("DRA_DRIVER_BIN", os.path.join(ROOT, "build", "dra-driver", "dra-driver"))
D1 = "gpu.example.com"
D2 = "nic.example.com"


def minor(profile):
    return int(profile.split(".")[1])


class Run:
    """One oracle and its drivers; closes them all."""

    def __init__(self, binary):
        self.oracle = Oracle(binary)
        self.drivers = []

    def driver(self, name, config=None, serve=None, register=SERVICES):
        d = DRADriver(DRIVER, name, config, serve)
        self.drivers.append(d)
        if register is not None:
            r = self.oracle.call("dra_register", driver=name, endpoint=d.socket, services=register)
            if not r.get("registered"):
                raise OracleError("dra_register %s: %s" % (name, r.get("error")))
        return d

    def call(self, op, **kw):
        return self.oracle.call(op, **kw)

    def close(self):
        for d in self.drivers:
            d.stop()
        self.oracle.close()


def calls_of(driver):
    return [[short_method(c["method"]), [x["name"] for x in c.get("claims", [])]] for c in driver.new_calls()]


def checkpoint_json(run):
    raw = dra_checkpoint(run.oracle)
    if raw is None:
        return None, None
    outer = json.loads(raw)
    return raw, outer


TWO_DEVICES = {"claims": {"uid-claim-1": {"devices": [
    {"request_names": ["gpu-a"], "pool_name": "pool-0", "device_name": "dev-0",
     "cdi_device_ids": ["gpu.example.com/gpu=dev-0"]},
    {"request_names": ["gpu-b"], "pool_name": "pool-0", "device_name": "dev-1",
     "cdi_device_ids": ["gpu.example.com/gpu=dev-1", "gpu.example.com/gpu=common"]}]}}}

SHARED = {"claims": {"uid-claim-1": {"devices": [
    {"request_names": ["gpu-a"], "pool_name": "pool-0", "device_name": "dev-0",
     "cdi_device_ids": ["gpu.example.com/gpu=dev-0"], "share_id": "share-uid-0"}]}}}


def one_claim_pod(results):
    c = claim("claim-1", "uid-claim-1", "pod-1", "uid-pod-1", results)
    p = pod("pod-1", "uid-pod-1", {"gpus": "claim-1"},
            {"ctr-a": [("gpus", "gpu-a")], "ctr-b": [("gpus", "gpu-b")], "ctr-all": ["gpus"]})
    return c, p


def exp_basic(binary):
    """register -> put claim -> prepare -> get resources -> unprepare, one
    claim of one driver with two devices; the checkpoint after each step."""
    run = Run(binary)
    try:
        d = run.driver(D1, TWO_DEVICES)
        c, p = one_claim_pod([("gpu-a", D1, "pool-0", "dev-0"), ("gpu-b", D1, "pool-0", "dev-1")])
        run.call("dra_put_claim", claim=c)
        prep = run.call("dra_prepare", pod=p)
        after_prepare = calls_of(d)
        metrics_prepared = run.call("dra_metrics")["text"]
        raw, outer = checkpoint_json(run)
        res = {name: run.call("dra_get_resources", uid="uid-pod-1", container=name)
               for name in ("ctr-a", "ctr-b", "ctr-all")}
        api = run.call("dra_api_calls")["calls"]
        again = run.call("dra_prepare", uid="uid-pod-1")
        after_again = calls_of(d)
        unprep = run.call("dra_unprepare", uid="uid-pod-1")
        after_unprepare = calls_of(d)
        metrics_unprepared = run.call("dra_metrics")["text"]
        raw2, outer2 = checkpoint_json(run)
        return {
            "prepared": prep.get("prepared"), "prepare_error": prep.get("error"),
            "calls_prepare": after_prepare,
            "cdi": {k: v.get("cdi_devices") for k, v in res.items()},
            "api_calls": [c for c in api if c["resource"] == "resourceclaims"],
            "second_prepare_calls": after_again, "second_prepared": again.get("prepared"),
            "unprepared": unprep.get("unprepared"), "calls_unprepare": after_unprepare,
            "checkpoint": raw.decode() if raw else None,
            "checkpoint_data": json.loads(outer["Data"]) if outer else None,
            "checksum_is_crc32_of_data": outer is not None and
            outer["Checksum"] == zlib.crc32(outer["Data"].encode()),
            "checkpoint_after_unprepare": raw2.decode() if raw2 else None,
            "metrics_prepared": metrics_prepared, "metrics_unprepared": metrics_unprepared,
        }
    finally:
        run.close()


def exp_share_id(binary):
    """One device with a ShareID in the driver's answer (the field exists in
    the v1 API; the checkpoint keeps it from 1.35)."""
    run = Run(binary)
    try:
        run.driver(D1, SHARED)
        c, p = one_claim_pod([("gpu-a", D1, "pool-0", "dev-0")])
        run.call("dra_put_claim", claim=c)
        prep = run.call("dra_prepare", pod=p)
        raw, _ = checkpoint_json(run)
        return {"prepared": prep.get("prepared"), "error": prep.get("error"),
                "checkpoint": raw.decode() if raw else None}
    finally:
        run.close()


def exp_corrupt(binary):
    """A checkpoint with a wrong checksum, and one that is not JSON, then a
    restart of the manager on that directory."""
    out = {}
    run = Run(binary)
    try:
        run.driver(D1, TWO_DEVICES)
        c, p = one_claim_pod([("gpu-a", D1, "pool-0", "dev-0")])
        run.call("dra_put_claim", claim=c)
        run.call("dra_prepare", pod=p)
        raw, outer = checkpoint_json(run)
        outer["Checksum"] = (outer["Checksum"] + 1) % (1 << 32)
        bad = json.dumps(outer, separators=(",", ":")).encode()
        run.call("dra_write_checkpoint", bytes=base64.b64encode(bad).decode())
        out["wrong_checksum"] = run.call("dra_restart").get("error")
        run.call("dra_write_checkpoint", bytes=base64.b64encode(b"{not json").decode())
        out["not_json"] = run.call("dra_restart").get("error")
        run.call("dra_write_checkpoint", bytes="")
        out["empty_file"] = run.call("dra_restart").get("error")
        return out
    finally:
        run.close()


def exp_batching(binary, repeats=5):
    """Pod with claims c1, c2 (driver 1) and c3 (results of drivers 1 and
    2): the NodePrepareResources calls each driver gets, and the order of
    the drivers (Go map order, so several runs)."""
    seen = []
    for _ in range(repeats):
        run = Run(binary)
        try:
            order = []
            d1 = run.driver(D1)
            d2 = run.driver(D2)
            claims = {"a": "c1", "b": "c2", "c": "c3"}
            run.call("dra_put_claim", claim=claim("c1", "u1", "pod-1", "uid-pod-1", [("r", D1, "p", "d1")]))
            run.call("dra_put_claim", claim=claim("c2", "u2", "pod-1", "uid-pod-1", [("r", D1, "p", "d2")]))
            run.call("dra_put_claim", claim=claim("c3", "u3", "pod-1", "uid-pod-1",
                                                  [("r", D1, "p", "d3"), ("s", D2, "q", "n1")]))
            p = pod("pod-1", "uid-pod-1", claims, {"ctr": ["a", "b", "c"]})
            prep = run.call("dra_prepare", pod=p)
            logs = run.oracle.logs()
            c1, c2 = calls_of(d1), calls_of(d2)
            # Which driver was called first: the driver log lines are not
            # ordered across processes, the kubelet's own log is.
            for line in logs:
                for name in (D1, D2):
                    if "NodePrepareResources" in line and name in line and name not in order:
                        order.append(name)
            unprep = run.call("dra_unprepare", uid="uid-pod-1")
            seen.append({"prepared": prep.get("prepared"), "error": prep.get("error"), "driver_order": order,
                         D1: c1, D2: c2, "unprepared": unprep.get("unprepared"),
                         "unprepare_" + D1: calls_of(d1), "unprepare_" + D2: calls_of(d2)})
        finally:
            run.close()
    return seen


def exp_restart(binary):
    """Prepare, then a new manager on the same state directory (the drivers
    register again), then the pod's prepare again: is NodePrepareResources
    called again?"""
    run = Run(binary)
    try:
        d = run.driver(D1, TWO_DEVICES)
        c, p = one_claim_pod([("gpu-a", D1, "pool-0", "dev-0"), ("gpu-b", D1, "pool-0", "dev-1")])
        run.call("dra_put_claim", claim=c)
        run.call("dra_prepare", pod=p)
        first = calls_of(d)
        before, _ = checkpoint_json(run)
        r = run.call("dra_restart")
        after_restart, _ = checkpoint_json(run)
        res_before_prepare = run.call("dra_get_resources", uid="uid-pod-1", container="ctr-all")
        prep = run.call("dra_prepare", uid="uid-pod-1")
        second = calls_of(d)
        after, _ = checkpoint_json(run)
        return {"restart": {k: r.get(k) for k in ("started", "error", "register_errors")},
                "first_calls": first, "calls_after_restart": second, "prepared": prep.get("prepared"),
                "cdi_before_prepare": res_before_prepare.get("cdi_devices"),
                "cdi_error_before_prepare": res_before_prepare.get("error"),
                "checkpoint_same_after_restart": before == after_restart,
                "checkpoint_before": before.decode() if before else None,
                "checkpoint_after_prepare": after.decode() if after else None,
                "checkpoint_same_after_prepare": before == after}
    finally:
        run.close()


def exp_services(binary):
    """The service the kubelet picks from a driver's list, and the refusals."""
    out = {}
    for key, services in (("v1_first", ["v1.DRAPlugin", "v1beta1.DRAPlugin"]),
                          ("v1beta1_first", ["v1beta1.DRAPlugin", "v1.DRAPlugin"]),
                          ("unknown_then_v1beta1", ["v1alpha4.DRAPlugin", "v1beta1.DRAPlugin"]),
                          ("health_first", ["v1alpha1.DRAResourceHealth", "v1.DRAPlugin"])):
        run = Run(binary)
        try:
            d = run.driver(D1, register=services)
            run.call("dra_put_claim", claim=claim("c1", "u1", "pod-1", "uid-pod-1", [("r", D1, "p", "d1")]))
            prep = run.call("dra_prepare", pod=pod("pod-1", "uid-pod-1", {"a": "c1"}, {"ctr": ["a"]}))
            out[key] = {"prepared": prep.get("prepared"), "error": prep.get("error"),
                        "methods": [c[0] for c in calls_of(d)]}
        finally:
            run.close()
    for key, services in (("empty", []), ("unsupported", ["v1alpha4.DRAPlugin"]),
                          ("health_only", ["v1alpha1.DRAResourceHealth"])):
        run = Run(binary)
        try:
            d = run.driver(D1, register=None)
            r = run.call("dra_register", driver=D1, endpoint=d.socket, services=services)
            out[key] = {"registered": r.get("registered"), "step": r.get("step"), "error": r.get("error")}
        finally:
            run.close()
    run = Run(binary)
    try:
        d = run.driver(D1)
        r = run.call("dra_register", driver=D1, endpoint=d.socket, services=SERVICES)
        out["same_endpoint_twice"] = {"registered": r.get("registered"), "step": r.get("step"), "error": r.get("error")}
    finally:
        run.close()
    return out


def exp_unprepare_without_claim(binary):
    """Unprepare after the claim object was deleted from the API."""
    run = Run(binary)
    try:
        d = run.driver(D1)
        run.call("dra_put_claim", claim=claim("c1", "u1", "pod-1", "uid-pod-1", [("r", D1, "p", "d1")]))
        p = pod("pod-1", "uid-pod-1", {"a": "c1"}, {"ctr": ["a"]})
        run.call("dra_prepare", pod=p)
        calls_of(d)
        run.call("dra_delete_claim", namespace="default", name="c1")
        r = run.call("dra_unprepare", pod=p)
        return {"unprepared": r.get("unprepared"), "error": r.get("error"), "calls": calls_of(d)}
    finally:
        run.close()


ALL_SERVICES = ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"]


def exp_health(binary, wait=5.0):
    """Which health stream the kubelet opens for what the driver advertises
    (the driver serves all of them), and the pod status it derives. An
    absent stream is judged after waiting `wait` seconds."""
    out = {}
    for key, services in (("advertised_v1alpha1", ["v1.DRAPlugin", "v1alpha1.DRAResourceHealth"]),
                          ("advertised_both", ["v1.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"]),
                          ("not_advertised", ["v1.DRAPlugin"])):
        run = Run(binary)
        try:
            d = run.driver(D1, TWO_DEVICES, serve=ALL_SERVICES, register=services)
            c = d.wait_call(lambda c: c["method"].endswith("/NodeWatchResources"), wait)
            cl, p = one_claim_pod([("gpu-a", D1, "pool-0", "dev-0"), ("gpu-b", D1, "pool-0", "dev-1")])
            run.call("dra_put_claim", claim=cl)
            run.call("dra_prepare", pod=p)
            st = run.call("dra_health_status", uid="uid-pod-1")
            out[key] = {"stream": short_method(c["method"]) if c else None, "status": st.get("containers")}
        finally:
            run.close()
    return out


EXPERIMENTS = {
    "basic": exp_basic, "share_id": exp_share_id, "corrupt": exp_corrupt, "batching": exp_batching,
    "restart": exp_restart, "services": exp_services, "unprepare_without_claim": exp_unprepare_without_claim,
    "health": exp_health,
}


def metric_values(text):
    """Series -> value of a text exposition, and the HELP/TYPE lines."""
    values, meta = {}, []
    for line in text.splitlines():
        if line.startswith("#"):
            meta.append(line)
        elif line:
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values, meta


# The DRA histograms' bucket bounds as the kubelet's /metrics prints them
# (ExponentialBucketsRange(.1, 40, 15)); devmgr's DraDurationBuckets.
DRA_LE = ["0.1", "0.1534127404634391", "0.23535468936502524", "0.36106407876409946",
          "0.5539182980610752", "0.849781240983936", "1.303672689737678", "1.9999999999999993",
          "3.0682548092687805", "4.7070937873005025", "7.221281575281985", "11.078365961221499",
          "16.995624819678714", "26.07345379475354", "39.99999999999997", "+Inf"]


def check_metrics(profile, r, expect):
    """The DRA metrics of exp_basic: two PrepareResources (the second a
    no-op) and one UnprepareResources, each RPC once, claims in use."""
    prepared, _ = metric_values(r["metrics_prepared"])
    after, meta = metric_values(r["metrics_unprepared"])
    expect("claims in use after prepare",
           {k: v for k, v in prepared.items() if k.startswith("dra_resource_claims_in_use")},
           {'dra_resource_claims_in_use{driver_name="<any>"}': 1.0,
            'dra_resource_claims_in_use{driver_name="%s"}' % D1: 1.0})
    expect("claims in use after unprepare",
           {k: v for k, v in after.items() if k.startswith("dra_resource_claims_in_use")},
           {'dra_resource_claims_in_use{driver_name="<any>"}': 0.0})
    # 1.34 and 1.35 label a success is_error="true" (strconv.FormatBool(err == nil)).
    ok = "true" if minor(profile) <= 35 else "false"
    ops = {k: v for k, v in after.items() if k.startswith("dra_operations_duration_seconds_count")}
    expect("operations", ops, {
        'dra_operations_duration_seconds_count{is_error="%s",operation_name="PrepareResources"}' % ok: 2.0,
        'dra_operations_duration_seconds_count{is_error="%s",operation_name="UnprepareResources"}' % ok: 1.0})
    method = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
    rpcs = {k: v for k, v in after.items() if k.startswith("dra_grpc_operations_duration_seconds_count")}
    expect("gRPC calls", rpcs, {
        'dra_grpc_operations_duration_seconds_count{driver_name="%s",grpc_status_code="OK",method_name="%s%s"}'
        % (D1, method, rpc): 1.0 for rpc in ("NodePrepareResources", "NodeUnprepareResources")})
    les = [k.split('le="')[1].split('"')[0] for k in after
           if k.startswith("dra_operations_duration_seconds_bucket") and "UnprepareResources" in k]
    expect("bucket bounds", les, DRA_LE)
    types = sorted(m for m in meta if m.startswith("# TYPE"))
    expect("families", types, ["# TYPE dra_grpc_operations_duration_seconds histogram",
                               "# TYPE dra_operations_duration_seconds histogram",
                               "# TYPE dra_resource_claims_in_use gauge"])


def check(profile, binary):
    """The ctest: the basic sequence against the test driver."""
    r = exp_basic(binary)
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append("%s: got %r, want %r" % (what, got, want))

    expect("prepared", r["prepared"], True)
    expect("NodePrepareResources calls", r["calls_prepare"], [["v1.NodePrepareResources", ["claim-1"]]])
    expect("CDI IDs of ctr-a (request gpu-a)", r["cdi"]["ctr-a"], ["gpu.example.com/gpu=dev-0"])
    expect("CDI IDs of ctr-b (request gpu-b)", r["cdi"]["ctr-b"],
           ["gpu.example.com/gpu=dev-1", "gpu.example.com/gpu=common"])
    expect("CDI IDs of ctr-all (whole claim)", sorted(r["cdi"]["ctr-all"]),
           sorted(["gpu.example.com/gpu=dev-0", "gpu.example.com/gpu=dev-1", "gpu.example.com/gpu=common"]))
    expect("claim GETs", [(c["verb"], c["version"], c["name"]) for c in r["api_calls"]],
           [("get", "resource.k8s.io/v1", "claim-1")])
    expect("second prepare", (r["second_prepared"], r["second_prepare_calls"]), (True, []))
    expect("unprepared", r["unprepared"], True)
    expect("NodeUnprepareResources calls", r["calls_unprepare"], [["v1.NodeUnprepareResources", ["claim-1"]]])
    expect("checksum = CRC32-IEEE of Data", r["checksum_is_crc32_of_data"], True)
    data = r["checkpoint_data"] or {}
    expect("checkpoint kind", (data.get("kind"), data.get("apiVersion")),
           ("DRACheckpoint", "checkpoint.dra.kubelet.k8s.io/v1"))
    entries = data.get("ClaimInfoStateList")
    if not isinstance(entries, list) or len(entries) != 1:
        problems.append("checkpoint list ClaimInfoStateList: %r" % data)
    else:
        e = entries[0]
        expect("checkpoint entry", (e.get("ClaimUID"), e.get("ClaimName"), e.get("Namespace"), e.get("PodUIDs")),
               ("uid-claim-1", "claim-1", "default", {"uid-pod-1": {}}))
        devs = e.get("DriverState", {}).get(D1, {}).get("Devices") or []
        expect("checkpoint devices", [(x["DeviceName"], x["RequestNames"], x["CDIDeviceIDs"]) for x in devs],
               [("dev-0", ["gpu-a"], ["gpu.example.com/gpu=dev-0"]),
                ("dev-1", ["gpu-b"], ["gpu.example.com/gpu=dev-1", "gpu.example.com/gpu=common"])])
    after = json.loads(json.loads(r["checkpoint_after_unprepare"] or '{"Data":"{}"}')["Data"])
    expect("checkpoint after unprepare", after.get("ClaimInfoStateList"), [])
    check_metrics(profile, r, expect)
    for p in problems:
        print("FAIL %s: %s" % (profile, p))
    if not problems:
        print("ok   %s: register, put claim, prepare (1 v1 call), CDI IDs per request, unprepare, checkpoint, "
              "DRA metrics" % profile)
    return not problems


def write_testdata(directory, profile, release, results):
    """The checkpoints the kubelet's code wrote, with MANIFEST.tsv rows."""
    os.makedirs(directory, exist_ok=True)
    rows = []
    cases = [("two-devices", results["basic"]["checkpoint"],
              "one claim (uid-claim-1, claim-1, default) of pod uid-pod-1, driver gpu.example.com, two devices "
              "(dev-0: request gpu-a, 1 CDI ID; dev-1: request gpu-b, 2 CDI IDs), after NodePrepareResources"),
             ("empty", results["basic"]["checkpoint_after_unprepare"],
              "the same manager after NodeUnprepareResources: no entries")]
    again = results["restart"].get("checkpoint_after_prepare")
    if again:
        cases.append(("restart-prepare", again,
                      "two-devices' claim, then a new manager on the same state directory, the driver "
                      "registered again and the pod's prepare again (NodePrepareResources answered the same "
                      "two devices)"))
    shared = results["share_id"]["checkpoint"]
    if shared:
        kept = "stored" if "ShareID" in shared else "not stored: the release's checkpoint Device has no ShareID"
        cases.append(("share-id", shared,
                      "one claim, one device (dev-0, request gpu-a) whose NodePrepareResources answer had "
                      "share_id share-uid-0 (%s)" % kept))
    for case, text, desc in cases:
        name = "oracle-%s-%s.json" % (profile, case)
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
        rows.append((name, profile, release, desc, str(json.loads(text)["Checksum"])))
    manifest = os.path.join(directory, "MANIFEST.tsv")
    old = []
    if os.path.exists(manifest):
        with open(manifest) as f:
            old = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("file\t")]
    keep = {r[0]: r for r in old}
    for r in rows:
        keep[r[0]] = r
    with open(manifest, "w") as f:
        f.write("file\tprofile\trelease\tdescription\tchecksum\n")
        for name in sorted(keep):
            f.write("\t".join(keep[name]) + "\n")


def main(argv):
    facts = False
    testdata = None
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--facts":
            facts = True
        elif argv[i] == "--testdata":
            testdata = argv[i + 1]
            facts = True
            i += 1
        else:
            args.append(argv[i])
        i += 1
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    if not os.access(DRIVER, os.X_OK):
        print("skip: no test DRA driver at %s (bash tests/dra-driver/build.sh)" % DRIVER)
        return 77
    ok = True
    report = {}
    for profile in args:
        binary = os.path.join(ORACLE_DIR, "kubelet-oracle-" + profile)
        if not os.access(binary, os.X_OK):
            print("skip: no oracle for %s at %s (make kubelet-oracle ORACLE_PROFILES=%s)" % (profile, binary, profile))
            return 77
        if not facts:
            ok = check(profile, binary) and ok
            continue
        results = {}
        for name, fn in EXPERIMENTS.items():
            try:
                results[name] = fn(binary)
            except OracleError as e:
                results[name] = {"oracle_error": str(e)}
        o = Oracle(binary)
        release = o.kubernetes
        o.close()
        report[profile] = {"release": release, "results": results}
        if testdata:
            write_testdata(testdata, profile, release, results)
    if facts:
        json.dump(report, sys.stdout, indent=1, sort_keys=True)
        print()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
