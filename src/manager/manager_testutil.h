// Test helpers for the manager's unit tests: a temp plugin directory, a fake
// clock, and builders for ListAndWatch responses and pods.
#ifndef DEVMGR_MANAGER_MANAGER_TESTUTIL_H_
#define DEVMGR_MANAGER_MANAGER_TESTUTIL_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status_testutil.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "gtest/gtest.h"
#include "kubelet/profile.h"
#include "manager/fake_plugin_client.h"
#include "manager/manager_impl.h"
#include "pod/pod.h"
#include "topology/admit_result.h"
#include "topology/topology_manager.h"

namespace devmgr::manager::testing {

// A directory under /tmp removed at destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/devmgr-mgr-XXXXXX";
    char* p = mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::string Read(const std::string& name) const {
    std::ifstream in(File(name), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Write(const std::string& name, const std::string& bytes) const {
    std::ofstream out(File(name), std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  bool Exists(const std::string& name) const { return std::filesystem::exists(File(name)); }

 private:
  std::string path_;
};

struct Dev {
  std::string id;
  std::string health = "Healthy";
  std::vector<int64_t> numa;  // empty: no topology
};

inline v1beta1::ListAndWatchResponse Devices(std::initializer_list<Dev> devs) {
  v1beta1::ListAndWatchResponse resp;
  for (const Dev& d : devs) {
    v1beta1::Device* x = resp.add_devices();
    x->set_id(d.id);
    x->set_health(d.health);
    if (!d.numa.empty()) {
      for (int64_t n : d.numa) x->mutable_topology()->add_nodes()->set_id(n);
    }
  }
  return resp;
}

// n healthy devices "<prefix>0".."<prefix>n-1", no topology.
inline v1beta1::ListAndWatchResponse HealthyDevices(int n, const std::string& prefix = "dev") {
  v1beta1::ListAndWatchResponse resp;
  for (int i = 0; i < n; ++i) {
    v1beta1::Device* x = resp.add_devices();
    x->set_id(prefix + std::to_string(i));
    x->set_health("Healthy");
  }
  return resp;
}

inline pod::Container Ctr(const std::string& name, std::map<std::string, int64_t> limits,
                          bool restartable = false) {
  pod::Container c;
  c.name = name;
  c.limits = limits;
  c.requests = limits;
  c.restartable = restartable;
  return c;
}

inline pod::Pod MakePod(const std::string& uid, std::vector<pod::Container> containers,
                        std::vector<pod::Container> init = {}) {
  pod::Pod p;
  p.uid = uid;
  p.name = "pod-" + uid;
  p.namespace_ = "default";
  p.containers = std::move(containers);
  p.init_containers = std::move(init);
  return p;
}

inline Profile ProfileFor(const std::string& v) { return *ProfileForVersion(v); }

// A manager over a temp dir with a fake clock; `active` is the active-pod
// set handed to Start.
class ManagerFixture : public ::testing::Test {
 protected:
  std::unique_ptr<ManagerImpl> NewImpl(Profile profile = DefaultProfile(),
                                       const topology::TopologyAffinityStore* affinity = nullptr) {
    ManagerOptions o;
    o.plugin_dir = dir_.path();
    o.profile = profile;
    o.clock = &clock_;
    o.fsync = false;
    o.affinity_store = affinity;
    return std::make_unique<ManagerImpl>(o);
  }
  StartOptions StartOpts() {
    StartOptions s;
    s.active_pod_uids = [this] {
      absl::MutexLock l(&active_mu_);
      return active_;
    };
    return s;
  }
  void SetActive(std::vector<std::string> uids) {
    absl::MutexLock l(&active_mu_);
    active_ = std::move(uids);
  }
  // Connects a fake plugin for `resource` and returns it.
  std::shared_ptr<FakePluginClient> Connect(ManagerImpl& m, const std::string& resource,
                                            bool preferred = false, bool prestart = false,
                                            const std::string& socket = "") {
    auto c =
        std::make_shared<FakePluginClient>(socket.empty() ? "/tmp/" + resource + ".sock" : socket);
    v1beta1::DevicePluginOptions o;
    o.set_get_preferred_allocation_available(preferred);
    o.set_pre_start_required(prestart);
    c->options = o;
    EXPECT_OK(m.PluginConnected(resource, c));
    return c;
  }
  static const ResourceStatus* Find(const std::vector<ResourceStatus>& v, const std::string& r) {
    for (const ResourceStatus& s : v) {
      if (s.resource_name == r) return &s;
    }
    return nullptr;
  }

  TempDir dir_;
  FakeClock clock_{absl::FromUnixSeconds(1700000000)};
  absl::Mutex active_mu_;
  std::vector<std::string> active_ ABSL_GUARDED_BY(active_mu_);
};

inline constexpr char kTestGpu[] = "vendor.com/gpu";

// Admits `pod` the only way pods are admitted: topology::TopologyManager::
// Admit, here under the "none" policy with `m` as the only hint provider.
inline topology::AdmitResult AdmitPod(Manager& m, const pod::Pod& pod) {
  auto tm = topology::TopologyManager::Create(topology::TopologyManagerConfig{}, {});
  EXPECT_OK(tm);
  (*tm)->AddHintProvider(&m);
  return (*tm)->Admit(pod);
}

// A started manager with one connected fake plugin for kTestGpu.
class AllocationFixture : public ManagerFixture {
 protected:
  void SetUpManager(int devices, bool preferred = false, bool prestart = false,
                    Profile profile = DefaultProfile(),
                    const topology::TopologyAffinityStore* affinity = nullptr) {
    m_ = NewImpl(profile, affinity);
    ASSERT_OK(m_->Start(StartOpts()));
    c_ = Connect(*m_, kTestGpu, preferred, prestart);
    m_->PluginListAndWatchReceiver(kTestGpu, c_.get(), testing::HealthyDevices(devices));
  }
  DeviceSet Devs(const std::string& pod, const std::string& ctr) {
    auto d = m_->PodDevicesForTest().ContainerDevices(pod, ctr, kTestGpu);
    return d.value_or(DeviceSet{});
  }
  std::unique_ptr<ManagerImpl> m_;
  std::shared_ptr<FakePluginClient> c_;
};

}  // namespace devmgr::manager::testing

#endif  // DEVMGR_MANAGER_MANAGER_TESTUTIL_H_
