//go:build oracle_api_b

// The device manager API of kubernetes 1.35 and 1.36 (a logger for Start
// and Stop, a context for GetDeviceRunContainerOptions).
package main

import (
	"context"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

type managers struct {
	m  *devicemanager.ManagerImpl
	tm topologymanager.Manager
}

func newManagers(topo []cadvisorapi.Node, policy, scope string, options map[string]string) (*managers, error) {
	tm, err := topologymanager.NewManager(topo, policy, scope, options)
	if err != nil {
		return nil, err
	}
	m, err := devicemanager.NewManagerImpl(topo, tm)
	if err != nil {
		return nil, err
	}
	tm.AddHintProvider(klog.Background(), m)
	return &managers{m: m, tm: tm}, nil
}

func (x *managers) start(active func() []*v1.Pod, ready config.SourcesReady, initial containermap.ContainerMap, running sets.Set[string]) error {
	return x.m.Start(klog.Background(), devicemanager.ActivePodsFunc(active), ready, initial, running)
}

func (x *managers) stop() error { return x.m.Stop(klog.Background()) }

func (x *managers) admit(pod *v1.Pod) (bool, string, string) {
	r := x.tm.Admit(&lifecycle.PodAdmitAttributes{Pod: pod})
	return r.Admit, r.Reason, r.Message
}

func (x *managers) updatePluginResources(pod *v1.Pod) error {
	return x.m.UpdatePluginResources(schedulerframework.NewNodeInfo(), &lifecycle.PodAdmitAttributes{Pod: pod})
}

func (x *managers) runOptions(pod *v1.Pod, c *v1.Container) (*devicemanager.DeviceRunContainerOptions, error) {
	return x.m.GetDeviceRunContainerOptions(context.Background(), pod, c)
}

func (x *managers) capacity() (v1.ResourceList, v1.ResourceList, []string) { return x.m.GetCapacity() }

func (x *managers) allocatable() devicemanager.ResourceDeviceInstances {
	return x.m.GetAllocatableDevices()
}

func (x *managers) hints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.TopologyHint {
	return x.m.GetTopologyHints(pod, c)
}

func (x *managers) podHints(pod *v1.Pod) map[string][]topologymanager.TopologyHint {
	return x.m.GetPodTopologyHints(pod)
}

func (x *managers) updateAllocated() { x.m.UpdateAllocatedDevices() }

// The NUMA affinity the topology manager stored for the container at its
// admission (nil: none stored, or no affinity).
func (x *managers) affinity(podUID, name string) []int {
	h := x.tm.GetAffinity(podUID, name)
	if h.NUMANodeAffinity == nil {
		return nil
	}
	return h.NUMANodeAffinity.GetBits()
}
