package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/config"
)

type containerSpec struct {
	Name          string           `json:"name"`
	Resources     map[string]int64 `json:"resources"`
	RestartPolicy string           `json:"restart_policy,omitempty"` // "Always": a sidecar init container
}

// status.extendedResourceClaimStatus (DRA-backed extended resources).
type extendedResourceClaim struct {
	Name     string `json:"name"`
	Mappings []struct {
		Container string `json:"container"`
		Resource  string `json:"resource"`
		Request   string `json:"request"`
	} `json:"mappings"`
}

type podSpec struct {
	UID            string          `json:"uid"`
	Name           string          `json:"name"`
	Namespace      string          `json:"namespace"`
	Containers     []containerSpec `json:"containers"`
	InitContainers []containerSpec `json:"init_containers"`
	// 1.34+ only (an error before).
	ExtendedResourceClaim *extendedResourceClaim `json:"extended_resource_claim"`
}

type request struct {
	ID int    `json:"id"`
	Op string `json:"op"`
	// start
	NUMANodes     int               `json:"numa_nodes"`
	Policy        string            `json:"policy"`
	Scope         string            `json:"scope"`
	PolicyOptions map[string]string `json:"policy_options"`
	FeatureGates  map[string]bool   `json:"feature_gates"`
	// admit, hints
	Pod *podSpec `json:"pod"`
	// delete, run_options, hints
	UID       string `json:"uid"`
	Container string `json:"container"`
	// restart: whether the admitted pods' containers are reported running
	// by the fake runtime (default true).
	ContainersRunning *bool `json:"containers_running"`
	// restart: admit the active pods again, in admission order, as the
	// kubelet's pod workers do after a restart (HandlePodAdditions).
	Readmit bool `json:"readmit"`
	// feature_gates
	Names []string `json:"names"`
	// wait
	Resource    string `json:"resource"`
	Capacity    *int64 `json:"capacity"`
	Allocatable *int64 `json:"allocatable"`
	TimeoutMs   int    `json:"timeout_ms"`
	// bench_admit (resource too): the plugin's socket name in the
	// device-plugin directory, the device ID bare calls ask for, and how
	// many admissions to time after how many untimed ones.
	Endpoint string `json:"endpoint"`
	Device   string `json:"device"`
	Count    int    `json:"count"`
	Warmup   int    `json:"warmup"`
}

// logBuffer keeps the kubelet code's log lines until the next "logs" request.
type logBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	copy io.Writer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.copy != nil {
		_, _ = b.copy.Write(p)
	}
	return b.buf.Write(p)
}

func (b *logBuffer) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimRight(b.buf.String(), "\n")
	b.buf.Reset()
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

var logs = &logBuffer{}

func setupLogging(v int, toStderr bool) {
	fs := flagSetForKlog()
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("one_output", "true")
	_ = fs.Set("skip_headers", "false")
	_ = fs.Set("v", fmt.Sprint(v))
	if toStderr {
		logs.copy = os.Stderr
	}
	klog.SetOutput(logs)
}

type oracle struct {
	dir        string
	mu         sync.Mutex
	started    bool
	startReq   request
	mgr        *managers
	pods       map[string]*v1.Pod // admitted and not deleted, by UID
	order      []string           // admission order of pods
	containers containermap.ContainerMap
	// sourcesNotReady: sourcesReady.AllReady() answers false (while a
	// restart re-admits the pods that already existed).
	sourcesNotReady atomic.Bool
	// resetExtended: ShouldResetExtendedResourceCapacity of the newest
	// managers, asked before their Start (when the kubelet registers its
	// Node with the API server, which it does before the device manager
	// starts and cleans the directory).
	resetExtended bool
}

func newOracle(dir string) *oracle {
	return &oracle{dir: dir, pods: map[string]*v1.Pod{}, containers: containermap.NewContainerMap()}
}

func fail(format string, args ...any) map[string]any {
	return map[string]any{"ok": false, "error": fmt.Sprintf(format, args...)}
}

func (o *oracle) activePods() []*v1.Pod {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]*v1.Pod, 0, len(o.order))
	for _, uid := range o.order {
		if p, ok := o.pods[uid]; ok {
			out = append(out, p)
		}
	}
	return out
}

func topology(numaNodes int) []cadvisorapi.Node {
	if numaNodes <= 0 {
		numaNodes = 1
	}
	nodes := make([]cadvisorapi.Node, numaNodes)
	for i := range nodes {
		nodes[i] = cadvisorapi.Node{Id: i, Cores: []cadvisorapi.Core{{Id: i, Threads: []int{2 * i, 2*i + 1}, SocketID: i}}}
	}
	return nodes
}

