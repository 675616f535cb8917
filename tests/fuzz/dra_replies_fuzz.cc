// Fuzz target: the DRA manager fed with whatever a DRA driver can send back. The input is a
// script of operations on three pods and their claims (one claim shared by two pods, one whose
// devices come from two drivers); each NodePrepareResources / NodeUnprepareResources answer is
// bytes read exactly as the gRPC client reads a response (dra::ReadPrepareResponse, v1 or
// v1beta1, the UTF-8 check of 1.35+), either raw or a response message built from the script
// with its keys taken from the claims asked for, so that the fuzzer reaches the manager's
// checks, not only the parser. A call may also fail as a whole (a gRPC status).
// Properties, after every step:
//  - no crash, no hang, no leak;
//  - a failed PrepareResources removes no claim, no pod of a claim and prepares nothing (as the
//    kubelet, it may leave the pod's claims added, not prepared); a failed UnprepareResources
//    removes no claim and changes no claim's prepared flag (it may drop the pod from claims that
//    other pods still hold);
//  - after a successful one, the cache and the checkpoint file hold the same claims (UIDs, pods,
//    device counts per driver);
//  - the checkpoint written is readable: a new manager on the same directory starts and restores
//    the claims of the file, every one not prepared — whatever bytes the driver put in the
//    device names and CDI IDs (control bytes, invalid UTF-8);
//  - the CDI IDs of a container come from devices of the pod's claims.
// The checkpoint goes through the filesystem seam (ManagerOptions::filesystem) to an in-memory
// filesystem (common/memory_fs.h), new for each input and shared by the manager and every
// manager restarted after it: the same bytes, the same atomic write and rename, no disk I/O
// and no state left between inputs.
// See docs/dra.md and docs/reliability.md ("Fuzzing").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/file_store.h"
#include "common/logging.h"
#include "common/memory_fs.h"
#include "dra/checkpoint.h"
#include "dra/dra_client.h"
#include "dra/handler_driver_calls.h"
#include "dra/manager.h"
#include "dra/v1/api.pb.h"
#include "dra/v1beta1/api.pb.h"
#include "fuzz_check.h"
#include "fuzz_script.h"
#include "nlohmann/json.hpp"

namespace dra = devmgr::dra;
using nlohmann::json;

namespace {

// The kubelet root directory inside each input's in-memory filesystem.
constexpr char kDir[] = "/fuzz/kubelet";

constexpr char kGpu[] = "gpu.example.com";
constexpr char kNic[] = "nic.example.com";

// (request, driver, device) of an allocation result.
struct Result {
  const char* request;
  const char* driver;
  const char* device;
};

json Claim(const std::string& name, const std::vector<Result>& results,
           const std::vector<std::string>& pods) {
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}}};
  json r = json::array();
  for (const Result& x : results) {
    r.push_back(
        {{"request", x.request}, {"driver", x.driver}, {"pool", "pool"}, {"device", x.device}});
  }
  claim["status"]["allocation"]["devices"]["results"] = r;
  json reserved = json::array();
  for (const std::string& p : pods)
    reserved.push_back({{"resource", "pods"}, {"name", p}, {"uid", "uid-" + p}});
  claim["status"]["reservedFor"] = reserved;
  return claim;
}

// A pod with one container that uses every claim of the pod (the first one by its request).
json Pod(const std::string& name, const std::vector<std::string>& claims,
         const std::string& first_request) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}}};
  json refs = json::array();
  pod["spec"]["resourceClaims"] = json::array();
  for (const std::string& c : claims) {
    pod["spec"]["resourceClaims"].push_back({{"name", c}, {"resourceClaimName", c}});
    json ref = {{"name", c}};
    if (refs.empty() && !first_request.empty()) ref["request"] = first_request;
    refs.push_back(ref);
  }
  pod["spec"]["containers"] = json::array({{{"name", "c"}, {"resources", {{"claims", refs}}}}});
  return pod;
}

struct World {
  std::vector<json> pods;
  std::vector<std::vector<json>> claims;  // per pod, in the pod's order
};

const World& TheWorld() {
  static const World* w = [] {
    const json a = Claim("a", {{"gpu", kGpu, "gpu-0"}}, {"p0", "p1"});
    const json b = Claim("b", {{"x", kGpu, "gpu-1"}, {"y", kNic, "nic-0"}}, {"p1"});
    const json c = Claim("c", {{"n", kNic, "nic-1"}}, {"p2"});
    auto* out = new World;
    out->pods = {Pod("p0", {"a"}, ""), Pod("p1", {"a", "b"}, "gpu"), Pod("p2", {"c"}, "n")};
    out->claims = {{a}, {a, b}, {c}};
    return out;
  }();
  return *w;
}

