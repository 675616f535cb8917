#!/usr/bin/env bash
# e2e: DRA on the node. `devmgr serve` (kubelet 1.37, the embedded API
# endpoint) runs `devmgr sample-dra-driver` as its driver; a static pod whose
# manifest names a ResourceClaimTemplate (the documentation's examples) gets
# a claim made from the template, allocated from the driver's slice, reserved
# and prepared; the container's CDI device IDs are in the status file, and
# its claim in the PodResources answers (List and Get, table and JSON). A
# restarted serve (the API objects and dra_manager_state kept, as a cluster
# keeps them across a kubelet restart) prepares the claim again; deleting the
# pod unprepares it and deletes the claim. At each stage serve's /metrics has
# the kubelet's DRA metrics: claims in use per driver, the pod's
# PrepareResources / UnprepareResources, and one gRPC observation per
# NodePrepareResources / NodeUnprepareResources the driver logged.
#
# DRA_DRIVER=upstream runs the same flow with the e2e DRA test driver of
# Kubernetes from ${PEERS_DIR} (skipped, 77, when it is not built), release
# DRA_DRIVER_RELEASE, under the kubelet version DRA_KUBELET_VERSION (1.37).
#
# PRIVATE_MOUNT=1 runs the driver with its default, hard-coded paths
# (/var/lib/kubelet/plugins_registry, /var/lib/kubelet/plugins/<driver>,
# /var/run/cdi) under `serve --private-mount`: its registration, DRA socket
# and CDI specs land in serve's directories (ROOT/plugins_registry,
# ROOT/plugins, ROOT/cdi), the endpoint it registers is dialled there, and the
# host's /var/lib/kubelet, /run/cdi and /etc/cdi are left exactly as they
# were. Skipped (77) where no private mount namespace can be made.
set -euo pipefail
: "${DEVMGR_BIN:?}"
mode=${DRA_DRIVER:-sample}
private=${PRIVATE_MOUNT:-0}
kubelet_version=${DRA_KUBELET_VERSION:-1.37}
if [[ $mode == upstream ]]; then
  : "${PEERS_DIR:?}"
  peer="$PEERS_DIR/dra-test-driver-${DRA_DRIVER_RELEASE:-v1.37.2}"
  [[ -x "$peer" ]] || { echo "SKIP: $peer is not built (ctest peers.build)"; exit 77; }
fi
tmp=$(mktemp -d /tmp/dmdraXXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f "$tmp/serve.err" ]] && tail -40 "$tmp/serve.err" >&2; exit 1; }
wait_for() {  # wait_for DESCRIPTION COMMAND...: polls up to 60 s while serve runs
  local what=$1; shift
  for _ in $(seq 1 600); do
    "$@" && return 0
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      if grep -q -- "--private-mount needs" "$tmp/serve.err"; then
        echo "SKIP: $(grep -- "--private-mount needs" "$tmp/serve.err" | head -1)"
        exit 77
      fi
      fail "serve exited while waiting for $what"
    fi
    sleep 0.1
  done
  fail "timed out waiting for $what"
}
source "$(dirname "$0")/lib/host_paths.bash"
host_before=$(host_paths)

root="$tmp/root"
cdi="$tmp/cdi"
[[ $private == 1 ]] && cdi="$root/cdi"  # serve's --cdi-dir default: ROOT/cdi
mkdir -p "$root/device-plugins" "$root/plugins_registry" "$root/plugins" "$cdi" "$tmp/pods"
if [[ $private == 1 ]]; then
  # The drivers' defaults: the kubelet's paths, bound to the above.
  dirs_upstream="" dirs_sample=""
else
  dirs_upstream="--plugin-registration-path $root/plugins_registry --datadir $root/plugins --cdi-dir $cdi"
  dirs_sample="--registry-dir $root/plugins_registry --plugin-dir $root/plugins --cdi-dir $cdi"
fi
if [[ $mode == upstream ]]; then
  driver=test-driver.cdi.k8s.io
  # It makes its datadir's parent only.
  mkdir -p "$root/plugins/$driver"
  plugin="exec $peer -v=5 kubelet-plugin --node-name node-1 $dirs_upstream --num-devices 2"
  selector="device.driver == \"$driver\""
