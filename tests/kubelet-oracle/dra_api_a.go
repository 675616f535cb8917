//go:build oracle_dra && oracle_dra_a

// The DRA manager API of kubernetes 1.34 and 1.35: the node getter and the
// plugin registration handler take no context.
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
	return m.Start(ctx, active, draNode, ready)
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
