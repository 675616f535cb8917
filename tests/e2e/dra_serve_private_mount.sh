#!/usr/bin/env bash
# e2e: tests/e2e/dra_serve.sh with PRIVATE_MOUNT=1: `devmgr sample-dra-driver`
# with its default, hard-coded paths (/var/lib/kubelet/plugins_registry,
# /var/lib/kubelet/plugins, /var/run/cdi) under `serve --private-mount`; the
# host's /var/lib/kubelet and CDI directories must stay as they were.
# Skipped (77) where no private mount namespace can be made. First:
# --plugins-dir or --cdi-dir without --private-mount is a usage error (2).
set -euo pipefail
: "${DEVMGR_BIN:?}"
for flag in --plugins-dir --cdi-dir; do
  rc=0
  err=$("$DEVMGR_BIN" serve "$flag" /nonexistent/x --exit-after 1 2>&1) || rc=$?
  [[ $rc == 2 && $err == *"with --private-mount only"* ]] ||
    { echo "FAIL: serve $flag without --private-mount: exit $rc: $err" >&2; exit 1; }
done
PRIVATE_MOUNT=1 exec bash "$(dirname "$0")/dra_serve.sh"
