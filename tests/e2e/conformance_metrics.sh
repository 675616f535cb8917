#!/usr/bin/env bash
# End-to-end test of `devmgr conformance --metrics-file`: the tester plays the
# kubelet and writes the kubelet's device-plugin metrics for the whole run.
# The Allocate histogram's count must equal the Allocate calls in the
# reference plugin's call log (every plugin start of the run appends to it),
# and the registration counter those Register calls that the plugin logged.
# Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmconfm-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"
RUN_TIMEOUT=60
RES=example.com/gpu
# Short deadlines: seconds per check at most. `timeout` bounds every run.
FAST=(--rpc-timeout 10 --register-timeout 10 --first-list-timeout 10 --observe 0.4 --list-window 0.4
      --prestart-timeout 1 --reregister-timeout 10 --stop-grace 5 --latency-samples 3 -q)
plugin() {
  echo "$BIN sample-plugin --config $SRC/examples/$1 --dir \$DEVMGR_PLUGIN_DIR --call-log $2"
}

# The value of the sample `name{resource_name="RES"}` in a metrics file ("" if absent).
sample() {
  awk -v want="$2{resource_name=\"$RES\"}" '$1 == want { print $2 }' "$1"
}
# Allocate calls the plugin served / Register calls it made and got OK for.
allocates() { grep -c '"kind":"received","method":"Allocate"' "$1"; }
registers_ok() { grep '"kind":"sent","method":"Register"' "$1" | grep -vc '"error":'; }

check_counts() {  # metrics-file call-log
  local m=$1 log=$2
  [[ -s $m ]] || { fail "$m was not written"; return; }
  grep -qx '# TYPE kubelet_device_plugin_alloc_duration_seconds histogram' "$m" ||
    fail "$m lacks the alloc histogram's TYPE line"
  grep -qx '# TYPE kubelet_device_plugin_registration_total counter' "$m" ||
    fail "$m lacks the registration counter's TYPE line"
  local want_alloc got_alloc want_reg got_reg inf
  want_alloc=$(allocates "$log")
  got_alloc=$(sample "$m" kubelet_device_plugin_alloc_duration_seconds_count)
  [[ $want_alloc -gt 0 ]] || fail "the plugin logged no Allocate call"
  [[ $got_alloc == "$want_alloc" ]] ||
    fail "alloc_duration_seconds_count is '$got_alloc', the plugin served $want_alloc Allocate calls"
  inf=$(awk -v want="kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name=\"$RES\",le=\"+Inf\"}" \
    '$1 == want { print $2 }' "$m")
  [[ $inf == "$want_alloc" ]] || fail "the +Inf bucket is '$inf', want $want_alloc"
  got_reg=$(sample "$m" kubelet_device_plugin_registration_total)
  want_reg=$(registers_ok "$log")
  [[ -n $got_reg && $got_reg -ge 1 ]] || fail "registration_total is '$got_reg', want >= 1"
  [[ $got_reg == "$want_reg" ]] ||
    fail "registration_total is '$got_reg', the plugin logged $want_reg successful Register calls"
}

# --- passing checks, with a kubelet restart and failing Allocates -------------
run 0 "$BIN" conformance --plugin "$(plugin sample-plugin.yaml "$WORK/calls.jsonl")" "${FAST[@]}" \
  --focus '^(allocate\.(rejects-unknown|deterministic|concurrent)|restart\.kubelet)' \
  --metrics-file "$WORK/metrics.prom"
expect "5 checks: 5 passed, 0 failed"  # restart.kubelet-prompt, measured by restart.kubelet
check_counts "$WORK/metrics.prom" "$WORK/calls.jsonl"

# --- a failing MUST check: exit 1, the file is written all the same -----------
run 1 "$BIN" conformance --plugin "$(plugin broken/allocate.cdi-names.yaml "$WORK/broken.jsonl")" \
  "${FAST[@]}" --focus 'allocate.cdi' --metrics-file "$WORK/broken.prom"
expect "allocate.cdi-names  MUST    FAIL"
check_counts "$WORK/broken.prom" "$WORK/broken.jsonl"

# --- the file cannot be written: exit 3, naming the path ----------------------
run 3 "$BIN" conformance --plugin "$(plugin sample-plugin.yaml "$WORK/nodir.jsonl")" "${FAST[@]}" \
  --focus 'allocate.rejects-unknown' --metrics-file "$WORK/no/such/dir/m.prom"
expect "devmgr conformance: --metrics-file: write $WORK/no/such/dir/m.prom"
expect "allocate.rejects-unknown"  # the summary still came

# --- an environment error before any check: no file ---------------------------
run 3 "$BIN" conformance --plugin "devmgr-no-such-command-xyz" --register-timeout 1 -q \
  --metrics-file "$WORK/env.prom"
expect "the plugin command could not run (exit code 127)"
[[ -e $WORK/env.prom ]] && fail "a metrics file was written though no check ran"

finish conformance_metrics
