//go:build oracle_dra && oracle_dra_a

// The DRA manager's Start of kubernetes 1.34 and 1.35: the node getter
// takes no context (the registration handler is in dra_api_ab.go).
package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/config"
)

func draStartManager(ctx context.Context, m *dra.Manager, active func() []*v1.Pod, ready config.SourcesReady) error {
	return m.Start(ctx, active, draNode, ready)
}
