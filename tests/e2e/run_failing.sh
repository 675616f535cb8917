#!/usr/bin/env bash
# End-to-end: scenarios that must fail do fail, with useful messages
# (tests/scenarios_failing/), bad files are usage errors (exit 2) with
# file:line:col, a SIGSTOPped plugin ends in a clear failure within the step
# timeout, and Ctrl-C stops a run and leaves no plugin process behind.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
F=$SRC/tests/scenarios_failing
WORK=$(mktemp -d /tmp/devmgr-e2e-runf.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"

RUN_TIMEOUT=60

# A hung plugin: fails within the 2s step timeout, naming the stopped plugin.
start=$(date +%s)
run 1 "$BIN" run "$F/sigstop-hang.yaml" --junit "$WORK/hang.xml"
elapsed=$(( $(date +%s) - start ))
[[ $elapsed -lt 20 ]] || fail "sigstop-hang took ${elapsed}s"
expect "admission of pod default/stuck did not finish within 2s"
expect "plugin 'gpu' is stopped (SIGSTOP)"
expect "--- FAIL sigstop-hang"
if command -v python3 >/dev/null; then
  python3 - "$WORK/hang.xml" <<'PY' || fail "JUnit of a failure"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.get("failures") == "1", root.attrib
f = root.find("./testsuite/testcase/failure")
assert "did not finish within 2s" in f.get("message"), f.get("message")
PY
fi

run 1 "$BIN" run "$F/wrong-device-count.yaml"
expect "wrong-device-count.yaml:14:9: resources['example.com/gpu'].capacity"
expect "expected: 3"
expect "actual:   2"
expect "recent devmgr log lines:"
expect "plugin gpu output"

run 1 "$BIN" run "$F/unexpected-rejection.yaml"
expect "pod default/too-big was rejected: UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"

start=$(date +%s)
run 1 "$BIN" run "$F/plugin-exits.yaml"
elapsed=$(( $(date +%s) - start ))
[[ $elapsed -lt 15 ]] || fail "plugin-exits waited ${elapsed}s for a dead plugin"
expect "plugin 'broken' exited with code 3"
expect "cannot find any GPU"

run 1 "$BIN" run "$F/wrong-calls.yaml"
expect "calls['gpu'].sequence[0]"
expect "expected: GetPreferredAllocation"

run 1 "$BIN" run "$F/command-fails.yaml"
expect "command exited with 1 (expected 0)"

# Scenario expectations of issue 18, each with a wrong expectation.
run 1 "$BIN" run "$F/expect-for-breaks.yaml"
expect "stopped holding"
expect "into the 3s window (expect_for)"
expect "expect-for-breaks.yaml:14:9: resources['example.com/gpu'].healthy"
expect "actual:   [gpu-0]"
run 1 "$BIN" run "$F/wrong-capture-relation.yaml"
expect "captured \$first = [gpu-"
expect "pods['two'].containers['app'].devices['example.com/gpu']"
expect "expected: \$first [gpu-"
run 1 "$BIN" run "$F/wrong-absent.yaml"
expect "resources['example.com/gpu'].capacity"
expect "expected: absent"
expect "actual:   1"
run 1 "$BIN" run "$F/wrong-unordered-list.yaml"
expect "pods['p'].containers['app'].mounts"
expect "expected: exactly 1 item(s), in any order"
run 1 "$BIN" run "$F/wrong-checkpoint-checksum.yaml"
expect "checkpoint.valid"
expect "stored,"
run 1 "$BIN" run "$F/wrong-register-result.yaml"
expect "calls['old'].sequence[0]"
expect "expected: Register -> ok"
expect '-> error UNKNOWN "requested API version "v1alpha" is not supported by kubelet'

run 1 "$BIN" run "$F/stopped-kubelet.yaml"
expect "admit needs a running kubelet: it was stopped by stop_kubelet"
run 1 "$BIN" run "$F/dra-start-error-mismatch.yaml"
expect "the kubelet's start failed otherwise than expected: create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get checkpoint dra_manager_state: checkpoint is corrupted"
expect "dra-start-error-mismatch.yaml:8:5: the kubelet's start error"
expect "expected: regex /unexpected end of JSON input/"
run 2 "$BIN" run "$F/invalid/unknown-capture.yaml"
expect "unknown-capture.yaml:6:60: expect.resources['example.com/gpu'].healthy.superset_of: no earlier step captures 'befor' (no step before this one has capture:)"

# Several files: one failure makes the run fail, the others still run.
run 1 "$BIN" run "$SRC/scenarios/basic-allocation.yaml" "$F/wrong-device-count.yaml"
expect "1 passed, 1 failed, 0 errors, 0 skipped"

# Bad files: exit 2 before anything runs.
run 2 "$BIN" run "$F/invalid/typo.yaml"
expect "typo.yaml:7:7: unknown key 'devcies' in the config (did you mean 'devices'?)"
run 2 "$BIN" run "$F/invalid/unknown-step.yaml"
expect "unknown-step.yaml:4:5: unknown key 'restart_kublet' in a step (did you mean 'restart_kubelet'?)"
run 2 "$BIN" run "$F/invalid/wrong-type.yaml"
expect "wrong-type.yaml:4:20: advance_clock must be a duration"
run 2 "$BIN" run "$F/does-not-exist.yaml"
expect "does-not-exist.yaml"
run 2 "$BIN" run
run 2 "$BIN" run "$SRC/scenarios/basic-allocation.yaml" --focus '('
run 2 "$BIN" run "$SRC/scenarios/basic-allocation.yaml" --focus 'no-such-scenario'
expect "--focus matches no scenario"

# Ctrl-C mid-step: the run stops, reports, exits 1, and kills the plugin.
"$BIN" run "$F/slow-for-interrupt.yaml" >"$WORK/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q "admit pod default/stuck" "$WORK/int.out" && break
  sleep 0.1
done
dir=$(sed -n 's/^        device-plugin dir \(.*\)\/dp$/\1/p' "$WORK/int.out")
kill -INT $pid
start=$(date +%s)
wait $pid
rc=$?
elapsed=$(( $(date +%s) - start ))
[[ $rc -eq 1 ]] || { fail "interrupted run exited $rc"; cat "$WORK/int.out"; }
[[ $elapsed -lt 15 ]] || fail "interrupted run took ${elapsed}s to stop"
grep -q "interrupted" "$WORK/int.out" || { fail "no 'interrupted' in output"; cat "$WORK/int.out"; }
if [[ -n "$dir" ]] && pgrep -f -- "--dir $dir/dp" >/dev/null; then
  fail "a plugin of the interrupted run is still running"
  for leaked in $(pgrep -f -- "--dir $dir/dp"); do kill -KILL "$leaked"; done
fi
[[ -z "$dir" || ! -e "$dir" ]] || fail "the interrupted run left $dir"

finish run_failing
