// dra-driver is a small DRA driver of the project's own for tests: a plain
// gRPC server of the kubelet's DRA plugin API (k8s.io/kubelet/pkg/apis/dra,
// v1 and v1beta1) and, when asked, of the health API (dra-health v1alpha1
// and v1). It needs no API server: the devices it returns for a claim come
// from its configuration, not from the claim's allocation. Every call it
// receives is written as one JSON line to the call log before it answers,
// so a caller that waited for the answer finds the call in the log.
//
// Registration is the caller's business (the kubelet oracle registers the
// driver's endpoint directly; a plugin watcher would need a registration
// socket, which this driver does not serve).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// device is what NodePrepareResources returns for one device of a claim.
type device struct {
	RequestNames []string `json:"request_names"`
	PoolName     string   `json:"pool_name"`
	DeviceName   string   `json:"device_name"`
	CDIDeviceIDs []string `json:"cdi_device_ids"`
	ShareID      *string  `json:"share_id,omitempty"`
}

// claimConfig is the answer for one claim UID: its devices, or an error.
type claimConfig struct {
	Devices []device `json:"devices"`
	Error   string   `json:"error"`
	// UnprepareError fails NodeUnprepareResources for the claim.
	UnprepareError string `json:"unprepare_error"`
}

type config struct {
	// By claim UID. A claim not listed gets one device: pool "pool-0",
	// device "dev-<claim name>", CDI ID "<driver>/claim=<claim name>".
	Claims map[string]claimConfig `json:"claims"`
	// The health stream's one message (a complete list, as the API asks);
	// empty: every configured device healthy.
	Health []struct {
		PoolName   string `json:"pool_name"`
		DeviceName string `json:"device_name"`
		Health     string `json:"health"` // UNKNOWN, HEALTHY, UNHEALTHY
	} `json:"health"`
}

type callLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *callLog) write(entry map[string]any) {
	b, _ := json.Marshal(entry)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(append(b, '\n'))
}

type driver struct {
	name string
	cfg  config
	log  *callLog
}

type claimRef struct {
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	Name      string `json:"name"`
}

func (d *driver) devicesFor(c claimRef) claimConfig {
	if cc, ok := d.cfg.Claims[c.UID]; ok {
		return cc
	}
	return claimConfig{Devices: []device{{PoolName: "pool-0", DeviceName: "dev-" + c.Name,
		CDIDeviceIDs: []string{d.name + "/claim=" + c.Name}}}}
}

// The v1 and v1beta1 services have identical messages; both convert to
// and from claimRef/claimConfig.

type v1Server struct {
	drav1.UnimplementedDRAPluginServer
	d *driver
}

func (s v1Server) NodePrepareResources(ctx context.Context, req *drav1.NodePrepareResourcesRequest) (*drav1.NodePrepareResourcesResponse, error) {
	resp := &drav1.NodePrepareResourcesResponse{Claims: map[string]*drav1.NodePrepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		cc := s.d.devicesFor(claimRef{c.GetNamespace(), c.GetUid(), c.GetName()})
		r := &drav1.NodePrepareResourceResponse{Error: cc.Error}
		for _, dev := range cc.Devices {
			r.Devices = append(r.Devices, &drav1.Device{RequestNames: dev.RequestNames, PoolName: dev.PoolName,
				DeviceName: dev.DeviceName, CdiDeviceIds: dev.CDIDeviceIDs, ShareId: dev.ShareID})
		}
		resp.Claims[c.GetUid()] = r
	}
	return resp, nil
}

func (s v1Server) NodeUnprepareResources(ctx context.Context, req *drav1.NodeUnprepareResourcesRequest) (*drav1.NodeUnprepareResourcesResponse, error) {
	resp := &drav1.NodeUnprepareResourcesResponse{Claims: map[string]*drav1.NodeUnprepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		cc := s.d.devicesFor(claimRef{c.GetNamespace(), c.GetUid(), c.GetName()})
		resp.Claims[c.GetUid()] = &drav1.NodeUnprepareResourceResponse{Error: cc.UnprepareError}
	}
	return resp, nil
}

type v1beta1Server struct {
	drav1beta1.UnimplementedDRAPluginServer
	d *driver
}

