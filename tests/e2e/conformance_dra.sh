#!/usr/bin/env bash
# `devmgr conformance --dra` through the CLI with real `devmgr sample-dra-driver`
# processes: the reference DRA driver passes every check (exit 0, JUnit), a driver
# with one misbehaviour switch fails exactly its check (exit 1), a two-version
# matrix, examples/ci/dra-conformance.sh as a DRA driver repository runs it,
# --dra --list, and the usage and environment exit codes.
# Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmdra-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"
RUN_TIMEOUT=120

driver() {  # driver [CONFIG]: the sample DRA driver command for --plugin
  echo "$BIN sample-dra-driver ${1:+--config $1} --node-name \"\$DEVMGR_NODE_NAME\" \
--registry-dir \"\$DEVMGR_REGISTRY_DIR\" --plugin-dir \"\$DEVMGR_PLUGINS_DIR\" --cdi-dir \"\$DEVMGR_CDI_DIR\""
}

# --- the reference DRA driver passes, with a JUnit report -------------------
run 0 "$BIN" conformance --dra --plugin "$(driver)" -q --junit "$WORK/dra.xml" --json "$WORK/dra.json"
expect "dra.registration             MUST    PASS"
expect "dra.calls.timely             MUST    PASS"
expect "dra.restart.reboot           MUST    PASS"
# The example config serves no health service: dra.health.stream is skipped.
expect "22 checks: 21 passed, 0 failed (0 MUST, 0 SHOULD, 0 INFO), 1 skipped"
expect "dra.health.stream            SHOULD  SKIP"
expect "(wall time, 6 plugin session(s))"
expect "RESULT: PASS (every MUST check passed)"
grep -qF 'tests="22" failures="0"' "$WORK/dra.xml" || fail "JUnit lacks tests=\"22\" failures=\"0\""
grep -qF '"passed": true' "$WORK/dra.json" || fail "JSON lacks \"passed\": true"

# --- one misbehaviour: exactly its check fails, exit 1 ----------------------
sed 's/unprepare_unknown_fails: false/unprepare_unknown_fails: true/' \
  "$SRC/examples/sample-dra-driver.yaml" >"$WORK/unknown.yaml"
run 1 "$BIN" conformance --dra --plugin "$(driver "$WORK/unknown.yaml")" -q
expect "dra.unprepare.unknown        MUST    FAIL"
expect "is not prepared by sample.dra.devmgr.io"
failed=$(awk '$3 == "FAIL" {print $1}' <<<"$OUT" | tr '\n' ' ')
[[ "$failed" == "dra.unprepare.unknown " ]] || fail "failed checks are '$failed'"

# --- the disruptive checks stop and start driver processes: a driver that does
# not write its CDI spec again and publishes only at its first start fails the
# reboot and the slice wipe, each in a session of its own ----------------------
sed -e 's/reprepare_skips_spec: false/reprepare_skips_spec: true/' \
  -e 's/publish_only_first_start: false/publish_only_first_start: true/' \
  "$SRC/examples/sample-dra-driver.yaml" >"$WORK/restarts.yaml"
run 1 "$BIN" conformance --dra --plugin "$(driver "$WORK/restarts.yaml")" -q --publish-timeout 2 \
  --focus '^dra\.(restart|slices\.wiped)'
failed=$(awk '$3 == "FAIL" {print $1}' <<<"$OUT" | tr '\n' ' ')
[[ "$failed" == "dra.restart.reboot dra.slices.wiped " ]] || fail "failed checks are '$failed'"
passed=$(awk '$3 == "PASS" {print $1}' <<<"$OUT" | tr '\n' ' ')
[[ "$passed" == "dra.restart.driver dra.restart.unprepare dra.restart.no-leak " ]] ||
  fail "passed checks are '$passed'"
expect "answered after the reboot resolve to no device of a CDI spec"
expect "the driver published no complete pool for the node within 2s"

# --- two kubelet versions: one table each and the per-version tally ---------
run 0 "$BIN" conformance --dra --kubelet-version 1.34,1.37 --plugin "$(driver)" -q --focus '^dra\.(registration|services)'
expect "=== kubelet 1.34"
expect "=== kubelet 1.37"
expect "=== no check verdict differs between kubelet versions"

# --- the CI recipe for DRA driver repositories, verbatim ---------------------
mkdir -p "$WORK/repo/bin"
printf '#!/bin/sh\nexec "%s" sample-dra-driver "$@"\n' "$BIN" >"$WORK/repo/bin/my-dra-driver"
chmod +x "$WORK/repo/bin/my-dra-driver"
OUT=$(cd "$WORK/repo" && DEVMGR="$BIN" timeout 120 sh "$SRC/examples/ci/dra-conformance.sh" 2>&1)
rc=$?
[[ $rc -eq 0 ]] || { fail "examples/ci/dra-conformance.sh: exit $rc"; echo "$OUT" | tail -30; }
expect "=== no check verdict differs between kubelet versions"
grep -qF 'failures="0"' "$WORK/repo/reports/dra-conformance.xml" ||
  fail "the recipe's JUnit report lacks failures=\"0\""

# --- the catalogue, usage and environment errors ----------------------------
run 0 "$BIN" conformance --dra --list
expect "dra.prepare.batched          MUST   Two claims in one NodePrepareResources are answered per claim"
run 2 "$BIN" conformance --dra --socket /tmp/none.sock
expect "--dra needs --plugin"
run 2 "$BIN" conformance --dra --kubelet-version 1.33 --plugin "$(driver)"
expect "the DRA catalogue needs kubelet 1.34 or newer"
run 2 "$BIN" conformance --dra --plugin "$(driver)" --focus '^registration\.'
expect "--focus matches no check of the DRA catalogue"
run 3 "$BIN" conformance --dra --plugin "/nonexistent/driver" --register-timeout 5 -q
expect "the driver command could not run (exit code 127)"

finish conformance_dra
