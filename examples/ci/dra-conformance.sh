#!/bin/sh
# A DRA driver repository's CI: run from its root after building the driver's
# kubelet plugin into ./bin/my-dra-driver. No container and no privileges: the
# driver gets every path as a flag, and devmgr serves the kubelet side and the
# API server itself (docs/conformance.md, "DRA drivers"). Adapt the flag names
# to your driver's. Exit status: devmgr's (0 every MUST check passed for every
# kubelet version 1.34-1.37, 1 a failure, 2 usage, 3 environment); the JUnit
# report is in ./reports.
set -eu
DEVMGR=${DEVMGR:-devmgr}
DRIVER=${DRIVER:-$PWD/bin/my-dra-driver}
mkdir -p reports
exec "$DEVMGR" conformance --dra --kubelet-version all -q \
  --junit reports/dra-conformance.xml \
  --plugin "'$DRIVER' --kubeconfig \"\$KUBECONFIG\" --node-name \"\$DEVMGR_NODE_NAME\" \
--registry-dir \"\$DEVMGR_REGISTRY_DIR\" --plugin-dir \"\$DEVMGR_PLUGINS_DIR\" \
--cdi-dir \"\$DEVMGR_CDI_DIR\""
