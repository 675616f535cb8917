#!/usr/bin/env bash
# Crash consistency of the checkpoint: SIGKILL `devmgr serve` (and its plugin) at random points
# while it keeps rewriting kubelet_internal_checkpoint, then check the file.
#   crash_consistency.sh [CYCLES]   (default 20; `make crash-bench` runs 1000)
# Set-up per cycle: serve (--kubelet-version 1.32) with the reference plugin re-sending its
# device list every millisecond (each ListAndWatch update rewrites the checkpoint, as in the
# kubelet) and a new static pod admitted (the allocation changes the checkpoint's content).
# After every kill: the checkpoint, when present, passes `devmgr checkpoint verify` (so it is one
# complete version: never torn). Kills that landed between the temp file's creation and its
# rename leave a `.NNNNNNNNNN` temp file (os.CreateTemp(dir, "."), as the kubelet's writer);
# the next start's directory cleanup must remove it. Prints the figures.
set -euo pipefail
bin=${DEVMGR_BIN:?DEVMGR_BIN must name the devmgr binary}
cycles=${1:-20}
root=$(mktemp -d /tmp/devmgr-crash.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
d=$root/device-plugins m=$root/manifests
mkdir -p "$d" "$m"
cat >"$root/plugin.yaml" <<YAML
resource: example.com/gpu
devices: [{id: g0}, {id: g1}, {id: g2}, {id: g3}, {id: g4}, {id: g5}, {id: g6}, {id: g7}]
list_and_watch: {resend_interval: 1ms}
YAML
ck=$d/kubelet_internal_checkpoint
declare -A versions=()
valid=0 absent=0 tmp_seen=0 tmp_stale=0
start_ns=$(date +%s%N)
for i in $(seq 1 "$cycles"); do
  # One new pod per cycle; at most three manifests (the oldest is deleted).
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {example.com/gpu: 1}}\n' \
    "$i" >"$m/p$i.yaml"
  rm -f "$m/p$((i - 3)).yaml"
  # Temp files still present when serve starts were left by the previous kill.
  setsid "$bin" serve --dir "$d" --kubelet-version 1.32 --pod-manifest-path "$m" \
    --plugin "$bin sample-plugin --config $root/plugin.yaml --dir $d" >"$root/serve.log" 2>&1 &
  pid=$!
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.05 + (r % 950) / 1000 }')"
  kill -9 -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
  left=$(find "$d" -maxdepth 1 -name '.[0-9]*' | wc -l)
  [ "$left" -gt 0 ] && tmp_seen=$((tmp_seen + 1))
  if [ -e "$ck" ]; then
    if ! "$bin" checkpoint verify "$ck" >"$root/verify.out" 2>&1; then
      cp "$ck" "/tmp/devmgr-torn-checkpoint.$i"
      echo "cycle $i: checkpoint does not verify (copy: /tmp/devmgr-torn-checkpoint.$i):" >&2
      cat "$root/verify.out" >&2
      exit 1
    fi
    valid=$((valid + 1))
    versions[$(sha1sum <"$ck" | cut -c1-40)]=1
  else
    absent=$((absent + 1))
  fi
done
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
# A last start: its directory cleanup removes what the kills left; then a clean stop.
"$bin" serve --dir "$d" --kubelet-version 1.32 --exit-after 1 >"$root/serve.log" 2>&1 || {
  cat "$root/serve.log" >&2
  exit 1
}
tmp_stale=$(find "$d" -maxdepth 1 -name '.[0-9]*' | wc -l)
echo "crash consistency: $cycles SIGKILL cycles in ${elapsed_ms} ms; checkpoint valid after $valid," \
  "absent (killed before the first write) after $absent; ${#versions[@]} distinct versions;" \
  "kills mid-write leaving a temp file: $tmp_seen; temp files after the next start: $tmp_stale"
[ "$tmp_stale" -eq 0 ] || { echo "temp files survived the next start" >&2; exit 1; }
[ "$valid" -gt 0 ] || { echo "no cycle got as far as writing a checkpoint" >&2; exit 1; }
"$bin" checkpoint verify "$ck" >/dev/null
