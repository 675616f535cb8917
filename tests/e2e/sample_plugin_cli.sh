#!/usr/bin/env bash
# e2e: `devmgr sample-plugin` as a process: config errors (exit 2), a missing
# directory (exit 3), serving on its socket while waiting for kubelet.sock,
# a clean exit 0 on SIGTERM that removes its socket, and the documented example
# config (built in) when no --config is given.
set -euo pipefail
: "${DEVMGR_BIN:?}" "${DEVMGR_SOURCE_DIR:?}"
tmp=$(mktemp -d /tmp/dme2eXXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Waits (up to 10 s) for the plugin $pid to serve socket $1; its stderr is in $2.
wait_socket() {
  for _ in $(seq 1 100); do
    [[ -S "$1" ]] && return 0
    kill -0 "$pid" 2>/dev/null || fail "plugin exited early: $(cat "$2")"
    sleep 0.1
  done
  fail "socket $1 never appeared: $(cat "$2")"
}
# Sends SIGTERM to the plugin $pid and checks it exits 0 (stderr in $1).
stop_plugin() {
  kill -TERM "$pid"
  set +e
  wait "$pid"
  local rc=$?
  set -e
  pid=""
  [[ $rc -eq 0 ]] || fail "SIGTERM: exit $rc, want 0: $(cat "$1")"
}

# 1. A misspelt key: exit 2 and file:line:col with a suggestion.
printf 'resource: example.com/gpu\ndevcies: []\n' > "$tmp/bad.yaml"
set +e
out=$("$DEVMGR_BIN" sample-plugin --config "$tmp/bad.yaml" --dir "$tmp" 2>&1)
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "bad config: exit $rc, want 2"
want="devmgr sample-plugin: $tmp/bad.yaml:2:1: unknown key 'devcies' in the config (did you mean 'devices'?)"
[[ "$out" == "$want" ]] || fail "bad config: got '$out', want '$want'"

# 2. A missing device-plugin directory: exit 3.
set +e
"$DEVMGR_BIN" sample-plugin --config "$DEVMGR_SOURCE_DIR/examples/sample-plugin.yaml" \
  --dir "$tmp/missing" 2> "$tmp/missing.err"
rc=$?
set -e
[[ $rc -eq 3 ]] || fail "missing dir: exit $rc, want 3"
grep -q "device-plugin directory $tmp/missing does not exist" "$tmp/missing.err" ||
  fail "missing dir: no clear message: $(cat "$tmp/missing.err")"

# 3. Runs, serves its socket, waits for the kubelet; SIGTERM exits 0 and
#    removes the socket.
mkdir "$tmp/dp"
"$DEVMGR_BIN" sample-plugin --config "$DEVMGR_SOURCE_DIR/examples/sample-plugin.yaml" \
  --dir "$tmp/dp" --call-log "$tmp/calls.jsonl" --control "$tmp/control" -v 2 \
  2> "$tmp/plugin.err" &
pid=$!
wait_socket "$tmp/dp/example.com-gpu.sock" "$tmp/plugin.err"
for _ in $(seq 1 50); do
  grep -q "Waiting for the kubelet socket to appear" "$tmp/plugin.err" && break
  sleep 0.1
done
grep -q "Waiting for the kubelet socket to appear" "$tmp/plugin.err" ||
  fail "no waiting message: $(cat "$tmp/plugin.err")"
echo "health gpu-0 Unhealthy" >> "$tmp/control"
for _ in $(seq 1 50); do
  grep -q '"Control command" command="health gpu-0 Unhealthy"' "$tmp/plugin.err" && break
  sleep 0.1
done
grep -q '"Control command" command="health gpu-0 Unhealthy"' "$tmp/plugin.err" ||
  fail "control command not applied: $(cat "$tmp/plugin.err")"
stop_plugin "$tmp/plugin.err"
[[ ! -e "$tmp/dp/example.com-gpu.sock" ]] || fail "socket left behind"
grep -q 'Received signal, shutting down' "$tmp/plugin.err" || fail "no shutdown message"

# 4. No --config: the documented example runs (built in), and one log line names it.
mkdir "$tmp/dp-default"
(cd "$tmp" && exec "$DEVMGR_BIN" sample-plugin --dir "$tmp/dp-default" 2> "$tmp/default.err") &
pid=$!
wait_socket "$tmp/dp-default/example.com-gpu.sock" "$tmp/default.err"
grep -q '"No --config given: running the documented example config (built in)" config="examples/sample-plugin.yaml"' \
  "$tmp/default.err" || fail "no line naming the default config: $(cat "$tmp/default.err")"
[[ $(grep -c 'No --config given' "$tmp/default.err") -eq 1 ]] || fail "default config named more than once"
stop_plugin "$tmp/default.err"
help=$("$DEVMGR_BIN" sample-plugin --help | tr -s ' \n' '  ')  # one line, however wrapped
[[ "$help" == *"examples/sample-plugin.yaml (built in)"* ]] || fail "--help does not name the default config"
echo PASS
