//go:build helper_v037

package main

import (
	"context"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// WatchHealthStatus is part of the helper's DRAPlugin from v0.37: this driver
// reports no device health, as many do (the helper then ends the kubelet's
// stream with Unimplemented).
func (d *driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
