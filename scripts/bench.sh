#!/usr/bin/env bash
# make bench: devmgr's costs beside their physical floors, measured in one
# run (docs/performance.md). Prints the figures and writes them, merged, to
# bench/results.json, then draws docs/performance-scaling.png from it.
#   P1  admission of a 1-device pod vs a bare Allocate RPC on the same socket
#   P2  checkpoint verify vs the Go reference tool on the same 10,000-entry file
#   P3  1,000,000-device ListAndWatch update, 1-device allocation vs hashing and
#       writing that checkpoint, peak RSS
#   P4  10,000 admit/delete cycles over real sockets
#   P5  DRA: a pod's claim prepared vs a bare NodePrepareResources to the same
#       driver (devmgr and the kubelet's own DRA manager), and the
#       dra_manager_state rewrite for 1,000 prepared claims vs its floor
#   scaling: cost vs devices and entries (for the plot)
# Set-up (as root, when missing): python3-matplotlib for the plot. Go: `go` on
# PATH, else /usr/local/go/bin/go, with the Go module proxy (or warm module
# cache) for the tools built from the repository's Go modules: the checkpoint
# reference tool (tests/checkpoint-oracle, P2), the kubernetes e2e sample
# plugin (tests/peers) and the kubelet's own device manager (tests/kubelet-oracle),
# both P1. A figure whose tool cannot be built is reported as not measured, loudly.
set -euo pipefail
BUILD_DIR=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bench/results.json
# Device-plugin directories on tmpfs (a page-cache write, as "fsync off" means; see
# docs/performance.md for why not ext4 here), and a disk directory for P1's disk figures.
if [ -z "${BENCH_TMP:-}" ] && [ -w /dev/shm ]; then TMP_ROOT=/dev/shm; else TMP_ROOT=${BENCH_TMP:-/tmp}; fi
DISK_ROOT=${BENCH_DISK:-/tmp}
PARTS_DIR=$(mktemp -d "$TMP_ROOT/devmgr-bench-parts-XXXXXX")
trap 'rm -rf "$PARTS_DIR"' EXIT

