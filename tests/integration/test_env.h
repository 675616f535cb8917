// Shared fixtures for integration tests: a temp device-plugin dir, an
// emulated node on a fake clock, in-process sample plugins, and waiting on
// state changes instead of sleeping.
#ifndef DEVMGR_TESTS_INTEGRATION_TEST_ENV_H_
#define DEVMGR_TESTS_INTEGRATION_TEST_ENV_H_

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "gtest/gtest.h"
#include "manager/manager.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "plugin/config.h"
#include "plugin/sample_plugin.h"
#include "pod/manifest_parser.h"

namespace devmgr::testutil {

// Wakes waiters whenever something changed; waiters re-check a predicate.
class ChangeSignal {
 public:
  void Notify() {
    absl::MutexLock l(&mu_);
    ++generation_;
  }
  // Re-evaluates `pred` on every change (and at least every 20 ms, for
  // changes nobody signals, like a plugin's own state) until it holds or
  // `timeout` passes.
  bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(15)) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      if (pred()) return true;
      absl::MutexLock l(&mu_);
      const int64_t seen = generation_;
      auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return generation_ != seen; };
      const absl::Time next = std::min(deadline, absl::Now() + absl::Milliseconds(20));
      mu_.AwaitWithDeadline(absl::Condition(&changed), next);
      if (absl::Now() >= deadline) {
        mu_.Unlock();
        const bool ok = pred();
        mu_.Lock();
        return ok;
      }
    }
  }

 private:
  absl::Mutex mu_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

struct NodeHandle {
  std::unique_ptr<node::Node> node;
};

// Builds a node on `dir` with a fake clock and fsync off. The dial window is 2 s (the
// kubelet's is 10 s) so that a test of a failed dial ends soon.
inline std::unique_ptr<node::Node> MakeNode(const std::string& dir, FakeClock* clock,
                                            const std::string& version = "1.32",
                                            ChangeSignal* signal = nullptr,
                                            const std::string& registry_dir = "",
                                            int max_recv = 4 * 1024 * 1024,
                                            absl::Duration dial_timeout = absl::Seconds(2)) {
  node::NodeOptions o;
  o.plugin_dir = dir;
  o.registry_dir = registry_dir;
  o.profile = *ProfileForVersion(version);
  o.clock = clock;
  o.fsync = false;
  o.dial_timeout = dial_timeout;
  o.max_recv_msg_size = max_recv;
  auto n = std::make_unique<node::Node>(o);
  if (signal != nullptr) n->manager().SetChangeCallback([signal] { signal->Notify(); });
  return n;
}

inline plugin::Config ConfigFromYaml(const std::string& yaml) {
  auto c = plugin::ParseConfig(yaml, "test-config");
  EXPECT_OK(c);
  return c.ok() ? *c : plugin::Config{};
}

inline std::unique_ptr<plugin::SamplePlugin> MakePlugin(const std::string& yaml,
                                                        const std::string& dir,
                                                        const std::string& registry_dir = "") {
  plugin::PluginOptions po;
  po.dir = dir;
  if (!registry_dir.empty()) po.registry_dir = registry_dir;
  return std::make_unique<plugin::SamplePlugin>(ConfigFromYaml(yaml), po);
}

// The resource's snapshot, or a default one named "<absent>".
inline manager::ResourceStatus Find(node::Node& n, const std::string& resource) {
  for (auto& r : n.manager().Snapshot()) {
    if (r.resource_name == resource) return r;
  }
  manager::ResourceStatus none;
  none.resource_name = "<absent>";
  return none;
}

inline bool Has(node::Node& n, const std::string& resource) {
  return Find(n, resource).resource_name == resource;
}

// A Pod manifest parsed as the kubelet would read it. Containers are given
// as "name:count" (a limit of `count` units of `resource`; 0 means no
// limit at all), init containers prefixed "init:", sidecars (restartable
// init containers) "sidecar:".
inline pod::Pod MakePod(const std::string& name, const std::vector<std::string>& containers,
                        const std::string& ns = "default",
                        const std::string& resource = "example.com/gpu") {
  std::string init;
  std::string app;
  for (const std::string& spec : containers) {
    std::string s = spec;
    std::string kind = "app";
    if (s.rfind("init:", 0) == 0) kind = "init", s = s.substr(5);
    if (s.rfind("sidecar:", 0) == 0) kind = "sidecar", s = s.substr(8);
    const std::string cname = s.substr(0, s.find(':'));
    const std::string count = s.substr(s.find(':') + 1);
    std::string c = "  - name: " + cname + "\n    image: busybox\n";
    if (kind == "sidecar") c += "    restartPolicy: Always\n";
    if (count != "0")
      c += "    resources:\n      limits:\n        " + resource + ": " + count + "\n";
    (kind == "app" ? app : init) += c;
  }
  std::string y = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
                  "\nspec:\n";
  if (!init.empty()) y += "  initContainers:\n" + init;
  y += "  containers:\n" + app;
  auto p = pod::ParsePodManifest(y, name + ".yaml");
  EXPECT_OK(p);
  return p.ok() ? *p : pod::Pod{};
}

// The devices of `resource` one container holds, as the manager records them.
inline std::vector<std::string> ContainerDevices(node::Node& n, const std::string& uid,
                                                 const std::string& container,
                                                 const std::string& resource) {
  for (const auto& pa : n.manager().Allocations()) {
    if (pa.pod_uid != uid) continue;
    for (const auto& c : pa.containers) {
      if (c.container_name != container) continue;
      auto it = c.devices.find(resource);
      if (it != c.devices.end()) return it->second;
    }
  }
  return {};
}

// Adds `p` to the pod manager (admitted or rejected); failing to add it at
// all fails the test.
inline node::PodRecord AdmitOrFail(node::PodManager& pods, const pod::Pod& p) {
  auto r = pods.AddPod(p);
  EXPECT_OK(r);
  return r.ok() ? *r : node::PodRecord{};
}

// The calls of `method` the plugin received, in order.
inline std::vector<plugin::CallRecord> ReceivedCalls(plugin::SamplePlugin& plugin,
                                                     const std::string& method) {
  std::vector<plugin::CallRecord> out;
  for (const auto& c : plugin.CallLog()) {
    if (c.method == method && c.kind == "received") out.push_back(c);
  }
  return out;
}

}  // namespace devmgr::testutil

#endif  // DEVMGR_TESTS_INTEGRATION_TEST_ENV_H_
