#!/usr/bin/env bash
# perf_bench end to end, small: P5 (DRA, with the test DRA driver and the kubelet's own DRA
# manager when built), P1 (its headline pair with the reference plugin in a process of
# its own, the in-process pair, the real Go plugin when tests/peers built it, the kubelet's own
# device manager when tests/kubelet-oracle built it, GetPreferredAllocation, ext4 figures) and P4, in a private temp directory. Checks that every figure `make bench`
# reports is in the JSON as a positive number, that the plugin processes are gone afterwards,
# and that nothing is left in the temp directory. Timing is not judged here
# (docs/performance.md: `make bench`).
#   perf_bench_smoke.sh PERF_BENCH   (DEVMGR_BIN names the devmgr binary)
set -euo pipefail
bench=${1:?usage: perf_bench_smoke.sh PERF_BENCH}
bin=${DEVMGR_BIN:?DEVMGR_BIN must name the devmgr binary}
command -v pgrep >/dev/null || { echo "pgrep (procps) is needed" >&2; exit 1; }
root=$(mktemp -d "${TMPDIR:-/tmp}/devmgr-bench-smoke.XXXXXX")
# The real Go plugin's figure, when `make test` built the peer (tests/peers/build.sh).
peer=$(dirname "$bench")/peers/e2e-sample-v1.37.2
peer_args=()
# Run from a copy under /tmp, in a directory whose name has a space: the bench binds a
# private /tmp over the peer's, and a plugin under /tmp (a clone there) must still start.
if [ -x "$peer" ]; then
  mkdir "$root/a clone"
  cp "$peer" "$root/a clone/"
  peer_args=(--peer "$root/a clone/$(basename "$peer")")
fi
# The kubelet's own figure, when `make test` built the oracle (tests/kubelet-oracle/build.sh).
kubelet=$(dirname "$bench")/kubelet-oracle/kubelet-oracle-1.37
kubelet_args=()
[ -x "$kubelet" ] && kubelet_args=(--kubelet-oracle "$kubelet")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/tmp" "$root/disk"

"$bench" p1 --n 20 --tmp "$root/tmp" --disk "$root/disk" --devmgr "$bin" "${peer_args[@]}" \
  "${kubelet_args[@]}" --json "$root/p1.json" >"$root/p1.out" 2>"$root/p1.err" || {
  cat "$root/p1.out" "$root/p1.err"
  exit 1
}
"$bench" p4 --n 50 --tmp "$root/tmp" --devmgr "$bin" --json "$root/p4.json" \
  >"$root/p4.out" 2>"$root/p4.err" || {
  cat "$root/p4.out" "$root/p4.err"
  exit 1
}

# P5 (DRA) with the test DRA driver, when `make test` built it (tests/dra-driver/build.sh).
driver=$(dirname "$bench")/dra-driver/dra-driver
driver_args=()
[ -x "$driver" ] && driver_args=(--dra-driver "$driver")
"$bench" p5 --n 20 --tmp "$root/tmp" "${driver_args[@]}" "${kubelet_args[@]}" \
  --json "$root/p5.json" >"$root/p5.out" 2>"$root/p5.err" || {
  cat "$root/p5.out" "$root/p5.err"
  exit 1
}
python3 - "$root/p5.json" "${driver_args[1]:-}" "${kubelet_args[1]:-}" <<'PY'
import json, sys
p5 = json.load(open(sys.argv[1]))
driver, kubelet = sys.argv[2:4]
keys = ["p5_rewrite_p50_us", "p5_rewrite_encode_p50_us", "p5_rewrite_floor_us",
        "p5_rewrite_floor_ratio", "p5_rewrite_scratch_encode_p50_us"]
if driver:
    keys += ["p5_prepare_p50_us", "p5_prepare_p99_us", "p5_floor_p50_us", "p5_ratio",
             "p5_own_rpc_p50_us"]
    skipped = p5.get("p5_kubelet_skipped", "")
    if kubelet and "private mount namespace" not in skipped:
        keys += ["p5_kubelet_prepare_p50_us", "p5_kubelet_floor_p50_us", "p5_kubelet_ratio"]
        if p5.get("p5_fs") == "tmpfs":
            keys.append("p5_ratio_vs_kubelet")
elif "no --dra-driver binary" not in p5.get("p5_skipped", ""):
    sys.exit(f"p5_skipped: {p5.get('p5_skipped')!r}")
bad = [k for k in keys if not isinstance(p5.get(k), (int, float)) or p5[k] <= 0]
if bad:
    sys.exit(f"P5 figures missing or not positive: {bad}")
