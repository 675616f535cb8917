#!/usr/bin/env bash
# End-to-end tests of `devmgr checkpoint ...` on the golden corpus:
# exit codes and key output lines. Needs $DEVMGR_BIN and $DEVMGR_SOURCE_DIR.
set -u
BIN=${DEVMGR_BIN:?DEVMGR_BIN must point at the devmgr binary}
DATA=${DEVMGR_SOURCE_DIR:?DEVMGR_SOURCE_DIR must be set}/tests/testdata/checkpoint
WORK=$(mktemp -d /tmp/devmgr-e2e-ckpt.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/lib/checks.bash"

# --- verify ---------------------------------------------------------------
run 0 "$BIN" checkpoint verify "$DATA/v2-single-gpu-numa0.json" "$DATA/v1-single.json"
expect "v2-single-gpu-numa0.json: OK v2 checksum 331594835"
expect "v1-single.json: OK v1 checksum 3066492247"

run 1 "$BIN" checkpoint verify "$DATA/v2-bootid.json" "$DATA/bad-device-edited.json" "$DATA/bad-truncated.json"
expect "v2-bootid.json: OK v2 checksum 331594835"
expect "bad-device-edited.json: CORRUPT v2 checksum mismatch: stored 331594835, computed 343084809"
expect "bad-truncated.json: CORRUPT v2 parse error: unexpected end of JSON input (offset 322)"

# Every golden file gets the MANIFEST verdict.
while IFS=$'\t' read -r file verdict format stored correct spew desc; do
  [[ $file == file ]] && continue
  want=0
  [[ $verdict == CORRUPT ]] && want=1
  run $want "$BIN" checkpoint verify "$DATA/$file"
  [[ $verdict == OK ]] && expect "$file: OK"
  [[ $verdict == CORRUPT ]] && expect "$file: CORRUPT"
done <"$DATA/MANIFEST.tsv"

run 0 "$BIN" checkpoint verify "$DATA/real/multus-cni-2018.v1.json"
run 1 "$BIN" checkpoint verify "$DATA/real/cpu-pooler-fixture-2021.v2.json"
expect "CORRUPT v2 checksum mismatch: stored 403603645, computed 3162097514"

# stdin, missing file, directory, empty file.
run 0 "$BIN" checkpoint verify - <"$DATA/v1-multi.json"
expect "<stdin>: OK v1 checksum 1833084996"
run 2 "$BIN" checkpoint verify "$WORK/missing.json"
expect "$WORK/missing.json: ERROR no such file"
run 2 "$BIN" checkpoint verify "$WORK"
expect "is a directory"
: >"$WORK/empty"
run 1 "$BIN" checkpoint verify "$WORK/empty"
expect "CORRUPT v2 parse error: unexpected end of JSON input (offset 0) (empty file)"
run 2 "$BIN" checkpoint verify
run 2 "$BIN" checkpoint frobnicate

# A 100 MB file that is not JSON, and one nested too deeply: clear errors.
head -c 100000000 /dev/zero | tr '\0' '[' >"$WORK/deep"
run 1 "$BIN" checkpoint verify "$WORK/deep"
expect "exceeded max depth (offset 10000)"
head -c 100000000 /dev/zero >"$WORK/zeros"
run 1 "$BIN" checkpoint verify "$WORK/zeros"
expect "invalid character '\\x00' looking for beginning of value (offset 0)"
run 2 "$BIN" checkpoint inspect "$WORK/zeros"
expect "not a readable checkpoint"
rm -f "$WORK/deep" "$WORK/zeros"

# --- inspect --------------------------------------------------------------
run 0 "$BIN" checkpoint inspect "$DATA/v2-multi-resource.json"
expect "format:    v2"
expect "checksum:  148831026 (valid)"
expect "entries:   4 (3 pods)"
expect "pod 9a15d2b5-c152-46b9-96e0-d57032629e1f"
expect "nvidia.com/gpu: NUMA 1: GPU-9b341c59-f96b-ba85-c137-78c3652fea65 GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"
expect "example.com/fpga: no NUMA (-1): fpga-a fpga-b"
expect "env        NVIDIA_VISIBLE_DEVICES=GPU-9b341c59-f96b-ba85-c137-78c3652fea65,GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"
expect "mount      /usr/local/lib <- /opt/driver/lib (ro)"
expect "device     /dev/nvidia0 <- /dev/nvidia0 (rw)"
expect "cdi        intel.com/sriov_netdevice=0000:3b:02.1"
expect "intel.com/sriov_netdevice (2): 0000:3b:02.1 0000:3b:02.2"

run 0 "$BIN" checkpoint inspect "$DATA/bad-device-edited.json"
expect "CORRUPT: stored 331594835, computed 343084809"
expect "is not in RegisteredDevices"

run 0 "$BIN" checkpoint inspect "$DATA/v2-bootid.json"
expect "boot ID:   0f2b3c4d-1111-2222-3333-444455556666"

run 0 "$BIN" checkpoint inspect -o json "$DATA/v1-single.json"
expect '"format": "v1"'
expect '"valid": true'
expect '"NVIDIA_VISIBLE_DEVICES": "GPU-77a702db-e37f-3a74-d46d-c5713f66058c"'

run 0 "$BIN" checkpoint inspect -o yaml - <"$DATA/v2-single-gpu-numa0.json"
expect 'file: "<stdin>"'
expect '- podUID: "9a15d2b5-c152-46b9-96e0-d57032629e1f"'
expect '  stored: 331594835'

# Double allocation across two pods.
sed 's/"PodUID":"9a15d2b5-c152-46b9-96e0-d57032629e1f","ContainerName":"app","ResourceName":"nvidia.com\/gpu","DeviceIDs":{"1"/"PodUID":"11111111-2222-3333-4444-555555555555","ContainerName":"other","ResourceName":"nvidia.com\/gpu","DeviceIDs":{"0":["GPU-77a702db-e37f-3a74-d46d-c5713f66058c"],"1"/' \
  "$DATA/v2-multi-resource.json" >"$WORK/double.json"
run 0 "$BIN" checkpoint inspect "$WORK/double.json"
expect "double allocation: device nvidia.com/gpu/GPU-77a702db-e37f-3a74-d46d-c5713f66058c is held by pod 11111111-2222-3333-4444-555555555555 container other and pod 513cb897-0262-4868-826f-aa943ee45a38 container app"

run 2 "$BIN" checkpoint inspect "$DATA/bad-truncated.json"
expect "not a readable checkpoint: unexpected end of JSON input (offset 322)"
run 2 "$BIN" checkpoint inspect "$WORK/empty"
expect "empty file, not a checkpoint"
run 2 "$BIN" checkpoint inspect "$WORK/missing.json"
expect "no such file"
run 2 "$BIN" checkpoint inspect "$WORK"
expect "is a directory"
run 2 "$BIN" checkpoint inspect -o xml "$DATA/v2-bootid.json"

# --- diff -----------------------------------------------------------------
run 0 "$BIN" checkpoint diff "$DATA/v2-multi-resource.json" "$DATA/v2-multi-resource.json"
run 1 "$BIN" checkpoint diff "$DATA/v2-single-gpu-numa0.json" "$DATA/bad-numa-moved.json"
expect "~ checksum: valid -> CORRUPT"
expect "device GPU-77a702db-e37f-3a74-d46d-c5713f66058c moved NUMA 0 -> 1"
run 1 "$BIN" checkpoint diff "$DATA/v2-multi-resource.json" "$DATA/v2-multi-resource-reordered.json"
expect "~ entries reordered"
run 1 "$BIN" checkpoint diff "$DATA/v2-registered-only.json" - <"$DATA/v2-single-gpu-numa0.json"
expect "+ entry pod=9a15d2b5-c152-46b9-96e0-d57032629e1f container=app resource=nvidia.com/gpu devices=[0:GPU-77a702db-e37f-3a74-d46d-c5713f66058c]"
run 2 "$BIN" checkpoint diff "$DATA/v2-bootid.json" "$DATA/bad-truncated.json"

# --- repair ---------------------------------------------------------------
cp "$DATA/bad-device-edited.json" "$WORK/cp"
run 0 "$BIN" checkpoint repair --in-place "$WORK/cp"
expect "checksum 331594835 -> 343084809 (v2)"
expect "backup: $WORK/cp.bak"
run 0 "$BIN" checkpoint verify "$WORK/cp"
cmp -s "$WORK/cp.bak" "$DATA/bad-device-edited.json" || fail "backup differs"

run 0 "$BIN" checkpoint repair "$DATA/v2-multi-resource.json" --drop-pod 9a15d2b5-c152-46b9-96e0-d57032629e1f --drop-pod nope -o "$WORK/dropped.json"
expect "dropped 2 entries of pod 9a15d2b5-c152-46b9-96e0-d57032629e1f"
expect "warning: no entry of pod nope"
run 0 "$BIN" checkpoint verify "$WORK/dropped.json"
run 1 "$BIN" checkpoint diff "$DATA/v2-multi-resource.json" "$WORK/dropped.json"
expect "- entry pod=9a15d2b5-c152-46b9-96e0-d57032629e1f container=sidecar"

run 0 bash -c "'$BIN' checkpoint repair - <'$DATA/bad-numa-moved.json' | '$BIN' checkpoint verify -"
expect "<stdin>: OK v2 checksum 3414037502"

run 2 "$BIN" checkpoint repair "$DATA/bad-truncated.json" -o "$WORK/never.json"
expect "refusing to repair"
[[ -e $WORK/never.json ]] && fail "repair wrote unparseable input"
run 2 "$BIN" checkpoint repair --in-place - <"$DATA/bad-numa-moved.json"
run 2 "$BIN" checkpoint repair "$WORK/empty"
run 2 "$BIN" checkpoint repair "$WORK/cp" -o x --in-place

# --- convert --------------------------------------------------------------
run 0 "$BIN" checkpoint convert "$DATA/v1-multi.json" --to v2 -o "$WORK/v2.json"
run 0 "$BIN" checkpoint verify "$WORK/v2.json"
expect "OK v2"
run 0 "$BIN" checkpoint inspect "$WORK/v2.json"
expect "NUMA 0: GPU-9b341c59-f96b-ba85-c137-78c3652fea65 GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"
run 0 bash -c "'$BIN' checkpoint convert '$DATA/v2-multi-resource.json' --to v1 | '$BIN' checkpoint verify -"
expect "OK v1"
run 1 "$BIN" checkpoint convert "$DATA/bad-numa-moved.json" --to v1
expect "run \`devmgr checkpoint repair\` first, or pass --force"
run 0 "$BIN" checkpoint convert "$DATA/bad-numa-moved.json" --to v1 --force -o "$WORK/forced.json"
run 2 "$BIN" checkpoint convert "$DATA/v1-multi.json" --to v3
run 2 "$BIN" checkpoint convert "$DATA/v1-multi.json"

# --- dra_manager_state (the DRA manager's checkpoint) -------------------------
DRA=$DEVMGR_SOURCE_DIR/tests/testdata/dra_manager_state
# The kubelet's own golden vectors verify; its corrupted and invalid ones do not.
run 0 "$BIN" checkpoint verify "$DRA/upstream-v1.34/single-claim-info-state.json" \
  "$DRA/upstream-v1.35-v1.37/single-claim-info-state-with-share-id.json"
expect "single-claim-info-state.json: OK dra checksum 1656016162"
expect "single-claim-info-state-with-share-id.json: OK dra checksum 736302156"
run 1 "$BIN" checkpoint verify "$DRA/upstream-v1.34/incorrect-checksum.json"
expect "CORRUPT dra checksum mismatch: stored 2930258365, computed 3633532417"
cp "$DRA/upstream-v1.34/invalid-JSON.json" "$WORK/dra_manager_state"
run 1 "$BIN" checkpoint verify "$WORK/dra_manager_state"
expect "dra_manager_state: CORRUPT dra parse error: unexpected end of JSON input (offset 1)"
# A flipped byte in Data is caught; by shape on stdin too.
sed 's/worker-1/worker-2/' "$DRA/upstream-v1.35-v1.37/two-claim-info-states.json" >"$WORK/dra-flipped.json"
run 1 "$BIN" checkpoint verify - <"$WORK/dra-flipped.json"
expect "<stdin>: CORRUPT dra checksum mismatch: stored 2820117767"

run 0 "$BIN" checkpoint inspect "$DRA/upstream-v1.35-v1.37/single-claim-info-state-with-share-id.json"
expect "format:    dra_manager_state"
expect "checksum:  736302156 (valid)"
expect "claim default/example (uid 067798be-454e-4be4-9047-1aa06aea63f7)"
expect "pod:     139cdb46-f989-4f17-9561-ca10cfb509a6"
expect "driver test-driver.cdi.k8s.io"
expect 'device worker-1/dev-1 share=aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa requests=["test request"] cdi=[example.com/example=cdi-example]'
run 0 "$BIN" checkpoint inspect -o json "$WORK/dra-flipped.json"
expect '"valid": false'
expect '"cdiDeviceIDs": null'
run 0 "$BIN" checkpoint inspect -o yaml "$DRA/upstream-v1.34/two-claim-info-states.json"
expect 'format: "dra_manager_state"'
run 2 "$BIN" checkpoint inspect "$WORK/dra_manager_state"
expect "not a readable checkpoint: unexpected end of JSON input (offset 1)"

run 0 "$BIN" checkpoint diff "$DRA/upstream-v1.34/two-claim-info-states.json" "$DRA/upstream-v1.35-v1.37/two-claim-info-states.json"
run 1 "$BIN" checkpoint diff "$DRA/upstream-v1.34/single-claim-info-state.json" "$DRA/upstream-v1.34/two-claim-info-states.json"
expect "+ claim default/example-2 uid=4cf8db2d-06c0-7d70-1a51-e59b25b2c16c pods=[139cdb46-f989-4f17-9561-ca10cfb509a6] drivers=[test-driver.cdi.k8s.io]"
expect "~ claim default/example-1: name default/example -> default/example-1"
run 1 "$BIN" checkpoint diff "$DRA/upstream-v1.35-v1.37/two-claim-info-states.json" "$WORK/dra-flipped.json"
expect "~ checksum: valid -> CORRUPT"
expect "~ claim default/example-1: driver test-driver.cdi.k8s.io: - device worker-1/dev-1"
expect "~ claim default/example-1: driver test-driver.cdi.k8s.io: + device worker-2/dev-1"
run 2 "$BIN" checkpoint diff "$DRA/upstream-v1.34/single-claim-info-state.json" "$DATA/v2-bootid.json"
expect "nothing to compare"

# repair recomputes the checksum and keeps Data byte for byte.
cp "$WORK/dra-flipped.json" "$WORK/dra-repair.json"
run 0 "$BIN" checkpoint repair --in-place "$WORK/dra-repair.json"
expect "checksum 2820117767 -> "
expect "backup: $WORK/dra-repair.json.bak"
run 0 "$BIN" checkpoint verify "$WORK/dra-repair.json"
cmp -s "$WORK/dra-repair.json.bak" "$WORK/dra-flipped.json" || fail "DRA backup differs"
run 0 bash -c "'$BIN' checkpoint repair - <'$DRA/upstream-v1.34/single-claim-info-state.json' | cmp - '$DRA/upstream-v1.34/single-claim-info-state.json'"
expect "checksum 1656016162 was already valid (dra)"
run 2 "$BIN" checkpoint repair "$WORK/dra_manager_state" -o "$WORK/never-dra.json"
expect "refusing to repair"
run 2 "$BIN" checkpoint repair "$WORK/dra-flipped.json" --drop-pod x
expect "--drop-pod is not supported for a dra_manager_state"
run 2 "$BIN" checkpoint convert "$DRA/upstream-v1.34/single-claim-info-state.json" --to v1
expect "convert is for the device manager's checkpoint"

# --- help -----------------------------------------------------------------
for sub in inspect verify diff repair convert; do
  run 0 "$BIN" checkpoint "$sub" --help
  expect "Exit codes: 0 ok; 1 a file is corrupt"
done

# Files we write verify with the kubelet's own checkpoint code too (tests/checkpoint-oracle;
# ctest builds it first and names it in DEVMGR_ORACLE). Without it: skipped only where its
# build said there is no Go (SKIPPED beside it), a failure otherwise.
if [[ -z ${DEVMGR_ORACLE:-} ]]; then
  echo "checkpoint_cli: DEVMGR_ORACLE not set (run through ctest): the files are not checked with the kubelet's code"
elif [[ -x $DEVMGR_ORACLE ]]; then
  for f in "$WORK/cp" "$WORK/dropped.json" "$WORK/v2.json"; do
    run 0 "$DEVMGR_ORACLE" verify "$f"
  done
elif [[ -f $(dirname "$DEVMGR_ORACLE")/SKIPPED ]]; then
  echo "checkpoint_cli: SKIPPED the kubelet-code checks: $(cat "$(dirname "$DEVMGR_ORACLE")/SKIPPED")"
else
  fail "the checkpoint reference tool $DEVMGR_ORACLE is missing (see test checkpoint_oracle.build)"
fi

finish checkpoint_cli
