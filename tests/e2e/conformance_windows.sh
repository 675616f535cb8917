#!/usr/bin/env bash
# `devmgr conformance` time windows through the CLI, with real plugin
# processes (issue 13): the reference plugin configured to re-register 12 s
# after kubelet.sock re-appears (as the kubernetes e2e sample plugin does
# after about 10 s) passes restart.kubelet under the default windows (the
# node e2e's 30 s) and gets a SHOULD finding with its measured time; one that
# never re-registers fails the MUST. Also: the empty preferred set for a
# fresh pod fails a MUST with the request in the report, and --list shows
# the SHOULD companions, a 5 s list re-sender at the default list window and
# a plugin that dies on GetDevicePluginOptions. Needs $DEVMGR_BIN and
# $DEVMGR_SOURCE_DIR. ~45 s.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmconf-win.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"
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

# 5. A plugin that re-sends its unchanged list every 5 s, at the default list
# window: the SHOULD law.no-resend fails (exit 0: a SHOULD does not fail the
# run) with the period it measured.
cat >"$WORK/resend5.yaml" <<'YAML'
resource: example.com/gpu
devices: [{id: gpu-0}, {id: gpu-1}]
list_and_watch: {resend_interval: 5s}
YAML
out=$("$BIN" conformance --plugin "$BIN sample-plugin --config $WORK/resend5.yaml --dir \$DEVMGR_PLUGIN_DIR" \
      --dir "$WORK/dp" --focus '^law\.no-resend' -q --json "$WORK/resend.json" 2>&1)
rc=$?
[[ $rc -eq 0 ]] || fail "5 s re-sender: exit $rc (want 0)"
verdict "$out" law.no-resend "SHOULD FAIL"
grep -qE 're-sent an unchanged list, every (5|5\.[0-9]+|4\.9[0-9]*)s' <<<"$out" ||
  fail "5 s re-sender: no period near 5 s in: $(grep law.no-resend <<<"$out")"
python3 - "$WORK/resend.json" <<'PY' || fail "5 s re-sender: JSON figure"
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["checks"] if c["id"] == "law.no-resend"][0]
period = c["figures"]["re-send period"]
assert period == "5s" or period.startswith("5.") or period.startswith("4.9"), period
PY

# 6. A plugin that registers late and dies on GetDevicePluginOptions (as the
# KubeVirt KVM plugin was reported to): registration passes, options and the
# first list fail, every check that needs them is skipped, and the restart
# check does not wait its window for a plugin that has exited.
cat >"$WORK/dies.yaml" <<'YAML'
resource: example.com/gpu
devices: [{id: gpu-0}, {id: gpu-1}]
faults:
  register: {delay: 1s}
  get_device_plugin_options: {exit: 3}
YAML
out=$("$BIN" conformance --plugin "$BIN sample-plugin --config $WORK/dies.yaml --dir \$DEVMGR_PLUGIN_DIR" \
      --dir "$WORK/dp" -q 2>&1)
rc=$?
[[ $rc -eq 1 ]] || fail "dying plugin: exit $rc (want 1)"
verdict "$out" registration.timely "MUST PASS"
verdict "$out" options.answers "MUST FAIL"
verdict "$out" law.first-list "MUST FAIL"
verdict "$out" law.ids-unique "MUST SKIP"
verdict "$out" allocate.permissions "MUST SKIP"
verdict "$out" restart.kubelet "MUST FAIL"
verdict "$out" restart.plugin "MUST SKIP"
has "$out" "the plugin exited with code 3 before it registered again"
has "$out" "2 plugin session(s)"

finish conformance_windows
