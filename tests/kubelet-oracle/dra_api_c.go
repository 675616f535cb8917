//go:build oracle_dra && oracle_dra_c

// The DRA manager API of kubernetes 1.37: the node getter and the plugin
// registration handler take a context.
package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

type draHandler struct {
	ctx context.Context
	raw cache.PluginHandler
}

func newDRAHandler(ctx context.Context, h cache.PluginHandler) draHandler {
	return draHandler{ctx: ctx, raw: h}
}

func draStartManager(ctx context.Context, m *dra.Manager, active func() []*v1.Pod, ready config.SourcesReady) error {
	return m.Start(ctx, active, func(context.Context) (*v1.Node, error) { return draNode() }, ready)
}

func (h draHandler) validate(driver, endpoint string, services []string) error {
	return h.raw.ValidatePlugin(h.ctx, driver, endpoint, services)
}

func (h draHandler) register(driver, endpoint string, services []string) error {
	return h.raw.RegisterPlugin(h.ctx, driver, endpoint, services, nil)
}

func (h draHandler) deregister(driver, endpoint string) {
	h.raw.DeRegisterPlugin(h.ctx, driver, endpoint)
}

func draUpdateStatus(m *dra.Manager, pod *v1.Pod, status *v1.PodStatus) {
	m.UpdateAllocatedResourcesStatus(klog.Background(), pod, status)
}