else
  driver=sample.dra.devmgr.io
  plugin="exec $DEVMGR_BIN sample-dra-driver -v 2 --node-name node-1 $dirs_sample"
  selector="device.attributes[\"$driver\"].model == \"sample-b\""
fi
serve_flags=()
[[ $private == 1 ]] && serve_flags=(--private-mount)
restarted=0
sock="$root/pod-resources/kubelet.sock"
serve() {
  "$DEVMGR_BIN" serve --dir "$root/device-plugins" --fsync false --kubelet-version "$kubelet_version" \
    --api-listen 127.0.0.1:0 --kubeconfig-out "$tmp/kubeconfig" --node-name node-1 \
    --plugins-registry-dir "$root/plugins_registry" --pod-manifest-path "$tmp/pods" \
    --pod-manifest-poll 0.2 --node-status-interval 0.2 --status-file "$tmp/status.json" \
    --pod-resources-socket "$sock" --metrics-address 127.0.0.1:0 "${serve_flags[@]}" \
    --plugin "$plugin" 2> "$tmp/serve.err" &
  pid=$!
}
stop_serve() {
  kill -TERM "$pid"
  wait "$pid" || fail "serve exited $?"
  pid=""
}
# check NAME: one python check of the status file (below), exit 0 when it holds.
check() {
  python3 - "$1" "$tmp/status.json" "$driver" "$cdi" "$kubelet_version" "$restarted" <<'PY'
import glob, json, os, sys
what, path, driver, cdi, kubelet, restarted = sys.argv[1:7]
try:
    st = json.load(open(path))
except (OSError, ValueError):
    sys.exit(1)
api, dra, pods = st.get("api") or {}, st.get("dra") or {}, st.get("pods", [])
def ok(cond):
    sys.exit(0 if cond else 1)
if what == "registered":
    ok(driver in [d["name"] for d in dra.get("drivers", [])])
if what == "endpoint":  # the endpoint as registered; prints it
    eps = [e for d in dra.get("drivers", []) if d["name"] == driver for e in d["endpoints"]]
    print(" ".join(eps))
    ok(len(eps) == 1)
if what == "slices":
    ok(any(s["spec"]["driver"] == driver and s["spec"]["nodeName"] == "node-1"
           and s["spec"].get("devices") for s in api.get("resourceSlices", [])))
claims = api.get("resourceClaims", [])
if what == "prepared":
    if len(pods) != 1 or pods[0]["phase"] != "Running" or len(claims) != 1:
        sys.exit(1)
    pod, claim = pods[0], claims[0]
    uid = claim["metadata"]["uid"]
    entries = [c for c in dra.get("claims", []) if c["uid"] == uid]
    ok(entries and entries[0]["prepared"] and pod["containers"][0].get("draCdiDevices"))
if what == "verify":  # the prepared state in full; prints what is wrong
    pod, claim = pods[0], claims[0]
    meta, status = claim["metadata"], claim.get("status", {})
    assert meta["name"].startswith(pod["name"] + "-separate-gpu-claim-"), meta["name"]
    assert meta["annotations"]["resource.kubernetes.io/pod-claim-name"] == "separate-gpu-claim"
    results = status["allocation"]["devices"]["results"]
    assert [r["driver"] for r in results] == [driver], results
    assert [r["request"] for r in results] == ["gpu-claim"], results
    assert [(r["resource"], r["uid"]) for r in status["reservedFor"]] == [("pods", pod["uid"])]
    entry = [c for c in dra["claims"] if c["uid"] == meta["uid"]][0]
    assert entry["podUIDs"] == [pod["uid"]] and entry["name"] == meta["name"], entry
    # The prepare after a restart appends the driver's devices to the restored
    # ones before 1.37 and replaces them from 1.37 (docs/profiles.md).
    copies = 2 if restarted == "1" and int(kubelet.split(".")[1]) < 37 else 1
    assert [(d["driver"], d["device"]) for d in entry["devices"]] == \
        [(driver, results[0]["device"])] * copies, entry
    ids = pod["containers"][0]["draCdiDevices"]
    assert ids and ids == [i for d in entry["devices"] for i in d["cdiDeviceIDs"]], (ids, entry)
    assert all("=" in i and i.split("=")[0].count("/") == 1 for i in ids), ids
    # Each ID resolves: a spec in the CDI directory has its kind and device.
    specs = [json.load(open(f)) for f in glob.glob(os.path.join(cdi, "*.json"))]
    known = {s["kind"] + "=" + d["name"] for s in specs for d in s.get("devices", [])}
    assert all(i in known for i in ids), ("unresolved in " + cdi, ids, sorted(known))
    print(meta["uid"], ids[0])
    sys.exit(0)
if what == "unprepared":
    ok(not pods and not dra.get("claims") and not claims)
sys.exit(2)
PY
}
# check_metrics STAGE: serve's DRA metrics at STAGE (prepared, unprepared), with
# the gRPC observations counted against the driver's calls in serve's log.
check_metrics() {
  local url
  url=$(sed -n 's/.*devmgr is serving metrics.* url="\([^"]*\)".*/\1/p' "$tmp/serve.err" | tail -1)
  [[ -n "$url" ]] || fail "serve printed no metrics URL"
  python3 - "$1" "$url" "$driver" "$kubelet_version" "$tmp/serve.err" <<'PY' || fail "metrics ($1)"
import re, sys, urllib.request
stage, url, driver, kubelet, log = sys.argv[1:6]
text = urllib.request.urlopen(url, timeout=10).read().decode()
values = {}
for line in text.splitlines():
    if line and not line.startswith("#"):
        name, value = line.rsplit(" ", 1)
        values[name] = float(value)
def get(name):
    return values.get(name, 0)
in_use = 1 if stage == "prepared" else 0
assert get('dra_resource_claims_in_use{driver_name="<any>"}') == in_use, text
assert get('dra_resource_claims_in_use{driver_name="%s"}' % driver) == in_use, text
# 1.34 and 1.35 label a success is_error="true" (FormatBool(err == nil)).
ok = "true" if int(kubelet.split(".")[1]) <= 35 else "false"
def ops(op):
    return get('dra_operations_duration_seconds_count{is_error="%s",operation_name="%s"}' % (ok, op))
assert ops("PrepareResources") >= 1, text
if stage == "unprepared":
    assert ops("UnprepareResources") >= 1, text
# This serve's calls (its log starts anew at each start): one observation each.
calls = open(log).read()
for rpc in ("NodePrepareResources", "NodeUnprepareResources"):
    logged = len(re.findall(r"^\[plugin\] .*" + rpc, calls, re.M))
    observed = sum(v for k, v in values.items()
                   if k.startswith("dra_grpc_operations_duration_seconds_count{driver_name=\"%s\"," % driver)
                   and k.endswith('method_name="/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/%s"}' % rpc))
    assert observed >= 1 if logged else observed == 0, (rpc, logged, observed, text)
PY
}
post() {  # post PATH JSON: creates an object through the API endpoint
  python3 - "$tmp/kubeconfig" "$1" "$2" <<'PY' || fail "POST $1"
import json, sys, urllib.request
url = json.load(open(sys.argv[1]))["clusters"][0]["cluster"]["server"]
req = urllib.request.Request(url + sys.argv[2], method="POST", data=sys.argv[3].encode(),
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=10) as r:
    assert r.status == 201, r.status
PY
}

