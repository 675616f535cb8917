//go:build !oracle_dra

// Releases before 1.34 have no DRA side in the oracle (resource.k8s.io/v1
// and the DRA manager's current API start with 1.34).
package main

import "strings"

func isDRAOp(op string) bool { return strings.HasPrefix(op, "dra_") }

func handleDRA([]byte) map[string]any {
	return fail("kubernetes %s: the oracle's DRA side needs 1.34 or newer", kubernetesVersion)
}

func draShutdown() {}
