// Package checkpoint holds the V1 checkpoint shape (kubelets up to 1.19:
// DeviceIDs is a flat list, no NUMA nodes), which no kubelet of 1.31 or later
// can read any more, so it is not in the pinned kubernetes module.
//
// The package is named checkpoint, and its types checkpointDataV1 and
// PodDevicesEntryV1, because the checksum hashes the rendered Go type names:
// kubelets 1.20 to 1.30 rendered their V1 types (package checkpoint, those
// two names), renamed the first "checkpointDataV1" to "checkpointData" and
// every "PodDevicesEntryV1" to "PodDevicesEntry" (giving the text a 1.19
// kubelet hashed), and took FNV-1a/32 of the result. The rendering here is
// the kubelet's own (pkg/util/hash of the pinned module), which the golden
// corpus checks against the go-spew settings those kubelets used.
package checkpoint

import (
	"encoding/json"
	"fmt"
	"hash"
	"hash/fnv"
	"strings"

	hashutil "k8s.io/kubernetes/pkg/util/hash"
)

// PodDevicesEntryV1 is one (pod, container, resource) allocation in V1.
type PodDevicesEntryV1 struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     []string
	AllocResp     []byte
}

type checkpointDataV1 struct {
	PodDeviceEntries  []PodDevicesEntryV1
	RegisteredDevices map[string][]string
}

// DataV1 is a whole V1 file: the data and the stored checksum.
type DataV1 struct {
	Data     checkpointDataV1
	Checksum uint64
}

// NewV1 returns a V1 checkpoint holding entries and registered devices.
// Readers pass an empty slice and map, as the kubelet's reader did: a key
// absent from the file then stays empty ([] and map[]), not nil.
func NewV1(entries []PodDevicesEntryV1, registered map[string][]string) *DataV1 {
	return &DataV1{Data: checkpointDataV1{PodDeviceEntries: entries, RegisteredDevices: registered}}
}

// Unmarshal decodes a file into cp (Go's encoding/json, as the kubelet).
func (cp *DataV1) Unmarshal(blob []byte) error { return json.Unmarshal(blob, cp) }

// Entries returns the decoded entries and registered devices.
func (cp *DataV1) Entries() ([]PodDevicesEntryV1, map[string][]string) {
	return cp.Data.PodDeviceEntries, cp.Data.RegisteredDevices
}

// Text is the exact text whose FNV-1a/32 is the V1 checksum.
func (cp *DataV1) Text() string {
	text := strings.Replace(HashedText(cp.Data), "checkpointDataV1", "checkpointData", 1)
	return strings.ReplaceAll(text, "PodDevicesEntryV1", "PodDevicesEntry")
}

// ComputeChecksum returns the checksum of the data as a V1 reader computes it.
func (cp *DataV1) ComputeChecksum() uint64 {
	h := fnv.New32a()
	h.Write([]byte(cp.Text()))
	return uint64(h.Sum32())
}

// Verify returns nil when the stored checksum is the computed one.
func (cp *DataV1) Verify() error {
	if got := cp.ComputeChecksum(); got != cp.Checksum {
		return fmt.Errorf("checkpoint is corrupted (V1): stored checksum %d, computed %d", cp.Checksum, got)
	}
	return nil
}

// Marshal sets the checksum and encodes the file as a 1.19 kubelet wrote it.
func (cp *DataV1) Marshal() ([]byte, error) {
	cp.Checksum = cp.ComputeChecksum()
	return json.Marshal(*cp)
}

// HashedText returns the text the kubelet's hashing function
// (pkg/util/hash DeepHashObject, behind every checkpoint checksum) writes
// into its hash for v.
func HashedText(v any) string {
	var rec textRecorder
	hashutil.DeepHashObject(&rec, v)
	return rec.String()
}

// textRecorder is a hash.Hash that keeps what is written to it, so that the
// kubelet's own hashing function yields the text it hashes.
type textRecorder struct{ strings.Builder }

var _ hash.Hash = (*textRecorder)(nil)

func (r *textRecorder) Sum(b []byte) []byte { return append(b, r.String()...) }
func (r *textRecorder) Size() int           { return 0 }
func (r *textRecorder) BlockSize() int      { return 1 }
