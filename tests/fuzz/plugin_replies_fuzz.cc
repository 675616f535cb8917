// Fuzz target: the device manager fed with whatever a plugin can send back. The input is a
// script of operations; each reply is raw protobuf bytes parsed and checked exactly as the gRPC
// client does it (GrpcPluginClient: parse, then the 1.34+ UTF-8 check) and handed to the
// manager through the same ClientHandler/PluginClient interfaces:
//   DevicePluginOptions (in PluginConnected), ListAndWatchResponse (the stream receiver),
//   AllocateResponse and PreferredAllocationResponse (answers to admissions the script makes).
// Properties: no crash, no hang, and the manager's own invariants (a device is never given to
// two containers, capacity >= allocatable) hold after every step.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/logging.h"
#include "fuzz_check.h"
#include "fuzz_script.h"
#include "fuzz_temp_dir.h"
#include "kubelet/profile.h"
#include "manager/fake_plugin_client.h"
#include "manager/manager_impl.h"
#include "pod/pod.h"
#include "topology/topology_manager.h"
#include "transport/go_grpc_error.h"
#include "transport/utf8_fields.h"

namespace dm = devmgr::manager;

namespace {

const std::string& Dir() {
  static const std::string* dir = [] {
    auto* d = new std::string(FuzzTempDir("devmgr-fuzz-replies"));
    devmgr::log::SetConsoleOutput(false);
    return d;
  }();
  return *dir;
}

// What GrpcPluginClient::Unary returns for bytes off the wire.
template <typename Msg>
absl::StatusOr<Msg> FromWire(const std::string& bytes, bool validate_utf8) {
  Msg m;
  if (!m.ParseFromString(bytes)) {
    return absl::InternalError("grpc: error unmarshalling response: proto: cannot parse");
  }
  if constexpr (!std::is_same_v<Msg, v1beta1::DevicePluginOptions>) {
    if (validate_utf8 && devmgr::transport::FirstInvalidUtf8Field(m).has_value()) {
      return devmgr::transport::FromGrpcStatus(devmgr::transport::ClientInvalidUtf8Status());
    }
  }
  return m;
}

const char* const kResources[] = {"vendor.com/gpu", "vendor.com/nic", "example.org/fpga"};
const char* const kVersions[] = {"1.30", "1.31", "1.32", "1.33", "1.34+"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzScript in(data, size);
  std::filesystem::remove(Dir() + "/kubelet_internal_checkpoint");
  dm::ManagerOptions o;
  o.plugin_dir = Dir();
  o.profile = *devmgr::ProfileForVersion(kVersions[in.Byte() % 5]);
  o.fsync = false;
  const bool utf8 = o.profile.validates_utf8;
  std::vector<devmgr::pod::Pod> pods;  // admitted pods stay active
  dm::ManagerImpl m(o);
  dm::StartOptions start;
  start.active_pod_uids = [&pods] {
    std::vector<std::string> uids;
    for (const auto& p : pods) uids.push_back(p.uid);
    return uids;
  };
  FUZZ_CHECK(m.Start(start).ok(), "manager does not start");

  std::map<std::string, std::shared_ptr<dm::FakePluginClient>> clients;
  std::map<std::string, absl::StatusOr<v1beta1::AllocateResponse>> allocate;
  std::map<std::string, absl::StatusOr<v1beta1::PreferredAllocationResponse>> preferred;
  int steps = 0;
  while (in.More() && ++steps < 64) {
    const uint8_t op = in.Byte();
    const std::string res = kResources[(op >> 4) % 3];
    switch (op % 7) {
      case 0: {  // a plugin (re-)registers and answers GetDevicePluginOptions
        auto c =
            std::make_shared<dm::FakePluginClient>(Dir() + "/p" + std::to_string(op) + ".sock");
        c->options = FromWire<v1beta1::DevicePluginOptions>(in.Chunk(), utf8);
        c->on_allocate = [&allocate, res](const v1beta1::AllocateRequest&) {
          auto it = allocate.find(res);
          return it == allocate.end() ? absl::StatusOr<v1beta1::AllocateResponse>(
                                            absl::UnavailableError("no reply scripted"))
                                      : it->second;
        };
        c->on_preferred = [&preferred, res](const v1beta1::PreferredAllocationRequest&) {
          auto it = preferred.find(res);
          return it == preferred.end() ? absl::StatusOr<v1beta1::PreferredAllocationResponse>(
                                             v1beta1::PreferredAllocationResponse())
                                       : it->second;
        };
        (void)m.PluginConnected(res, c);
        clients[res] = c;
        break;
      }
      case 1: {  // one ListAndWatch message; an unmarshal error ends the stream
        auto lw = FromWire<v1beta1::ListAndWatchResponse>(in.Chunk(), utf8);
        auto it = clients.find(res);
        if (it == clients.end()) break;
        if (lw.ok()) {
          m.PluginListAndWatchReceiver(res, it->second.get(), *lw);
        } else {
          m.PluginDisconnected(res, it->second.get());
        }
        break;
      }
      case 2:
        allocate.insert_or_assign(res, FromWire<v1beta1::AllocateResponse>(in.Chunk(), utf8));
        break;
      case 3:
        preferred.insert_or_assign(
            res, FromWire<v1beta1::PreferredAllocationResponse>(in.Chunk(), utf8));
        break;
      case 4: {  // the stream ends
        auto it = clients.find(res);
        if (it != clients.end()) m.PluginDisconnected(res, it->second.get());
        break;
      }
      case 5: {  // a pod asks for devices
        devmgr::pod::Pod p;
        p.uid = "uid-" + std::to_string(steps);
        p.name = "pod-" + std::to_string(steps);
        p.namespace_ = "default";
        devmgr::pod::Container c;
        c.name = "c";
        c.limits[res] = in.Byte() % 5;
        c.requests = c.limits;
        p.containers.push_back(c);
        // Admitted as on a node: through the topology manager (policy none).
        auto tm = devmgr::topology::TopologyManager::Create({}, {});
        if (!tm.ok()) break;
        (*tm)->AddHintProvider(&m);
        if ((*tm)->Admit(p).admitted) {
          (void)m.GetDeviceRunContainerOptions(p, p.containers[0]);
          pods.push_back(p);
        }
        break;
      }
      case 6: {
        (void)m.GetCapacity();
        m.UpdateAllocatedDevices();
        break;
      }
    }
    // No device is ever held by two containers.
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& a : m.Allocations()) {
      for (const auto& c : a.containers) {
        for (const auto& [r, ids] : c.devices) {
          for (const auto& id : ids) {
            FUZZ_CHECK(seen.insert({r, id}).second, "device %s of %s allocated twice", id.c_str(),
                       r.c_str());
          }
        }
      }
    }
  }
  m.Stop();
  return 0;
}
