//go:build oracle_dra

// The DRA half of the oracle: the kubelet's own DRA manager
// (k8s.io/kubernetes/pkg/kubelet/cm/dra) of the release, wired as the
// kubelet's container manager wires it: NewManager with a kube client and
// the kubelet's root directory as its state directory (dra_manager_state
// lands there), Start with the active pods, a node getter and the pod
// sources, and the plugin registration handler it hands to the plugin
// watcher (ValidatePlugin, then RegisterPlugin, as the plugin watcher calls
// them for a socket in plugins_registry). The claims live in client-go's
// fake clientset: the manager GETs them as it would from the API server.
//
// The DRA API between releases differs only in contexts and loggers; the
// per-release adapters are in dra_api_<shape>.go.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"
	"k8s.io/kubernetes/pkg/kubelet/config"
	kubeletmetrics "k8s.io/kubernetes/pkg/kubelet/metrics"
)

const (
	// The DRA manager's state directory is the kubelet's root directory
	// (inside the oracle's mount namespace: a tmpfs).
	draStateDir       = kubeletRoot
	draCheckpointFile = "dra_manager_state"
	draNodeName       = "oracle-node"
)

var resourceClaimsGVR = resourceapi.SchemeGroupVersion.WithResource("resourceclaims")

type draRequest struct {
	Op string `json:"op"`
	// dra_start
	FeatureGates map[string]bool `json:"feature_gates"`
	// dra_register, dra_deregister
	Driver   string   `json:"driver"`
	Endpoint string   `json:"endpoint"`
	Services []string `json:"services"`
	// dra_put_claim: a resource.k8s.io/v1 ResourceClaim.
	Claim json.RawMessage `json:"claim"`
	// dra_delete_claim
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// dra_prepare, dra_unprepare, dra_get_resources: a core/v1 Pod, or the
	// UID of a pod given to an earlier dra_prepare.
	Pod       json.RawMessage `json:"pod"`
	UID       string          `json:"uid"`
	Container string          `json:"container"`
	// dra_restart: register the drivers again afterwards, as the plugin
	// watcher does when it finds their sockets (default true).
	Reregister *bool `json:"reregister"`
	// dra_write_checkpoint: the file's new content.
	Bytes []byte `json:"bytes"`
	// dra_bench_prepare (dra_bench.go): timed pods and untimed ones first.
	Count  int `json:"count"`
	Warmup int `json:"warmup"`
}

type draRegistration struct {
	driver, endpoint string
	services         []string
}

type draOracle struct {
	mu      sync.Mutex
	client  *fake.Clientset
	mgr     *dra.Manager
	cancel  context.CancelFunc
	handler draHandler
	// Pods given to dra_prepare and not yet unprepared (the kubelet's
	// active pods as the reconcile loop sees them), in order.
	pods  map[string]*v1.Pod
	order []string
	// Registered drivers, in registration order, for dra_restart.
	registered []draRegistration
}

var draSide = &draOracle{pods: map[string]*v1.Pod{}}

// The kubelet registers its metrics once per process (metrics.Register,
// the DRA histograms with the DynamicResourceAllocation gate) and the DRA
// manager's claims-in-use collector once (container_manager_linux.go,
// RegisterCollectors). A restart here makes a new manager in the same
// process, so the collector registered is one that asks the current one.
var registerDRAMetrics sync.Once

type currentClaimsCollector struct {
	metrics.BaseStableCollector
	d *draOracle
}

func (c *currentClaimsCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- kubeletmetrics.DRAResourceClaimsInUseDesc
}

func (c *currentClaimsCollector) CollectWithStability(ch chan<- metrics.Metric) {
	if mgr := c.d.mgr; mgr != nil {
		mgr.NewMetricsCollector().CollectWithStability(ch)
	}
}

