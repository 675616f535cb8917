#!/usr/bin/env bash
# e2e: `devmgr serve` serves the Kubernetes API endpoint for DRA drivers: the
# kubeconfig (--kubeconfig-out) names it, --plugin commands get that path in
# KUBECONFIG, the node (--node-name) is served, a ResourceSlice POSTed through
# it is validated with the real server's message; --api-listen off serves
# none; a bad --node-name is a usage error.
set -euo pipefail
: "${DEVMGR_BIN:?}"
E2E_NAME=api source "$(dirname "$0")/lib/serve.bash"

mkdir -p "$tmp/dp"
"$DEVMGR_BIN" serve --dir "$tmp/dp" --fsync false --kubeconfig-out "$tmp/kubeconfig" \
  --status-file "$tmp/status.json" --node-name node-1 --plugin "echo \$KUBECONFIG > $tmp/seen; exec sleep 600" \
  2> "$tmp/serve.err" &
pid=$!
wait_for "the plugin's KUBECONFIG" test -s "$tmp/seen"
[[ "$(cat "$tmp/seen")" == "$tmp/kubeconfig" ]] || fail "plugin saw KUBECONFIG=$(cat "$tmp/seen")"
grep -q 'devmgr is serving the Kubernetes API for DRA drivers' "$tmp/serve.err" || fail "no start line"

python3 - "$tmp/kubeconfig" <<'PY' || fail "API checks"
import json, sys, urllib.request, urllib.error
kc = json.load(open(sys.argv[1]))
assert kc["current-context"] == "devmgr", kc
url = kc["clusters"][0]["cluster"]["server"]
assert url.startswith("http://127.0.0.1:"), url

def call(method, path, body=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

code, node = call("GET", "/api/v1/nodes/node-1")
assert code == 200 and node["metadata"]["name"] == "node-1", (code, node)
slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
          "metadata": {"name": "node-1-gpu"},
          "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                   "pool": {"name": "node-1", "generation": 0, "resourceSliceCount": 1},
                   "devices": [{"name": "gpu_0"}]}}
code, status = call("POST", "/apis/resource.k8s.io/v1/resourceslices", slice_)
assert code == 422, (code, status)
status = json.loads(status)
assert status["message"].startswith(
    'ResourceSlice.resource.k8s.io "node-1-gpu" is invalid: spec.devices[0].name: Invalid value: "gpu_0": '
    "a lowercase RFC 1123 label must consist of"), status["message"]
slice_["spec"]["devices"][0]["name"] = "gpu-0"
code, created = call("POST", "/apis/resource.k8s.io/v1/resourceslices", slice_)
assert code == 201, (code, created)
code, lst = call("GET", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dgpu.example.com")
assert code == 200 and [i["metadata"]["name"] for i in lst["items"]] == ["node-1-gpu"], lst
code, body = call("GET", "/apis/resource.k8s.io/v1beta2/resourceslices")
assert code == 404 and body == "404 page not found\n", (code, body)
PY
# The status file's "api" section follows the store: the slice, and the
# requests that made it.
api_status() {
  python3 - "$tmp/status.json" <<'PY'
import json, sys
api = json.load(open(sys.argv[1])).get("api") or {}
names = [s["metadata"]["name"] for s in api.get("resourceSlices", [])]
posts = [r for r in api.get("requests", []) if r["method"] == "POST" and r["status"] == 201]
sys.exit(0 if names == ["node-1-gpu"] and posts and api["nodeName"] == "node-1" else 1)
PY
}
wait_for "the slice in the status file" api_status

kill -TERM "$pid"
wait "$pid" || fail "serve exited $?"
pid=""

# --api-fault: the node's first GET is answered 503, the next one served.
"$DEVMGR_BIN" serve --dir "$tmp/dp" --fsync false --kubeconfig-out "$tmp/kc3" --node-name node-1 \
  --api-fault 'method=GET,path=/api/v1/nodes/,error=503' 2> "$tmp/serve.err" &
pid=$!
wait_for "the kubeconfig" test -s "$tmp/kc3"
python3 - "$tmp/kc3" <<'PY' || fail "fault checks"
import json, sys, urllib.request, urllib.error
url = json.load(open(sys.argv[1]))["clusters"][0]["cluster"]["server"] + "/api/v1/nodes/node-1"
try:
    urllib.request.urlopen(url, timeout=10)
    sys.exit("the first GET was served")
except urllib.error.HTTPError as e:
    status = json.load(e)
    assert e.code == 503 and status["reason"] == "ServiceUnavailable", (e.code, status)
with urllib.request.urlopen(url, timeout=10) as r:
    assert r.status == 200
PY
grep -q '"API fault injected"' "$tmp/serve.err" || fail "no log line for the fault"
kill -TERM "$pid"
wait "$pid" || fail "serve exited $?"
pid=""
set +e
"$DEVMGR_BIN" serve --dir "$tmp/dp" --fsync false --api-fault 'error=200' --exit-after 0.5 2> "$tmp/serve.err"
code=$?
set -e
[[ $code -eq 2 ]] || fail "--api-fault error=200 exited $code"
grep -q 'error wants an HTTP code from 400 to 599' "$tmp/serve.err" || fail "$(cat "$tmp/serve.err")"

# --api-listen off: no endpoint, no kubeconfig.
"$DEVMGR_BIN" serve --dir "$tmp/dp" --fsync false --api-listen off --kubeconfig-out "$tmp/kc2" \
  --exit-after 0.5 2> "$tmp/serve.err" || fail "serve --api-listen off"
[[ ! -e "$tmp/kc2" ]] || fail "--api-listen off wrote a kubeconfig"

# A node name the API would refuse is a usage error (exit 2).
set +e
"$DEVMGR_BIN" serve --dir "$tmp/dp" --fsync false --node-name Bad_Node --exit-after 0.5 2> "$tmp/serve.err"
code=$?
set -e
[[ $code -eq 2 ]] || fail "--node-name Bad_Node exited $code"
grep -q '^devmgr serve: --node-name Bad_Node: a lowercase RFC 1123 subdomain' "$tmp/serve.err" ||
  fail "unexpected message: $(cat "$tmp/serve.err")"
echo "PASS"
