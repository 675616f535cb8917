// The PodResources v1 answers, computed in process from a Node and its
// PodManager: what the kubelet's v1PodResourcesServer returns for List,
// GetAllocatableResources and Get (pkg/kubelet/apis/podresources).
// The gRPC server (server.h) is a thin shell over this; scenario
// expectations can call it directly.
#ifndef DEVMGR_PODRESOURCES_LISTER_H_
#define DEVMGR_PODRESOURCES_LISTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "podresources/options.h"
#include "podresources/v1/api.pb.h"

namespace devmgr::podresources {

inline constexpr char kGetDisabled[] = "PodResources API Get method disabled";

// Thread-safe (reads only; List runs the manager's garbage collection).
// `node` and `pods` must outlive the Lister.
class Lister {
 public:
  Lister(node::Node* node, node::PodManager* pods, Options opts);

  // UpdateAllocatedDevices, then every pod the kubelet would list (see
  // Options::list_active_pods_only), in admission order. Per pod: the
  // restartable init containers, then the regular containers, each with
  // its devices flattened to one ContainerDevices per (device, NUMA node);
  // a device without topology gives one entry with topology unset.
  // Entries are sorted by resource, device, NUMA node (the kubelet's order
  // is Go map order). With Options::dynamic_resources each container also
  // gets its DRA claims (dynamic_resources.h); a container whose claims
  // cannot be read (a claim not in the DRA manager's cache) gets none, and
  // the error is logged, as by the kubelet.
  v1::ListPodResourcesResponse List();
  // The healthy devices of every resource, flattened the same way, with the
  // topology the plugin reported.
  v1::AllocatableResourcesResponse GetAllocatableResources();
  // One pod by namespace and name, its containers as List gives them. Errors (code Unknown, as the
  // kubelet's plain Go errors reach clients): kGetDisabled when the gate is off; "pod %s in
  // namespace %s not found".
  absl::StatusOr<v1::GetPodResourcesResponse> Get(const std::string& pod_namespace,
                                                  const std::string& pod_name);

  const Options& options() const { return opts_; }

 private:
  node::Node* const node_;
  node::PodManager* const pods_;
  const Options opts_;
};

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_LISTER_H_
