"""The DRA side of the kubelet oracle, driven from Python (stdlib only).

DRADriver runs the project's test DRA driver (tests/dra-driver) on a socket
of its own; claim() and pod() build the API objects the oracle's DRA
manager reads (a resource.k8s.io/v1 ResourceClaim, allocated and reserved
for the pod, and a core/v1 Pod using it). See docs/oracle.md, "DRA".
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

from oracle_client import OracleError, stop_process

SERVICES = ["v1.DRAPlugin", "v1beta1.DRAPlugin"]


class DRADriver:
    """One tests/dra-driver process with its own socket and call log."""

    def __init__(self, binary, name, config=None, serve=None):
        self.name = name
        self.work = tempfile.mkdtemp(prefix="oracle-dra-driver.")
        self.socket = os.path.join(self.work, "dra.sock")
        self.call_log = os.path.join(self.work, "calls.jsonl")
        args = [binary, "--socket", self.socket, "--driver", name, "--log", self.call_log]
        if config is not None:
            path = os.path.join(self.work, "config.json")
            with open(path, "w") as f:
                json.dump(config, f)
            args += ["--config", path]
        if serve is not None:
            args += ["--serve", ",".join(serve)]
        self.stderr = open(os.path.join(self.work, "stderr"), "w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        line = self.proc.stdout.readline()  # the driver listens once it printed this
        if not line or not json.loads(line).get("ready"):
            self.stderr.seek(0)
            raise OracleError("dra-driver did not start: %r %s" % (line, self.stderr.read()[-2000:]))
        self._seen = 0

    def calls(self):
        """Every call received so far: {"method", "claims": [{namespace, uid, name}]}."""
        try:
            with open(self.call_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def new_calls(self):
        """The calls received since the last new_calls()."""
        all_calls = self.calls()
        out = all_calls[self._seen:]
        self._seen = len(all_calls)
        return out

    def wait_call(self, pred, timeout):
        """The first call matching pred, waiting up to timeout seconds (for
        calls the kubelet makes in the background); None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            for c in self.calls():
                if pred(c):
                    return c
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def stop(self):
        stop_process(self.proc)
        self.proc.stdout.close()
        self.stderr.close()
        shutil.rmtree(self.work, ignore_errors=True)


def short_method(method):
    """/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources -> v1.NodePrepareResources"""
    service, _, rpc = method.strip("/").partition("/")
    return service.split(".")[-2] + "." + rpc


def claim(name, uid, pod_name, pod_uid, results, namespace="default"):
    """An allocated ResourceClaim reserved for one pod. results: a list of
    (request, driver, pool, device) or dicts with extra result fields."""
    out = []
    for r in results:
        if isinstance(r, dict):
            out.append(r)
        else:
            request, driver, pool, device = r
            out.append({"request": request, "driver": driver, "pool": pool, "device": device})
    requests = sorted({r["request"] for r in out})
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"devices": {"requests": [
            {"name": q, "exactly": {"deviceClassName": "example.com"}} for q in requests]}},
        "status": {
            "allocation": {"devices": {"results": out}},
            "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod_uid}],
        },
    }


def pod(name, uid, claims, containers, namespace="default"):
    """claims: {pod claim name: ResourceClaim name}; containers: {container
    name: [pod claim name or (pod claim name, request)]}."""
    spec_containers = []
    for cname, uses in containers.items():
        refs = []
        for u in uses:
            if isinstance(u, tuple):
                refs.append({"name": u[0], "request": u[1]})
            else:
                refs.append({"name": u})
        spec_containers.append({"name": cname, "image": "none", "resources": {"claims": refs}})
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {
            "resourceClaims": [{"name": k, "resourceClaimName": v} for k, v in claims.items()],
            "containers": spec_containers,
        },
    }


def dra_checkpoint(oracle):
    """The bytes of dra_manager_state, or None."""
    r = oracle.call("dra_checkpoint")
    return base64.b64decode(r["bytes"]) if r.get("exists") else None