# ---- set-up --------------------------------------------------------------
want=()
for p in python3-matplotlib; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || want+=("$p")
done
if [ ${#want[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "bench set-up: installing ${want[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
      --no-install-recommends "${want[@]}" >/dev/null || echo "bench set-up: apt-get failed (go on)"
  else
    echo "bench set-up: missing ${want[*]} (run as root to install them)"
  fi
fi

GO=$(command -v go || true)
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
# P2's reference: the kubelet's own checkpoint code (tests/checkpoint-oracle),
# built and checked against the golden corpus by its build script.
ORACLE=""
if [ -z "$GO" ]; then
  echo "bench set-up: NO GO TOOLCHAIN: the checkpoint reference tool cannot be built; P2 ratio not measured"
elif GO="$GO" OUT="$ROOT/$BUILD_DIR/checkpoint-oracle" bash "$ROOT/tests/checkpoint-oracle/build.sh"; then
  ORACLE=$ROOT/$BUILD_DIR/checkpoint-oracle/checksum-oracle
  echo "bench set-up: checkpoint reference tool built with $("$GO" version)"
else
  echo "bench set-up: BUILDING THE CHECKPOINT REFERENCE TOOL FAILED (above); P2 ratio not measured"
fi

# P1's second figure runs a real Go plugin, the kubernetes e2e sample device
# plugin, built from its module like the test peers (tests/peers/build.sh;
# `make test` builds it too). Without it (no Go, no module proxy) or without
# a private mount namespace, that figure is reported as not measured.
PEER=$ROOT/$BUILD_DIR/peers/e2e-sample-v1.37.2
if [ ! -x "$PEER" ] && [ -n "$GO" ]; then
  GO="$GO" OUT="$ROOT/$BUILD_DIR/peers" bash "$ROOT/tests/peers/build.sh" \
    || echo "bench set-up: building the e2e sample plugin failed; P1's real-plugin figure not measured"
fi

# P1's figure of the kubelet itself: its own device manager at v1.37.2
# (tests/kubelet-oracle; `make test` builds it too). Always rebuilt when Go
# is here (a few seconds when warm), so that an older binary without the
# bench request is not used.
KUBELET_ORACLE=""
if [ -n "$GO" ]; then
  if GO="$GO" OUT="$ROOT/$BUILD_DIR/kubelet-oracle" bash "$ROOT/tests/kubelet-oracle/build.sh" 1.37; then
    KUBELET_ORACLE=$ROOT/$BUILD_DIR/kubelet-oracle/kubelet-oracle-1.37
  else
    echo "bench set-up: building the kubelet oracle failed; P1's kubelet figure not measured"
  fi
fi

# P5's driver: the project's test DRA driver (tests/dra-driver, grpc-go, no API
# server needed); `make test` builds it too. Without it P5's prepare figures
# are reported as not measured.
DRA_DRIVER=""
if [ -n "$GO" ]; then
  if GO="$GO" OUT="$ROOT/$BUILD_DIR/dra-driver" bash "$ROOT/tests/dra-driver/build.sh"; then
    DRA_DRIVER=$ROOT/$BUILD_DIR/dra-driver/dra-driver
  else
    echo "bench set-up: building the test DRA driver failed; P5's prepare figures not measured"
  fi
fi

# ---- the run ---------------------------------------------------------------
BENCH=$ROOT/$BUILD_DIR/perf_bench
DEVMGR=$ROOT/$BUILD_DIR/devmgr
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for part in p1 p2 p3 p4 p5 scaling; do
  printf '\n== %s\n' "$part"
  "$BENCH" "$part" --tmp "$TMP_ROOT" --disk "$DISK_ROOT" --devmgr "$DEVMGR" --oracle "$ORACLE" \
    --peer "$PEER" --kubelet-oracle "$KUBELET_ORACLE" --dra-driver "$DRA_DRIVER" \
    --json "$PARTS_DIR/$part.json"
done

python3 - "$OUT" "$PARTS_DIR" "$LOAD_START" <<'PY'
import json, os, sys, time
out, parts, load_start = sys.argv[1], sys.argv[2], float(sys.argv[3])
res = {"generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "cores": os.cpu_count(), "load_avg_start": load_start, "load_avg_end": os.getloadavg()[0]}
for p in ("p1", "p2", "p3", "p4", "p5", "scaling"):
    with open(os.path.join(parts, p + ".json")) as f:
        res.update(json.load(f))
# results.json is committed: descriptive values only, never a path of this machine.
paths = {k: v for k, v in res.items() if isinstance(v, str) and v.startswith("/")}
if paths:
    sys.exit(f"bench: refusing to write {out}: machine paths in the results: {paths}")
with open(out, "w") as f:
    json.dump(res, f, indent=2)
    f.write("\n")
def fmt(v, spec, unit=""):
    return "n/a" if v is None else format(v, spec) + unit
print("\n== summary (ratios measured in this run)")
rows = [
    ("P1 verdict: devmgr's ratio / the kubelet's ratio", fmt(res.get("p1_ratio_vs_kubelet"), ".2f"),
     "<= 0.8"),
    ("P1 admission p50 / bare Allocate p50", fmt(res["p1_ratio"], ".2f", "x"), None),
    ("P1 admission p50 / its own Allocate RPC p50", fmt(res.get("p1_ratio_own_rpc"), ".2f", "x"),
     None),
    ("P1 the same, real Go plugin (e2e sample)", fmt(res.get("p1_peer_ratio"), ".2f", "x"), None),
    ("P1 the same, plugin inside the bench process", fmt(res.get("p1_inproc_ratio"), ".2f", "x"),
     None),
    ("P1 the kubelet's own admission / its bare RPC", fmt(res.get("p1_kubelet_ratio"), ".2f", "x"),
     None),
    ("P1 devmgr's admission / the kubelet's", fmt(res.get("p1_devmgr_vs_kubelet_admission"),
                                                  ".2f", "x"), None),
    ("P2 the kubelet's code (Go) / devmgr, verify", fmt(res.get("p2_ratio"), ".1f", "x"), ">= 20x"),
    ("P3 1M-device update applied + written", fmt(res["p3_update_s"], ".2f", " s"), "< 2 s"),
    ("P3 1-device allocation / floor", fmt(res["p3_alloc_floor_ratio"], ".2f", "x"), "<= 1.5x"),
    ("P3 peak RSS", fmt(res["p3_peak_rss_mib"], ".0f", " MiB"), "< 1024 MiB"),
    ("P4 10,000 admit/delete cycles", fmt(res["p4_cycles_s"], ".2f", " s"), "< 10 s"),
    ("P5 verdict: devmgr's prepare ratio / the kubelet's", fmt(res.get("p5_ratio_vs_kubelet"),
                                                              ".2f"), "<= 0.8"),
    ("P5 claim prepare p50 / bare NodePrepareResources p50", fmt(res.get("p5_ratio"), ".2f", "x"),
     None),
    ("P5 the kubelet's own prepare / its bare RPC", fmt(res.get("p5_kubelet_ratio"), ".2f", "x"),
     None),
    ("P5 1,000-claim dra_manager_state rewrite / floor",
     fmt(res.get("p5_rewrite_floor_ratio"), ".2f", "x"), "<= 1.5x"),
]
for name, value, target in rows:
    print(f"  {name:54s} {value:>10s}   " + (f"target {target}" if target else "(no target)"))
print(f"wrote {out}")
PY

# Debian's python3-matplotlib is in /usr/bin/python3, which need not be the first
# python3 on PATH (pyenv).
PLOT_PY=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import matplotlib' 2>/dev/null; then PLOT_PY=$py; break; fi
done
if [ -n "$PLOT_PY" ]; then
  "$PLOT_PY" "$ROOT/bench/plot.py" "$OUT" "$ROOT/docs/performance-scaling.png"
else
  echo "python3-matplotlib missing: plot not drawn"
fi