// draMetrics is what the kubelet's /metrics serves of the DRA families
// (names starting with "dra_"), in the text format.
func draMetrics() string {
	rec := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var out strings.Builder
	for _, line := range strings.SplitAfter(rec.Body.String(), "\n") {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if strings.HasPrefix(name, "dra_") {
			out.WriteString(line)
		}
	}
	return out.String()
}

func isDRAOp(op string) bool { return strings.HasPrefix(op, "dra_") }

func handleDRA(line []byte) map[string]any {
	var r draRequest
	if err := json.Unmarshal(line, &r); err != nil {
		return fail("bad request: %v", err)
	}
	return draSide.handle(&r)
}

func draShutdown() { draSide.stop() }

func (d *draOracle) activePods() []*v1.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*v1.Pod, 0, len(d.order))
	for _, uid := range d.order {
		if p, ok := d.pods[uid]; ok {
			out = append(out, p)
		}
	}
	return out
}

func draNode() (*v1.Node, error) {
	n := &v1.Node{}
	n.Name = draNodeName
	n.UID = types.UID("oracle-node-uid")
	return n, nil
}

// start builds a manager on the state directory (which may hold a
// checkpoint from an earlier manager) and starts it.
func (d *draOracle) start() error {
	if d.client == nil {
		d.client = fake.NewSimpleClientset()
	}
	logger := klog.Background().WithName("dra")
	mgr, err := dra.NewManager(logger, d.client, draStateDir)
	if err != nil {
		return err // the kubelet's own text, unwrapped
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	ready := config.NewSourcesReady(func(sets.Set[string]) bool { return true })
	if err := draStartManager(ctx, mgr, d.activePods, ready); err != nil {
		cancel()
		return fmt.Errorf("Start: %w", err)
	}
	d.mgr, d.cancel = mgr, cancel
	registerDRAMetrics.Do(func() {
		kubeletmetrics.Register()
		kubeletmetrics.RegisterCollectors(&currentClaimsCollector{d: d})
	})
	d.handler = newDRAHandler(ctx, mgr.GetWatcherHandler())
	return nil
}

func (d *draOracle) stop() {
	if d.mgr == nil {
		return
	}
	d.cancel()
	// The plugin manager closes its driver connections and waits for its
	// goroutines (the health streams, the start-up slice wipe).
	if pm, ok := d.handler.raw.(*draplugin.DRAPluginManager); ok {
		pm.Stop()
	}
	d.mgr = nil
}

func (d *draOracle) ensureStarted() error {
	if d.mgr != nil {
		return nil
	}
	return d.start()
}

// register calls the handler as the plugin watcher does; on failure it
// names the call that refused and returns the kubelet's own error.
func (d *draOracle) register(driver, endpoint string, services []string) (string, error) {
	if err := d.handler.validate(driver, endpoint, services); err != nil {
		return "ValidatePlugin", err
	}
	if err := d.handler.register(driver, endpoint, services); err != nil {
		return "RegisterPlugin", err
	}
	return "", nil
}

func (d *draOracle) handle(r *draRequest) map[string]any {
	if r.Op == "dra_start" {
		if d.mgr != nil {
			return fail("dra_start: already started (dra_start must come before any other dra_ request)")
		}
		if len(r.FeatureGates) > 0 {
			if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(r.FeatureGates); err != nil {
				return fail("feature gates: %v", err)
			}
		}
	}
	if r.Op == "dra_write_checkpoint" {
		// Allowed before the manager exists: the next start reads it.
		if err := os.WriteFile(filepath.Join(draStateDir, draCheckpointFile), r.Bytes, 0o644); err != nil {
			return fail("%v", err)
		}
		return map[string]any{"ok": true}
	}
	if r.Op != "dra_restart" {
		if err := d.ensureStarted(); err != nil {
			// A manager that cannot start (a corrupt checkpoint) is a
			// result of the kubelet's code, not a failed request.
			return map[string]any{"ok": true, "started": false, "error": err.Error()}
		}
	}
	switch r.Op {
	case "dra_start":
		return map[string]any{"ok": true, "started": true, "state_dir": draStateDir}
	case "dra_register":
		if r.Driver == "" || r.Endpoint == "" {
			return fail("dra_register needs driver and endpoint")
		}
		if step, err := d.register(r.Driver, r.Endpoint, r.Services); err != nil {
			return map[string]any{"ok": true, "registered": false, "step": step, "error": err.Error()}
		}
		d.registered = append(d.registered, draRegistration{r.Driver, r.Endpoint, r.Services})
		return map[string]any{"ok": true, "registered": true}
	case "dra_deregister":
		d.handler.deregister(r.Driver, r.Endpoint)
		kept := d.registered[:0]
		for _, x := range d.registered {
			if x.driver != r.Driver || x.endpoint != r.Endpoint {
				kept = append(kept, x)
			}
		}
		d.registered = kept
		return map[string]any{"ok": true}
	case "dra_put_claim":
		return d.putClaim(r)
	case "dra_delete_claim":
		err := d.client.Tracker().Delete(resourceClaimsGVR, r.Namespace, r.Name)
		if err != nil {
			return fail("%v", err)
		}
		return map[string]any{"ok": true}
	case "dra_prepare":
		return d.prepare(r)
	case "dra_unprepare":
		return d.unprepare(r)
	case "dra_get_resources":
		return d.getResources(r)
	case "dra_health_status":
		return d.healthStatus(r)
	case "dra_checkpoint":
		b, err := os.ReadFile(filepath.Join(draStateDir, draCheckpointFile))
		if err != nil {
			if os.IsNotExist(err) {
				return map[string]any{"ok": true, "exists": false}
			}
			return fail("%v", err)
		}
		return map[string]any{"ok": true, "exists": true, "bytes": b}
	case "dra_api_calls":
		return map[string]any{"ok": true, "calls": d.apiCalls()}
	case "dra_metrics":
		return map[string]any{"ok": true, "text": draMetrics()}
	case "dra_restart":
		return d.restart(r)
	case "dra_bench_prepare":
		return d.benchPrepare(r)
	}
	return fail("unknown op %q (dra_start, dra_register, dra_deregister, dra_put_claim, dra_delete_claim, dra_prepare, dra_unprepare, dra_get_resources, dra_health_status, dra_checkpoint, dra_write_checkpoint, dra_api_calls, dra_metrics, dra_restart, dra_bench_prepare)", r.Op)
}

func (d *draOracle) putClaim(r *draRequest) map[string]any {
	claim := &resourceapi.ResourceClaim{}
	if err := json.Unmarshal(r.Claim, claim); err != nil {
		return fail("claim: %v", err)
	}
	if claim.Name == "" || claim.UID == "" {
		return fail("claim needs metadata.name and metadata.uid")
	}
	if claim.Namespace == "" {
		claim.Namespace = "default"
	}
	tracker := d.client.Tracker()
	// Replaces a claim of the same name (a re-created claim with a new UID).
	_ = tracker.Delete(resourceClaimsGVR, claim.Namespace, claim.Name)
	if err := tracker.Add(claim); err != nil {
		return fail("%v", err)
	}
	return map[string]any{"ok": true}
}

// pod decodes the request's pod, or finds the prepared pod of its uid.
func (d *draOracle) pod(r *draRequest) (*v1.Pod, error) {
	if len(r.Pod) > 0 && string(r.Pod) != "null" {
		pod := &v1.Pod{}
		if err := json.Unmarshal(r.Pod, pod); err != nil {
			return nil, fmt.Errorf("pod: %w", err)
		}
		if pod.UID == "" {
			return nil, fmt.Errorf("pod needs metadata.uid")
		}
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		return pod, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if pod, ok := d.pods[r.UID]; ok {
		return pod, nil
	}
	return nil, fmt.Errorf("no pod given and no prepared pod %q", r.UID)
}

func (d *draOracle) prepare(r *draRequest) map[string]any {
	pod, err := d.pod(r)
	if err != nil {
		return fail("%v", err)
	}
	// As the kubelet: the pod is active while its resources are prepared.
	d.mu.Lock()
	if _, ok := d.pods[string(pod.UID)]; !ok {
		d.order = append(d.order, string(pod.UID))
	}
	d.pods[string(pod.UID)] = pod
	d.mu.Unlock()
	if err := d.mgr.PrepareResources(context.Background(), pod); err != nil {
		return map[string]any{"ok": true, "prepared": false, "error": err.Error()}
	}
	return map[string]any{"ok": true, "prepared": true}
}

func (d *draOracle) unprepare(r *draRequest) map[string]any {
	pod, err := d.pod(r)
	if err != nil {
		return fail("%v", err)
	}
	// As the kubelet: a terminated pod is no longer active.
	d.mu.Lock()
	delete(d.pods, string(pod.UID))
	d.mu.Unlock()
	if err := d.mgr.UnprepareResources(context.Background(), pod); err != nil {
		return map[string]any{"ok": true, "unprepared": false, "error": err.Error()}
	}
	return map[string]any{"ok": true, "unprepared": true}
}

func (d *draOracle) getResources(r *draRequest) map[string]any {
	pod, err := d.pod(r)
	if err != nil {
		return fail("%v", err)
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name != r.Container {
				continue
			}
			info, err := d.mgr.GetResources(pod, &list[i])
			if err != nil {
				return map[string]any{"ok": true, "failed": true, "error": err.Error()}
			}
			ids := []string{}
			for _, c := range info.CDIDevices {
				ids = append(ids, c.Name)
			}
			return map[string]any{"ok": true, "failed": false, "cdi_devices": ids}
		}
	}
	return fail("pod %q has no container %q", pod.UID, r.Container)
}

// healthStatus is what the kubelet's status manager gets for the pod's
// containers: UpdateAllocatedResourcesStatus on a status with one running
// container status per container (the health the drivers reported).
func (d *draOracle) healthStatus(r *draRequest) map[string]any {
	pod, err := d.pod(r)
	if err != nil {
		return fail("%v", err)
	}
	status := &v1.PodStatus{}
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, v1.ContainerStatus{Name: c.Name})
	}
	draUpdateStatus(d.mgr, pod, status)
	out := map[string]any{}
	for _, cs := range status.ContainerStatuses {
		out[cs.Name] = cs.AllocatedResourcesStatus
	}
	return map[string]any{"ok": true, "containers": out}
}

