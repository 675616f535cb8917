#!/usr/bin/env bash
# End-to-end tests of `devmgr conformance` with real processes: the reference
# plugin passes, exit codes (0/1/2/3), --list/--focus/--skip, and the JUnit,
# JSON and sonobuoy reports. Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmconf-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# Short deadlines: seconds per check at most.
FAST=(--rpc-timeout 10 --register-timeout 10 --first-list-timeout 10 --observe 0.4 --list-window 0.4
      --prestart-timeout 1 --reregister-timeout 10 --stop-grace 5 --latency-samples 3 -q)
plugin() { echo "$BIN sample-plugin --config $SRC/examples/$1 --dir \$DEVMGR_PLUGIN_DIR"; }

source "$(dirname "$0")/lib/checks.bash"
expect_file() {
  if ! grep -qF -- "$2" "$1"; then
    fail "$1 lacks: $2"
  fi
}

# --- usage and environment --------------------------------------------------
run 2 "$BIN" conformance
expect "give exactly one of --plugin, --socket or --resource"
run 2 "$BIN" conformance --socket /x.sock --resource example.com/gpu
run 2 "$BIN" conformance --socket /x.sock --private-mount
expect "--private-mount needs --plugin"
run 2 "$BIN" conformance --socket /x.sock --focus '('
expect "--focus: invalid regular expression"
run 2 "$BIN" conformance --plugin true --kubelet-version 1.12
run 2 "$BIN" conformance --plugin true --focus '^registration.version$'
expect "--focus matches no check"
run 2 "$BIN" conformance --resource example.com/gpu
expect "--resource needs --dir"
run 3 "$BIN" conformance --socket "$WORK/none.sock"
expect "nothing accepts connections on $WORK/none.sock"
run 3 "$BIN" conformance --plugin "devmgr-no-such-command-xyz" --register-timeout 1 -q
expect "the plugin command could not run (exit code 127)"
# A plugin that crashes at start is not waited for: each check's session ends
# when it exits non-zero (the 30 s registration window would make this ~20 min).
start=$SECONDS
run 1 timeout 120 "$BIN" conformance --plugin "sh -c 'echo boom >&2; exit 3'" --dir "$WORK/crash" \
  --register-timeout 30 -q
expect "registration.timely         MUST    FAIL"
expect "the plugin exited with code 3 before it registered"
expect "plugin: boom"
(( SECONDS - start < 60 )) || fail "a crashing plugin took $((SECONDS - start)) s"

# --- the catalogue ----------------------------------------------------------
run 0 "$BIN" conformance --list
expect "registration.version"
expect "restart.kubelet              MUST   The plugin re-registers after a kubelet restart [Disruptive]"
expect "latency.rpcs                 INFO"

# --- the reference plugin passes, with every report -------------------------
run 0 "$BIN" conformance --plugin "$(plugin sample-plugin.yaml)" --dir "$WORK/dp" "${FAST[@]}" \
  --junit "$WORK/r.xml" --json "$WORK/r.json" --results-dir "$WORK/sonobuoy"
expect "39 checks: 37 passed, 0 failed (0 MUST, 0 SHOULD, 0 INFO), 2 skipped"
expect "RESULT: PASS (every MUST check passed)"
expect_file "$WORK/r.xml" '<testsuite name="devmgr-conformance" tests="39" failures="0" errors="0" skipped="2"'
expect_file "$WORK/r.xml" 'name="[MUST] restart.kubelet: The plugin re-registers after a kubelet restart [Disruptive]"'
expect_file "$WORK/r.json" '"passed": true'
expect_file "$WORK/r.json" '"mustFailed": 0'
expect_file "$WORK/sonobuoy/done" "$WORK/sonobuoy/devmgr-conformance-junit.xml"
expect_file "$WORK/sonobuoy/devmgr-conformance-junit.xml" 'tests="39"'

# --- focus and skip ---------------------------------------------------------
run 0 "$BIN" conformance --plugin "$(plugin sample-plugin.yaml)" "${FAST[@]}" --focus '^allocate\.' --skip 'concurrent|Slow'
expect "8 checks: 7 passed, 0 failed"

# --- a MUST failure exits 1, a SHOULD failure does not ----------------------
run 1 "$BIN" conformance --plugin "$(plugin broken/allocate.cdi-names.yaml)" "${FAST[@]}" --focus 'allocate.cdi' --json "$WORK/f.json"
expect "allocate.cdi-names  MUST    FAIL"
expect '| "gpu-0" is not of the form <vendor>/<class>=<name>'
expect_file "$WORK/f.json" '"mustFailed": 1'
run 0 "$BIN" conformance --plugin "$(plugin broken/law.no-resend.yaml)" "${FAST[@]}" --focus 'law.no-resend'
expect "law.no-resend  SHOULD  FAIL"
expect "RESULT: PASS (every MUST check passed)"

# --- --socket: an already running plugin ----------------------------------------
mkdir -p "$WORK/sock"
"$BIN" sample-plugin --config "$SRC/examples/sample-plugin.yaml" --dir "$WORK/sock" 2>/dev/null &
ppid=$!
for _ in $(seq 50); do [[ -S "$WORK/sock/example.com-gpu.sock" ]] && break; sleep 0.1; done
run 0 "$BIN" conformance --socket "$WORK/sock/example.com-gpu.sock" "${FAST[@]}"
expect "registration.version        MUST    SKIP"
expect "needs a plugin that registers with the tester (not --socket)"
kill "$ppid"
wait "$ppid" 2>/dev/null

# --- --resource: a plugin that registers on its own -------------------------------
mkdir -p "$WORK/res"
"$BIN" sample-plugin --config "$SRC/examples/sample-plugin.yaml" --dir "$WORK/res" 2>/dev/null &
ppid=$!
# The plugin process was just started: under a loaded CI machine it may need
# more than FAST's 1 s to come up and register, so this bound is generous.
RES_FAST=("${FAST[@]}")
for i in "${!RES_FAST[@]}"; do
  [[ ${RES_FAST[$i]} == --register-timeout ]] && RES_FAST[$((i + 1))]=15
done
run 0 "$BIN" conformance --resource example.com/gpu --dir "$WORK/res" "${RES_FAST[@]}" --skip Slow
expect "restart.plugin              MUST    SKIP"
expect "restart.kubelet             MUST    PASS"
kill "$ppid"
wait "$ppid" 2>/dev/null

finish conformance_cli
