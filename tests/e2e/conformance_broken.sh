#!/usr/bin/env bash
# `devmgr conformance` with real plugin processes against broken reference
# configurations: each examples/broken/<id>.yaml makes exactly check <id> fail
# (the in-process matrix in src/conformance/conformance_test.cc covers every
# check; this runs the ones whose defect shows in process handling, plus a
# sample of the rest, through the CLI). Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
SRC=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}
WORK=$(mktemp -d /tmp/dmconf-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"
# Short deadlines where a window is what the broken plugin exceeds; the
# windows no plugin here misses (RPCs, registration, first list, re-registration,
# the stop grace: only restart.plugin's shell ignores SIGTERM)
# stay generous, so a loaded machine cannot turn a PASS into a FAIL.
FAST=(--rpc-timeout 10 --register-timeout 10 --first-list-timeout 10 --observe 0.4 --list-window 0.4
      --prestart-timeout 1 --reregister-timeout 10 --stop-grace 5 --latency-samples 3 -q)

# exactly ID CMD: runs the whole catalogue against CMD; ID must be the only failure.
exactly() {
  local id=$1 cmd=$2
  local out rc failed
  out=$("$BIN" conformance --plugin "$cmd" --dir "$WORK/dp" "${FAST[@]}" 2>&1)
  rc=$?
  failed=$(awk '$3 == "FAIL" {print $1}' <<<"$out" | tr '\n' ' ')
  if [[ "$failed" != "$id " ]]; then
    fail "$id: failed checks are '$failed'"
    echo "$out" | tail -45
  fi
  case "$(awk -v id="$id" '$1 == id {print $2}' <<<"$out")" in
    MUST) [[ $rc -eq 1 ]] || fail "$id: exit $rc (want 1)" ;;
    *) [[ $rc -eq 0 ]] || fail "$id: exit $rc (want 0)" ;;
  esac
}

sample() { echo "$BIN sample-plugin --config $SRC/examples/broken/$1.yaml --dir \$DEVMGR_PLUGIN_DIR"; }

# restart.plugin: a shell entrypoint that ignores SIGTERM and does not exec the plugin.
exactly restart.plugin "trap '' TERM; $(sample restart.plugin); sleep 600"
for id in registration.serves-first restart.kubelet law.stream-open allocate.list-unchanged \
          options.answers law.ids-printable preferred.fresh-pod; do
  exactly "$id" "$(sample "$id")"
done

finish conformance_broken
