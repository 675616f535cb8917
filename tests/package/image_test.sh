#!/usr/bin/env bash
# make test-image: the container image built by `make image` (no registry)
# runs for real under podman:
#   1. devmgr --version;
#   2. conformance of the reference plugin inside the image;
#   3. a plugin binary bind-mounted into the container, run with
#      --private-mount (it hard-codes /var/lib/kubelet/device-plugins);
#   4. the checkpoint-doctor container exactly as deploy/checkpoint-doctor.yaml
#      runs it (its command, its read-only mount, read-only root filesystem,
#      capabilities), on a copy of a node directory with a good and then a
#      corrupt checkpoint: log line, /metrics, /readyz.
# Exit 77 (skipped) with a message where podman cannot run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
IMAGE=${2:-}
if [ "$(id -u)" -ne 0 ] || ! command -v podman >/dev/null; then
  echo "SKIP: the image test needs root and podman" >&2
  exit 77
fi
. "$ROOT/scripts/podman-env.sh"
if [ -z "$IMAGE" ]; then
  deb=$(ls -t "$BUILD"/devmgr_*_amd64.deb 2>/dev/null | head -n1 || true)
  version=$(basename "${deb:-devmgr_0_amd64.deb}" | sed -E 's/^devmgr_(.*)_amd64\.deb$/\1/')
  IMAGE=localhost/devmgr:$version
  # make test-image has just built it (make image); build it when run alone.
  podman image exists "$IMAGE" || IMAGE=$(bash "$ROOT/scripts/build-image.sh" "$BUILD")
fi
work=$(mktemp -d /tmp/devmgr-imagetest-XXXXXX)
doctor=""
cleanup() {
  [ -n "$doctor" ] && podman rm -f "$doctor" >/dev/null 2>&1 || true
  rm -rf "$work"
  [ -z "$DEVMGR_CONTAINERS_CONF_MADE" ] || rm -f "$DEVMGR_CONTAINERS_CONF_MADE"
}
trap cleanup EXIT
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }

echo "== 1. version"
podman run --rm --network none "$IMAGE" --version | tee "$work/version"
grep -q '^devmgr ' "$work/version"
ok "devmgr --version in $IMAGE"

echo "== 2. conformance of the reference plugin inside the image"
podman run --rm --network none "$IMAGE" conformance -q \
  --plugin 'devmgr sample-plugin --config /usr/share/devmgr/examples/sample-plugin.yaml --dir $DEVMGR_PLUGIN_DIR' \
  >"$work/conf.txt"
tail -n 2 "$work/conf.txt"
grep -q '^RESULT: PASS' "$work/conf.txt"
ok "conformance of the reference plugin"

echo "== 3. a bind-mounted plugin binary that hard-codes /var/lib/kubelet/device-plugins"
podman run --rm --network none --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
  -v "$BUILD/devmgr:/opt/plugin/my-plugin:ro" "$IMAGE" conformance -q --private-mount \
  --plugin '/opt/plugin/my-plugin sample-plugin --config /usr/share/devmgr/examples/sample-plugin.yaml --dir /var/lib/kubelet/device-plugins' \
  >"$work/conf-private.txt"
tail -n 2 "$work/conf-private.txt"
grep -q '^RESULT: PASS' "$work/conf-private.txt"
ok "bind-mounted plugin with --private-mount"

echo "== 4. the checkpoint-doctor DaemonSet's container, as the manifest runs it"
# Command, mount path and read-only flag come from the manifest itself.
python3 - "$ROOT/deploy/checkpoint-doctor.yaml" >"$work/doctor.env" <<'PY'
import shlex, sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "DaemonSet":
        c = doc["spec"]["template"]["spec"]["containers"][0]
        m = c["volumeMounts"][0]
        port = c["ports"][0]["containerPort"]
        print("CMD=(%s)" % " ".join(shlex.quote(a) for a in c["command"]))
        print("MOUNT=%s" % shlex.quote(m["mountPath"]))
        print("RO=%s" % ("ro" if m.get("readOnly") else "rw"))
        print("PORT=%d" % port)
PY
. "$work/doctor.env"
[ "$RO" = ro ] || { echo "FAIL: the manifest mounts the node directory read-write" >&2; exit 1; }
node=$work/node-device-plugins
mkdir -p "$node"
cp "$ROOT/tests/testdata/checkpoint/v2-multi-resource.json" "$node/kubelet_internal_checkpoint"
# The manifest's command minus the program name (the image's entrypoint is devmgr).
args=("${CMD[@]:1}")
args=("${args[@]/--interval=300/--interval=0.5}")
port=$((20000 + RANDOM % 20000))
args=("${args[@]/--metrics-address=0.0.0.0:$PORT/--metrics-address=127.0.0.1:$port}")
doctor=$(podman run -d --network host --read-only --user 0 --cap-drop ALL --cap-add DAC_READ_SEARCH \
  -v "$node:$MOUNT:ro" "$IMAGE" "${args[@]}")
probe() {  # probe PATH -> "CODE BODY"
  python3 - "$port" "$1" <<'PY'
import sys, urllib.request, urllib.error
url = "http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2])
try:
    r = urllib.request.urlopen(url, timeout=2); print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
except Exception as e:
    print(0, e)
PY
}
wait_for() {  # wait_for PATH REGEX
  for _ in $(seq 1 100); do
    out=$(probe "$1")
    if echo "$out" | grep -Eq "$2"; then return 0; fi
    sleep 0.2
  done
  echo "FAIL: $1 never matched $2; last: $out" >&2
  podman logs "$doctor" >&2 || true
  return 1
}
wait_for /readyz '^200 '
wait_for /metrics 'devmgr_checkpoint_state\{path="[^"]*",state="ok"\} 1'
ok "doctor: good checkpoint -> ready, state ok"
cp "$ROOT/tests/testdata/checkpoint/bad-checksum-plus-one.json" "$node/kubelet_internal_checkpoint"
bad=$(sha256sum "$node/kubelet_internal_checkpoint")
wait_for /readyz '^503 .*CORRUPT'
wait_for /metrics 'devmgr_checkpoint_state\{path="[^"]*",state="corrupt"\} 1'
podman logs "$doctor" >"$work/doctor.log" 2>&1
grep -q 'Checkpoint verification failed' "$work/doctor.log" || {
  echo "FAIL: no log line for the corrupt checkpoint" >&2; exit 1; }
ok "doctor: corrupt checkpoint -> not ready, state corrupt, logged"
podman stop -t 5 "$doctor" >/dev/null
[ "$(sha256sum "$node/kubelet_internal_checkpoint")" = "$bad" ] || {
  echo "FAIL: the doctor changed the checkpoint" >&2; exit 1; }
[ "$(ls "$node")" = kubelet_internal_checkpoint ] || { echo "FAIL: the doctor wrote into the node dir" >&2; exit 1; }
ok "doctor never wrote the node directory"
# One verification: exit code carries the verdict.
if podman run --rm --network none -v "$node:$MOUNT:ro" "$IMAGE" checkpoint doctor --once; then
  echo "FAIL: --once on a corrupt checkpoint exited 0" >&2; exit 1
fi
ok "doctor --once exits non-zero on a corrupt checkpoint"
echo "image_test: $passed passed, 0 failed"
