#!/usr/bin/env bash
# `devmgr conformance` time windows through the CLI, with real plugin
# processes (issue 13): the reference plugin configured to re-register 12 s
# after kubelet.sock re-appears (as the kubernetes e2e sample plugin does
# after about 10 s) passes restart.kubelet under the default windows (the
# node e2e's 30 s) and gets a SHOULD finding with its measured time; one that
# never re-registers fails the MUST. Also: the empty preferred set for a
# fresh pod fails a MUST with the request in the report, and --list shows
# the SHOULD companions. Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR. ~20 s.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmconf-win.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
sample() { echo "$BIN sample-plugin --config $SRC/examples/broken/$1.yaml --dir \$DEVMGR_PLUGIN_DIR"; }
# has OUT PATTERN: a fixed string in the report.
has() { grep -qF -- "$2" <<<"$1" || { fail "missing '$2'"; echo "$1" | tail -20; }; }
# verdict OUT ID "LEVEL RESULT": the check's row in the summary table.
verdict() {
  local got
  got=$(awk -v id="$2" '$1 == id {print $2, $3}' <<<"$1")
  [[ "$got" == "$3" ]] || { fail "$2: '$got' (want '$3')"; echo "$1" | tail -20; }
}

# 1. Slow but working: default MUST and SHOULD windows, exit 0.
out=$("$BIN" conformance --plugin "$(sample restart.kubelet-prompt)" --dir "$WORK/dp" \
      --focus '^restart\.kubelet' -q 2>&1)
rc=$?
[[ $rc -eq 0 ]] || fail "slow re-registration: exit $rc (want 0)"
verdict "$out" restart.kubelet "MUST PASS"
verdict "$out" restart.kubelet-prompt "SHOULD FAIL"
has "$out" "re-registered after 12"
has "$out" "within the e2e window of 30s, slower than the SHOULD of 10s"
if grep -q -- "after -" <<<"$out"; then fail "a negative duration: $(grep -- 'after -' <<<"$out")"; fi

# 2. Never re-registers: the MUST fails (exit 1), its SHOULD is not measured.
out=$("$BIN" conformance --plugin "$(sample restart.kubelet)" --dir "$WORK/dp" \
      --focus '^restart\.kubelet' --reregister-timeout 2 -q 2>&1)
rc=$?
[[ $rc -eq 1 ]] || fail "no re-registration: exit $rc (want 1)"
verdict "$out" restart.kubelet "MUST FAIL"
verdict "$out" restart.kubelet-prompt "SHOULD SKIP"
has "$out" "no Register call within 2s"

# 3. Empty preferred set for a fresh pod: a MUST with the request and the answer.
out=$("$BIN" conformance --plugin "$(sample preferred.fresh-pod)" --dir "$WORK/dp" \
      --focus '^preferred\.' -q --json "$WORK/r.json" 2>&1)
rc=$?
[[ $rc -eq 1 ]] || fail "empty preferred set: exit $rc (want 1)"
verdict "$out" preferred.fresh-pod "MUST FAIL"
verdict "$out" preferred.must-include "MUST PASS"
has "$out" "allocation_size: 2 } answer container_responses { }"
grep -q 'preferred.fresh-pod' "$WORK/r.json" || fail "JSON report lacks preferred.fresh-pod"

# 4. The catalogue lists the companions with the check that measures them.
out=$("$BIN" conformance --list)
has "$out" "restart.kubelet-prompt"
has "$out" "(measured by restart.kubelet)"

if [[ $failures -ne 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