serve
wait_for "the driver's registration" check registered
wait_for "the driver's ResourceSlice" check slices
endpoint=$(check endpoint) || fail "endpoints: $endpoint"
if [[ $private == 1 ]]; then
  # Registered from inside the namespace, dialled in serve's plugins directory.
  [[ $endpoint == "/var/lib/kubelet/plugins/$driver/dra.sock" ]] || fail "endpoint $endpoint"
  [[ -S "$root/plugins/$driver/dra.sock" ]] || fail "no DRA socket in $root/plugins/$driver"
  grep -q "Registered DRA plugin.*dialled=\"$root/plugins/$driver/dra.sock\"" "$tmp/serve.err" ||
    fail "the endpoint was not mapped to $root/plugins/$driver/dra.sock"
fi
# The documentation's DeviceClass and ResourceClaimTemplate
# (kubernetes/website content/en/examples/dra/), for this driver.
post /apis/resource.k8s.io/v1/deviceclasses "$(cat <<EOF
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
 "metadata": {"name": "example-device-class"},
 "spec": {"selectors": [{"cel": {"expression": "device.driver == \"$driver\""}}]}}
EOF
)"
post /apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates "$(python3 -c '
import json, sys
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
  "metadata": {"name": "example-resource-claim-template"},
  "spec": {"spec": {"devices": {"requests": [{"name": "gpu-claim", "exactly": {
    "deviceClassName": "example-device-class",
    "selectors": [{"cel": {"expression": sys.argv[1]}}]}}]}}}}))' "$selector")"
