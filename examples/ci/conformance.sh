#!/bin/sh
# The same as examples/ci/github-actions.yml for any CI: run from the plugin
# repository's root after building the plugin into ./bin/my-device-plugin.
# Exit status: devmgr's (0 all MUST checks and scenarios passed, 1 a failure,
# 2 usage, 3 environment); the JUnit reports are in ./reports.
set -eu
DEVMGR_IMAGE=${DEVMGR_IMAGE:-localhost/devmgr:0.1.0}
ENGINE=${ENGINE:-podman}   # or docker
PLUGIN=${PLUGIN:-$PWD/bin/my-device-plugin}
mkdir -p reports
status=0
$ENGINE run --rm --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
  -v "$PLUGIN:/opt/plugin/plugin:ro" -v "$PWD/reports:/reports" "$DEVMGR_IMAGE" \
  conformance --private-mount --plugin /opt/plugin/plugin \
  --junit /reports/conformance.xml || status=$?
if [ -d test/devmgr ]; then
  $ENGINE run --rm --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
    -v "$PLUGIN:/opt/plugin/plugin:ro" -v "$PWD/test/devmgr:/scenarios:ro" \
    -v "$PWD/reports:/reports" "$DEVMGR_IMAGE" \
    run --junit /reports/scenarios.xml /scenarios || status=$?
fi
exit $status