func (o *oracle) startManagers(running bool) error {
	r := o.startReq
	policy := r.Policy
	if policy == "" {
		policy = "none"
	}
	scope := r.Scope
	if scope == "" {
		scope = "container"
	}
	m, err := newManagers(topology(r.NUMANodes), policy, scope, r.PolicyOptions)
	if err != nil {
		return err
	}
	o.resetExtended = m.m.ShouldResetExtendedResourceCapacity()
	initial := containermap.NewContainerMap()
	runningSet := sets.New[string]()
	o.mu.Lock()
	o.containers.Visit(func(podUID, name, id string) {
		initial.Add(podUID, name, id)
		if running {
			runningSet.Insert(id)
		}
	})
	o.mu.Unlock()
	ready := config.NewSourcesReady(func(sets.Set[string]) bool { return !o.sourcesNotReady.Load() })
	if err := m.start(o.activePods, ready, initial, runningSet); err != nil {
		return fmt.Errorf("Start: %w", err)
	}
	o.mgr = m
	return nil
}

func (o *oracle) handle(r *request) map[string]any {
	if r.Op != "start" && r.Op != "quit" && r.Op != "logs" && r.Op != "checkpoint" && r.Op != "feature_gates" && !o.started {
		return fail("%q before start", r.Op)
	}
	switch r.Op {
	case "start":
		if o.started {
			return fail("already started")
		}
		if len(r.FeatureGates) > 0 {
			if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(r.FeatureGates); err != nil {
				return fail("feature gates: %v", err)
			}
		}
		o.startReq = *r
		if err := o.startManagers(true); err != nil {
			return fail("%v", err)
		}
		o.started = true
		return map[string]any{"ok": true}
	case "restart":
		if err := o.mgr.stop(); err != nil {
			return fail("Stop: %v", err)
		}
		running := r.ContainersRunning == nil || *r.ContainersRunning
		if err := o.startManagers(running); err != nil {
			return fail("%v", err)
		}
		resp := map[string]any{"ok": true, "reset_extended_resources": o.resetExtended}
		if r.Readmit {
			// As the kubelet after a restart: the pods that already existed
			// are admitted again before the pod sources report ready (the
			// running-container shortcut of devicesToAllocate applies).
			o.sourcesNotReady.Store(running)
			resp["readmitted"] = o.readmit()
			o.sourcesNotReady.Store(false)
		}
		return resp
	case "feature_gates":
		return featureGates(r.Names)
	case "readmit":
		// The admission of every active pod again, sources ready (after a
		// reboot, once the plugins are back).
		return map[string]any{"ok": true, "readmitted": o.readmit()}
	case "admit":
		return o.admit(r)
	case "delete":
		o.mu.Lock()
		pod, ok := o.pods[r.UID]
		delete(o.pods, r.UID)
		if ok {
			for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
				o.containers.RemoveByContainerRef(r.UID, c.Name)
			}
		}
		o.mu.Unlock()
		if !ok {
			return fail("no active pod %q", r.UID)
		}
		return map[string]any{"ok": true}
	case "update_allocated":
		o.mgr.updateAllocated()
		return map[string]any{"ok": true}
	case "run_options":
		return o.runOptions(r)
	case "hints":
		return o.hints(r)
	case "state":
		return o.state()
	case "wait":
		return o.wait(r)
	case "checkpoint":
		b, err := os.ReadFile(filepath.Join(pluginDir, checkpointFile))
		if err != nil {
			if os.IsNotExist(err) {
				return map[string]any{"ok": true, "exists": false}
			}
			return fail("%v", err)
		}
		return map[string]any{"ok": true, "exists": true, "bytes": b}
	case "bench_admit":
		return o.benchAdmit(r)
	case "logs":
		return map[string]any{"ok": true, "lines": logs.take()}
	case "quit":
		o.shutdown()
		return map[string]any{"ok": true}
	}
	return fail("unknown op %q (start, admit, delete, restart, readmit, feature_gates, run_options, hints, state, wait, update_allocated, checkpoint, logs, bench_admit, quit)", r.Op)
}

func (o *oracle) shutdown() {
	if o.started && o.mgr != nil {
		_ = o.mgr.stop()
	}
	o.started = false
}

func quantities(res map[string]int64) v1.ResourceList {
	l := v1.ResourceList{}
	for k, n := range res {
		l[v1.ResourceName(k)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return l
}

func buildContainer(c containerSpec) v1.Container {
	out := v1.Container{Name: c.Name, Resources: v1.ResourceRequirements{Requests: quantities(c.Resources), Limits: quantities(c.Resources)}}
	if c.RestartPolicy != "" {
		p := v1.ContainerRestartPolicy(c.RestartPolicy)
		out.RestartPolicy = &p
	}
	return out
}

func buildPod(p *podSpec) *v1.Pod {
	pod := &v1.Pod{}
	pod.UID = types.UID(p.UID)
	pod.Name = p.Name
	if pod.Name == "" {
		pod.Name = p.UID
	}
	pod.Namespace = p.Namespace
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	for _, c := range p.InitContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, buildContainer(c))
	}
	for _, c := range p.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, buildContainer(c))
	}
	return pod
}

