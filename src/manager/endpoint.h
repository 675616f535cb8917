// Endpoint: the manager's handle on one registered device plugin
// (the kubelet's devicemanager endpointImpl): the plugin client, the stop
// time, and the RPC wrappers that refuse to talk to a stopped endpoint.
// As devicemanager endpoint.go.
#ifndef DEVMGR_MANAGER_ENDPOINT_H_
#define DEVMGR_MANAGER_ENDPOINT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "manager/plugin_client.h"

namespace devmgr::manager {

// endpointStopGracePeriod: how long a stopped endpoint's resource stays
// listed (at capacity |unhealthy|, allocatable 0) before GetCapacity removes it.
inline constexpr absl::Duration kEndpointStopGracePeriod = absl::Minutes(5);
// KubeletPreStartContainerRPCTimeoutInSecs.
inline constexpr absl::Duration kPreStartContainerTimeout = absl::Seconds(30);

// Thread-safe. The client (may be null for a checkpoint placeholder) is
// shared with the transport, which keeps it alive while the stream runs.
class Endpoint {
 public:
  // A connected endpoint (stopTime zero).
  Endpoint(std::string resource_name, std::shared_ptr<PluginClient> client);
  // The kubelet's newStoppedEndpointImpl: no client, stopped at `stop_time`.
  static std::shared_ptr<Endpoint> NewStopped(std::string resource_name, absl::Time stop_time);

  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& resource_name() const { return resource_name_; }
  // nullptr for a placeholder.
  PluginClient* client() const { return client_.get(); }
  // "" for a placeholder.
  std::string SocketPath() const;

  bool IsStopped() const;
  // stopped && now - stopTime > kEndpointStopGracePeriod.
  bool StopGracePeriodExpired(absl::Time now) const;
  void SetStopTime(absl::Time t);
  // absl::InfinitePast() when not stopped.
  absl::Time StopTime() const;
  absl::Time connected_since() const { return connected_since_; }
  void set_connected_since(absl::Time t) { connected_since_ = t; }

  // The RPCs, each for exactly one container. A stopped endpoint fails with
  // "endpoint %v has been stopped" (ErrEndpointStopped) without calling out.
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const std::vector<std::string>& devs) const;
  absl::StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const std::vector<std::string>& devs) const;
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::vector<std::string>& available, const std::vector<std::string>& must_include,
      int size) const;

  // The "endpoint %v has been stopped" text. Go prints the *endpointImpl
  // struct with %v: &{mutex resourceName api stopTime client}; pointers are
  // this process's addresses, so only the shape matches a real kubelet.
  std::string StoppedErrorText() const;

 private:
  const std::string resource_name_;
  const std::shared_ptr<PluginClient> client_;
  absl::Time connected_since_ = absl::InfinitePast();
  mutable absl::Mutex mu_;
  absl::Time stop_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_ENDPOINT_H_
