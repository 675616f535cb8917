// HintProvider: what the topology manager asks of every resource manager
// (the kubelet's topologymanager.HintProvider): hints per container or per
// pod, and the allocation once the affinity is decided. The device manager
// (manager::Manager) implements it itself, as the kubelet's ManagerImpl
// does; StaticHintProvider stands in for the CPU and memory managers.
#ifndef DEVMGR_TOPOLOGY_HINT_PROVIDER_H_
#define DEVMGR_TOPOLOGY_HINT_PROVIDER_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "pod/pod.h"
#include "topology/topology_hint.h"

namespace devmgr::topology {

class HintProvider {
 public:
  virtual ~HintProvider() = default;
  // For traces and logs: "devicemanager", or a static provider's name.
  virtual std::string Name() const = 0;
  virtual ProviderHints GetTopologyHints(const pod::Pod& pod, const pod::Container& container) = 0;
  virtual ProviderHints GetPodTopologyHints(const pod::Pod& pod) = 0;
  // Called after the affinity of `container` has been stored.
  virtual absl::Status Allocate(const pod::Pod& pod, const pod::Container& container) = 0;
};

// A provider with fixed answers, standing in for the CPU or memory manager
// (which devmgr does not emulate) so that merges with them can be tried.
// Allocate always succeeds.
struct StaticProviderSpec {
  std::string name;  // e.g. "cpumanager"
  // Hints for every container without its own entry.
  ProviderHints hints;
  // container name -> hints.
  std::map<std::string, ProviderHints> per_container;
  // Pod scope; nullopt: `hints`.
  std::optional<ProviderHints> pod;
};

class StaticHintProvider final : public HintProvider {
 public:
  explicit StaticHintProvider(StaticProviderSpec spec) : spec_(std::move(spec)) {}
  std::string Name() const override { return spec_.name; }
  ProviderHints GetTopologyHints(const pod::Pod& pod, const pod::Container& container) override;
  ProviderHints GetPodTopologyHints(const pod::Pod& pod) override;
  absl::Status Allocate(const pod::Pod&, const pod::Container&) override {
    return absl::OkStatus();
  }

 private:
  const StaticProviderSpec spec_;
};

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_HINT_PROVIDER_H_