template <typename Response>
std::string BuildPrepare(FuzzScript& in, const std::vector<dra::ClaimRef>& claims) {
  Response resp;
  for (const dra::ClaimRef& c : claims) {
    const uint8_t how = in.Byte();
    if (how % 5 == 0) continue;  // left out
    auto& entry = (*resp.mutable_claims())[how % 5 == 1 ? in.Chunk() : c.uid];
    if (how % 5 == 2) entry.set_error(in.Chunk());
    for (int d = 0, n = (how >> 3) % 4; d < n; ++d) {
      auto* dev = entry.add_devices();
      if (in.Byte() % 2 == 1) dev->add_request_names(in.Chunk());
      dev->set_pool_name(in.Chunk());
      dev->set_device_name(in.Chunk());
      for (int i = 0, m = in.Byte() % 3; i < m; ++i) dev->add_cdi_device_ids(in.Chunk());
      if constexpr (requires { dev->set_share_id(std::string()); }) {
        if (in.Byte() % 4 == 0) dev->set_share_id(in.Chunk());
      }
    }
  }
  return resp.SerializeAsString();
}

template <typename Response>
std::string BuildUnprepare(FuzzScript& in, const std::vector<dra::ClaimRef>& claims) {
  Response resp;
  for (const dra::ClaimRef& c : claims) {
    const uint8_t how = in.Byte();
    if (how % 4 == 0) continue;
    auto& entry = (*resp.mutable_claims())[how % 4 == 1 ? in.Chunk() : c.uid];
    if (how % 4 == 2) entry.set_error(in.Chunk());
  }
  return resp.SerializeAsString();
}

namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// Every driver is registered; each call's answer is read from the script.
class ScriptedDrivers final : public dra::DriverCalls {
 public:
  ScriptedDrivers(FuzzScript* in, dra::DraService service, dra::DraClientOptions opts)
      : in_(in), service_(service), opts_(opts) {}

  absl::StatusOr<std::map<std::string, dra::PrepareResult>> Prepare(
      const std::string&, const std::vector<dra::ClaimRef>& claims) override {
    absl::StatusOr<std::string> bytes = NextReply([&] {
      return service_ == dra::DraService::kV1
                 ? BuildPrepare<v1::NodePrepareResourcesResponse>(*in_, claims)
                 : BuildPrepare<v1beta1::NodePrepareResourcesResponse>(*in_, claims);
    });
    if (!bytes.ok()) return bytes.status();
    auto entries = dra::ReadPrepareResponse(service_, *bytes, opts_);
    if (!entries.ok()) return entries.status();
    return dra::ToPrepareResults(*std::move(entries));
  }

  absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::string&, const std::vector<dra::ClaimRef>& claims) override {
    absl::StatusOr<std::string> bytes = NextReply([&] {
      return service_ == dra::DraService::kV1
                 ? BuildUnprepare<v1::NodeUnprepareResourcesResponse>(*in_, claims)
                 : BuildUnprepare<v1beta1::NodeUnprepareResourcesResponse>(*in_, claims);
    });
    if (!bytes.ok()) return bytes.status();
    return dra::ReadUnprepareResponse(service_, *bytes, opts_);
  }

  bool IsRegistered(const std::string&) const override { return true; }

 private:
  // The next answer's bytes: a failed call, raw bytes, or a message `build` makes.
  template <typename Build>
  absl::StatusOr<std::string> NextReply(Build build) {
    const uint8_t how = in_->Byte();
    if (how % 8 == 0) return absl::UnavailableError("rpc error: code = Unavailable desc = gone");
    if (how % 8 == 1) return in_->Chunk();
    return build();
  }

  FuzzScript* const in_;
  const dra::DraService service_;
  const dra::DraClientOptions opts_;
};

// What must survive a restart: per claim UID, its pods and its device count per driver.
using Restorable =
    std::map<std::string, std::pair<std::set<std::string>, std::map<std::string, size_t>>>;

Restorable Summary(const std::map<std::string, dra::ClaimInfo>& cache) {
  Restorable out;
  for (const auto& [uid, info] : cache) {
    auto& [pods, devices] = out[uid];
    if (info.state.pod_uids) pods = *info.state.pod_uids;
    if (!info.state.driver_state) continue;
    for (const auto& [driver, state] : *info.state.driver_state) {
      devices[driver] = state.devices ? state.devices->size() : 0;
    }
  }
  return out;
}

Restorable Summary(const dra::ClaimInfoStateList& list) {
  std::map<std::string, dra::ClaimInfo> cache;
  if (list) {
    for (const dra::ClaimInfoState& state : *list) cache[state.claim_uid].state = state;
  }
  return Summary(cache);
}

// The claims of the checkpoint file as it is now.
Restorable OnDisk(devmgr::fs::MemoryFilesystem& disk, int minor) {
  const devmgr::checkpoint::FileStore store(kDir, true, &disk);
  absl::StatusOr<dra::CheckpointData> data = dra::ReadAndVerify(store, dra::LayoutForMinor(minor));
  FUZZ_CHECK(data.ok(), "the checkpoint the manager wrote does not read back");
  return Summary(data->claim_info_state_list);
}

