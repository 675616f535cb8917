#!/usr/bin/env python3
"""Issue 8: a client written with another gRPC implementation (grpcio, Python)
lists pods and allocatable devices from `devmgr serve`'s PodResources socket
and sees what the status file shows.

The protobuf messages are encoded and decoded by hand (no generated stubs, no
protobuf runtime needed): grpc's generic unary calls carry raw bytes.
Exit 77 (skip) when grpcio is missing.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import grpc
except ImportError:
    print("SKIP: python grpc module not installed (Debian: python3-grpcio)")
    sys.exit(77)

BIN = os.environ.get("DEVMGR_BIN")
if not BIN:
    print("DEVMGR_BIN is not set")
    sys.exit(1)

# ---- a tiny protobuf wire-format reader/writer ------------------------------


def read_varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf):
    """Yields (field_number, value): ints for varints, bytes for
    length-delimited fields."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = read_varint(buf, pos)
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            v, pos = bytes(buf[pos:pos + n]), pos + n
        elif wt == 1:
            v, pos = bytes(buf[pos:pos + 8]), pos + 8
        elif wt == 5:
            v, pos = bytes(buf[pos:pos + 4]), pos + 4
        else:
            raise ValueError("unexpected wire type %d" % wt)
        yield num, v


def write_string(num, s):
    data = s.encode()
    out = bytearray([(num << 3) | 2])
    n = len(data)
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            break
    return bytes(out) + data


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def container_devices(buf):
    """ContainerDevices{1 resource_name, 2 device_ids, 3 topology{1 nodes{1 ID}}}."""
    d = {"resource_name": "", "device_ids": [], "numa": None}
    for num, v in fields(buf):
        if num == 1:
            d["resource_name"] = v.decode()
        elif num == 2:
            d["device_ids"].append(v.decode())
        elif num == 3:
            d["numa"] = []
            for tn, tv in fields(v):
                if tn == 1:
                    node_id = 0
                    for nn, nv in fields(tv):
                        if nn == 1:
                            node_id = signed64(nv)
                    d["numa"].append(node_id)
    return d


def pod_resources(buf):
    """PodResources{1 name, 2 namespace, 3 containers{1 name, 2 devices}}."""
    p = {"name": "", "namespace": "", "containers": []}
    for num, v in fields(buf):
        if num == 1:
            p["name"] = v.decode()
        elif num == 2:
            p["namespace"] = v.decode()
        elif num == 3:
            c = {"name": "", "devices": []}
            for cn, cv in fields(v):
                if cn == 1:
                    c["name"] = cv.decode()
                elif cn == 2:
                    c["devices"].append(container_devices(cv))
            p["containers"].append(c)
    return p


# ---- the test ---------------------------------------------------------------

PLUGIN = """resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3}
  - {id: gpu-4, health: Unhealthy, numa: [1]}
"""

POD = """apiVersion: v1
kind: Pod
metadata:
  name: cuda
  namespace: ml
spec:
  initContainers:
  - name: proxy
    image: busybox
    restartPolicy: Always
    resources:
      limits:
        example.com/gpu: 1
  containers:
  - name: main
    image: busybox
    resources:
      limits:
        example.com/gpu: 2
"""


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def wait_for(pred, what, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def read_status(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    tmp = tempfile.mkdtemp(prefix="dmpy")
    proc = None
    try:
        dp = os.path.join(tmp, "device-plugins")
        manifests = os.path.join(tmp, "manifests")
        os.makedirs(dp)
        os.makedirs(manifests)
        cfg = os.path.join(tmp, "gpu.yaml")
        with open(cfg, "w") as f:
            f.write(PLUGIN)
        status = os.path.join(tmp, "status.json")
        # The kubelet layout: ROOT/device-plugins -> ROOT/pod-resources/kubelet.sock.
        sock = os.path.join(tmp, "pod-resources", "kubelet.sock")
        proc = subprocess.Popen(
            [BIN, "serve", "--dir", dp, "--fsync", "false",
             "--plugin", "%s sample-plugin --config %s --dir %s" % (BIN, cfg, dp),
             "--pod-manifest-path", manifests, "--pod-manifest-poll", "0.1",
             "--status-file", status, "--node-status-interval", "0.2",
             "--metrics-address", "127.0.0.1:0",
             "--feature-gates", "KubeletPodResourcesGet=true"],
            stderr=open(os.path.join(tmp, "serve.log"), "w"))

        def registered():
            s = read_status(status)
            r = (s or {}).get("resources", {}).get("example.com/gpu")
            return r is not None and r.get("allocatable") == 4
        wait_for(registered, "the plugin to register 4 healthy devices")
        with open(os.path.join(manifests, "cuda.yaml"), "w") as f:
            f.write(POD)

        def running():
            s = read_status(status)
            pods = [p for p in (s or {}).get("pods", []) if p["name"] == "cuda"]
            return pods[0] if pods and pods[0]["phase"] == "Running" else None
        pod = wait_for(running, "pod ml/cuda to run")
        want = {c["name"]: sorted(c["devices"].get("example.com/gpu", []))
                for c in pod["containers"]}

        wait_for(lambda: os.path.exists(sock), "the PodResources socket")
        channel = grpc.insecure_channel("unix:" + sock)
        ident = lambda b: b  # noqa: E731 (raw bytes both ways)

        def call(method, req=b""):
            rpc = channel.unary_unary("/v1.PodResourcesLister/" + method,
                                      request_serializer=ident, response_deserializer=ident)
            return rpc(req, timeout=10)

        # List.
        pods = [pod_resources(v) for n, v in fields(call("List")) if n == 1]
        if [(p["namespace"], p["name"]) for p in pods] != [("ml", "cuda")]:
            fail("List: pods %r" % pods)
        got = {}
        for c in pods[0]["containers"]:
            got[c["name"]] = sorted(i for d in c["devices"] for i in d["device_ids"])
            for d in c["devices"]:
                if d["resource_name"] != "example.com/gpu" or len(d["device_ids"]) != 1:
                    fail("List: not flattened: %r" % d)
        if [c["name"] for c in pods[0]["containers"]] != ["proxy", "main"]:
            fail("List: container order %r" % pods[0]["containers"])
        if got != want:
            fail("List: devices %r, status file says %r" % (got, want))

        # GetAllocatableResources: the healthy devices with their topology.
        devs = [container_devices(v) for n, v in fields(call("GetAllocatableResources")) if n == 1]
        alloc = sorted((d["device_ids"][0], tuple(d["numa"]) if d["numa"] is not None else None)
                       for d in devs)
        if alloc != [("gpu-0", (0,)), ("gpu-1", (0,)), ("gpu-2", (1,)), ("gpu-3", None)]:
            fail("GetAllocatableResources: %r" % alloc)
        s = read_status(status)
        healthy = sum(r["healthy"] for r in s["resources"].values())
        if healthy != len(alloc):
            fail("status file healthy=%d, allocatable entries %d" % (healthy, len(alloc)))

        # Get (gate on), and a missing pod's error as the kubelet words it.
        req = write_string(1, "cuda") + write_string(2, "ml")
        got_pod = [pod_resources(v) for n, v in fields(call("Get", req)) if n == 1]
        if len(got_pod) != 1 or got_pod[0]["name"] != "cuda":
            fail("Get: %r" % got_pod)
        try:
            call("Get", write_string(1, "nope") + write_string(2, "ml"))
            fail("Get nope: no error")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNKNOWN or e.details() != "pod nope in namespace ml not found":
                fail("Get nope: %s %r" % (e.code(), e.details()))
        channel.close()
        print("PASS")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
