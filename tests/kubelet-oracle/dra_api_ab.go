//go:build oracle_dra && (oracle_dra_a || oracle_dra_b)

// The DRA plugin registration handler and pod status call of kubernetes
// 1.34 to 1.36: no context, no logger.
package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

type draHandler struct{ raw cache.PluginHandler }

func newDRAHandler(_ context.Context, h cache.PluginHandler) draHandler { return draHandler{raw: h} }

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