// apiCalls returns the kube API requests the kubelet code made since the
// last call (the fake clientset's action log), then forgets them.
func (d *draOracle) apiCalls() []map[string]any {
	out := []map[string]any{}
	for _, a := range d.client.Actions() {
		call := map[string]any{"verb": a.GetVerb(), "resource": a.GetResource().Resource,
			"version": a.GetResource().GroupVersion().String(), "namespace": a.GetNamespace()}
		if g, ok := a.(clienttesting.GetAction); ok {
			call["name"] = g.GetName()
		}
		if dc, ok := a.(clienttesting.DeleteCollectionAction); ok {
			call["field_selector"] = dc.GetListRestrictions().Fields.String()
		}
		out = append(out, call)
	}
	d.client.ClearActions()
	return out
}

// restart stops the manager and starts a new one on the same state
// directory, as a kubelet restart does; the drivers register again (their
// sockets are still there) unless reregister is false.
func (d *draOracle) restart(r *draRequest) map[string]any {
	d.stop()
	if err := d.start(); err != nil {
		return map[string]any{"ok": true, "started": false, "error": err.Error()}
	}
	resp := map[string]any{"ok": true, "started": true}
	if r.Reregister == nil || *r.Reregister {
		errs := []string{}
		for _, x := range d.registered {
			if step, err := d.register(x.driver, x.endpoint, x.services); err != nil {
				errs = append(errs, step+": "+err.Error())
			}
		}
		resp["register_errors"] = errs
	} else {
		d.registered = nil
	}
	return resp
}
