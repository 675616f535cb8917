//go:build oracle_dra && oracle_dra_b

// The DRA manager API of kubernetes 1.36: the node getter takes a context,
// the plugin registration handler does not.
package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

type draHandler struct{ raw cache.PluginHandler }

func newDRAHandler(_ context.Context, h cache.PluginHandler) draHandler { return draHandler{raw: h} }

func draStartManager(ctx context.Context, m *dra.Manager, active func() []*v1.Pod, ready config.SourcesReady) error {
	return m.Start(ctx, active, func(context.Context) (*v1.Node, error) { return draNode() }, ready)
}

func (h draHandler) validate(driver, endpoint string, services []string) error {
	return h.raw.ValidatePlugin(driver, endpoint, services)
}

func (h draHandler) register(driver, endpoint string, services []string) error {
	return h.raw.RegisterPlugin(driver, endpoint, services, nil)
}

func (h draHandler) deregister(driver, endpoint string) { h.raw.DeRegisterPlugin(driver, endpoint) }

func draUpdateStatus(m *dra.Manager, pod *v1.Pod, status *v1.PodStatus) {
	m.UpdateAllocatedResourcesStatus(pod, status)
}
