//go:build oracle_dra

// Releases with pod.status.extendedResourceClaimStatus (1.34+, KEP-5004).
package main

import v1 "k8s.io/api/core/v1"

func setExtendedResourceClaim(pod *v1.Pod, c *extendedResourceClaim) error {
	st := &v1.PodExtendedResourceClaimStatus{ResourceClaimName: c.Name}
	for _, m := range c.Mappings {
		st.RequestMappings = append(st.RequestMappings, v1.ContainerExtendedResourceRequest{
			ContainerName: m.Container, ResourceName: m.Resource, RequestName: m.Request})
	}
	pod.Status.ExtendedResourceClaimStatus = st
	return nil
}
