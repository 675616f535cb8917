//go:build oracle_dra

// The "dra_bench_prepare" request: the kubelet's own DRA manager preparing
// one pod's claim, timed against bare NodePrepareResources calls to the same
// driver, in this process, the way devmgr's perf_bench times devmgr
// (docs/performance.md, P5). It answers "what does the kubelet itself take
// to prepare a claim, relative to the RPC it cannot avoid".
package main

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// benchDRAClaim is a claim allocated one device of `driver` and reserved for
// the pod `podUID`, as the scheduler leaves it.
func benchDRAClaim(name, uid, driver, podName, podUID string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{}
	c.Name, c.Namespace, c.UID = name, "default", types.UID(uid)
	c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{
		Name:    "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "bench"},
	}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "gpu", Driver: driver, Pool: "bench-pool", Device: "dev-0",
		}},
	}}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{
		Resource: "pods", Name: podName, UID: types.UID(podUID),
	}}
	return c
}

// benchDRAPod is a pod of one container using the claim `claim`.
func benchDRAPod(name, uid, claim string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid)}}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
	p.Spec.Containers = []v1.Container{{
		Name: "c", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}},
	}}
	return p
}

// benchPrepare prepares `count` pods (after `warmup` untimed ones), each with
// a claim of its own put into the fake API first; each pod is unprepared
// (untimed) before the next, so the claim-info cache and the checkpoint
// stay one entry long, as in devmgr's loop. After each, two bare
// NodePrepareResources calls of one claim from a grpc-go client on a
// connection of its own to the driver: the second is the floor (it follows
// an RPC, as the manager's own call does), the first is reported beside it.
// The driver must already be registered (dra_register).
func (d *draOracle) benchPrepare(r *draRequest) map[string]any {
	if r.Driver == "" || r.Endpoint == "" || r.Count <= 0 {
		return fail("dra_bench_prepare needs driver, endpoint and count")
	}
	conn, err := grpc.NewClient("unix://"+r.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fail("dial %s: %v", r.Endpoint, err)
	}
	defer conn.Close()
	stub := drapb.NewDRAPluginClient(conn)
	bareClaim := &drapb.Claim{Namespace: "default", Name: "bench-bare"}
	// The generated field is UID (gogo, 1.34) or Uid (protoc, later).
	uid := reflect.ValueOf(bareClaim).Elem().FieldByName("UID")
	if !uid.IsValid() {
		uid = reflect.ValueOf(bareClaim).Elem().FieldByName("Uid")
	}
	uid.SetString("bench-bare-uid")
	bareReq := &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{bareClaim}}
	bareCall := func() (float64, error) {
		start := time.Now()
		_, err := stub.NodePrepareResources(context.Background(), bareReq)
		return float64(time.Since(start).Nanoseconds()) / 1e3, err
	}
	var prepare, bareAfter, bare []float64
	tracker := d.client.Tracker()
	for i := 0; i < r.Warmup+r.Count; i++ {
		name, podName := fmt.Sprintf("bench-%d", i), fmt.Sprintf("bench-pod-%d", i)
		uid, podUID := name+"-uid", podName+"-uid"
		if err := tracker.Add(benchDRAClaim(name, uid, r.Driver, podName, podUID)); err != nil {
			return fail("claim %d: %v", i, err)
		}
		pod := benchDRAPod(podName, podUID, name)
		d.mu.Lock()
		d.pods[podUID] = pod
		d.order = append(d.order, podUID)
		d.mu.Unlock()
		start := time.Now()
		err := d.mgr.PrepareResources(context.Background(), pod)
		us := float64(time.Since(start).Nanoseconds()) / 1e3
		if err != nil {
			return fail("PrepareResources %d: %v", i, err)
		}
		d.mu.Lock()
		delete(d.pods, podUID)
		d.order = d.order[:len(d.order)-1]
		d.mu.Unlock()
		if err := d.mgr.UnprepareResources(context.Background(), pod); err != nil {
			return fail("UnprepareResources %d: %v", i, err)
		}
		_ = tracker.Delete(resourceClaimsGVR, "default", name)
		d.client.ClearActions() // the fake's action log would grow with every GET
		first, err1 := bareCall()
		second, err2 := bareCall()
		if err1 != nil || err2 != nil {
			return fail("bare NodePrepareResources: %v %v", err1, err2)
		}
		if i >= r.Warmup {
			prepare = append(prepare, us)
			bareAfter = append(bareAfter, first)
			bare = append(bare, second)
		}
	}
	return map[string]any{"ok": true, "prepare_us": prepare, "bare_after_us": bareAfter, "bare_us": bare}
}
