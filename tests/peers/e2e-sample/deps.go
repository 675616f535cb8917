//go:build peers_deps

// Package peers is never built: it names the packages the kubernetes e2e
// sample device plugin (k8s.io/kubernetes/test/images/sample-device-plugin,
// a main package) imports, so that `go mod tidy` puts their modules into
// go.<release>.mod/.sum. build.sh builds the plugin itself by package path.
package peers

import (
	_ "github.com/fsnotify/fsnotify"
	_ "k8s.io/klog/v2"
	_ "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	_ "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"
)