PY
python3 - "$root/p1.json" "$root/p4.json" "${peer_args[1]:-}" "${kubelet_args[1]:-}" <<'PY'
import json, sys
p1, p4 = (json.load(open(f)) for f in sys.argv[1:3])
peer, kubelet = sys.argv[3:5]

def missing(d, keys):
    """The keys that are not a positive number in d."""
    return [k for k in keys if not isinstance(d.get(k), (int, float)) or d[k] <= 0]

def measured_unless_no_namespace(what, given, absent_reason, keys):
    """A figure that needs a binary: without it, skipped with absent_reason; with it,
    measured unless this machine cannot make a private mount namespace."""
    skipped = p1.get(f"p1_{what}_skipped", "")
    if not given:
        if absent_reason not in skipped:
            sys.exit(f"p1_{what}_skipped: {skipped!r}")
        return False
    if "private mount namespace" in skipped:
        return False
    if missing(p1, keys):
        sys.exit(f"the {what} figures are missing: {missing(p1, keys)}; skipped {skipped!r}")
    return True
# Each P1 pair's figures (perf_bench's RecordPair), then the others.
pair = ["admission_p50_us", "admission_p99_us", "floor_p50_us", "floor_p99_us",
        "bare_after_admission_p50_us", "ratio", "ratio_p99", "ratio_own_rpc", "bare_write_p50_us",
        "admission_rpc_p50_us", "admission_rest_p50_us", "admission_write_p50_us",
        "admission_own_p50_us"]
p1_keys = [pre + k for pre in ("p1_", "p1_inproc_") for k in pair] + [
    "p1_gpa_admission_p50_us", "p1_gpa_admission_p99_us", "p1_gpa_floor_p50_us", "p1_gpa_ratio"] + [
    f"p1_{d}_{k}" for d in ("disk", "fsync")
    for k in ("admission_p50_us", "admission_p99_us", "bare_allocate_p50_us", "bare_write_p50_us")]
want = [(p1, p1_keys), (p4, ["p4_cycles_s"])]
bad = [k for d, keys in want for k in missing(d, keys)]
if bad:
    sys.exit(f"missing or not positive: {bad}")
# Committed results carry no path of the machine they ran on.
paths = {k: v for d in (p1, p4) for k, v in d.items() if isinstance(v, str) and v.startswith("/")}
if paths:
    sys.exit(f"machine paths in the results: {paths}")
if p1.get("p1_plugin") != "own process":
    sys.exit(f"p1_plugin: {p1.get('p1_plugin')!r}, want 'own process'")
if p4.get("p4_cycles") != 50:
    sys.exit(f"p4_cycles: {p4.get('p4_cycles')!r}, want 50")
# The real plugin's pair (--peer) and the kubelet's own figure (--kubelet-oracle).
measured_unless_no_namespace("peer", peer, "no --peer binary", ["p1_peer_" + k for k in pair])
# Compared with devmgr's admission only where fsync is free (tmpfs).
tmpfs = p1.get("p1_kubelet_fs") == "tmpfs"
kubelet_keys = ["p1_kubelet_" + k for k in ("admission_p50_us", "admission_p99_us", "floor_p50_us",
                "floor_p99_us", "bare_after_admission_p50_us", "ratio")]
if measured_unless_no_namespace("kubelet", kubelet, "no --kubelet-oracle binary",
                                kubelet_keys + (["p1_devmgr_vs_kubelet_admission",
                                                 "p1_ratio_vs_kubelet"] if tmpfs else [])):
    for k in ("p1_devmgr_vs_kubelet_admission", "p1_ratio_vs_kubelet"):
        if not tmpfs and k in p1:
            sys.exit(f"{k} on {p1.get('p1_kubelet_fs')!r}")
    if not p1.get("p1_kubelet", "").startswith("v1.37."):
        sys.exit(f"p1_kubelet {p1.get('p1_kubelet')!r}")
PY
grep -q "reference plugin in its own process" "$root/p1.out"

# The plugin processes ran with their config under $root/tmp, the kubelet oracle with its
# directory there: none may outlive the bench.
for what in "--config $root/" "--dir $root/" "--socket $root/"; do
  if pgrep -f -- "$what" >/dev/null; then
    echo "processes left running:" >&2
    pgrep -af -- "$what" >&2
    exit 1
  fi
done
left="$(ls -A "$root/tmp")$(ls -A "$root/disk")"
if [ -n "$left" ]; then
  echo "left behind: $left" >&2
  exit 1
fi
echo "perf_bench smoke: P1 ratio $(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["p1_ratio"], 2))' "$root/p1.json") (n=20, not judged); P4 50 cycles"
