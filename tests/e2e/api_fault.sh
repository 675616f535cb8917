#!/usr/bin/env bash
# End-to-end: API fault injection (docs/api-server.md, "Fault injection") from
# a scenario and from the DRA conformance suite, with real
# `devmgr sample-dra-driver` processes. scenarios/dra/api-fault.yaml: the
# driver's claim GET is answered 500, the prepare fails, the kubelet's retry
# prepares the claim; the text and JSON reports name the failed call and the
# driver's next request. `conformance --dra --api-fault`: a 500 on the
# driver's ResourceSlice POST fails dra.slices, whose details name the call.
# Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmfault-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"
RUN_TIMEOUT=120
CLAIM=/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu
SLICES=/apis/resource.k8s.io/v1/resourceslices

# --- a scenario: the failed GET, then the same GET again -------------------
run 0 "$BIN" run "$SRC/scenarios/dra/api-fault.yaml" --kubelet-version 1.37 \
  --json "$WORK/run.json" --junit "$WORK/run.xml"
expect "API fault 'method=GET,path=$CLAIM,error=500' fired in step 4 at "
expect ": GET $CLAIM answered 500 (client devmgr-sample-dra-driver/sample.dra.devmgr.io)"
expect "GET $CLAIM 200 (the same call again)"
expect "=== 1 passed, 0 failed, 0 errors, 0 skipped"
python3 - "$WORK/run.json" "$CLAIM" <<'PY' || fail "the JSON report's apiFaults"
import json, sys
faults = json.load(open(sys.argv[1]))["scenarios"][0]["apiFaults"]
assert len(faults) == 1, faults
f = faults[0]
assert f["step"] == 4 and f["method"] == "GET" and f["target"] == sys.argv[2], f
assert f["status"] == 500 and f["repeated"] is True, f
assert f["userAgent"] == "devmgr-sample-dra-driver/sample.dra.devmgr.io", f
assert f["after"][-1]["status"] == 200 and f["after"][-1]["afterMs"] >= 0, f
PY
grep -qF "fired in step 4" "$WORK/run.xml" || fail "the JUnit system-out lacks the fault"

# --- a bad SPEC is a load error with its position ---------------------------
sed 's/,error=500$/,error=5000/' "$SRC/scenarios/dra/api-fault.yaml" >"$WORK/bad.yaml"
run 2 "$BIN" run "$WORK/bad.yaml"
expect "bad.yaml:40:16: api_fault: --api-fault"

# --- conformance: the driver's slice POST answered 500 ----------------------
driver="$BIN sample-dra-driver --node-name \"\$DEVMGR_NODE_NAME\" \
--registry-dir \"\$DEVMGR_REGISTRY_DIR\" --plugin-dir \"\$DEVMGR_PLUGINS_DIR\" --cdi-dir \"\$DEVMGR_CDI_DIR\""
run 1 "$BIN" conformance --dra --plugin "$driver" -q --focus '^dra\.slices ' --publish-timeout 2 \
  --api-fault "method=POST,path=$SLICES,error=500"
expect "dra.slices  MUST    FAIL"
expect "POST $SLICES answered 500"
run 2 "$BIN" conformance --dra --plugin "$driver" --api-fault "method=GET"
expect '--api-fault "method=GET": give exactly one of error='
run 2 "$BIN" conformance --plugin true --api-fault "method=GET,error=500"
expect "--api-fault needs --dra"

finish api_fault
