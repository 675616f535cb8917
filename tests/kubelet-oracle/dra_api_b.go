//go:build oracle_dra && oracle_dra_b

// The DRA manager's Start of kubernetes 1.36: the node getter takes a
// context (the registration handler, still without one, is in
// dra_api_ab.go).
package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/config"
)

func draStartManager(ctx context.Context, m *dra.Manager, active func() []*v1.Pod, ready config.SourcesReady) error {
	return m.Start(ctx, active, func(context.Context) (*v1.Node, error) { return draNode() }, ready)
}
