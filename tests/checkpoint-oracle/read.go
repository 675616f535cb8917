package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager/checksum"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	legacy "devmgr.test/checkpoint-oracle/legacy"
)

// decoded is one file read in one format, the way the kubelet reads it.
type decoded struct {
	format   string // "v1" or "v2"
	stored   uint64
	computed uint64
	text     string // what the checksum hashes
}

// newV2Reader is the checkpoint the kubelet's device manager reads into
// (ManagerImpl.getCheckpoint): an empty slice and an empty map, so that a
// key absent from the file hashes as [] and map[], not <nil>.
func newV2Reader() *checkpoint.Data {
	cp := checkpoint.New(make([]checkpoint.PodDevicesEntry, 0), make(map[string][]string))
	return cp.(*checkpoint.Data)
}

// newV1Reader is the V1 counterpart (kubelets 1.20 to 1.30 read V1 the same way).
func newV1Reader() *legacy.DataV1 {
	return legacy.NewV1(make([]legacy.PodDevicesEntryV1, 0), make(map[string][]string))
}

// verifyAs gives the kubelet's verdict on blob read as one format: nil, or
// the kubelet's error (an unmarshal error or a checksum mismatch). V2 goes
// through the kubelet's own UnmarshalCheckpoint and VerifyChecksum, the two
// calls its checkpoint manager makes on the bytes it read.
func verifyAs(blob []byte, format string) error {
	if format == "v1" {
		cp := newV1Reader()
		if err := cp.Unmarshal(blob); err != nil {
			return err
		}
		return cp.Verify()
	}
	cp := newV2Reader()
	if err := cp.UnmarshalCheckpoint(blob); err != nil {
		return err
	}
	return cp.VerifyChecksum()
}

// Reader modes of verify: which kubelets' reading of the file to give.
const (
	modeAuto = "auto" // kubelets 1.20 to 1.30: V2, and when that fails, V1
	modeV2   = "v2"   // kubelets 1.31 and later: V2 only
	modeV1   = "v1"   // V1 only
)

// verify returns whether the kubelets of the mode accept blob, the format
// that was accepted (or last tried) and a one-line reason.
func verify(blob []byte, mode string) (bool, string, string) {
	switch mode {
	case modeV1, modeV2:
		if err := verifyAs(blob, mode); err != nil {
			return false, mode, fmt.Sprintf("%s: %v", mode, err)
		}
		return true, mode, mode + " checksum verified"
	case modeAuto:
		errV2 := verifyAs(blob, modeV2)
		if errV2 == nil {
			return true, modeV2, "v2 checksum verified"
		}
		errV1 := verifyAs(blob, modeV1)
		if errV1 == nil {
			return true, modeV1, "v1 checksum verified (after v2 failed: " + errV2.Error() + ")"
		}
		return false, modeV2, fmt.Sprintf("v2: %v; v1: %v", errV2, errV1)
	}
	panic("unknown mode " + mode)
}

// detectFormat names the format of blob: "v1" when some entry's DeviceIDs
// is a JSON list (the only thing that tells the two apart), else "v2".
// Keys match case-insensitively, as in Go's encoding/json.
func detectFormat(blob []byte) string {
	var probe struct {
		Data struct {
			PodDeviceEntries []struct{ DeviceIDs json.RawMessage }
		}
	}
	if json.Unmarshal(blob, &probe) != nil {
		return "v2"
	}
	for _, e := range probe.Data.PodDeviceEntries {
		if strings.HasPrefix(strings.TrimLeft(string(e.DeviceIDs), " \t\r\n"), "[") {
			return "v1"
		}
	}
	return "v2"
}

// decode reads blob in format ("auto" detects it) and returns the stored
// checksum, the computed one and the hashed text; an error when the kubelet
// cannot unmarshal the file.
func decode(blob []byte, format string) (decoded, error) {
	if format == "auto" {
		format = detectFormat(blob)
	}
	if format == "v1" {
		cp := newV1Reader()
		if err := cp.Unmarshal(blob); err != nil {
			return decoded{format: "v1"}, err
		}
		return decoded{format: "v1", stored: cp.Checksum, computed: cp.ComputeChecksum(), text: cp.Text()}, nil
	}
	cp := newV2Reader()
	if err := cp.UnmarshalCheckpoint(blob); err != nil {
		return decoded{format: "v2"}, err
	}
	return decoded{
		format:   "v2",
		stored:   uint64(cp.Checksum),
		computed: uint64(checksum.New(cp.Data)),
		text:     legacy.HashedText(cp.Data),
	}, nil
}