func containerID(uid, name string) string { return uid + "/" + name }

func (o *oracle) admit(r *request) map[string]any {
	if r.Pod == nil || r.Pod.UID == "" {
		return fail("admit needs pod.uid")
	}
	o.mu.Lock()
	_, dup := o.pods[r.Pod.UID]
	o.mu.Unlock()
	if dup {
		return fail("pod %q is already active", r.Pod.UID)
	}
	pod := buildPod(r.Pod)
	if r.Pod.ExtendedResourceClaim != nil {
		if err := setExtendedResourceClaim(pod, r.Pod.ExtendedResourceClaim); err != nil {
			return fail("%v", err)
		}
	}
	// As the kubelet: the pod is in the active set while it is admitted
	// (the pod manager adds it before the admit handlers run).
	o.mu.Lock()
	o.pods[r.Pod.UID] = pod
	o.order = append(o.order, r.Pod.UID)
	o.mu.Unlock()
	admitted, reason, message := o.mgr.admit(pod)
	if admitted {
		// The predicate admit handler (after the resource allocation handler).
		if err := o.mgr.updatePluginResources(pod); err != nil {
			admitted, reason, message = false, "UnexpectedAdmissionError", err.Error()
		}
	}
	resp := map[string]any{"ok": true, "admitted": admitted, "reason": reason, "message": message}
	if !admitted {
		o.mu.Lock()
		delete(o.pods, r.Pod.UID)
		o.mu.Unlock()
		return resp
	}
	o.mu.Lock()
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		o.containers.Add(string(pod.UID), c.Name, containerID(string(pod.UID), c.Name))
	}
	o.mu.Unlock()
	resp["devices"] = o.podDevices(pod)
	return resp
}

// readmit runs the admission of every active pod again (after a restart);
// a rejected pod leaves the active set, as a pod the kubelet fails.
func (o *oracle) readmit() []map[string]any {
	out := []map[string]any{}
	for _, pod := range o.activePods() {
		admitted, reason, message := o.mgr.admit(pod)
		if admitted {
			if err := o.mgr.updatePluginResources(pod); err != nil {
				admitted, reason, message = false, "UnexpectedAdmissionError", err.Error()
			}
		}
		r := map[string]any{"uid": string(pod.UID), "admitted": admitted, "reason": reason, "message": message}
		if admitted {
			r["devices"] = o.podDevices(pod)
		} else {
			o.mu.Lock()
			delete(o.pods, string(pod.UID))
			for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
				o.containers.RemoveByContainerRef(string(pod.UID), c.Name)
			}
			o.mu.Unlock()
		}
		out = append(out, r)
	}
	return out
}

func sortedIDs(ids sets.Set[string]) []string {
	out := sets.List(ids)
	if out == nil {
		out = []string{}
	}
	return out
}

func (o *oracle) podDevices(pod *v1.Pod) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		devs := o.mgr.m.GetDevices(string(pod.UID), c.Name)
		if len(devs) == 0 {
			continue
		}
		byRes := map[string][]string{}
		for res, ids := range devs {
			s := sets.New[string]()
			for id := range ids {
				s.Insert(id)
			}
			byRes[res] = sortedIDs(s)
		}
		out[c.Name] = byRes
	}
	return out
}

func (o *oracle) findContainer(r *request) (*v1.Pod, *v1.Container, map[string]any) {
	var pod *v1.Pod
	if r.Pod != nil {
		pod = buildPod(r.Pod)
	} else {
		o.mu.Lock()
		pod = o.pods[r.UID]
		o.mu.Unlock()
		if pod == nil {
			return nil, nil, fail("no active pod %q", r.UID)
		}
	}
	if r.Container == "" {
		return pod, nil, nil
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == r.Container {
				return pod, &list[i], nil
			}
		}
	}
	return nil, nil, fail("pod %q has no container %q", pod.UID, r.Container)
}

func (o *oracle) runOptions(r *request) map[string]any {
	pod, c, e := o.findContainer(r)
	if e != nil {
		return e
	}
	if c == nil {
		return fail("run_options needs container")
	}
	opts, err := o.mgr.runOptions(pod, c)
	if err != nil {
		return map[string]any{"ok": true, "failed": true, "message": err.Error()}
	}
	return map[string]any{"ok": true, "failed": false, "options": opts}
}

