package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	legacy "devmgr.test/checkpoint-oracle/legacy"
)

// genShape is what gen's flags ask for.
type genShape struct {
	seed                              uint64
	pods, containers, resources, numa int
	devs, pad                         int
	unicode, corrupt                  bool
	format                            string
}

// numaOrder gives node IDs in an order that puts 10 before 2, so that a
// reader sorting NUMA keys as strings instead of numbers gets it wrong.
var numaOrder = []int64{0, 1, 10, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15}

// genCmd writes one random checkpoint file: entries as the kubelet's device
// manager records them (one per pod, container and resource; devices per
// NUMA node, -1 without topology; the Allocate response protobuf-encoded),
// then the kubelet's own MarshalCheckpoint (V2) or the 1.19 encoding (V1).
func genCmd(args []string) int {
	var s genShape
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	seed := fs.Int64("seed", 1, "random seed: the same flags and seed give the same bytes")
	fs.IntVar(&s.pods, "pods", 2, "pods with devices")
	fs.IntVar(&s.containers, "containers", 1, "containers per pod")
	fs.IntVar(&s.resources, "resources", 2, "extended resources per container")
	fs.IntVar(&s.numa, "numa", 2, "NUMA nodes (0: devices without topology, node -1)")
	fs.IntVar(&s.devs, "devs", 2, "devices per container and resource")
	fs.IntVar(&s.pad, "allocresp-pad", 0, "extra bytes in each Allocate response")
	fs.BoolVar(&s.unicode, "unicode", false, "non-ASCII and HTML-escaped characters in names and IDs")
	fs.StringVar(&s.format, "format", "v2", "v2 (kubelets 1.20+) or v1 (kubelets up to 1.19)")
	fs.BoolVar(&s.corrupt, "corrupt", false, "break the file: its checksum no longer matches")
	fs.Parse(args)
	s.seed = uint64(*seed)
	if s.format != "v1" && s.format != "v2" {
		fail("gen: --format must be v1 or v2, not %q", s.format)
	}
	if s.pods < 0 || s.containers < 1 || s.resources < 1 || s.devs < 1 || s.pad < 0 ||
		s.numa < 0 || s.numa > len(numaOrder) {
		fail("gen: --pods >= 0, --containers, --resources and --devs >= 1, 0 <= --numa <= %d, --allocresp-pad >= 0",
			len(numaOrder))
	}
	entries, registered := genEntries(s)
	var blob []byte
	var err error
	if s.format == "v1" {
		blob, err = marshalV1(s, entries, registered)
	} else {
		blob, err = marshalV2(s, entries, registered)
	}
	if err != nil {
		fail("gen: %v", err)
	}
	os.Stdout.Write(blob)
	return 0
}

func marshalV2(s genShape, entries []checkpoint.PodDevicesEntry, registered map[string][]string) ([]byte, error) {
	cp := checkpoint.New(entries, registered).(*checkpoint.Data)
	blob, err := cp.MarshalCheckpoint()
	if err != nil || !s.corrupt {
		return blob, err
	}
	if s.seed%2 == 1 && len(cp.Data.PodDeviceEntries) > 0 {
		cp.Data.PodDeviceEntries[0].ContainerName += "x" // data edited after checksumming
	} else {
		cp.Checksum++
	}
	return json.Marshal(*cp)
}

