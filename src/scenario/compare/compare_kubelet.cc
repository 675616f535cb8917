#include "scenario/compare/compare_kubelet.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "checkpoint/checkpoint.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "kubelet/feature_gates.h"
#include "scenario/compare/compare_kubelet_dra.h"
#include "scenario/compare/compare_kubelet_oracle.h"
#include "scenario/compare/compare_kubelet_snapshot.h"
#include "scenario/compare/stepwise_comparison.h"
#include "scenario/expect/expectations.h"
#include "scenario/run/plugin_host.h"
#include "scenario/run/run_context.h"
#include "scenario/steps/step_backend.h"
#include "scenario/steps/step_interpreter.h"

namespace devmgr::scenario {
namespace {

using compare::Json;

// 37 for "1.37".
int Minor(const std::string& version) {
  const size_t dot = version.find('.');
  return dot == std::string::npos ? 0 : std::atoi(version.c_str() + dot + 1);
}

bool IsExecutable(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

bool IsDirectory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ReadFileOr(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = static_cast<bool>(in);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Why the oracle refuses stop_kubelet and start_kubelet.
constexpr char kNoStoppedKubelet[] =
    "the oracle has no stopped-kubelet state (stop_kubelet/start_kubelet); it restarts in one "
    "step";

// Why the device-plugin comparison refuses DRA steps (a scenario that uses
// DRA is compared by compare_kubelet_dra.cc instead).
constexpr char kNoDra[] =
    "DRA (apply, delete_object, wait_driver, dra_manager_state edits) in a device-plugin "
    "comparison; scenarios with DRA are compared by the DRA comparison";

// Why the oracle refuses a start expected to fail.
constexpr char kNoFailedStart[] =
    "a kubelet start expected to fail (expect_error): the oracle's device manager starts on "
    "any checkpoint, and its restart cannot fail as a kubelet's start does";

// ---- devmgr's side ---------------------------------------------------------

Json DevmgrSnapshot(RunContext& ctx) {
  Json s;
  if (!ctx.kubelet_running()) return Json{{"kubelet", "stopped"}};
  const node::NodeResources nr = ctx.node->UpdateNodeStatus();
  s["node"] = {{"capacity", nr.capacity}, {"allocatable", nr.allocatable}};
  Json devices = Json::object();
  for (const manager::ResourceStatus& r : ctx.node->manager().Snapshot()) {
    // GetAllocatableDevices: the healthy devices only.
    Json m = Json::object();
    for (const manager::DeviceInfo& d : r.devices) {
      if (std::find(r.healthy.begin(), r.healthy.end(), d.id) == r.healthy.end()) continue;
      Json numa = Json::array();
      for (int64_t n : d.numa_nodes.value_or(std::vector<int64_t>{})) numa.push_back(n);
      m[d.id] = {{"numa", numa}};
    }
    if (!m.empty()) devices[r.resource_name] = m;
  }
  s["devices"] = devices;
  Json admission = Json::object(), options = Json::object();
  for (const node::PodRecord& rec : ctx.pods->Pods()) {
    const bool rejected = rec.phase == pod::Phase::kFailed && !rec.reason.empty();
    admission[rec.pod.uid] = {{"admitted", !rejected},
                              {"reason", rejected ? rec.reason : ""},
                              {"message", rejected ? rec.message : ""},
                              {"deleted", rec.deleted}};
    if (rejected || rec.deleted) continue;
    Json po = Json::object();
    for (const node::ContainerRecord& c : rec.containers) {
      if (c.run_options) {
        po[c.name] = compare::OptionsJson(*c.run_options);
      } else if (!c.start_error.empty()) {
        po[c.name] = {{"failed", c.start_error}};
      }
    }
    if (!po.empty()) options[rec.pod.uid] = po;
  }
  s["admission"] = admission;
  s["options"] = options;
  const std::vector<std::string> active = ctx.pods->ActivePodUids();
  Json allocations = Json::object();
  for (const manager::PodAllocation& p : ctx.node->manager().Allocations()) {
    if (std::find(active.begin(), active.end(), p.pod_uid) == active.end()) continue;
    Json pc = Json::object();
    for (const manager::ContainerAllocation& c : p.containers) {
      if (!c.devices.empty()) pc[c.container_name] = c.devices;
    }
    if (!pc.empty()) allocations[p.pod_uid] = pc;
  }
  s["allocations"] = allocations;
  s["affinity"] = compare::HolderAffinities(
      allocations, [&ctx](const std::string& uid, const std::string& name) {
        Json nodes = Json::array();
        std::optional<uint64_t> bits = ctx.node->NumaAffinity(uid, name);
        if (!bits.has_value()) return Json();
        for (int i = 0; i < 64; ++i) {
          if ((*bits >> i) & 1) nodes.push_back(i);
        }
        return nodes;
      });
  Json calls = Json::object();
  for (const auto& h : ctx.hosts) {
    if (h->has_call_log()) calls[h->spec().name] = compare::CallsJson(h->CallsSinceMark());
  }
  s["calls"] = calls;
  bool exists = false;
  const std::string bytes = ReadFileOr(ctx.CheckpointPath(), &exists);
  s["checkpoint"] = compare::CheckpointJson(bytes, exists);
  compare::ReplaceInStrings(&s, ctx.env.plugin_dir, compare::kPluginDirPlaceholder);
  compare::SortStringArrays(&s);
  return s;
}

// Whether the checkpoint's registeredDevices list exactly the healthy
// devices (what a write after the last device-list update holds).
bool RegisteredMatchesHealthy(const Json& s) {
  if (!s.contains("checkpoint") || !s["checkpoint"].is_object() ||
      !s["checkpoint"].contains("registered")) {
    return true;
  }
  const Json& reg = s["checkpoint"]["registered"];
  const Json& devs = s.contains("devices") ? s["devices"] : Json::object();
  for (auto it = reg.begin(); it != reg.end(); ++it) {
    Json healthy = Json::array();
    if (devs.contains(it.key())) {
      for (auto d = devs[it.key()].begin(); d != devs[it.key()].end(); ++d) {
        healthy.push_back(d.key());
      }
    }
    if (healthy != it.value()) return false;
  }
  for (auto it = devs.begin(); it != devs.end(); ++it) {
    if (!reg.contains(it.key())) return false;
  }
  return true;
}

// ---- the oracle's side -----------------------------------------------------

struct OraclePod {
  pod::Pod pod;
  bool admitted = false;
  std::string reason, message;
  bool deleted = false;
  Json options = Json::object();  // container -> options | {failed}
};

// The kubelet oracle's side, and its step backend: the oracle's kubelet has
// no stopped state, no virtual clock and no pod phases, so it refuses those
// primitives; its waits are no-ops, as the settling comparison waits.
class OracleSide final : public StepBackend {
 public:
  OracleSide(const Scenario& sc, const CompareOptions& opts) : sc_(sc), opts_(opts) {}
  ~OracleSide() override { Teardown(); }

  absl::Status Setup() {
    char tmpl[] = "/tmp/dmcmp-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return EnvError("cannot create a temp dir");
    work_dir_ = tmpl;
    env_.devmgr_bin = opts_.runner.devmgr_bin;
    env_.work_dir = work_dir_;
    env_.plugin_dir = work_dir_ + "/device-plugins";
    env_.scenario_dir = sc_.dir;
    env_.kubelet_version = opts_.version;
    for (const std::string& d : {env_.plugin_dir, work_dir_ + "/plugins"}) {
      if (mkdir(d.c_str(), 0750) != 0) return EnvError("mkdir " + d);
    }
    for (const PluginSpec& p : sc_.plugins) {
      hosts_.push_back(std::make_unique<PluginHost>(p, env_));
      if (absl::Status s = hosts_.back()->Prepare(); !s.ok())
        return EnvError(std::string(s.message()));
    }
    if (absl::Status s = oracle_.Start(opts_.oracle_binary, env_.plugin_dir,
                                       work_dir_ + "/oracle.stderr", absl::Seconds(30));
        !s.ok()) {
      return EnvError(std::string(s.message()));
    }
    for (auto& h : hosts_) {
      if (h->spec().start != PluginStart::kBeforeKubelet) continue;
      if (absl::Status s = h->Start(); !s.ok()) return EnvError(std::string(s.message()));
    }
    Json start = {{"op", "start"},
                  {"numa_nodes", sc_.node.numa_nodes.size()},
                  {"policy", sc_.node.topology_policy},
                  {"scope", sc_.node.topology_scope},
                  {"policy_options", sc_.node.topology_policy_options}};
    Json gates = Json::object();
    for (const std::string& spec : {opts_.runner.feature_gates, sc_.node.feature_gates}) {
      for (absl::string_view kv : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
        std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
        if (p.size() != 2) continue;
        std::string k(absl::StripAsciiWhitespace(p[0])), v(absl::StripAsciiWhitespace(p[1]));
        gates[k] = v == "true";
      }
    }
    if (!gates.empty()) start["feature_gates"] = gates;
    if (absl::Status s = Call(start).status(); !s.ok()) return s;
    for (auto& h : hosts_) {
      if (h->spec().start == PluginStart::kBeforeKubelet) {
        if (absl::Status s = WaitRegistered(*h, 0); !s.ok()) return s;
        continue;
      }
      if (h->spec().start != PluginStart::kAfterKubelet) continue;
      if (absl::Status s = StartAndWait(*h, true); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Starts a plugin and, as devmgr's runner does, waits until the kubelet
  // has opened its ListAndWatch stream (so plugins register in order).
  absl::Status StartAndWait(PluginHost& h, bool wait) {
    const size_t before = ListAndWatchCount(h);
    if (absl::Status s = h.Start(); !s.ok()) return EnvError(std::string(s.message()));
    if (!wait || !h.spec().wait_for_registration) return absl::OkStatus();
    return WaitRegistered(h, before);
  }

  static size_t ListAndWatchCount(const PluginHost& h) {
    size_t n = 0;
    for (const nlohmann::json& c : h.Calls()) n += c.value("method", "") == "ListAndWatch";
    return n;
  }

  absl::Status WaitRegistered(PluginHost& h, size_t before) {
    if (!h.has_call_log()) return absl::OkStatus();
    const absl::Time deadline = absl::Now() + sc_.timeouts.wait;
    while (ListAndWatchCount(h) <= before) {
      if (absl::Now() >= deadline) {
        return absl::OkStatus();  // the settling comparison shows what is missing
      }
      if (!h.running()) return absl::OkStatus();
      absl::SleepFor(absl::Milliseconds(10));
    }
    // The first device list follows the stream's opening at once.
    absl::SleepFor(absl::Milliseconds(100));
    return absl::OkStatus();
  }

  void Teardown() {
    for (auto& h : hosts_) h->Stop(absl::Seconds(1));
    oracle_.Stop();
    if (!work_dir_.empty() && !opts_.runner.keep_dir) {
      std::error_code ec;
      std::filesystem::remove_all(work_dir_, ec);
    }
  }

  const std::string& kubernetes() const { return oracle_.kubernetes(); }

  // The pods in admission order, each with its containers in the order
  // the kubelet allocates them.
  std::vector<compare::PodOrder> AdmissionOrder() const {
    std::vector<compare::PodOrder> out;
    for (const OraclePod& p : pods_) {
      compare::PodOrder po{p.pod.uid, {}};
      for (const pod::Container* c : pod::AllContainersInKubeletOrder(p.pod)) {
        bool init = false;
        for (const pod::Container& ic : p.pod.init_containers) init |= &ic == c;
        po.containers.emplace_back(c->name, init && !c->restartable);
      }
      out.push_back(std::move(po));
    }
    return out;
  }

  // The release's own table of the gates devmgr knows:
  // {name: {stage, default, locked}}, a gate it lacks absent.
  absl::StatusOr<Json> FeatureGates() {
    Json names = Json::array();
    for (const GateSpec& g : FeatureGateTable()) names.push_back(g.name);
    absl::StatusOr<Json> r = Call({{"op", "feature_gates"}, {"names", names}});
    if (!r.ok()) return r.status();
    Json out = Json::object();
    const Json& gates = (*r)["gates"];
    for (auto it = gates.begin(); it != gates.end(); ++it) {
      out[it.key()] = {{"stage", it.value().value("stage", "")},
                       {"default", it.value().value("default", false)},
                       {"locked", it.value().value("locked", false)}};
    }
    return out;
  }
  const std::string& work_dir() const { return work_dir_; }

  void MarkCalls() {
    for (auto& h : hosts_) h->MarkCalls();
  }

  // devmgr's observation after the step being taken (a reboot waits for
  // the capacity devmgr reached); must outlive that step.
  void SetDevmgrAfter(const Json* after) { devmgr_after_ = after; }

  // ---- the step primitives (step_backend.h) ----
  bool KubeletRunning() const override { return true; }
  absl::Status StopKubelet() override { return Refused(kNoStoppedKubelet); }
  absl::Status StartKubelet(bool, absl::Duration) override { return Refused(kNoStoppedKubelet); }
  absl::Status RestartKubelet(bool, absl::Duration) override { return Restart(/*rebooted=*/false); }
  absl::Status RebootNode(const std::vector<PluginHost*>& stopped, bool, absl::Duration) override {
    return Restart(/*rebooted=*/true, stopped);
  }
  absl::Status AdvanceClock(absl::Duration) override {
    return Refused(
        "advance_clock moves devmgr's virtual clock; the real device manager reads the wall "
        "clock (its 5-minute endpoint grace period cannot be skipped)");
  }
  // The settling comparison observes the node.
  absl::StatusOr<node::NodeResources> UpdateNodeStatus() override { return node_; }

  absl::Status AdmitPod(const pod::Pod& pod, absl::Duration, std::vector<std::string>*) override {
    return Admit(pod);
  }
  absl::Status DeletePod(const std::string& ref) override {
    OraclePod* p = Find(ref);
    if (p == nullptr) return Refused("delete_pod: no such pod on the oracle's side");
    p->deleted = true;
    if (!p->admitted) return absl::OkStatus();
    return Call({{"op", "delete"}, {"uid", p->pod.uid}}).status();
  }
  absl::Status SetPodPhase(const std::string&, pod::Phase) override {
    return Refused("set_phase: the oracle's pods have no phases (active until deleted)");
  }
  absl::Status RestartContainer(const std::string& ref, const std::string& container,
                                absl::Duration) override {
    OraclePod* p = Find(ref);
    if (p == nullptr || !p->admitted) return Refused("restart_container: pod not active");
    return RunOptions(p, container);
  }
  std::string PodUidOr(const std::string& ref) override {
    OraclePod* p = Find(ref);
    return p != nullptr ? p->pod.uid : ref;
  }

  absl::StatusOr<PluginHost*> Host(const std::string& name) override {
    for (auto& h : hosts_) {
      if (h->spec().name == name) return h.get();
    }
    return Refused("no plugin '" + name + "' on the oracle's side");
  }
  std::vector<PluginHost*> Hosts() override {
    std::vector<PluginHost*> out;
    for (auto& h : hosts_) out.push_back(h.get());
    return out;
  }
  absl::Status StartPlugin(PluginHost& h, bool wait) override { return StartAndWait(h, wait); }

  absl::Status WaitRegistration(const std::string&, std::optional<int64_t>, PluginHost*,
                                absl::Duration) override {
    return absl::OkStatus();
  }
  absl::Status WaitDevices(const DevicesWanted&, absl::Duration, const std::string&) override {
    return absl::OkStatus();
  }
  absl::Status WaitHealthSeen(PluginHost&, const std::string&, const std::string&,
                              absl::Duration) override {
    return absl::OkStatus();
  }

  // The oracle's own checkpoint file; it has no dra_manager_state.
  std::string CheckpointPath(CheckpointFile) override {
    return env_.plugin_dir + "/" + checkpoint::kCheckpointName;
  }
  std::optional<std::string> ReadCheckpoint(CheckpointFile f) override {
    if (f == CheckpointFile::kDra) return std::nullopt;
    bool exists = false;
    std::string bytes = ReadFileOr(CheckpointPath(f), &exists);
    if (!exists) return std::nullopt;
    return bytes;
  }
  absl::Status WriteCheckpoint(CheckpointFile f, const std::string& bytes) override {
    if (f == CheckpointFile::kDra) return Refused(kNoDra);
    const std::string path = CheckpointPath(f);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.close();
    if (!out) return EnvError("cannot write " + path);
    return absl::OkStatus();
  }
  absl::Status RemoveCheckpoint(CheckpointFile f) override {
    if (f == CheckpointFile::kDra) return Refused(kNoDra);
    unlink(CheckpointPath(f).c_str());
    return absl::OkStatus();
  }
  absl::Status TruncateCheckpoint(CheckpointFile f, int64_t size) override {
    if (f == CheckpointFile::kDra) return Refused(kNoDra);
    const std::string path = CheckpointPath(f);
    if (truncate(path.c_str(), size) != 0) return EnvError("truncate " + path);
    return absl::OkStatus();
  }

  absl::StatusOr<CommandResult> RunCommand(const std::string&, absl::Duration) override {
    return Refused("a run: step's command acts on devmgr's side only");
  }

  // DRA compare runs are not built: the oracle is the device manager only.
  absl::Status ApplyObjects(const std::vector<nlohmann::json>&) override { return Refused(kNoDra); }
  absl::Status InjectApiFaults(const std::vector<std::string>&) override { return Refused(kNoDra); }
  absl::Status DeleteObject(const std::string&, const std::string&, const std::string&) override {
    return Refused(kNoDra);
  }
  absl::Status WaitDriver(const std::string&, int64_t, PluginHost*, absl::Duration) override {
    return Refused(kNoDra);
  }

  absl::StatusOr<Json> Snapshot() {
    absl::StatusOr<Json> st = Call({{"op", "state"}});
    if (!st.ok()) return st.status();
    manager::CapacityResult cr;
    cr.capacity = (*st)["capacity"].get<std::map<std::string, int64_t>>();
    cr.allocatable = (*st)["allocatable"].get<std::map<std::string, int64_t>>();
    cr.removed = (*st)["deleted"].get<std::vector<std::string>>();
    node_.Apply(cr);
    Json s;
    s["node"] = {{"capacity", node_.capacity}, {"allocatable", node_.allocatable}};
    Json devices = Json::object();
    const Json& ad = (*st)["allocatable_devices"];
    for (auto r = ad.begin(); r != ad.end(); ++r) {
      if (r.value().empty()) continue;
      Json m = Json::object();
      for (auto d = r.value().begin(); d != r.value().end(); ++d) {
        Json numa = d.value().value("numa_nodes", Json::array());
        if (numa.is_null()) numa = Json::array();
        m[d.key()] = {{"numa", numa}};
      }
      devices[r.key()] = m;
    }
    s["devices"] = devices;
    Json admission = Json::object(), options = Json::object();
    for (const OraclePod& p : pods_) {
      admission[p.pod.uid] = {{"admitted", p.admitted},
                              {"reason", p.admitted ? "" : p.reason},
                              {"message", p.admitted ? "" : p.message},
                              {"deleted", p.deleted}};
      if (p.admitted && !p.deleted && !p.options.empty()) options[p.pod.uid] = p.options;
    }
    s["admission"] = admission;
    s["options"] = options;
    Json allocations = Json::object();
    const Json& pods = (*st)["pods"];
    for (auto p = pods.begin(); p != pods.end(); ++p) {
      if (p.value().is_object() && !p.value().empty()) allocations[p.key()] = p.value();
    }
    s["allocations"] = allocations;
    const Json& aff = st->contains("affinity") ? (*st)["affinity"] : Json::object();
    s["affinity"] = compare::HolderAffinities(
        allocations, [&aff](const std::string& uid, const std::string& name) {
          return aff.contains(uid) && aff[uid].contains(name) ? aff[uid][name] : Json();
        });
    Json calls = Json::object();
    for (const auto& h : hosts_) {
      if (h->has_call_log()) calls[h->spec().name] = compare::CallsJson(h->CallsSinceMark());
    }
    s["calls"] = calls;
    bool exists = false;
    const std::string bytes =
        ReadFileOr(env_.plugin_dir + "/" + checkpoint::kCheckpointName, &exists);
    s["checkpoint"] = compare::CheckpointJson(bytes, exists);
    // The oracle's kubelet sees the directory as its hard-coded path.
    compare::ReplaceInStrings(&s, "/var/lib/kubelet/device-plugins",
                              compare::kPluginDirPlaceholder);
    compare::ReplaceInStrings(&s, env_.plugin_dir, compare::kPluginDirPlaceholder);
    return s;
  }

 private:
  absl::StatusOr<Json> Call(Json req, absl::Duration timeout = absl::Seconds(60)) {
    const std::string op = req.value("op", "");
    absl::StatusOr<Json> r = oracle_.Call(std::move(req), timeout);
    if (!r.ok()) return EnvError(std::string(r.status().message()));
    if (!r->value("ok", false)) {
      return EnvError(fmt::format("kubelet-oracle {}: {}", op, r->value("error", r->dump())));
    }
    return r;
  }

  OraclePod* Find(const std::string& ref) {
    std::vector<node::PodRecord> recs;
    for (const OraclePod& p : pods_) {
      node::PodRecord r;
      r.pod = p.pod;
      recs.push_back(std::move(r));
    }
    const node::PodRecord* r = FindPod(recs, ref);
    if (r == nullptr) return nullptr;
    for (OraclePod& p : pods_) {
      if (p.pod.uid == r->pod.uid) return &p;
    }
    return nullptr;
  }

  static Json ContainerJson(const pod::Container& c) {
    Json j = {{"name", c.name}, {"resources", c.limits}};
    if (c.restartable) j["restart_policy"] = "Always";
    return j;
  }

  absl::Status Admit(const pod::Pod& pod) {
    Json pj = {{"uid", pod.uid}, {"name", pod.name}, {"namespace", pod.namespace_}};
    // status.extendedResourceClaimStatus exists from 1.34; an older kubelet
    // never sees it (and neither does devmgr's profile).
    if ((!pod.extended_resource_claim_name.empty() || !pod.extended_resource_mappings.empty()) &&
        Minor(opts_.version) >= 34) {
      Json m = Json::array();
      for (const pod::ExtendedResourceMapping& x : pod.extended_resource_mappings) {
        m.push_back({{"container", x.container_name},
                     {"resource", x.resource_name},
                     {"request", x.request_name}});
      }
      pj["extended_resource_claim"] = {{"name", pod.extended_resource_claim_name}, {"mappings", m}};
    }
    pj["containers"] = Json::array();
    pj["init_containers"] = Json::array();
    for (const pod::Container& c : pod.init_containers)
      pj["init_containers"].push_back(ContainerJson(c));
    for (const pod::Container& c : pod.containers) pj["containers"].push_back(ContainerJson(c));
    absl::StatusOr<Json> r = Call({{"op", "admit"}, {"pod", pj}});
    if (!r.ok()) return r.status();
    OraclePod p;
    p.pod = pod;
    p.admitted = r->value("admitted", false);
    p.reason = r->value("reason", "");
    p.message = r->value("message", "");
    pods_.push_back(std::move(p));
    if (!pods_.back().admitted) return absl::OkStatus();
    return StartContainers(&pods_.back());
  }

  // GetDeviceRunContainerOptions for every container, init containers
  // first (as the kubelet starts them).
  absl::Status StartContainers(OraclePod* p) {
    for (const pod::Container* c : pod::AllContainersInKubeletOrder(p->pod)) {
      if (absl::Status s = RunOptions(p, c->name); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status RunOptions(OraclePod* p, const std::string& container) {
    absl::StatusOr<Json> r =
        Call({{"op", "run_options"}, {"uid", p->pod.uid}, {"container", container}});
    if (!r.ok()) return r.status();
    if (r->value("failed", false)) {
      p->options[container] = {{"failed", r->value("message", "")}};
    } else if (r->contains("options") && !(*r)["options"].is_null()) {
      p->options[container] = compare::OracleOptionsJson((*r)["options"]);
    } else {
      p->options.erase(container);
    }
    return absl::OkStatus();
  }

  void Readmitted(const Json& list) {
    for (const Json& x : list) {
      for (OraclePod& p : pods_) {
        if (p.pod.uid != x.value("uid", "") || x.value("admitted", false)) continue;
        p.admitted = false;
        p.reason = x.value("reason", "");
        p.message = x.value("message", "");
      }
    }
  }

  // The Node object outlives the kubelet (node_ is kept); a restarting
  // kubelet zeroes its extended resources when the new device manager's
  // ShouldResetExtendedResourceCapacity says so.
  void ReconcileNode(const Json& restarted) {
    if (restarted.value("reset_extended_resources", false)) node_.ZeroExtended();
  }

  // `stopped`: the plugins a reboot stopped.
  absl::Status Restart(bool rebooted, const std::vector<PluginHost*>& stopped = {}) {
    if (!rebooted) {
      absl::StatusOr<Json> r =
          Call({{"op", "restart"}, {"containers_running", true}, {"readmit", true}});
      if (!r.ok()) return r.status();
      ReconcileNode(*r);
      Readmitted(r->value("readmitted", Json::array()));
      return absl::OkStatus();
    }
    // As devmgr's reboot: plugins stop, the kubelet starts with no running
    // containers, the plugins start again and register, then the pods are
    // admitted again and their containers started.
    absl::StatusOr<Json> r = Call({{"op", "restart"}, {"containers_running", false}});
    if (!r.ok()) return r.status();
    ReconcileNode(*r);
    for (PluginHost* h : stopped) {
      if (absl::Status s = StartAndWait(*h, true); !s.ok()) return s;
    }
    const Json& after = devmgr_after_ != nullptr ? *devmgr_after_ : Json::object();
    const Json caps = after.contains("node") ? after["node"]["capacity"] : Json();
    for (PluginHost* h : stopped) {
      const std::string res = h->spec().resource;
      if (res.empty() || !caps.is_object() || !caps.contains(res)) continue;
      Json w = {{"op", "wait"}, {"resource", res}, {"capacity", caps[res]}, {"timeout_ms", 10000}};
      (void)oracle_.Call(w, absl::Seconds(20));  // a timeout shows as a difference
    }
    r = Call({{"op", "readmit"}});
    if (!r.ok()) return r.status();
    Readmitted(r->value("readmitted", Json::array()));
    for (OraclePod& p : pods_) {
      if (!p.admitted || p.deleted) continue;
      if (absl::Status s = StartContainers(&p); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  const Scenario& sc_;
  const CompareOptions& opts_;
  std::string work_dir_;
  HostEnv env_;
  std::vector<std::unique_ptr<PluginHost>> hosts_;
  OracleProcess oracle_;
  node::NodeResources node_;
  std::vector<OraclePod> pods_;
  const Json* devmgr_after_ = nullptr;
};

// ---- the comparison --------------------------------------------------------

class Comparison final : public StepwiseComparison {
 public:
  Comparison(const Scenario& sc, const CompareOptions& opts, const ScenarioResult& devmgr,
             const std::map<int, Json>& snaps)
      : StepwiseComparison(sc, opts, devmgr), snaps_(snaps), oracle_(sc, opts) {}

 private:
  std::string HeaderSuffix() const override { return ""; }
  std::string SetupDescription() const override { return "start the kubelet-oracle and plugins"; }
  absl::Status Setup(StepResult* setup) override {
    DEVMGR_RETURN_IF_ERROR(oracle_.Setup());
    DEVMGR_RETURN_IF_ERROR(CompareGates(setup));
    return CompareStep(0, setup->loc, setup);
  }
  std::string Release() const override { return oracle_.kubernetes(); }
  void Teardown() override { oracle_.Teardown(); }

  void RunStep(const Step& st, int index, StepResult* r, std::string* ended) override {
    const auto snap = snaps_.find(index);
    if (snap == snaps_.end()) {
      *ended = fmt::format("no observation of devmgr after step {}", index);
      r->outcome = Outcome::kSkipped;
      r->message = "not compared: " + *ended;
      return;
    }
    oracle_.MarkCalls();
    oracle_.SetDevmgrAfter(&snap->second);
    const absl::Time s0 = absl::Now();
    // The step's notes on the oracle's side are not shown: its observations
    // are compared.
    StepResult taken;
    absl::Status s = InterpretStep(st, sc_.timeouts, oracle_, &taken);
    oracle_.SetDevmgrAfter(nullptr);
    if (const std::optional<std::string> end = RefusalReason(s)) {
      *ended = fmt::format("step {} ({}): {}", index, StepKindName(st.kind), *end);
      r->outcome = Outcome::kSkipped;
      r->message = "comparison ends here: " + *end;
      r->notes.push_back(r->message);
      return;
    }
    if (s.ok()) s = CompareStep(index, st.loc, r);
    r->duration = absl::Now() - s0;
    if (!s.ok()) {
      r->outcome = Outcome::kError;
      r->message = std::string(s.message());
      *ended = "the oracle's side failed: " + r->message;
    }
  }

  // devmgr's feature-gate table (kubelet/feature_gates.h) for this profile
  // against the release's own.
  absl::Status CompareGates(StepResult* r) {
    absl::StatusOr<Json> o = oracle_.FeatureGates();
    if (!o.ok()) return o.status();
    const int minor = Minor(opts_.version);
    Json d = Json::object();
    for (const GateSpec& g : FeatureGateTable()) {
      if (std::optional<GateState> st = GateAt(g.name, minor)) {
        d[g.name] = {{"stage", st->stage}, {"default", st->default_value}, {"locked", st->locked}};
      }
    }
    Keep(compare::Diff(Json{{"feature_gates", *o}}, Json{{"feature_gates", d}},
                       Location{sc_.file, 0, 0}),
         r);
    return absl::OkStatus();
  }

  // Explained differences become notes, the others failures.
  void Keep(std::vector<Failure> diffs, StepResult* r) {
    for (Failure& f : diffs) {
      if (const ExplainedDifference* e = FindExplained(sc_.name, opts_.version, f.what)) {
        r->notes.push_back(fmt::format("explained difference {}: kubelet {}, devmgr {} ({})",
                                       f.what, f.expected, f.actual, e->reason));
      } else {
        r->failures.push_back(std::move(f));
      }
    }
    if (!r->failures.empty()) {
      r->outcome = Outcome::kFailed;
      r->message = fmt::format("{} difference(s) from the real kubelet", r->failures.size());
    }
  }

  // Compares the oracle with devmgr's observation after step `index`,
  // re-observing the oracle until they agree or the settle time is over
  // (registrations and device lists arrive asynchronously).
  absl::Status CompareStep(int index, const Location& loc, StepResult* r) {
    const auto it = snaps_.find(index);
    if (it == snaps_.end()) return absl::OkStatus();
    const Json& d = it->second;
    const absl::Duration settle = std::max(absl::Seconds(5), sc_.timeouts.expect);
    const absl::Time deadline = absl::Now() + settle;
    std::vector<Failure> diffs;
    compare::Pairing pairing;
    Json last_oracle;
    bool crossed = false;
    for (;;) {
      absl::StatusOr<Json> o = oracle_.Snapshot();
      if (!o.ok()) return o.status();
      last_oracle = *o;
      pairing = pairing_;
      // Under the "none" policy no device has an affinity: the kubelet's
      // pick ignores NUMA nodes, so the pairing does too.
      const bool numa_blind = sc_.node.topology_policy == "none";
      compare::PairStep(prev_oracle_ ? &*prev_oracle_ : nullptr, *o,
                        prev_devmgr_ ? &*prev_devmgr_ : nullptr, d, oracle_.AdmissionOrder(),
                        numa_blind, &pairing);
      Json renamed = compare::RenameOracle(pairing, *o, d, &crossed);
      // Every device either side has listed so far in this run.
      known_ids_.merge(compare::DeviceIds(d));
      known_ids_.merge(compare::DeviceIds(*o));
      Json dn = d;
      if (numa_blind) {
        compare::FlattenCheckpointNuma(&renamed);
        compare::FlattenCheckpointNuma(&dn);
      }
      // Once an equally valid pick has put devices on other NUMA nodes than
      // the oracle's, the two nodes' free devices differ in NUMA nodes and
      // so may the affinities the topology manager stores: from then on
      // the affinities only classify devices for the pairing.
      if (numa_diverged_ || crossed) {
        renamed.erase("affinity");
        dn.erase("affinity");
      }
      compare::SortIdLists(&renamed, known_ids_);
      compare::SortIdLists(&dn, known_ids_);
      diffs = compare::Diff(renamed, dn, loc);
      bool explained = true;
      for (const Failure& f : diffs) {
        explained &= FindExplained(sc_.name, opts_.version, f.what) != nullptr;
      }
      if (explained || absl::Now() >= deadline) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    pairing_ = std::move(pairing);
    if (!numa_diverged_ && crossed) {
      numa_diverged_ = true;
      r->notes.push_back(
          "an equally valid pick put devices on other NUMA nodes than the kubelet's; container "
          "affinities are no longer compared");
    }
    prev_oracle_ = std::move(last_oracle);
    prev_devmgr_ = d;
    Keep(std::move(diffs), r);
    return absl::OkStatus();
  }

  const std::map<int, Json>& snaps_;
  OracleSide oracle_;
  compare::Pairing pairing_;
  // The observations after the last compared step (the pairing's "before").
  std::optional<Json> prev_oracle_, prev_devmgr_;
  bool numa_diverged_ = false;
  std::set<std::string> known_ids_;
  ScenarioResult result_;
};

}  // namespace

const ExplainedDifference* FindExplained(const std::string& scenario, const std::string& version,
                                         const std::string& what) {
  for (const ExplainedDifference& e : ExplainedDifferences()) {
    if (!std::regex_search(scenario, std::regex(e.scenario))) continue;
    if (*e.versions != '\0') {
      bool in = false;
      for (absl::string_view v : absl::StrSplit(e.versions, ',')) in |= v == version;
      if (!in) continue;
    }
    if (std::regex_search(what, std::regex(e.what))) return &e;
  }
  return nullptr;
}

absl::StatusOr<std::string> FindKubeletOracle(const std::string& flag, const std::string& version,
                                              const std::string& devmgr_bin) {
  const std::string name = "kubelet-oracle-" + version;
  std::vector<std::string> tried;
  auto resolve = [&](const std::string& p) -> std::string {
    const std::string cand = IsDirectory(p) ? p + "/" + name : p;
    tried.push_back(cand);
    return IsExecutable(cand) ? cand : "";
  };
  const char* env = getenv("DEVMGR_KUBELET_ORACLE");
  std::string found;
  if (!flag.empty()) {
    found = resolve(flag);
  } else if (env != nullptr && *env != '\0') {
    found = resolve(env);
  } else {
    const std::string dir = std::filesystem::path(devmgr_bin).parent_path().string();
    found = resolve(dir + "/kubelet-oracle/" + name);
  }
  if (!found.empty()) return std::filesystem::absolute(found).string();
  return absl::NotFoundError(fmt::format(
      "no kubelet oracle for {} ({} is not an executable); build it with `make kubelet-oracle "
      "ORACLE_PROFILES={}` (needs Go and the module proxy), or name it with --kubelet-oracle "
      "PATH|DIR or $DEVMGR_KUBELET_ORACLE",
      version, tried.empty() ? name : tried.back(), version));
}

std::string NotComparableReason(const Scenario& sc) {
  if (sc.UsesDra()) return DraNotComparableReason(sc);
  for (const Step& st : sc.steps) {
    if (st.expect_error) return kNoFailedStart;
  }
  if (sc.node.plugins_registry) {
    return "plugins_registry: the plugin watcher (pluginmanager) is not part of the oracle, which "
           "takes registrations on kubelet.sock only";
  }
  if (!sc.node.hint_providers.empty()) {
    return "node.hint_providers: the oracle's topology manager has the device manager as its "
           "only hint provider";
  }
  if (!sc.node.numa_distances.empty()) {
    return "node.numa_distances: the oracle's machine topology has no NUMA distances";
  }
  for (size_t i = 0; i < sc.node.numa_nodes.size(); ++i) {
    if (sc.node.numa_nodes[i] != static_cast<int>(i)) {
      return "node.numa_nodes: the oracle's NUMA node ids are 0..n-1";
    }
  }
  for (const PluginSpec& p : sc.plugins) {
    if (p.sample_plugin_config.empty() || p.external) {
      return fmt::format("plugin '{}' is not a sample_plugin: only those are started on both sides",
                         p.name);
    }
    if (p.private_mount) {
      return fmt::format("plugin '{}' runs in a private mount namespace", p.name);
    }
    if (p.sample_plugin_config.find("plugins-registry") != std::string::npos) {
      return fmt::format("plugin '{}' registers through the plugin watcher", p.name);
    }
  }
  return "";
}

std::vector<ScenarioResult> CompareScenario(const Scenario& sc, const std::string& display,
                                            const CompareOptions& opts) {
  std::vector<ScenarioResult> out;
  std::string why = NotComparableReason(sc);
  std::map<int, Json> snaps;
  std::map<int, DraObservation> dra_obs;
  RunnerOptions ro = opts.runner;
  if (why.empty() && sc.UsesDra()) {
    ro.after_step = [&](RunContext& ctx, const Step* st, const StepResult& r) {
      if (r.outcome != Outcome::kPassed) return;
      const int index = st == nullptr ? 0 : static_cast<int>(st - sc.steps.data()) + 1;
      // Three equal observations 50 ms apart (a call-log line, a
      // checkpoint write).
      DraObservation o = ObserveDevmgrDra(ctx);
      const absl::Time deadline = absl::Now() + absl::Seconds(3);
      for (int same = 0; same < 2 && absl::Now() < deadline;) {
        absl::SleepFor(absl::Milliseconds(50));
        DraObservation again = ObserveDevmgrDra(ctx);
        same = again.compared == o.compared ? same + 1 : 0;
        o = std::move(again);
      }
      dra_obs[index] = std::move(o);
    };
  } else if (why.empty()) {
    ro.after_step = [&](RunContext& ctx, const Step* st, const StepResult& r) {
      if (r.outcome != Outcome::kPassed) return;
      const int index = st == nullptr ? 0 : static_cast<int>(st - sc.steps.data()) + 1;
      // What the step set off settles (a stream that ends, a device list
      // that arrives, a call-log line).
      // Three equal observations 50 ms apart (a ListAndWatch update shows
      // in memory a moment before its checkpoint write).
      Json snap = DevmgrSnapshot(ctx);
      const absl::Time deadline = absl::Now() + absl::Seconds(3);
      for (int same = 0; same < 2 && absl::Now() < deadline;) {
        absl::SleepFor(absl::Milliseconds(50));
        Json again = DevmgrSnapshot(ctx);
        same = again == snap ? same + 1 : 0;
        snap = std::move(again);
      }
      // A device-list update shows in memory a moment before its
      // checkpoint write (registeredDevices = the healthy sets): give the
      // write up to half a second under load.
      const absl::Time write_deadline = absl::Now() + absl::Milliseconds(500);
      while (!RegisteredMatchesHealthy(snap) && absl::Now() < write_deadline) {
        absl::SleepFor(absl::Milliseconds(20));
        snap = DevmgrSnapshot(ctx);
      }
      snaps[index] = std::move(snap);
    };
  }
  out.push_back(RunScenario(sc, opts.version, display, ro));
  if (why.empty() && sc.UsesDra()) why = DraNotComparableAfterRun(dra_obs);
  if (!why.empty()) {
    ScenarioResult r;
    r.name = display + " vs kubelet " + opts.version;
    r.file = sc.file;
    r.kubelet_version = opts.version;
    r.outcome = Outcome::kSkipped;
    r.message = "not comparable: " + why;
    if (opts.runner.out != nullptr)
      *opts.runner.out << "--- NOT COMPARABLE " << r.name << " (" << why << ")\n";
    out.push_back(std::move(r));
    return out;
  }
  CompareOptions copts = opts;
  if (sc.UsesDra()) {
    out.push_back(CompareDraScenario(sc, display, copts, out.front(), dra_obs));
    return out;
  }
  Comparison c(sc, copts, out.front(), snaps);
  out.push_back(c.Go(display));
  return out;
}

}  // namespace devmgr::scenario
