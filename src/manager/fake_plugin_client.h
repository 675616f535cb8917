// FakePluginClient: an in-memory PluginClient for tests and benchmarks:
// scripted replies per RPC, every request recorded. Header-only.
#ifndef DEVMGR_MANAGER_FAKE_PLUGIN_CLIENT_H_
#define DEVMGR_MANAGER_FAKE_PLUGIN_CLIENT_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/plugin_client.h"

namespace devmgr::manager {

// Thread-safe. Handlers are called without the fake's lock held, so they may
// call back into the manager (to prove the manager does not hold its lock).
class FakePluginClient final : public PluginClient {
 public:
  explicit FakePluginClient(std::string socket_path = "/tmp/fake.sock")
      : socket_(std::move(socket_path)) {}

  // ---- Scripting (set before use) ----
  absl::StatusOr<v1beta1::DevicePluginOptions> options = v1beta1::DevicePluginOptions();
  // Default: one container response per container request, with env
  // DEVICES=<ids joined by ','>.
  std::function<absl::StatusOr<v1beta1::AllocateResponse>(const v1beta1::AllocateRequest&)>
      on_allocate;
  // Default: an empty response.
  std::function<absl::StatusOr<v1beta1::PreferredAllocationResponse>(
      const v1beta1::PreferredAllocationRequest&)>
      on_preferred;
  std::function<absl::StatusOr<v1beta1::PreStartContainerResponse>(
      const v1beta1::PreStartContainerRequest&, absl::Duration)>
      on_prestart;

  // ---- Recorded calls ----
  struct Calls {
    int options = 0;
    std::vector<v1beta1::AllocateRequest> allocate;
    std::vector<v1beta1::PreferredAllocationRequest> preferred;
    std::vector<v1beta1::PreStartContainerRequest> prestart;
    std::vector<absl::Duration> prestart_timeouts;
  };
  Calls calls() const {
    absl::MutexLock l(&mu_);
    return calls_;
  }

  const std::string& SocketPath() const override { return socket_; }

  absl::StatusOr<v1beta1::DevicePluginOptions> GetDevicePluginOptions() override {
    {
      absl::MutexLock l(&mu_);
      ++calls_.options;
    }
    return options;
  }

  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const v1beta1::AllocateRequest& req) override {
    {
      absl::MutexLock l(&mu_);
      calls_.allocate.push_back(req);
    }
    if (on_allocate) return on_allocate(req);
    v1beta1::AllocateResponse resp;
    for (const auto& c : req.container_requests()) {
      std::string joined;
      for (const std::string& id : c.devices_ids()) {
        if (!joined.empty()) joined += ",";
        joined += id;
      }
      (*resp.add_container_responses()->mutable_envs())["DEVICES"] = joined;
    }
    return resp;
  }

  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& req) override {
    {
      absl::MutexLock l(&mu_);
      calls_.preferred.push_back(req);
    }
    if (on_preferred) return on_preferred(req);
    return v1beta1::PreferredAllocationResponse();
  }

  absl::StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const v1beta1::PreStartContainerRequest& req, absl::Duration timeout) override {
    {
      absl::MutexLock l(&mu_);
      calls_.prestart.push_back(req);
      calls_.prestart_timeouts.push_back(timeout);
    }
    if (on_prestart) return on_prestart(req, timeout);
    return v1beta1::PreStartContainerResponse();
  }

 private:
  const std::string socket_;
  mutable absl::Mutex mu_;
  Calls calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_FAKE_PLUGIN_CLIENT_H_
