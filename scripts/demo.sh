#!/usr/bin/env bash
# make demo: the emulated kubelet (devmgr serve) with the reference plugin,
# a pod admitted from an ordinary manifest, and a health flip — what a new
# user sees first. Everything lives in a temporary directory.
set -euo pipefail
BUILD_DIR=${1:-build}
BIN=$(cd "$BUILD_DIR" && pwd)/devmgr
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/devmgr-demo-XXXXXX)
DIR=$WORK/device-plugins
PODS=$WORK/manifests
mkdir -p "$DIR" "$PODS"
STATUS=$WORK/status.json
CONTROL=$WORK/plugin-control

serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Waits until a python expression over the status document is true.
wait_status() {
  local expr=$1 what=$2
  for _ in $(seq 1 200); do
    if [ -s "$STATUS" ] && python3 - "$STATUS" "$expr" <<'PY' 2>/dev/null; then
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
      return 0
    fi
    sleep 0.1
  done
  echo "demo: timed out waiting for: $what" >&2
  exit 1
}

show() {
  python3 - "$STATUS" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for name, r in s["resources"].items():
    ep = r["endpoint"]
    print(f"resource {name}: capacity={r['capacity']} allocatable={r['allocatable']} "
          f"endpoint={ep.get('state')} {ep.get('socket', '')}")
    for d in r["devices"]:
        numa = d["numaNodes"] if d["numaNodes"] is not None else "-"
        print(f"    device {d['id']:<8} {d['health']:<10} numa={numa}")
for p in s.get("pods", []):
    verdict = "admitted" if p["admitted"] else f"FAILED {p.get('reason')}: {p.get('message')}"
    print(f"pod {p['namespace']}/{p['name']} ({p['phase']}): {verdict}")
    for c in p["containers"]:
        print(f"    container {c['name']:<8} running={c['running']} devices={c['devices']}")
        o = c.get("runtimeOptions")
        if o:
            print(f"        envs={o['envs']}")
            print(f"        devices={[d['hostPath'] for d in o['devices']]} cdi={o['cdiDevices']}")
            print(f"        mounts={[m['containerPath'] for m in o['mounts']]} annotations={o['annotations']}")
PY
}

say "devmgr serve: the kubelet side of the device plugin API, in $DIR"
echo "\$ devmgr serve --dir $DIR --pod-manifest-path $PODS --status-file $STATUS \\"
echo "    --plugin 'devmgr sample-plugin --config examples/sample-plugin.yaml --dir $DIR'"
"$BIN" serve --dir "$DIR" --pod-manifest-path "$PODS" --pod-manifest-poll 0.2 \
  --status-file "$STATUS" --fsync=false --node-status-interval 1 \
  --plugin "$BIN sample-plugin --config $ROOT/examples/sample-plugin.yaml --dir $DIR --control $CONTROL" \
  2> "$WORK/serve.log" &
serve_pid=$!

wait_status 's["resources"].get("example.com/gpu", {}).get("allocatable") == 4' "4 devices"
say "The plugin registered; the kubelet tracks its devices"
grep -E 'registration request|Started device plugin' "$WORK/serve.log" | sed 's/^/  log: /' || true
show

say "A pod manifest appears in --pod-manifest-path (examples/pods/gpu-pod.yaml)"
cp "$ROOT/examples/pods/gpu-pod.yaml" "$PODS/"
wait_status 'any(p["name"] == "cuda-job" and p["phase"] != "Pending" for p in s["pods"])' "pod admitted"
show

say "The plugin reports gpu-3 unhealthy: allocatable drops, capacity stays"
echo "health gpu-3 Unhealthy" >> "$CONTROL"
wait_status 's["resources"]["example.com/gpu"]["allocatable"] == 3' "allocatable 3"
show

say "The checkpoint the kubelet would write (devmgr checkpoint verify / inspect)"
"$BIN" checkpoint verify "$DIR/kubelet_internal_checkpoint" || true
"$BIN" checkpoint inspect "$DIR/kubelet_internal_checkpoint" || true

say "SIGTERM: devmgr stops the plugin and itself"
kill -TERM "$serve_pid"
wait "$serve_pid" && echo "devmgr serve exited 0"
serve_pid=""

say "devmgr run scenarios/demo.yaml: restarts, crashes and the grace period, in a second"
echo "\$ devmgr run scenarios/demo.yaml"
DEVMGR_BIN="$BIN" "$BIN" run "$ROOT/scenarios/demo.yaml"
