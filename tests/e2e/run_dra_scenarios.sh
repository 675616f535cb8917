#!/usr/bin/env bash
# End-to-end: the DRA scenario library (scenarios/dra/) passes under
# `devmgr run --kubelet-version 1.34,1.37` against the reference DRA driver,
# registered over real unix sockets through the plugin watcher; under 1.33
# every DRA scenario is reported skipped (no DRAPlugin handler before 1.34).
# Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/devmgr-e2e-dra-run.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"

mapfile -t files < <(find "$SRC/scenarios/dra" -name '*.yaml' | sort)
[[ ${#files[@]} -ge 7 ]] || fail "expected at least 7 DRA scenarios, found ${#files[@]}"

"$BIN" run "$SRC/scenarios/dra" --kubelet-version 1.34,1.37 --json "$WORK/report.json" \
  >"$WORK/out" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  fail "devmgr run --kubelet-version 1.34,1.37 scenarios/dra exited $rc"
  cat "$WORK/out"
fi
want=$(( ${#files[@]} * 2 ))
grep -q "^=== $want passed, 0 failed, 0 errors, 0 skipped" "$WORK/out" \
  || { fail "not every DRA scenario passed under 1.34 and 1.37"; cat "$WORK/out"; }

# Before 1.34: skipped, saying why.
"$BIN" run "$SRC/scenarios/dra/template-claim.yaml" --kubelet-version 1.33 >"$WORK/out" 2>&1 \
  || fail "1.33 run exited $?"
grep -q "SKIP dra-template-claim (DRA needs kubelet 1.34 or newer" "$WORK/out" \
  || { fail "no skip under 1.33"; cat "$WORK/out"; }

finish run_dra_scenarios