func (s v1beta1Server) NodePrepareResources(ctx context.Context, req *drav1beta1.NodePrepareResourcesRequest) (*drav1beta1.NodePrepareResourcesResponse, error) {
	resp := &drav1beta1.NodePrepareResourcesResponse{Claims: map[string]*drav1beta1.NodePrepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		cc := s.d.devicesFor(claimRef{c.GetNamespace(), c.GetUid(), c.GetName()})
		r := &drav1beta1.NodePrepareResourceResponse{Error: cc.Error}
		for _, dev := range cc.Devices {
			r.Devices = append(r.Devices, &drav1beta1.Device{RequestNames: dev.RequestNames, PoolName: dev.PoolName,
				DeviceName: dev.DeviceName, CdiDeviceIds: dev.CDIDeviceIDs})
		}
		resp.Claims[c.GetUid()] = r
	}
	return resp, nil
}

func (s v1beta1Server) NodeUnprepareResources(ctx context.Context, req *drav1beta1.NodeUnprepareResourcesRequest) (*drav1beta1.NodeUnprepareResourcesResponse, error) {
	resp := &drav1beta1.NodeUnprepareResourcesResponse{Claims: map[string]*drav1beta1.NodeUnprepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		cc := s.d.devicesFor(claimRef{c.GetNamespace(), c.GetUid(), c.GetName()})
		resp.Claims[c.GetUid()] = &drav1beta1.NodeUnprepareResourceResponse{Error: cc.UnprepareError}
	}
	return resp, nil
}

// healthList is the health stream's message as (pool, device, status).
func (d *driver) healthList() [][3]string {
	out := [][3]string{}
	if len(d.cfg.Health) > 0 {
		for _, h := range d.cfg.Health {
			out = append(out, [3]string{h.PoolName, h.DeviceName, h.Health})
		}
		return out
	}
	for _, cc := range d.cfg.Claims {
		for _, dev := range cc.Devices {
			out = append(out, [3]string{dev.PoolName, dev.DeviceName, "HEALTHY"})
		}
	}
	return out
}

type healthV1alpha1 struct {
	drahealthv1alpha1.UnimplementedDRAResourceHealthServer
	d *driver
}