type hintOut struct {
	NUMANodes []int `json:"numa_nodes"`
	Preferred bool  `json:"preferred"`
}

func encodeHints(h map[string][]topologymanager.TopologyHint) map[string]any {
	if h == nil {
		return nil
	}
	out := map[string]any{}
	for res, list := range h {
		if list == nil {
			out[res] = nil
			continue
		}
		hs := make([]hintOut, 0, len(list))
		for _, x := range list {
			var nodes []int
			if x.NUMANodeAffinity != nil {
				nodes = x.NUMANodeAffinity.GetBits()
			}
			if nodes == nil {
				nodes = []int{}
			}
			hs = append(hs, hintOut{NUMANodes: nodes, Preferred: x.Preferred})
		}
		out[res] = hs
	}
	return out
}

func (o *oracle) hints(r *request) map[string]any {
	pod, c, e := o.findContainer(r)
	if e != nil {
		return e
	}
	if c == nil {
		return map[string]any{"ok": true, "hints": encodeHints(o.mgr.podHints(pod))}
	}
	return map[string]any{"ok": true, "hints": encodeHints(o.mgr.hints(pod, c))}
}

type deviceOut struct {
	Health    string `json:"health"`
	NUMANodes []int  `json:"numa_nodes"`
}

func counts(l v1.ResourceList) map[string]int64 {
	out := map[string]int64{}
	for k, q := range l {
		out[string(k)] = q.Value()
	}
	return out
}

func (o *oracle) state() map[string]any {
	capacity, allocatable, deleted := o.mgr.capacity()
	sort.Strings(deleted)
	if deleted == nil {
		deleted = []string{}
	}
	devs := map[string]map[string]deviceOut{}
	for res, m := range o.mgr.allocatable() {
		devs[res] = map[string]deviceOut{}
		for id, d := range m {
			nodes := []int{}
			for _, n := range d.GetTopology().GetNodes() {
				nodes = append(nodes, int(n.GetID()))
			}
			devs[res][id] = deviceOut{Health: d.GetHealth(), NUMANodes: nodes}
		}
	}
	pods := map[string]any{}
	affinity := map[string]map[string][]int{}
	for _, p := range o.activePods() {
		pods[string(p.UID)] = o.podDevices(p)
		for _, c := range append(append([]v1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			if a := o.mgr.affinity(string(p.UID), c.Name); a != nil {
				if affinity[string(p.UID)] == nil {
					affinity[string(p.UID)] = map[string][]int{}
				}
				affinity[string(p.UID)][c.Name] = a
			}
		}
	}
	return map[string]any{"ok": true, "capacity": counts(capacity), "allocatable": counts(allocatable),
		"deleted": deleted, "allocatable_devices": devs, "pods": pods, "affinity": affinity}
}

// wait polls GetCapacity (as the kubelet's node status loop calls it) until
// the resource has the asked capacity and/or allocatable count.
func (o *oracle) wait(r *request) map[string]any {
	if r.Resource == "" || (r.Capacity == nil && r.Allocatable == nil) {
		return fail("wait needs resource and capacity and/or allocatable")
	}
	timeout := time.Duration(r.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		capacity, allocatable, _ := o.mgr.capacity()
		c, a := counts(capacity)[r.Resource], counts(allocatable)[r.Resource]
		if (r.Capacity == nil || *r.Capacity == c) && (r.Allocatable == nil || *r.Allocatable == a) {
			return map[string]any{"ok": true, "capacity": c, "allocatable": a}
		}
		if time.Now().After(deadline) {
			return map[string]any{"ok": false, "error": fmt.Sprintf("timed out after %v: %s capacity %d allocatable %d", timeout, r.Resource, c, a), "capacity": c, "allocatable": a}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ = devicemanager.ActivePodsFunc(nil)

// featureGates reports the release's own feature-gate table (default,
// stage, locked) for the named gates (all when none are named); a gate the
// release does not know is absent.
func featureGates(names []string) map[string]any {
	all, ok := utilfeature.DefaultMutableFeatureGate.(interface {
		GetAll() map[featuregate.Feature]featuregate.FeatureSpec
	})
	if !ok {
		return fail("the feature gate has no GetAll")
	}
	specs := all.GetAll()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]any{}
	for f, spec := range specs {
		if len(want) > 0 && !want[string(f)] {
			continue
		}
		stage := string(spec.PreRelease)
		if stage == "" {
			stage = "GA"
		}
		out[string(f)] = map[string]any{"default": spec.Default, "stage": stage, "locked": spec.LockToDefault,
			"enabled": utilfeature.DefaultFeatureGate.Enabled(f)}
	}
	return map[string]any{"ok": true, "gates": out}
}
