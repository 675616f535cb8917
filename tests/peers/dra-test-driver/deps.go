//go:build peers_deps

// Package peers is never built: it names the packages the kubernetes e2e DRA
// test driver (k8s.io/kubernetes/test/e2e/dra/test-driver, a main package)
// imports, so that `go mod tidy` puts their modules into go.<release>.mod/.sum.
// build.sh builds the driver itself by package path.
package peers

import (
	_ "k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	_ "k8s.io/kubernetes/test/e2e/dra/test-driver/app"
)