// A failed prepare (grows) or unprepare (shrinks) may change only the pods of the claims.
void CheckFailed(const std::map<std::string, dra::ClaimInfo>& before,
                 const std::map<std::string, dra::ClaimInfo>& after, bool prepare) {
  for (const auto& [uid, info] : before) {
    auto it = after.find(uid);
    FUZZ_CHECK(it != after.end(), "a failed call removed a claim");
    FUZZ_CHECK(it->second.prepared == info.prepared, "a failed call changed a prepared flag");
    const std::set<std::string> none;
    const std::set<std::string>& was = info.state.pod_uids ? *info.state.pod_uids : none;
    const std::set<std::string>& now =
        it->second.state.pod_uids ? *it->second.state.pod_uids : none;
    const bool kept = prepare ? std::includes(now.begin(), now.end(), was.begin(), was.end())
                              : std::includes(was.begin(), was.end(), now.begin(), now.end());
    FUZZ_CHECK(kept, "a failed call changed a claim's pods the wrong way");
  }
  for (const auto& [uid, info] : after) {
    if (before.count(uid) == 0) {
      FUZZ_CHECK(prepare && !info.prepared, "a failed call added a prepared claim");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    devmgr::log::SetConsoleOutput(false);
    return true;
  }();
  (void)quiet;
  FuzzScript in(data, size);
  const World& world = TheWorld();
  devmgr::fs::MemoryFilesystem disk;  // empty: no checkpoint yet
  const int minor = 34 + in.Byte() % 4;
  // Every release 1.34-1.37 serves both (the driver's first listed service is taken).
  const dra::DraService service =
      in.Byte() % 2 == 0 ? dra::DraService::kV1 : dra::DraService::kV1beta1;
  dra::DraClientOptions opts;
  opts.validate_utf8 = minor >= 35;
  opts.read_share_id = minor >= 35;
  ScriptedDrivers drivers(&in, service, opts);
  // fsync costs nothing in memory: the write takes the path production takes.
  const dra::ManagerOptions mopts{kDir, minor, /*fsync=*/true, &disk};
  auto m = std::make_unique<dra::Manager>(&drivers, mopts);
  FUZZ_CHECK(m->Start().ok(), "the manager does not start on its own empty checkpoint");

  int steps = 0;
  while (in.More() && ++steps < 48) {
    const uint8_t op = in.Byte();
    const size_t p = (op >> 2) % world.pods.size();
    const std::map<std::string, dra::ClaimInfo> before = m->ClaimInfos();
    switch (op % 4) {
      case 0:
        if (!m->PrepareResources(world.pods[p], world.claims[p]).ok()) {
          CheckFailed(before, m->ClaimInfos(), /*prepare=*/true);
        } else {
          FUZZ_CHECK(Summary(m->ClaimInfos()) == OnDisk(disk, minor),
                     "after a prepare the cache and the checkpoint differ");
        }
        break;
      case 1:
        if (!m->UnprepareResources(world.pods[p]).ok()) {
          CheckFailed(before, m->ClaimInfos(), /*prepare=*/false);
        } else {
          FUZZ_CHECK(Summary(m->ClaimInfos()) == OnDisk(disk, minor),
                     "after an unprepare the cache and the checkpoint differ");
        }
        break;
      case 2: {  // the containers' CDI IDs come from the pod's claims' devices
        auto ids = m->ContainerCdiIds(world.pods[p], "c");
        if (!ids.ok()) break;
        std::multiset<std::string> known;
        for (const auto& [uid, info] : before) {
          if (!info.state.driver_state) continue;
          for (const auto& [driver, state] : *info.state.driver_state) {
            if (!state.devices) continue;
            for (const auto& d : *state.devices) {
              if (d.cdi_device_ids)
                known.insert(d.cdi_device_ids->begin(), d.cdi_device_ids->end());
            }
          }
        }
        for (const std::string& id : *ids) FUZZ_CHECK(known.count(id) > 0, "a CDI ID from nowhere");
        break;
      }
      case 3: {  // a kubelet restart
        const Restorable written = OnDisk(disk, minor);
        m.reset();
        m = std::make_unique<dra::Manager>(&drivers, mopts);
        FUZZ_CHECK(m->Start().ok(), "the checkpoint the manager wrote does not restore");
        FUZZ_CHECK(Summary(m->ClaimInfos()) == written, "a restart lost or changed claims");
        for (const auto& [uid, info] : m->ClaimInfos()) {
          FUZZ_CHECK(!info.prepared, "a restored claim is prepared");
        }
        break;
      }
    }
  }
  return 0;
}
