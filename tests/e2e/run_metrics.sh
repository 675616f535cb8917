#!/usr/bin/env bash
# e2e: `devmgr run` serves the PodResources socket during a scenario and
# writes/serves the kubelet metrics of the whole run:
#  - --metrics-file: the alloc-duration histogram counts every Allocate the
#    plugins received (counted from their call logs), registrations and
#    admissions are summed over scenarios and kubelet restarts;
#  - --metrics-address: a `run:` step scrapes $DEVMGR_METRICS_URL over HTTP
#    mid-run and parses it;
#  - --pod-resources-socket PATH: the socket is there, and `devmgr
#    podresources` reads it from a `run:` step; `off` turns it off.
# Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR; python3 (installed by make).
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
WORK=$(mktemp -d /tmp/dmrm.XXXXXX)
kept=()
cleanup() { rm -rf "$WORK" "${kept[@]}"; }
trap cleanup EXIT
source "$(dirname "$0")/lib/checks.bash"

# 1. Two library scenarios (three runs: pod-resources under 1.32 and 1.34+, demo).
"$BIN" run "$SRC/scenarios/pod-resources.yaml" "$SRC/scenarios/demo.yaml" --keep-dir \
  --metrics-file "$WORK/metrics.prom" --json "$WORK/report.json" >"$WORK/out" 2>&1
rc=$?
mapfile -t kept < <(sed -n 's/^ *kept work dir: //p' "$WORK/out")
[[ $rc -eq 0 ]] || { fail "devmgr run exited $rc"; cat "$WORK/out"; }
[[ ${#kept[@]} -eq 3 ]] || fail "expected 3 kept work dirs, got ${#kept[@]}"
[[ -s "$WORK/metrics.prom" ]] || fail "no metrics file"
python3 - "$WORK/metrics.prom" "$WORK/report.json" "${kept[@]}" <<'PY' || fail "metrics check"
import glob, json, re, sys
metrics, report, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
values = {}
for line in open(metrics):
    if line.startswith("#") or not line.strip():
        continue
    m = re.fullmatch(r'([a-z_]+)(\{[^}]*\})? (\S+)\n?', line)
    assert m, "unparsable line: %r" % line
    values[m.group(1) + (m.group(2) or "")] = float(m.group(3))
res = '{resource_name="example.com/gpu"}'
allocs = regs = 0
for d in dirs:
    for log in glob.glob(d + "/plugins/*.calls.jsonl"):
        for rec in map(json.loads, open(log)):
            allocs += rec.get("method") == "Allocate"
            regs += rec.get("method") == "Register"
assert allocs > 0 and regs > 0, (allocs, regs)
got = values["kubelet_device_plugin_alloc_duration_seconds_count" + res]
assert got == allocs, ("alloc histogram count", got, "Allocate calls", allocs)
inf = values['kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name="example.com/gpu",le="+Inf"}']
assert inf == allocs, inf
got = values["kubelet_device_plugin_registration_total" + res]
# The kubelet counts a Register when it arrives; the plugin logs it when the
# answer is back. demo.yaml kills the plugin right after a kubelet restart, so
# a re-registration can be counted by the kubelet and cut off in the plugin
# before its log line (at most one per kill_plugin step: one run here).
assert regs <= got <= regs + 1, ("registrations", got, "Register calls", regs)
# Every admit step and every re-admission after a kubelet restart.
assert values["kubelet_topology_manager_admission_requests_total"] >= 4
# The `run:` steps of pod-resources.yaml called List once per run.
assert values['kubelet_pod_resources_endpoint_requests_list{server_api_version="v1"}'] == 2
assert json.load(open(report))["summary"]["failed"] == 0
PY
rm -rf "${kept[@]}"; kept=()

# 2. A fixed socket, and metrics scraped over HTTP from inside the run.
cat >"$WORK/scrape.yaml" <<'YAML'
name: scrape
plugins:
  - name: gpu
    sample_plugin:
      resource: example.com/gpu
      devices: [{id: g0}, {id: g1}]
steps:
  - admit:
      apiVersion: v1
      kind: Pod
      metadata: {name: p}
      spec:
        containers: [{name: c, resources: {limits: {example.com/gpu: 2}}}]
  - name: the socket is the one asked for, and answers
    run: >-
      test "$DEVMGR_POD_RESOURCES_SOCKET" = "$FIXED_SOCKET" &&
      "$DEVMGR_BIN" podresources allocatable --socket "$DEVMGR_POD_RESOURCES_SOCKET" | grep -q g1
  - name: scrape the metrics mid-run
    run: >-
      python3 -c 'import os, re, urllib.request;
      t = urllib.request.urlopen(os.environ["DEVMGR_METRICS_URL"], timeout=5).read().decode();
      m = re.search(r"kubelet_device_plugin_alloc_duration_seconds_count\{resource_name=\"example.com/gpu\"\} (\d+)", t);
      assert m and m.group(1) == "1", t'
YAML
sock="$WORK/pr/kubelet.sock"
FIXED_SOCKET="$sock" "$BIN" run "$WORK/scrape.yaml" --pod-resources-socket "$sock" \
  --metrics-address 127.0.0.1:0 >"$WORK/out" 2>&1 || { fail "scrape scenario exited $?"; cat "$WORK/out"; }
grep -q "^serving metrics at http://127.0.0.1:[0-9]*/metrics" "$WORK/out" || fail "metrics URL not printed"
[[ -e "$sock" ]] && fail "the socket was left behind"

# 3. --pod-resources-socket off: nothing is served, and the variable is empty.
cat >"$WORK/off.yaml" <<'YAML'
name: off
steps:
  - run: test -z "$DEVMGR_POD_RESOURCES_SOCKET" && test ! -e "$DEVMGR_WORK_DIR/pod-resources"
YAML
"$BIN" run "$WORK/off.yaml" --pod-resources-socket off >"$WORK/out" 2>&1 \
  || { fail "off scenario exited $?"; cat "$WORK/out"; }

# 4. An unwritable metrics file is an environment error (exit 3).
"$BIN" run "$WORK/off.yaml" --pod-resources-socket off --metrics-file /nonexistent/dir/m.prom \
  >"$WORK/out" 2>&1
rc=$?
[[ $rc -eq 3 ]] || fail "unwritable --metrics-file exited $rc, want 3"
grep -q "devmgr run: --metrics-file: " "$WORK/out" || { fail "no --metrics-file error"; cat "$WORK/out"; }

finish run_metrics