cat > "$tmp/pods/example-dra-pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: example-dra-pod
spec:
  containers:
  - name: container0
    image: ubuntu:24.04
    command: ["sleep", "9999"]
    resources:
      claims:
      - name: separate-gpu-claim
  resourceClaims:
  - name: separate-gpu-claim
    resourceClaimTemplateName: example-resource-claim-template
EOF
wait_for "the claim to be prepared" check prepared
first=$(check verify) || fail "prepared state: $first"
claim_uid=${first%% *}
check_metrics prepared
grep -q "$claim_uid" "$root/dra_manager_state" || fail "dra_manager_state lacks claim $claim_uid"
# check_podresources: the pod's claim as the PodResources API lists it.
check_podresources() {
  "$DEVMGR_BIN" podresources get default/example-dra-pod --socket "$sock" -o json \
    > "$tmp/get.json" || fail "podresources get: $(cat "$tmp/get.json")"
  python3 - "$tmp/get.json" "$tmp/status.json" "$driver" <<'PY' || fail "podresources get"
import json, sys
got, st, driver = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
claim = st["api"]["resourceClaims"][0]
[cached] = st["dra"]["claims"]
pod = got["pod_resources"]
assert (pod["namespace"], pod["name"]) == ("default", "example-dra-pod"), pod
[ctr] = pod["containers"]
assert ctr["name"] == "container0", ctr
# One entry per cached device (twice the device after a 1.34-1.36 restart); the kubelet's CDI
# list grows per driver, so each entry carries the IDs of the driver's devices so far.
resources, so_far = [], []
for d in cached["devices"]:
    so_far += d["cdiDeviceIDs"]
    resources.append({"cdi_devices": [{"name": i} for i in so_far], "driver_name": driver,
                      "pool_name": d["pool"], "device_name": d["device"]})
assert ctr["dynamic_resources"] == [{
    "claim_name": claim["metadata"]["name"], "claim_namespace": "default",
    "claim_resources": resources}], (ctr, cached)
PY
  "$DEVMGR_BIN" podresources list --socket "$sock" > "$tmp/list.txt" ||
    fail "podresources list: $(cat "$tmp/list.txt")"
  grep -Eq "^default +example-dra-pod +container0 +claim:example-dra-pod-separate-gpu-claim-[a-z0-9]{5} +$driver/[^ ]+/[^ ]+ +-\$" \
    "$tmp/list.txt" || fail "podresources list: $(cat "$tmp/list.txt")"
}
check_podresources

# A kubelet restart: the checkpoint is restored (the claim not prepared yet),
# the driver registers again and the claim is prepared again.
stop_serve
restarted=1
serve
wait_for "the driver's registration after the restart" check registered
wait_for "the claim to be prepared again" check prepared
second=$(check verify) || fail "prepared state after the restart: $second"
[[ "$second" == "$first" ]] || fail "after the restart: $second, before: $first"
check_podresources
check_metrics prepared
grep -q '^\[plugin\] .*NodePrepareResources' "$tmp/serve.err" ||
  fail "the driver got no NodePrepareResources after the restart"

# Deleting the pod unprepares its claim; the claim made for it is deleted.
rm "$tmp/pods/example-dra-pod.yaml"
wait_for "the claim to be unprepared" check unprepared
grep -q '^\[plugin\] .*NodeUnprepareResources' "$tmp/serve.err" ||
  fail "the driver got no NodeUnprepareResources"
check_metrics unprepared
if [[ $mode == sample ]]; then
  python3 - "$root/plugins/$driver/prepared-claims.json" <<'PY' || fail "the driver still holds the claim"
import json, sys
sys.exit(0 if not json.load(open(sys.argv[1]))["claims"] else 1)
PY
fi
grep -q "$claim_uid" "$root/dra_manager_state" && fail "dra_manager_state still holds the claim"
stop_serve
host_after=$(host_paths)
[[ "$host_after" == "$host_before" ]] ||
  fail "the host's kubelet or CDI paths changed: $(diff <(echo "$host_before") <(echo "$host_after"))"
echo "PASS"
