#!/usr/bin/env bash
# e2e: tests/e2e/dra_serve.sh with PRIVATE_MOUNT=1: `devmgr sample-dra-driver`
# with its default, hard-coded paths (/var/lib/kubelet/plugins_registry,
# /var/lib/kubelet/plugins, /var/run/cdi) under `serve --private-mount`; the
# host's /var/lib/kubelet and CDI directories must stay as they were.
# Skipped (77) where no private mount namespace can be made.
PRIVATE_MOUNT=1 exec bash "$(dirname "$0")/dra_serve.sh"
