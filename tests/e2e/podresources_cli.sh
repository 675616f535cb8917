#!/usr/bin/env bash
# e2e: `devmgr serve` exposes the PodResources socket and the metrics
# endpoint; `devmgr podresources list|allocatable|get` read the socket (table
# and JSON); /metrics is scraped over HTTP; --metrics-file is written at exit;
# Get is off by default in 1.32 and its error is the kubelet's.
set -euo pipefail
: "${DEVMGR_BIN:?}" "${DEVMGR_SOURCE_DIR:?}"
E2E_NAME=pr source "$(dirname "$0")/lib/serve.bash"

mkdir -p "$tmp/device-plugins" "$tmp/manifests"
sock="$tmp/pod-resources/kubelet.sock"
"$DEVMGR_BIN" serve --dir "$tmp/device-plugins" --fsync false --kubelet-version 1.32 \
  --plugin "$DEVMGR_BIN sample-plugin --config $DEVMGR_SOURCE_DIR/examples/sample-plugin.yaml --dir $tmp/device-plugins" \
  --pod-manifest-path "$tmp/manifests" --pod-manifest-poll 0.1 \
  --metrics-address 127.0.0.1:0 --metrics-file "$tmp/metrics.txt" \
  2> "$tmp/serve.err" &
pid=$!

# The default socket follows the kubelet's layout: ROOT/device-plugins ->
# ROOT/pod-resources/kubelet.sock.
wait_for "the PodResources socket" test -S "$sock"
four_allocatable() { "$DEVMGR_BIN" podresources allocatable --socket "$sock" 2>/dev/null |
  grep -c '^example.com/gpu' | grep -qx 4; }
wait_for "the plugin's 4 devices" four_allocatable
# The pod comes after the plugin: admitted earlier, it would run without devices.
cat > "$tmp/manifests/cuda.yaml" <<'POD'
apiVersion: v1
kind: Pod
metadata: {name: cuda, namespace: ml}
spec:
  containers:
  - name: main
    image: busybox
    resources: {limits: {example.com/gpu: 2}}
POD
pod_listed() { "$DEVMGR_BIN" podresources list --socket "$sock" > "$tmp/list.txt" 2>&1 &&
  grep -q "example.com/gpu" "$tmp/list.txt"; }
wait_for "pod ml/cuda with devices" pod_listed
head -1 "$tmp/list.txt" | grep -Eq '^NAMESPACE +POD +CONTAINER +RESOURCE +DEVICE +NUMA$' ||
  fail "list table header: $(cat "$tmp/list.txt")"
[[ $(grep -c '^ml  *cuda  *main  *example.com/gpu  *gpu-[0-3]  *[01]$' "$tmp/list.txt") -eq 2 ]] ||
  fail "list rows: $(cat "$tmp/list.txt")"

"$DEVMGR_BIN" podresources list --socket "$sock" -o json > "$tmp/list.json"
python3 - "$tmp/list.json" <<'PY' || fail "list json: $(cat "$tmp/list.json")"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["pod_resources"]
assert [(x["namespace"], x["name"]) for x in p] == [("ml", "cuda")], p
devs = p[0]["containers"][0]["devices"]
assert len(devs) == 2 and all(len(x["device_ids"]) == 1 for x in devs), devs
assert all(x["resource_name"] == "example.com/gpu" for x in devs), devs
assert all(len(x["topology"]["nodes"]) == 1 for x in devs), devs
PY

"$DEVMGR_BIN" podresources allocatable --socket "$sock" > "$tmp/alloc.txt"
[[ $(grep -c '^example.com/gpu  *gpu-[0-3]  *[01]$' "$tmp/alloc.txt") -eq 4 ]] ||
  fail "allocatable: $(cat "$tmp/alloc.txt")"

set +e
"$DEVMGR_BIN" podresources get ml/cuda --socket "$sock" > "$tmp/get.out" 2> "$tmp/get.err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "get with the gate off: exit $rc, want 1"
grep -qx 'devmgr podresources: rpc error: code = Unknown desc = PodResources API Get method disabled' \
  "$tmp/get.err" || fail "get error: $(cat "$tmp/get.err")"

set +e
"$DEVMGR_BIN" podresources list --socket "$tmp/nothing.sock" --timeout 1 2> "$tmp/none.err"
rc=$?
set -e
[[ $rc -eq 3 ]] || fail "missing socket: exit $rc, want 3 ($(cat "$tmp/none.err"))"

# /metrics over HTTP (the bound port is logged).
addr=$(sed -n 's/.*"devmgr is serving metrics" address="\([^"]*\)".*/\1/p' "$tmp/serve.err" | head -1)
[[ -n "$addr" ]] || fail "no metrics address in the log"
exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}"
printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$addr" >&3
cat <&3 > "$tmp/scrape.txt"
exec 3<&-
grep -q '^HTTP/1.[01] 200' "$tmp/scrape.txt" || fail "scrape: $(head -3 "$tmp/scrape.txt")"
grep -qx 'kubelet_device_plugin_registration_total{resource_name="example.com/gpu"} 1' \
  <(tr -d '\r' < "$tmp/scrape.txt") || fail "scrape: no registration count"
grep -qx 'kubelet_device_plugin_alloc_duration_seconds_count{resource_name="example.com/gpu"} 1' \
  <(tr -d '\r' < "$tmp/scrape.txt") || fail "scrape: alloc count"
grep -qx '# HELP kubelet_device_plugin_alloc_duration_seconds \[ALPHA\] Duration in seconds to serve a device plugin Allocation request. Broken down by resource name.' \
  <(tr -d '\r' < "$tmp/scrape.txt") || fail "scrape: HELP line"

kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
pid=""
[[ $rc -eq 0 ]] || fail "serve exit $rc"
[[ ! -e "$sock" ]] || fail "PodResources socket left behind"
grep -qx 'kubelet_pod_resources_endpoint_requests_list{server_api_version="v1"} [0-9]*' \
  "$tmp/metrics.txt" || fail "metrics file: $(cat "$tmp/metrics.txt")"
grep -qx 'kubelet_device_plugin_alloc_duration_seconds_count{resource_name="example.com/gpu"} 1' \
  "$tmp/metrics.txt" || fail "metrics file: alloc count"
echo PASS
