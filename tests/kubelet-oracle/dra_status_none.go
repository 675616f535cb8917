//go:build !oracle_dra

// Releases without pod.status.extendedResourceClaimStatus (before 1.34).
package main

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

func setExtendedResourceClaim(pod *v1.Pod, c *extendedResourceClaim) error {
	return fmt.Errorf("this release's Pod has no status.extendedResourceClaimStatus")
}