func (s healthV1alpha1) NodeWatchResources(_ *drahealthv1alpha1.NodeWatchResourcesRequest, stream grpc.ServerStreamingServer[drahealthv1alpha1.NodeWatchResourcesResponse]) error {
	msg := &drahealthv1alpha1.NodeWatchResourcesResponse{}
	for _, h := range s.d.healthList() {
		msg.Devices = append(msg.Devices, &drahealthv1alpha1.DeviceHealth{
			Device: &drahealthv1alpha1.DeviceIdentifier{PoolName: h[0], DeviceName: h[1]},
			Health: drahealthv1alpha1.HealthStatus(drahealthv1alpha1.HealthStatus_value[h[2]])})
	}
	if err := stream.Send(msg); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

type healthV1 struct {
	drahealthv1.UnimplementedDRAResourceHealthServer
	d *driver
}

func (s healthV1) NodeWatchResources(_ *drahealthv1.NodeWatchResourcesRequest, stream grpc.ServerStreamingServer[drahealthv1.NodeWatchResourcesResponse]) error {
	msg := &drahealthv1.NodeWatchResourcesResponse{}
	for _, h := range s.d.healthList() {
		msg.Devices = append(msg.Devices, &drahealthv1.DeviceHealth{
			Device: &drahealthv1.DeviceIdentifier{PoolName: h[0], DeviceName: h[1]},
			Health: drahealthv1.HealthStatus(drahealthv1.HealthStatus_value[h[2]])})
	}
	if err := stream.Send(msg); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// claimsOf extracts the claims of a prepare/unprepare request for the log.
func claimsOf(req any) []claimRef {
	type claimGetter interface {
		GetNamespace() string
		GetUid() string
		GetName() string
	}
	var list []claimGetter
	switch r := req.(type) {
	case *drav1.NodePrepareResourcesRequest:
		for _, c := range r.GetClaims() {
			list = append(list, c)
		}
	case *drav1.NodeUnprepareResourcesRequest:
		for _, c := range r.GetClaims() {
			list = append(list, c)
		}
	case *drav1beta1.NodePrepareResourcesRequest:
		for _, c := range r.GetClaims() {
			list = append(list, c)
		}
	case *drav1beta1.NodeUnprepareResourcesRequest:
		for _, c := range r.GetClaims() {
			list = append(list, c)
		}
	}
	out := []claimRef{}
	for _, c := range list {
		out = append(out, claimRef{c.GetNamespace(), c.GetUid(), c.GetName()})
	}
	return out
}

var services = map[string]func(*grpc.Server, *driver){
	drav1.DRAPluginService:      func(s *grpc.Server, d *driver) { drav1.RegisterDRAPluginServer(s, v1Server{d: d}) },
	drav1beta1.DRAPluginService: func(s *grpc.Server, d *driver) { drav1beta1.RegisterDRAPluginServer(s, v1beta1Server{d: d}) },
	drahealthv1alpha1.DRAResourceHealthService: func(s *grpc.Server, d *driver) {
		drahealthv1alpha1.RegisterDRAResourceHealthServer(s, healthV1alpha1{d: d})
	},
	drahealthv1.DRAResourceHealthService: func(s *grpc.Server, d *driver) {
		drahealthv1.RegisterDRAResourceHealthServer(s, healthV1{d: d})
	},
}

func serviceNames() string {
	names := []string{}
	for n := range services {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func main() {
	socket := flag.String("socket", "", "unix socket to serve the DRA API on (required; removed first if it exists)")
	name := flag.String("driver", "test.devmgr.example.com", "driver name, used in the default CDI IDs")
	cfgPath := flag.String("config", "", "JSON file: {\"claims\": {UID: {\"devices\": [{request_names, pool_name, device_name, cdi_device_ids, share_id}], \"error\", \"unprepare_error\"}}, \"health\": [{pool_name, device_name, health}]}")
	serve := flag.String("serve", drav1.DRAPluginService+","+drav1beta1.DRAPluginService, "comma-separated gRPC services to serve, in the registration's notation")
	logPath := flag.String("log", "", "call log, one JSON line per call received (default: stdout)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s --socket PATH [--driver NAME] [--config FILE] [--serve LIST] [--log FILE]\n\n"+
			"A DRA driver for tests: serves the kubelet's DRA plugin API on a unix socket, answers\n"+
			"NodePrepareResources with configured devices and logs every call. Services: %s.\n"+
			"Prints {\"ready\":true,...} on stdout once it listens; SIGTERM stops it.\n\n", os.Args[0], serviceNames())
		flag.PrintDefaults()
	}
	flag.Parse()
	if *socket == "" {
		flag.Usage()
		os.Exit(2)
	}
	d := &driver{name: *name, log: &callLog{f: os.Stdout}}
	if *cfgPath != "" {
		b, err := os.ReadFile(*cfgPath)
		if err == nil {
			err = json.Unmarshal(b, &d.cfg)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "dra-driver: --config %s: %v\n", *cfgPath, err)
			os.Exit(2)
		}
	}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dra-driver: --log: %v\n", err)
			os.Exit(2)
		}
		d.log = &callLog{f: f}
	}
	logCall := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		d.log.write(map[string]any{"method": info.FullMethod, "claims": claimsOf(req)})
		return handler(ctx, req)
	}
	logStream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		d.log.write(map[string]any{"method": info.FullMethod})
		return handler(srv, ss)
	}
	server := grpc.NewServer(grpc.UnaryInterceptor(logCall), grpc.StreamInterceptor(logStream))
	served := []string{}
	for _, s := range strings.Split(*serve, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		register, ok := services[s]
		if !ok {
			fmt.Fprintf(os.Stderr, "dra-driver: --serve: unknown service %q (known: %s)\n", s, serviceNames())
			os.Exit(2)
		}
		register(server, d)
		served = append(served, s)
	}
	_ = os.Remove(*socket)
	l, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dra-driver: %v\n", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		server.Stop()
	}()
	ready, _ := json.Marshal(map[string]any{"ready": true, "socket": *socket, "driver": *name, "services": served})
	fmt.Println(string(ready))
	if err := server.Serve(l); err != nil {
		fmt.Fprintf(os.Stderr, "dra-driver: %v\n", err)
		os.Exit(1)
	}
	_ = os.Remove(*socket)
}
