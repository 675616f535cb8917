#!/usr/bin/env bash
# A full disk and a read-only directory while `devmgr serve` rewrites its checkpoint: serve logs
# a clear error (failed to write checkpoint file ...: no space left on device / read-only file
# system), keeps running, and the old checkpoint stays intact with no temp file left, as the
# kubelet's checkpoint manager does (it writes a temp file and renames it; a failed write
# removes the temp file and leaves the previous file alone).
# Needs root for a private mount namespace with a small tmpfs; exits 77 (skipped) otherwise.
set -euo pipefail
bin=${DEVMGR_BIN:?DEVMGR_BIN must name the devmgr binary}
if [ "${1:-}" != --inside ]; then
  if [ "$(id -u)" -ne 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
    echo "skipped: needs root and mount namespaces" >&2
    exit 77
  fi
  exec unshare -m --propagation private bash "$(readlink -f "$0")" --inside
fi

root=$(mktemp -d /tmp/devmgr-wrerr.XXXXXX)
d=$root/device-plugins
keep_log=${KEEP_LOG:-}
mkdir -p "$d"
mount -t tmpfs -o size=1m tmpfs "$d"
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null || true
  umount "$d" 2>/dev/null || true
  [ -n "$keep_log" ] && cp "$root/serve.log" "$keep_log"
  rm -rf "$root"
}
trap cleanup EXIT
cat >"$root/plugin.yaml" <<YAML
resource: example.com/gpu
devices: [{id: g0}, {id: g1}]
list_and_watch: {resend_interval: 20ms}
YAML
ck=$d/kubelet_internal_checkpoint
setsid "$bin" serve --dir "$d" --kubelet-version 1.32 \
  --plugin "$bin sample-plugin --config $root/plugin.yaml --dir $d" >"$root/serve.log" 2>&1 &
pid=$!

wait_for() {  # wait_for DESCRIPTION COMMAND...: polls for up to 60 s
  local what=$1
  shift
  for _ in $(seq 600); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || { echo "serve exited while waiting for $what" >&2; cat "$root/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "timed out waiting for $what" >&2
  tail -20 "$root/serve.log" >&2
  exit 1
}
has_checkpoint() { [ -s "$ck" ] && grep -q '"g1"' "$ck"; }
wait_for "the first checkpoint" has_checkpoint
cp "$ck" "$root/old"
"$bin" checkpoint verify "$ck" >/dev/null

check_kept() {  # check_kept CASE
  cmp -s "$ck" "$root/old" || { echo "$1: checkpoint changed" >&2; exit 1; }
  "$bin" checkpoint verify "$ck" >/dev/null
  if find "$d" -maxdepth 1 -name '.[0-9]*' | grep -q .; then
    echo "$1: temp file left behind" >&2
    exit 1
  fi
  kill -0 "$pid" || { echo "$1: serve exited" >&2; exit 1; }
  echo "$1: serve logs '$(grep -m1 -i "$2" "$root/serve.log" | sed 's/.*err="//; s/"$//')'; old checkpoint kept, no temp file"
}

# Full disk: fill the tmpfs, wait for the next rewrite's error.
dd if=/dev/zero of="$d/filler" bs=64k >/dev/null 2>&1 || true
wait_for "a 'no space left on device' error" grep -qi "no space left on device" "$root/serve.log"
check_kept ENOSPC "no space left on device"
rm -f "$d/filler"

# Read-only directory.
mount -o remount,ro "$d"
wait_for "a 'read-only file system' error" grep -qi "read-only file system" "$root/serve.log"
check_kept read-only "read-only file system"
mount -o remount,rw "$d"
kill -TERM "$pid"
wait "$pid" || true
pid=
"$bin" checkpoint verify "$ck" >/dev/null
echo "checkpoint write errors: ok"