// marshalV1 flattens each entry's devices (by ascending NUMA node) into the
// V1 list and encodes the file as kubelets up to 1.19 wrote it.
func marshalV1(s genShape, entries []checkpoint.PodDevicesEntry, registered map[string][]string) ([]byte, error) {
	var v1Entries []legacy.PodDevicesEntryV1
	for _, e := range entries {
		nodes := make([]int64, 0, len(e.DeviceIDs))
		for n := range e.DeviceIDs {
			nodes = append(nodes, n)
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
		var ids []string
		for _, n := range nodes {
			ids = append(ids, e.DeviceIDs[n]...)
		}
		v1Entries = append(v1Entries, legacy.PodDevicesEntryV1{PodUID: e.PodUID,
			ContainerName: e.ContainerName, ResourceName: e.ResourceName, DeviceIDs: ids, AllocResp: e.AllocResp})
	}
	cp := legacy.NewV1(v1Entries, registered)
	blob, err := cp.Marshal()
	if err != nil || !s.corrupt {
		return blob, err
	}
	if s.seed%2 == 1 && len(v1Entries) > 0 {
		v1Entries[0].ContainerName += "x"
	} else {
		cp.Checksum++
	}
	return json.Marshal(*cp)
}

// genEntries draws the allocations. Each resource has a pool of devices
// (each on one NUMA node); every container takes --devs of them, none
// shared. Registered devices list each pool in random order, as the kubelet
// writes its healthy-device sets; on some seeds a resource is registered
// with no healthy device ([]).
func genEntries(s genShape) ([]checkpoint.PodDevicesEntry, map[string][]string) {
	rng := rand.New(rand.NewPCG(s.seed, 0x636b7074))
	registered := make(map[string][]string)
	type device struct {
		id   string
		node int64
	}
	pools := make([][]device, s.resources)
	names := make([]string, s.resources)
	for r := range names {
		names[r] = fmt.Sprintf("example.com/dev%d", r)
		if s.unicode && r%2 == 1 {
			names[r] = fmt.Sprintf("example.com/<gpü>&%d", r)
		}
		for i := 0; i < s.pods*s.containers*s.devs+2; i++ {
			d := device{id: fmt.Sprintf("dev-%08x", rng.Uint32()), node: -1}
			if s.unicode && i%3 == 1 {
				d.id = fmt.Sprintf("gerät-日本-\u2028-%d", i)
			}
			if s.numa > 0 {
				d.node = numaOrder[rng.IntN(s.numa)]
			}
			pools[r] = append(pools[r], d)
		}
		rng.Shuffle(len(pools[r]), func(i, j int) { pools[r][i], pools[r][j] = pools[r][j], pools[r][i] })
		for _, d := range pools[r] {
			registered[names[r]] = append(registered[names[r]], d.id)
		}
	}
	if s.seed%3 == 0 {
		registered["example.com/unhealthy"] = []string{}
	}
	var entries []checkpoint.PodDevicesEntry
	for p := 0; p < s.pods; p++ {
		uid := fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12),
			rng.IntN(1<<12), rng.Uint64()&(1<<48-1))
		for c := 0; c < s.containers; c++ {
			container := fmt.Sprintf("ctr-%d", c)
			if s.unicode {
				container = fmt.Sprintf("ctr-é\"\\%d", c)
			}
			for r, name := range names {
				taken := pools[r][:s.devs]
				pools[r] = pools[r][s.devs:]
				perNode := checkpoint.NewDevicesPerNUMA()
				ids := make([]string, 0, len(taken))
				for _, d := range taken {
					perNode[d.node] = append(perNode[d.node], d.id)
					ids = append(ids, d.id)
				}
				entries = append(entries, checkpoint.PodDevicesEntry{PodUID: uid, ContainerName: container,
					ResourceName: name, DeviceIDs: perNode, AllocResp: allocResp(ids, s.pad)})
			}
		}
	}
	rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	return entries, registered
}

// allocResp is an Allocate response for ids, protobuf-encoded as the kubelet
// stores it. One environment variable only: the encoding of several map
// entries has no fixed order.
func allocResp(ids []string, pad int) []byte {
	resp := &pluginapi.ContainerAllocateResponse{
		Envs: map[string]string{"EXAMPLE_VISIBLE_DEVICES": strings.Join(ids, ",")},
	}
	for i := range ids {
		path := fmt.Sprintf("/dev/example%d", i)
		resp.Devices = append(resp.Devices, &pluginapi.DeviceSpec{ContainerPath: path, HostPath: path, Permissions: "rw"})
	}
	if pad > 0 {
		resp.Mounts = []*pluginapi.Mount{{ContainerPath: "/pad", HostPath: strings.Repeat("p", pad), ReadOnly: true}}
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		fail("gen: encoding an Allocate response: %v", err)
	}
	return b
}
