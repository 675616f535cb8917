#!/usr/bin/env bash
# e2e: a DRA driver that hard-codes the kubelet's paths (`devmgr sample-dra-driver`
# with no directory flags: /var/lib/kubelet/plugins_registry,
# /var/lib/kubelet/plugins/<driver>, /var/run/cdi) under `devmgr conformance --dra
# --private-mount` (the whole catalogue passes: registration, Prepare, the CDI IDs
# resolving, driver restart and reboot, the slice wipe) and in a `devmgr run`
# scenario whose driver has `private_mount: true` (a claim prepared, prepared again
# after a kubelet restart, unprepared at the pod's deletion). The host's
# /var/lib/kubelet, /run/cdi and /etc/cdi are left exactly as they were. Skipped (77)
# where no private mount namespace can be made.
# Needs $DEVMGR_BIN.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
WORK=$(mktemp -d /tmp/dmdrapm.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"
RUN_TIMEOUT=180

source "$(dirname "$0")/lib/host_paths.bash"
host_before=$(host_paths)

# The driver is told nothing but its node: every path is its default.
driver="$BIN sample-dra-driver --node-name \"\$DEVMGR_NODE_NAME\""

# --- conformance: the whole DRA catalogue ---------------------------------------
OUT=$(timeout "$RUN_TIMEOUT" "$BIN" conformance --dra --private-mount --plugin "$driver" -q 2>&1)
rc=$?
if [[ $rc == 3 && $OUT == *"--private-mount needs"* ]]; then
  echo "SKIP: $(grep -- "--private-mount needs" <<<"$OUT" | head -1)"
  exit 77
fi
[[ $rc == 0 ]] || { fail "conformance --dra --private-mount: exit $rc (want 0)"; echo "$OUT" | tail -40; }
expect "dra.registration             MUST    PASS"
expect "dra.prepare.cdi              MUST    PASS"
expect "dra.restart.reboot           MUST    PASS"
expect "22 checks: 21 passed, 0 failed"
# --- run: a scenario whose driver runs in a private mount namespace --------------
cat >"$WORK/private.yaml" <<EOF
name: dra-private-mount
description: a driver with the kubelet's hard-coded paths prepares a claim
plugins:
  - name: gpu-driver
    dra_driver: sample.dra.devmgr.io
    private_mount: true
    command: $driver
steps:
  - wait_driver: {plugin: gpu-driver, devices: 4}
  - apply:
      apiVersion: resource.k8s.io/v1
      kind: DeviceClass
      metadata: {name: sample-gpu}
      spec:
        selectors:
          - cel: {expression: 'device.driver == "sample.dra.devmgr.io"'}
  - apply:
      apiVersion: resource.k8s.io/v1
      kind: ResourceClaim
      metadata: {name: one-gpu, namespace: default}
      spec:
        devices:
          requests:
            - {name: gpu, exactly: {deviceClassName: sample-gpu}}
  - name: the claim is prepared through the endpoint the driver registered from inside
    admit:
      apiVersion: v1
      kind: Pod
      metadata: {name: trainer, namespace: default, uid: trainer-uid}
      spec:
        resourceClaims:
          - {name: gpu, resourceClaimName: one-gpu}
        containers:
          - name: worker
            image: busybox
            resources: {claims: [{name: gpu}]}
    expect:
      pods:
        trainer:
          phase: Running
          containers:
            worker:
              dra_cdi_devices: [{regex: '^sample\.dra\.devmgr\.io/gpu=[-0-9a-f]+-gpu-[0-3]\$'}]
      dra_calls:
        sample.dra.devmgr.io: {counts: {NodePrepareResources: 1}}
  - name: after a kubelet restart the node dials the driver again and prepares the claim again
    restart_kubelet:
    expect:
      dra_calls:
        sample.dra.devmgr.io: {counts: {NodePrepareResources: 1, NodeUnprepareResources: 0}}
  - name: the pod's deletion unprepares the claim
    delete_pod: trainer
    expect:
      dra_calls:
        sample.dra.devmgr.io: {counts: {NodeUnprepareResources: 1}}
EOF
run 0 "$BIN" run --kubelet-version 1.34,1.37 "$WORK/private.yaml"
expect "2 passed"

[[ "$(host_paths)" == "$host_before" ]] ||
  fail "the host's /var/lib/kubelet or CDI directories changed: $(diff <(echo "$host_before") <(host_paths) | head -20)"
finish dra_private_mount
