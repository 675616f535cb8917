// Command dra-helper-driver is a small DRA driver written the way most drivers
// are: on the kubeletplugin helper of k8s.io/dynamic-resource-allocation, with
// every default of the helper left alone (its registration, gRPC serialization,
// service advertisement and ResourceSlice publishing are the real thing). It
// is a test peer of devmgr (tests/peers, docs/peers.md), built from the module
// graph of the e2e DRA test driver at each pinned release.
//
// It publishes --num-devices devices (dev-0, dev-1, ...) in one pool named
// after the node, and prepares a claim by writing one CDI spec per claim,
// <cdi-dir>/<driver>-<claim uid>.json, with one CDI device per allocated
// device. What it prepared is kept in <plugin-dir>/prepared.json, so that an
// Unprepare after its restart removes the spec too.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

type driver struct {
	name   string
	cdiDir string
	state  string // prepared.json

	mu       sync.Mutex
	prepared map[types.UID][]kubeletplugin.Device
}

func main() {
	name := flag.String("driver-name", "helper.dra.devmgr.io", "the DRA driver name")
	node := flag.String("node-name", "", "the node this driver runs on (required)")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server")
	registry := flag.String("registry-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugins_registry")
	pluginDir := flag.String("plugin-dir", "", "the driver's directory (default: the kubelet's plugins/<driver-name>)")
	cdiDir := flag.String("cdi-dir", "/var/run/cdi", "where CDI specs are written")
	devices := flag.Int("num-devices", 2, "how many devices to publish")
	flag.Parse()
	if err := run(*name, *node, *kubeconfig, *registry, *pluginDir, *cdiDir, *devices); err != nil {
		fmt.Fprintln(os.Stderr, "dra-helper-driver:", err)
		os.Exit(1)
	}
}

func run(name, node, kubeconfig, registry, pluginDir, cdiDir string, devices int) error {
	if node == "" {
		return errors.New("--node-name is required")
	}
	if pluginDir == "" {
		pluginDir = filepath.Join(kubeletplugin.KubeletPluginsDir, name)
	}
	for _, dir := range []string{pluginDir, cdiDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	d := &driver{name: name, cdiDir: cdiDir, state: filepath.Join(pluginDir, "prepared.json")}
	if err := d.load(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(name),
		kubeletplugin.NodeName(node),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(registry),
		kubeletplugin.PluginDataDirectoryPath(pluginDir))
	if err != nil {
		return fmt.Errorf("start the kubelet plugin helper: %w", err)
	}
	defer helper.Stop()
	var slice resourceslice.Slice
	for i := 0; i < devices; i++ {
		slice.Devices = append(slice.Devices, resourceapi.Device{Name: fmt.Sprintf("dev-%d", i)})
	}
	resources := resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{node: {Slices: []resourceslice.Slice{slice}}},
	}
	if err := helper.PublishResources(ctx, resources); err != nil {
		return fmt.Errorf("publish the ResourceSlices: %w", err)
	}
	fmt.Fprintf(os.Stderr, "dra-helper-driver: %s serving on node %s with %d device(s)\n", name, node, devices)
	<-ctx.Done()
	return nil
}

func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := d.prepare(claim)
		result[claim.UID] = kubeletplugin.PrepareResult{Err: err, Devices: devices}
	}
	return result, d.save()
}

// prepare answers the claim's devices, writing its CDI spec (again: the CDI
// directory may be a tmpfs emptied by a reboot while prepared.json survived).
func (d *driver) prepare(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	devices, ok := d.prepared[claim.UID]
	if !ok {
		if claim.Status.Allocation == nil {
			return nil, fmt.Errorf("claim %s/%s is not allocated", claim.Namespace, claim.Name)
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver != d.name {
				continue
			}
			devices = append(devices, kubeletplugin.Device{
				Requests:     []string{r.Request},
				PoolName:     r.Pool,
				DeviceName:   r.Device,
				CDIDeviceIDs: []string{fmt.Sprintf("%s/dev=%s-%s", d.name, claim.UID, r.Device)},
			})
		}
	}
	if err := d.writeSpec(claim.UID, devices); err != nil {
		return nil, err
	}
	d.prepared[claim.UID] = devices
	return devices, nil
}

func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		err := os.Remove(d.specPath(claim.UID))
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err == nil {
			delete(d.prepared, claim.UID)
		}
		result[claim.UID] = err
	}
	return result, d.save()
}

func (d *driver) HandleError(ctx context.Context, err error, msg string) {
	fmt.Fprintf(os.Stderr, "dra-helper-driver: %s: %v\n", msg, err)
}

func (d *driver) specPath(uid types.UID) string {
	return filepath.Join(d.cdiDir, fmt.Sprintf("%s-%s.json", d.name, uid))
}

func (d *driver) writeSpec(uid types.UID, devices []kubeletplugin.Device) error {
	type cdiDevice struct {
		Name           string              `json:"name"`
		ContainerEdits map[string][]string `json:"containerEdits"`
	}
	spec := struct {
		Version string      `json:"cdiVersion"`
		Kind    string      `json:"kind"`
		Devices []cdiDevice `json:"devices"`
	}{Version: "0.6.0", Kind: d.name + "/dev"}
	for _, dev := range devices {
		spec.Devices = append(spec.Devices, cdiDevice{
			Name:           fmt.Sprintf("%s-%s", uid, dev.DeviceName),
			ContainerEdits: map[string][]string{"env": {"HELPER_DEVICE=" + dev.DeviceName}},
		})
	}
	return writeJSON(d.specPath(uid), spec)
}

func (d *driver) load() error {
	d.prepared = map[types.UID][]kubeletplugin.Device{}
	data, err := os.ReadFile(d.state)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &d.prepared); err != nil {
		return fmt.Errorf("%s: %w", d.state, err)
	}
	return nil
}

func (d *driver) save() error { return writeJSON(d.state, d.prepared) }

// writeJSON replaces path atomically.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
