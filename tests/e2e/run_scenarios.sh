#!/usr/bin/env bash
# End-to-end: every scenario of the scenarios/ library passes under
# `devmgr run` (exit 0), and the JUnit and JSON reports are written and
# well-formed (parsed with python3's xml.etree and json when python3 is
# there). Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/devmgr-e2e-run.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"

# Every scenario, scenarios/topology/ included.
mapfile -t files < <(find "$SRC/scenarios" -name '*.yaml' | sort)
[[ ${#files[@]} -ge 20 ]] || fail "expected at least 20 scenarios, found ${#files[@]}"

start=$(date +%s)
"$BIN" run "$SRC/scenarios" --junit "$WORK/junit.xml" --json "$WORK/report.json" >"$WORK/out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
if [[ $rc -ne 0 ]]; then
  fail "devmgr run scenarios/ exited $rc"
  cat "$WORK/out"
fi
# Scenarios whose applies_to leaves out the default profile are skipped.
grep -q "^=== [0-9]* passed, 0 failed, 0 errors, [0-9]* skipped" "$WORK/out" || fail "summary line missing"
[[ $elapsed -lt 120 ]] || fail "the library took ${elapsed}s (budget 120s)"
[[ -s "$WORK/junit.xml" ]] || fail "no JUnit report"
[[ -s "$WORK/report.json" ]] || fail "no JSON report"

if command -v python3 >/dev/null; then
  python3 - "$WORK/junit.xml" "$WORK/report.json" "${#files[@]}" <<'PY' || fail "report validation"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
cases = root.findall("./testsuite/testcase")
assert len(cases) >= int(sys.argv[3]), len(cases)
assert int(root.get("tests")) == len(cases)
assert int(root.get("failures")) == 0 and int(root.get("errors")) == 0
for c in cases:
    assert c.get("name") and c.get("classname") and float(c.get("time")) >= 0
    assert c.find("failure") is None
    if c.find("skipped") is None:
        assert "[0]" in c.find("system-out").text
rep = json.load(open(sys.argv[2]))
assert rep["schemaVersion"] == 1
assert rep["summary"]["failed"] == 0 and rep["summary"]["total"] == len(rep["scenarios"])
for s in rep["scenarios"]:
    assert s["outcome"] in ("passed", "skipped"), s["name"]
    if s["outcome"] == "skipped":
        continue
    assert s["steps"][0]["kind"] == "setup"
    for st in s["steps"]:
        assert st["outcome"] in ("passed", "skipped"), (s["name"], st)
PY
fi

# A version matrix: one run per profile, names carry the version, and the
# summary says which verdicts differ.
"$BIN" run "$SRC/scenarios/versions/maxsurge-rollout.yaml" "$SRC/scenarios/versions/per-socket-promotion.yaml" \
  --kubelet-version 1.36,1.37 --junit "$WORK/matrix.xml" >"$WORK/out" 2>&1 || fail "matrix run exited $?"
grep -q "^=== scenarios per kubelet version" "$WORK/out" || fail "matrix table missing"
grep -q "^1.37 .* 2 .* 0 .* 0 .* 0" "$WORK/out" || { fail "matrix 1.37 row"; cat "$WORK/out"; }
grep -q 'name="maxsurge-rollout \[1.36\]"' "$WORK/matrix.xml" || fail "JUnit case names lack the version"
grep -q "SKIP per-socket-promotion \[1.36\] (applies to kubelet 1.37 only)" "$WORK/out" || fail "applies_to skip"
"$BIN" run "$SRC/scenarios/basic-allocation.yaml" --kubelet-version 1.38 >"$WORK/out" 2>&1 || fail "1.38 run exited $?"
grep -q "newer than the newest profile; using 1.37" "$WORK/out" || fail "no warning for a newer version"

# --focus / --skip: filtered scenarios are reported as skipped.
"$BIN" run "$SRC/scenarios/basic-allocation.yaml" "$SRC/scenarios/sidecars.yaml" \
  --focus '^basic' --json "$WORK/focus.json" >"$WORK/out" 2>&1 || fail "--focus run exited $?"
grep -q "1 passed, 0 failed, 0 errors, 1 skipped" "$WORK/out" || { fail "--focus summary"; cat "$WORK/out"; }
"$BIN" run "$SRC/scenarios/basic-allocation.yaml" --skip 'allocation' >"$WORK/out" 2>&1 \
  || fail "--skip run exited $?"
grep -q "0 passed, 0 failed, 0 errors, 1 skipped" "$WORK/out" || fail "--skip summary"

# --kubelet-version applies to scenarios that name none; a bad one is usage.
"$BIN" run "$SRC/scenarios/basic-allocation.yaml" --kubelet-version 1.30 >"$WORK/out" 2>&1 \
  || fail "--kubelet-version 1.30 exited $?"
grep -q "start node (kubelet 1.30)" "$WORK/out" || fail "--kubelet-version not applied"
"$BIN" run "$SRC/scenarios/basic-allocation.yaml" --kubelet-version 1.2 >"$WORK/out" 2>&1
[[ $? -eq 2 ]] || fail "--kubelet-version 1.2 should exit 2"

# --keep-dir keeps the work dir with the plugin's call log.
"$BIN" run "$SRC/scenarios/basic-allocation.yaml" --keep-dir >"$WORK/out" 2>&1 || fail "--keep-dir run"
kept=$(sed -n 's/^    kept work dir: //p' "$WORK/out")
if [[ -n "$kept" && -s "$kept/plugins/gpu.calls.jsonl" ]]; then
  rm -rf "$kept"
else
  fail "--keep-dir did not keep the call log ($kept)"
fi

finish run_scenarios
