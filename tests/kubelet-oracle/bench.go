package main

// The "bench_admit" request: the kubelet's own admission of one-device pods
// timed against bare Allocate RPCs to the same plugin, in this process, the
// way devmgr's perf_bench times devmgr (docs/performance.md, P1). It answers
// "what does the kubelet itself take, relative to the same floor".

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// benchClient makes bare Allocate calls on a connection of its own to the
// plugin's socket, as the device manager's client has one.
type benchClient struct {
	conn *grpc.ClientConn
	stub pluginapi.DevicePluginClient
	req  *pluginapi.AllocateRequest
}

func newBenchClient(socket, device string) (*benchClient, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	creq := &pluginapi.ContainerAllocateRequest{}
	// The generated field is DevicesIDs (gogo, up to 1.34) or DevicesIds.
	ids := reflect.ValueOf(creq).Elem().FieldByName("DevicesIDs")
	if !ids.IsValid() {
		ids = reflect.ValueOf(creq).Elem().FieldByName("DevicesIds")
	}
	ids.Set(reflect.ValueOf([]string{device}))
	return &benchClient{
		conn: conn,
		stub: pluginapi.NewDevicePluginClient(conn),
		req:  &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{creq}},
	}, nil
}

// allocate returns the microseconds one bare Allocate took.
func (c *benchClient) allocate() (float64, error) {
	start := time.Now()
	_, err := c.stub.Allocate(context.Background(), c.req)
	us := float64(time.Since(start).Nanoseconds()) / 1e3
	return us, err
}

// benchAdmit admits `count` one-container pods asking for one `resource`
// each (after `warmup` untimed ones). Each pod leaves the active set right
// after its admission, so the next admission's garbage collection frees its
// device, as in devmgr's loop. Between two admissions two bare Allocate
// calls run: the second is the floor (it follows an RPC, as the admission's
// own RPC does), the first is reported beside it.
func (o *oracle) benchAdmit(r *request) map[string]any {
	if r.Resource == "" || r.Endpoint == "" || r.Count <= 0 {
		return fail("bench_admit needs resource, endpoint and count")
	}
	client, err := newBenchClient(pluginDir+"/"+r.Endpoint, r.Device)
	if err != nil {
		return fail("dial %s: %v", r.Endpoint, err)
	}
	defer client.conn.Close()
	var admit, bareAfter, bare []float64
	for i := 0; i < r.Warmup+r.Count; i++ {
		timed := i >= r.Warmup
		uid := fmt.Sprintf("bench-%d", i)
		pod := buildPod(&podSpec{UID: uid, Containers: []containerSpec{{
			Name: "c", Resources: map[string]int64{r.Resource: 1}}}})
		o.mu.Lock()
		o.pods[uid] = pod
		o.order = append(o.order, uid)
		o.mu.Unlock()
		start := time.Now()
		admitted, reason, message := o.mgr.admit(pod)
		us := float64(time.Since(start).Nanoseconds()) / 1e3
		o.mu.Lock()
		delete(o.pods, uid)
		o.order = o.order[:len(o.order)-1]
		o.mu.Unlock()
		if !admitted {
			return fail("admission %d: %s: %s", i, reason, message)
		}
		first, err1 := client.allocate()
		second, err2 := client.allocate()
		if err1 != nil || err2 != nil {
			return fail("bare Allocate: %v %v", err1, err2)
		}
		if timed {
			admit = append(admit, us)
			bareAfter = append(bareAfter, first)
			bare = append(bare, second)
		}
	}
	// Pods admitted here never ran; the devices of the last one go back
	// with the next garbage collection.
	o.mgr.updateAllocated()
	return map[string]any{"ok": true, "admit_us": admit, "bare_after_us": bareAfter, "bare_us": bare}
}
