#include "scenario/compare/compare_kubelet_dra.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <regex>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "apiserver/faults.h"
#include "apiserver/resource_type.h"
#include "apiserver/server.h"
#include "common/clock.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/compare/compare_kubelet_oracle.h"
#include "scenario/compare/compare_kubelet_snapshot.h"
#include "scenario/compare/stepwise_comparison.h"
#include "scenario/run/plugin_host.h"
#include "scenario/run/run_context.h"
#include "scenario/steps/step_backend.h"
#include "scenario/steps/step_interpreter.h"
#include "transport/registration_client.h"

namespace devmgr::scenario {
namespace {

using compare::Json;

// How long the oracle's plugin watcher waits for a driver's socket, and
// for the calls of one registration.
constexpr absl::Duration kRegistrationTimeout = absl::Seconds(10);

// 37 for "1.37".
int Minor(const std::string& version) {
  const size_t dot = version.find('.');
  return dot == std::string::npos ? 0 : std::atoi(version.c_str() + dot + 1);
}

const apiserver::ResourceType* DraType(const std::string& kind) {
  for (const apiserver::ResourceType* t :
       {&apiserver::ResourceClaims(), &apiserver::ResourceClaimTemplates(),
        &apiserver::DeviceClasses()}) {
    if (t->kind == kind) return t;
  }
  return nullptr;
}

// A registration socket the oracle's plugin watcher has seen.
struct WatchedSocket {
  ino_t inode = 0;
  std::string driver;    // "" when its registration failed
  std::string endpoint;  // as GetInfo gave it
  // Dial or GetInfo failed (a socket not yet served): tried again at the
  // next pass, as the kubelet's reconciler retries a desired plugin that is
  // not registered.
  bool retry = false;
};

// A pod as the oracle's side knows it.
struct OracleDraPod {
  std::string uid;
  Json manifest;                        // the Pod given to dra_prepare
  std::vector<std::string> containers;  // kubelet order
  bool prepared = false;
  std::string error;
  bool deleted = false;  // deleted or terminated
};

// The kubelet oracle's DRA side and its step backend.
class DraOracleSide final : public StepBackend {
 public:
  DraOracleSide(const Scenario& sc, const CompareOptions& opts) : sc_(sc), opts_(opts) {}
  ~DraOracleSide() override { Teardown(); }

  absl::Status Setup() {
    char tmpl[] = "/tmp/dmcmpdra-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return EnvError("cannot create a temp dir");
    work_dir_ = tmpl;
    env_.devmgr_bin = opts_.runner.devmgr_bin;
    env_.work_dir = work_dir_;
    env_.plugin_dir = work_dir_ + "/device-plugins";
    env_.registry_dir = work_dir_ + "/reg";
    env_.scenario_dir = sc_.dir;
    env_.kubelet_version = opts_.version;
    env_.node_name = kDraNodeName;
    env_.dra_plugin_dir = work_dir_ + "/dra-plugins";
    env_.cdi_dir = work_dir_ + "/cdi";
    env_.kubeconfig = work_dir_ + "/kubeconfig";
    // The oracle's dra_manager_state is inside its mount namespace
    // (dra_checkpoint reads it); drivers get this path only as a variable.
    env_.dra_checkpoint = work_dir_ + "/dra_manager_state";
    for (const std::string& d : {env_.plugin_dir, env_.registry_dir, env_.dra_plugin_dir,
                                 env_.cdi_dir, work_dir_ + "/plugins"}) {
      if (mkdir(d.c_str(), 0750) != 0) return EnvError("mkdir " + d);
    }
    api_ = std::make_unique<apiserver::ApiServer>(clock_);
    absl::StatusOr<std::string> url = api_->Start(apiserver::kDefaultApiListen);
    if (!url.ok()) return EnvError(std::string(url.status().message()));
    if (absl::Status s = apiserver::CreateNode(api_->store(), kDraNodeName); !s.ok()) {
      return EnvError(std::string(s.message()));
    }
    if (absl::Status s = apiserver::WriteKubeconfig(env_.kubeconfig, *url); !s.ok()) {
      return EnvError(std::string(s.message()));
    }
    // The scenario's API faults, as on devmgr's side: its drivers meet the
    // same failures.
    if (absl::Status s = apiserver::AddFaultSpecs(api_->faults(), sc_.api_faults); !s.ok()) {
      return EnvError(std::string(s.message()));
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
    Json start = {{"op", "dra_start"}};
    Json gates = FeatureGates();
    if (!gates.empty()) start["feature_gates"] = gates;
    absl::StatusOr<Json> started = Call(start);
    if (!started.ok()) return started.status();
    if (!started->value("started", false)) {
      return EnvError("the oracle's DRA manager did not start: " + started->value("error", ""));
    }
    MirrorApiCalls();
    absl::StatusOr<Json> fg = Call({{"op", "feature_gates"}, {"names", {"ResourceHealthStatus"}}});
    if (!fg.ok()) return fg.status();
    resource_health_ =
        (*fg)["gates"].value("ResourceHealthStatus", Json::object()).value("enabled", false);
    for (auto& h : hosts_) {
      if (h->spec().start == PluginStart::kBeforeKubelet) {
        if (absl::Status s = AwaitRegistration(*h); !s.ok()) return s;
      } else if (h->spec().start == PluginStart::kAfterKubelet) {
        if (absl::Status s = StartAndWait(*h, true); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  void Teardown() {
    for (auto& h : hosts_) h->Stop(absl::Seconds(1));
    oracle_.Stop();
    if (api_ != nullptr) api_->Stop();
    if (!work_dir_.empty() && !opts_.runner.keep_dir) {
      std::error_code ec;
      std::filesystem::remove_all(work_dir_, ec);
    }
  }

  const std::string& kubernetes() const { return oracle_.kubernetes(); }

  void MarkCalls() {
    for (auto& h : hosts_) h->MarkCalls();
  }

  // devmgr's observation after the step being taken (the claims and pods
  // it is given); must outlive that step.
  void SetDevmgrAfter(const DraObservation* after) { devmgr_after_ = after; }

  // The oracle's observation (compare_kubelet_dra.h), after the plugin
  // watcher has looked at the registry directory.
  // While the kubelet is stopped (or failed its start) nothing is asked of
  // the oracle (any dra_ op would start its manager): pods and calls only.
  absl::StatusOr<Json> Observe() {
    if (absl::Status s = SyncRegistry(); !s.ok()) return s;
    Json pods = Json::object();
    for (const OracleDraPod& p : pods_) {
      Json j = {{"prepared", p.prepared}, {"error", p.error}, {"gone", p.deleted}};
      if (!p.deleted && p.prepared && !stopped_) {
        // What a container starting now would get (GetResources), as
        // devmgr's side observes it.
        Json cdi = Json::object();
        for (const std::string& c : p.containers) {
          absl::StatusOr<Json> r = GetResources(p.uid, c);
          if (!r.ok()) return r.status();
          cdi[c] = *r;
        }
        j["containers"] = cdi;
      }
      if (!p.deleted && p.prepared && !stopped_ && resource_health_) {
        // The kubelet's status manager asks only with the gate on
        // (convertToAPIContainerStatuses); the oracle's op does not check it.
        absl::StatusOr<Json> h = Call({{"op", "dra_health_status"}, {"uid", p.uid}});
        if (!h.ok()) return h.status();
        Json health = Json::object();
        const Json& hc = h->value("containers", Json::object());
        for (auto c = hc.begin(); c != hc.end(); ++c) {
          health[c.key()] = compare::HealthStatusJson(c.value());
        }
        j["health"] = health;
      }
      pods[p.uid] = j;
    }
    Json calls = Json::object();
    for (const auto& h : hosts_) {
      if (h->spec().dra_driver.empty() || !h->has_call_log()) continue;
      calls[h->spec().name] = compare::DraCallsJson(h->CallsSinceMark());
    }
    Json s = {{"pods", pods}, {"calls", calls}};
    if (!stopped_) {
      absl::StatusOr<Json> cp = Call({{"op", "dra_checkpoint"}});
      if (!cp.ok()) return cp.status();
      std::string bytes;
      if (cp->value("exists", false) && !absl::Base64Unescape(cp->value("bytes", ""), &bytes)) {
        return EnvError("kubelet-oracle dra_checkpoint: bytes are not base64");
      }
      s["checkpoint"] = compare::DraCheckpointJson(bytes, cp->value("exists", false));
    }
    compare::ReplaceInStrings(&s, work_dir_, compare::kWorkDirPlaceholder);
    return s;
  }

  // ---- the step primitives (step_backend.h) ----
  // A stopped kubelet: the oracle's DRA manager stays up but is not asked
  // anything (no pod syncs, no GetResources); start_kubelet is dra_restart.
  bool KubeletRunning() const override { return !stopped_; }
  absl::Status StopKubelet() override {
    stopped_ = true;
    return absl::OkStatus();
  }
  absl::Status StartKubelet(bool, absl::Duration) override {
    if (!stopped_) return absl::FailedPreconditionError("start_kubelet: the kubelet is running");
    stopped_ = false;
    return Restart({});
  }
  absl::Status RestartKubelet(bool, absl::Duration) override {
    stopped_ = false;
    return Restart({});
  }
  // After a reboot: the drivers the reboot stopped are gone (their sockets
  // removed: deregistered), a new DRA manager starts on the same state
  // (dra_manager_state outlives a reboot), the drivers start and register,
  // and the pod workers sync every active pod again.
  absl::Status RebootNode(const std::vector<PluginHost*>& stopped, bool, absl::Duration) override {
    if (absl::Status s = SyncRegistry(); !s.ok()) return s;
    absl::StatusOr<Json> r = Call({{"op", "dra_restart"}, {"reregister", false}});
    if (!r.ok()) return r.status();
    if (!r->value("started", false)) {
      return EnvError("the oracle's DRA manager did not start again: " + r->value("error", ""));
    }
    MirrorApiCalls();
    // Sockets still there belong to drivers the reboot did not stop: the
    // plugin watcher of the new kubelet finds them again.
    watched_.clear();
    for (PluginHost* h : stopped) {
      if (absl::Status s = StartAndWait(*h, true); !s.ok()) return s;
    }
    if (absl::Status s = SyncRegistry(); !s.ok()) return s;
    return SyncPods();
  }
  absl::Status AdvanceClock(absl::Duration) override {
    return Refused(
        "advance_clock moves devmgr's virtual clock; the real DRA manager's timers (the 30 s "
        "ResourceSlice wipe, the 60 s reconcile loop, the pod worker's retries) read the wall "
        "clock");
  }
  absl::StatusOr<node::NodeResources> UpdateNodeStatus() override { return node::NodeResources{}; }

  absl::Status AdmitPod(const pod::Pod& pod, absl::Duration, std::vector<std::string>*) override {
    if (stopped_) return Refused("admit with the kubelet stopped");
    if (absl::Status s = SyncClaims(); !s.ok()) return s;
    const Json* d = DevmgrPod(pod.uid);
    if (d != nullptr && d->contains("scheduling_failed")) {
      return Refused(
          "the pod's claims could not be allocated on devmgr's side (the scheduler's or the "
          "claim controller's part, not the kubelet's): the kubelet never gets such a pod");
    }
    OracleDraPod p;
    p.uid = pod.uid;
    for (const pod::Container* c : pod::AllContainersInKubeletOrder(pod)) {
      p.containers.push_back(c->name);
    }
    if (devmgr_after_ != nullptr && devmgr_after_->pods.contains(pod.uid)) {
      p.manifest = devmgr_after_->pods[pod.uid];
    } else {
      p.manifest =
          Json::parse(pod.manifest_json.empty() ? "{}" : pod.manifest_json, nullptr, false);
      if (p.manifest.is_discarded() || !p.manifest.is_object()) p.manifest = Json::object();
      p.manifest["metadata"]["uid"] = pod.uid;
      p.manifest["metadata"]["name"] = pod.name;
      p.manifest["metadata"]["namespace"] = pod.namespace_;
    }
    pods_.push_back(std::move(p));
    return Prepare(&pods_.back(), /*with_manifest=*/true);
  }
  absl::Status DeletePod(const std::string& ref) override {
    OracleDraPod* p = Find(ref);
    if (p == nullptr) return Refused("delete_pod: no such pod on the oracle's side");
    if (stopped_) {
      // Gone while the kubelet is down: only the API side happens. The
      // oracle's active-pod set still holds it (it has no op to drop a pod
      // without unpreparing), which only its 60 s reconcile loop reads.
      p->deleted = true;
      return SyncClaims();
    }
    if (absl::Status s = Unprepare(p); !s.ok()) return s;
    return SyncClaims();
  }
  absl::Status SetPodPhase(const std::string& ref, pod::Phase phase) override {
    if (phase != pod::Phase::kSucceeded && phase != pod::Phase::kFailed) {
      return Refused("set_phase: the oracle's pods have no phases but terminated");
    }
    // A terminated pod is unprepared as a deleted one is (the kubelet's
    // syncTerminatedPod).
    OracleDraPod* p = Find(ref);
    if (p == nullptr) return Refused("set_phase: no such pod on the oracle's side");
    if (stopped_) return Refused("set_phase with the kubelet stopped");
    if (absl::Status s = Unprepare(p); !s.ok()) return s;
    return SyncClaims();
  }
  absl::Status RestartContainer(const std::string& ref, const std::string& container,
                                absl::Duration) override {
    OracleDraPod* p = Find(ref);
    if (p == nullptr || !p->prepared || p->deleted) {
      return Refused("restart_container: pod not active");
    }
    return GetResources(p->uid, container).status();
  }
  std::string PodUidOr(const std::string& ref) override {
    OracleDraPod* p = Find(ref);
    return p != nullptr ? p->uid : ref;
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
    return SyncRegistry();
  }
  absl::Status WaitDevices(const DevicesWanted&, absl::Duration, const std::string&) override {
    return absl::OkStatus();
  }
  absl::Status WaitHealthSeen(PluginHost&, const std::string&, const std::string&,
                              absl::Duration) override {
    return Refused("DRA device health is not compared yet (the health streams are not logged)");
  }

  std::string CheckpointPath(CheckpointFile) override { return env_.dra_checkpoint; }
  std::optional<std::string> ReadCheckpoint(CheckpointFile f) override {
    if (f != CheckpointFile::kDra || stopped_) return std::nullopt;
    absl::StatusOr<Json> cp = Call({{"op", "dra_checkpoint"}});
    if (!cp.ok() || !cp->value("exists", false)) return std::nullopt;
    std::string bytes;
    if (!absl::Base64Unescape(cp->value("bytes", ""), &bytes)) return std::nullopt;
    return bytes;
  }
  absl::Status WriteCheckpoint(CheckpointFile f, const std::string& bytes) override {
    if (f != CheckpointFile::kDra) return Refused("the device manager's checkpoint in a DRA run");
    return Call({{"op", "dra_write_checkpoint"}, {"bytes", absl::Base64Escape(bytes)}}).status();
  }
  absl::Status RemoveCheckpoint(CheckpointFile) override {
    return Refused(
        "the oracle can replace dra_manager_state (dra_write_checkpoint), not remove it");
  }
  absl::Status TruncateCheckpoint(CheckpointFile f, int64_t size) override {
    if (size == 0) return WriteCheckpoint(f, "");
    if (stopped_) {
      return Refused(
          "truncate_checkpoint with the kubelet stopped: the oracle reads the file only "
          "through its running DRA manager");
    }
    std::optional<std::string> bytes = ReadCheckpoint(f);
    if (!bytes.has_value()) return Refused("truncate_checkpoint: the oracle has no such file");
    if (static_cast<size_t>(size) < bytes->size()) bytes->resize(static_cast<size_t>(size));
    return WriteCheckpoint(f, *bytes);
  }

  absl::StatusOr<CommandResult> RunCommand(const std::string&, absl::Duration) override {
    return Refused("a run: step's command acts on devmgr's side only");
  }

  absl::Status ApplyObjects(const std::vector<nlohmann::json>& objects) override {
    apiserver::Store& store = api_->store();
    for (const Json& o : objects) {
      const apiserver::ResourceType* type = DraType(o.value("kind", ""));
      if (type == nullptr) return absl::InvalidArgumentError("apply: kind " + o.value("kind", ""));
      const std::string name = o["metadata"].value("name", "");
      const std::string ns =
          type->namespaced ? o["metadata"].value("namespace", std::string("default")) : "";
      apiserver::ApiOr<Json> r = store.Get(*type, ns, name);
      if (r.ok()) {
        Json replaced = o;
        replaced["metadata"].erase("resourceVersion");
        r = store.Update(*type, ns, name, std::move(replaced));
      } else {
        r = store.Create(*type, ns, o);
      }
      if (!r.ok()) {
        return absl::FailedPreconditionError(
            fmt::format("apply {} {}: {}", type->kind, name, r.error->message));
      }
    }
    // Claims as devmgr's side has them after the step (same UIDs).
    return SyncClaims();
  }
  absl::Status InjectApiFaults(const std::vector<std::string>& specs) override {
    return apiserver::AddFaultSpecs(api_->faults(), specs);
  }
  absl::Status DeleteObject(const std::string& kind, const std::string& ns,
                            const std::string& name) override {
    const apiserver::ResourceType* type = DraType(kind);
    if (type == nullptr) return absl::InvalidArgumentError("delete_object: kind " + kind);
    (void)api_->store().Delete(*type, ns, name, {});
    return SyncClaims();
  }
  absl::Status WaitDriver(const std::string& driver, int64_t min_devices, PluginHost* h,
                          absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      if (absl::Status s = SyncRegistry(); !s.ok()) return s;
      if (Registered(driver) && SliceDevices(driver) >= min_devices) return absl::OkStatus();
      if (absl::Now() >= deadline || (h != nullptr && !h->running())) {
        return absl::OkStatus();  // the comparison shows what is missing
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
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

  Json FeatureGates() const {
    Json gates = Json::object();
    for (const std::string& spec : {opts_.runner.feature_gates, sc_.node.feature_gates}) {
      for (absl::string_view kv : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
        std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
        if (p.size() != 2) continue;
        gates[std::string(absl::StripAsciiWhitespace(p[0]))] =
            absl::StripAsciiWhitespace(p[1]) == "true";
      }
    }
    return gates;
  }

  // The kubelet's own API requests (the oracle's fake clientset) that
  // change the API: the ResourceSlice wipes at start and after a driver
  // left, done here on this side's API endpoint, where the drivers are.
  void MirrorApiCalls() {
    if (stopped_) return;
    absl::StatusOr<Json> r = Call({{"op", "dra_api_calls"}});
    if (!r.ok()) return;
    for (const Json& c : r->value("calls", Json::array())) {
      if (c.value("verb", "") != "delete-collection" || c.value("resource", "") != "resourceslices")
        continue;
      std::string driver;
      for (absl::string_view kv : absl::StrSplit(c.value("field_selector", ""), ',')) {
        if (absl::ConsumePrefix(&kv, "spec.driver=")) driver = std::string(kv);
      }
      (void)apiserver::DeleteNodeSlices(api_->store(), kDraNodeName, driver);
    }
  }

  // This side's API endpoint and the oracle's fake clientset hold the
  // ResourceClaims devmgr's side had after the step: the scheduler's and
  // the claim controller's work, which is not the kubelet's.
  absl::Status SyncClaims() {
    if (devmgr_after_ == nullptr) return absl::OkStatus();
    apiserver::Store& store = api_->store();
    const apiserver::ResourceType& rc = apiserver::ResourceClaims();
    apiserver::ApiOr<apiserver::Store::ListResult> list = store.List(rc, "", {});
    if (!list.ok()) return EnvError("cannot list the oracle side's claims");
    for (const Json& c : list.value.items) {
      const std::string ns = c["metadata"].value("namespace", "");
      const std::string name = c["metadata"].value("name", "");
      const std::string key = ns + "/" + name;
      const Json& want = devmgr_after_->claims;
      if (want.contains(key) &&
          want[key]["metadata"].value("uid", "") == c["metadata"].value("uid", "") &&
          want[key].value("status", Json()) == c.value("status", Json())) {
        continue;
      }
      (void)store.Delete(rc, ns, name, {});
      if (!want.contains(key)) {
        (void)Call({{"op", "dra_delete_claim"}, {"namespace", ns}, {"name", name}});
      }
    }
    for (auto it = devmgr_after_->claims.begin(); it != devmgr_after_->claims.end(); ++it) {
      const Json& c = it.value();
      const std::string ns = c["metadata"].value("namespace", "");
      const std::string name = c["metadata"].value("name", "");
      if (store.Get(rc, ns, name).ok()) continue;
      Json restored = c;
      restored["metadata"].erase("resourceVersion");
      apiserver::ApiOr<Json> r = store.Restore(rc, restored);
      if (!r.ok()) return EnvError("restore claim " + it.key() + ": " + r.error->message);
      Json put = c;
      put["metadata"].erase("resourceVersion");
      if (absl::Status s = Call({{"op", "dra_put_claim"}, {"claim", put}}).status(); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  const Json* DevmgrPod(const std::string& uid) const {
    if (devmgr_after_ == nullptr) return nullptr;
    const Json& pods = devmgr_after_->compared["pods"];
    return pods.contains(uid) ? &pods[uid] : nullptr;
  }

  OracleDraPod* Find(const std::string& ref) {
    for (OracleDraPod& p : pods_) {
      const Json& m = p.manifest["metadata"];
      const std::string ns = m.value("namespace", std::string("default"));
      const std::string name = m.value("name", "");
      if (ref == p.uid || ref == name || ref == ns + "/" + name) return &p;
    }
    return nullptr;
  }

  // PrepareResources, then the CDI IDs of each container as it starts.
  absl::Status Prepare(OracleDraPod* p, bool with_manifest) {
    Json req = {{"op", "dra_prepare"}};
    if (with_manifest) {
      req["pod"] = p->manifest;
    } else {
      req["uid"] = p->uid;
    }
    absl::StatusOr<Json> r = Call(req);
    if (!r.ok()) return r.status();
    MirrorApiCalls();
    p->prepared = r->value("prepared", false);
    p->error = p->prepared ? "" : r->value("error", "");
    return absl::OkStatus();
  }

  // GetResources: the container's CDI IDs, or {failed: error}.
  absl::StatusOr<Json> GetResources(const std::string& uid, const std::string& container) {
    absl::StatusOr<Json> r =
        Call({{"op", "dra_get_resources"}, {"uid", uid}, {"container", container}});
    if (!r.ok()) return r.status();
    if (r->value("failed", false)) return Json{{"failed", r->value("error", "")}};
    return r->value("cdi_devices", Json::array());
  }

  absl::Status Unprepare(OracleDraPod* p) {
    absl::StatusOr<Json> r = Call({{"op", "dra_unprepare"}, {"uid", p->uid}});
    if (!r.ok()) return r.status();
    p->deleted = true;
    // A failed unprepare shows in the checkpoint (the claim stays) and in
    // the driver's call log; devmgr's pod record has no unprepare error.
    return absl::OkStatus();
  }

  // The kubelet restarts with its containers running: a new DRA manager on
  // the same state (dra_restart registers the drivers again, as the plugin
  // watcher finds their sockets), then the pod workers sync every active
  // pod again (PrepareResources, the containers' CDI IDs).
  absl::Status Restart(const std::vector<PluginHost*>&) {
    absl::StatusOr<Json> r = Call({{"op", "dra_restart"}, {"reregister", true}});
    if (!r.ok()) return r.status();
    if (!r->value("started", false)) {
      // As a kubelet that exits: stopped until the next start.
      stopped_ = true;
      return KubeletStartFailed(r->value("error", ""));
    }
    MirrorApiCalls();
    return SyncPods();
  }

  // The pod workers' sync of every active pod after a kubelet start, in
  // admission order: PrepareResources again.
  absl::Status SyncPods() {
    for (OracleDraPod& p : pods_) {
      if (p.deleted) continue;
      if (absl::Status s = Prepare(&p, /*with_manifest=*/false); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Starts a driver and, as devmgr's runner does, waits until it is
  // registered (its registration socket found, GetInfo, dra_register).
  absl::Status StartAndWait(PluginHost& h, bool wait) {
    if (absl::Status s = h.Start(); !s.ok()) return EnvError(std::string(s.message()));
    if (!wait || !h.spec().wait_for_registration) return SyncRegistry();
    return AwaitRegistration(h);
  }

  absl::Status AwaitRegistration(PluginHost& h) {
    const absl::Time deadline = absl::Now() + std::max(kRegistrationTimeout, sc_.timeouts.wait);
    const std::string driver = h.spec().dra_driver;
    for (;;) {
      if (absl::Status s = SyncRegistry(); !s.ok()) return s;
      if (driver.empty() || Registered(driver)) return absl::OkStatus();
      if (absl::Now() >= deadline || !h.running())
        return absl::OkStatus();  // shows as a difference
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  bool Registered(const std::string& driver) const {
    for (const auto& [path, w] : watched_) {
      if (w.driver == driver) return true;
    }
    return false;
  }

  int64_t SliceDevices(const std::string& driver) const {
    apiserver::ApiOr<apiserver::Store::ListResult> list =
        api_->store().List(apiserver::ResourceSlices(), "", {});
    if (!list.ok()) return 0;
    int64_t n = 0;
    for (const Json& s : list.value.items) {
      const Json& spec = s.value("spec", Json::object());
      if (spec.value("driver", "") != driver || spec.value("nodeName", "") != kDraNodeName)
        continue;
      n += static_cast<int64_t>(spec.value("devices", Json::array()).size());
    }
    return n;
  }

  // The plugin watcher's pass over the registry directory: a socket gone is
  // deregistered, a new one (or one re-created: another inode) registered.
  absl::Status SyncRegistry() {
    if (stopped_) return absl::OkStatus();  // no kubelet, no plugin watcher
    std::map<std::string, ino_t> now;
    if (DIR* d = opendir(env_.registry_dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string path = env_.registry_dir + "/" + e->d_name;
        struct stat st;
        if (stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) now[path] = st.st_ino;
      }
      closedir(d);
    }
    for (auto it = watched_.begin(); it != watched_.end();) {
      const auto n = now.find(it->first);
      if (n != now.end() && n->second == it->second.inode && !it->second.retry) {
        ++it;
        continue;
      }
      if (!it->second.driver.empty()) {
        absl::Status s = Call({{"op", "dra_deregister"},
                               {"driver", it->second.driver},
                               {"endpoint", it->second.endpoint}})
                             .status();
        if (!s.ok()) return s;
      }
      it = watched_.erase(it);
    }
    for (const auto& [path, inode] : now) {
      if (watched_.count(path) != 0) continue;
      watched_[path] = Register(path, inode);
    }
    MirrorApiCalls();
    return absl::OkStatus();
  }

  // GetInfo, dra_register, NotifyRegistrationStatus (the texts of the
  // kubelet's operation_generator.go, as pluginmanager/operation_executor.cc
  // has them).
  WatchedSocket Register(const std::string& path, ino_t inode) {
    WatchedSocket w;
    w.inode = inode;
    w.retry = true;
    auto client = transport::DialRegistration(path, kRegistrationTimeout, [] { return false; });
    if (!client.ok()) return w;
    absl::StatusOr<pluginmanager::RegistrationInfo> info = (*client)->GetInfo(kRegistrationTimeout);
    if (!info.ok()) return w;
    w.retry = false;
    if (info->type != "DRAPlugin") {
      (void)(*client)->NotifyRegistrationStatus(
          false,
          fmt::format("RegisterPlugin error -- no handler registered for plugin type: {} at "
                      "socket {}",
                      info->type, path),
          kRegistrationTimeout);
      return w;
    }
    const std::string endpoint = info->endpoint.empty() ? path : info->endpoint;
    absl::StatusOr<Json> r = Call({{"op", "dra_register"},
                                   {"driver", info->name},
                                   {"endpoint", endpoint},
                                   {"services", info->supported_versions}});
    if (!r.ok()) return w;
    if (r->value("registered", false)) {
      w.driver = info->name;
      w.endpoint = endpoint;
      (void)(*client)->NotifyRegistrationStatus(true, "", kRegistrationTimeout);
    } else if (r->value("step", "") == "ValidatePlugin") {
      (void)(*client)->NotifyRegistrationStatus(
          false, "RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed",
          kRegistrationTimeout);
    } else {
      (void)(*client)->NotifyRegistrationStatus(
          false,
          "RegisterPlugin error -- plugin registration failed with err: " + r->value("error", ""),
          kRegistrationTimeout);
    }
    return w;
  }

  const Scenario& sc_;
  const CompareOptions& opts_;
  RealClock clock_;
  std::string work_dir_;
  HostEnv env_;
  std::unique_ptr<apiserver::ApiServer> api_;
  std::vector<std::unique_ptr<PluginHost>> hosts_;
  OracleProcess oracle_;
  std::vector<OracleDraPod> pods_;
  std::map<std::string, WatchedSocket> watched_;  // by registration socket path
  const DraObservation* devmgr_after_ = nullptr;
  bool stopped_ = false;
  bool resource_health_ = false;  // the release's ResourceHealthStatus gate, as set
};

// ---- the comparison --------------------------------------------------------

class DraComparison final : public StepwiseComparison {
 public:
  DraComparison(const Scenario& sc, const CompareOptions& opts, const ScenarioResult& devmgr,
                const std::map<int, DraObservation>& obs)
      : StepwiseComparison(sc, opts, devmgr), obs_(obs), oracle_(sc, opts) {}

 private:
  std::string HeaderSuffix() const override { return " (DRA)"; }
  std::string SetupDescription() const override {
    return "start the kubelet-oracle's DRA manager, the API endpoint and drivers";
  }
  absl::Status Setup(StepResult* setup) override {
    DEVMGR_RETURN_IF_ERROR(oracle_.Setup());
    return CompareStep(0, setup->loc, setup);
  }
  std::string Release() const override { return oracle_.kubernetes(); }
  void Teardown() override { oracle_.Teardown(); }

  void RunStep(const Step& st, int index, StepResult* r, std::string* ended) override {
    const auto ob = obs_.find(index);
    if (ob == obs_.end()) {
      *ended = fmt::format("no observation of devmgr after step {}", index);
      r->outcome = Outcome::kSkipped;
      r->message = "not compared: " + *ended;
      return;
    }
    oracle_.MarkCalls();
    oracle_.SetDevmgrAfter(&ob->second);
    const absl::Time s0 = absl::Now();
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
    if (!s.ok() && !taken.failures.empty()) {
      // The kubelet's start failed otherwise than the scenario expects
      // (devmgr's met it): a difference, and the end of the comparison.
      *ended = fmt::format("step {}: {}", index, std::string(s.message()));
      Keep(std::move(taken.failures), r);
      r->duration = absl::Now() - s0;
      return;
    }
    if (s.ok()) {
      Keep(StartErrorDiff(*DevmgrStep(index), taken, st.loc), r);
      s = CompareStep(index, st.loc, r);
    }
    r->duration = absl::Now() - s0;
    if (!s.ok()) {
      r->outcome = Outcome::kError;
      r->message = std::string(s.message());
      *ended = "the oracle's side failed: " + r->message;
    }
  }

  // The kubelet start errors of a step (the interpreter's note on a start
  // that failed as expect_error said) of both sides, compared.
  static std::vector<Failure> StartErrorDiff(const StepResult& devmgr, const StepResult& oracle,
                                             const Location& loc) {
    auto error = [](const StepResult& r) {
      constexpr absl::string_view kPrefix = "the kubelet did not start, as expected: ";
      for (const std::string& n : r.notes) {
        absl::string_view v = n;
        if (absl::ConsumePrefix(&v, kPrefix)) return std::string(v);
      }
      return std::string("(started)");
    };
    const std::string o = error(oracle), d = error(devmgr);
    if (o == d) return {};
    // devmgr's Go JSON errors end in " (offset N)" (checkpoint_format.md,
    // "Error texts"); the same error otherwise is a difference of its own
    // kind, which the explained table names.
    static const std::regex kOffset(" \\(offset [0-9]+\\)$");
    if (std::regex_replace(d, kOffset, "") == o) {
      return {Failure{loc, "kubelet start error: devmgr adds (offset N)", o, d}};
    }
    return {Failure{loc, "kubelet start error", o, d}};
  }

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
  // (registrations, call-log lines and checkpoint writes arrive
  // asynchronously).
  absl::Status CompareStep(int index, const Location& loc, StepResult* r) {
    const auto it = obs_.find(index);
    if (it == obs_.end()) return absl::OkStatus();
    const Json& d = it->second.compared;
    const absl::Time deadline = absl::Now() + std::max(absl::Seconds(5), sc_.timeouts.expect);
    std::vector<Failure> diffs;
    for (;;) {
      absl::StatusOr<Json> o = oracle_.Observe();
      if (!o.ok()) return o.status();
      Json oracle = *o, devmgr = d;
      if (Minor(opts_.version) >= 36) {
        compare::GroupCdiByClaim(&oracle);
        compare::GroupCdiByClaim(&devmgr);
      }
      diffs = compare::Diff(oracle, devmgr, loc);
      bool explained = true;
      for (const Failure& f : diffs) {
        explained &= FindExplained(sc_.name, opts_.version, f.what) != nullptr;
      }
      if (explained || absl::Now() >= deadline) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    Keep(std::move(diffs), r);
    return absl::OkStatus();
  }

  const std::map<int, DraObservation>& obs_;
  DraOracleSide oracle_;
  ScenarioResult result_;
};

}  // namespace

std::string DraNotComparableReason(const Scenario& sc) {
  for (const PluginSpec& p : sc.plugins) {
    if (p.dra_driver.empty()) {
      return fmt::format("plugin '{}' is a device plugin: a DRA comparison runs DRA drivers only",
                         p.name);
    }
    if (p.external || p.private_mount) {
      return fmt::format("DRA driver '{}' is external or runs in a private mount namespace",
                         p.name);
    }
  }
  return "";
}

std::string DraNotComparableAfterRun(const std::map<int, DraObservation>& observations) {
  for (const auto& [index, o] : observations) {
    if (!o.silent_drivers.empty()) {
      return fmt::format(
          "DRA driver '{}' was called but wrote no call log ($DEVMGR_DRA_CALL_LOG, "
          "docs/sample-dra-driver.md): the RPCs it received cannot be compared",
          o.silent_drivers.front());
    }
  }
  return "";
}

ScenarioResult CompareDraScenario(const Scenario& sc, const std::string& display,
                                  const CompareOptions& opts, const ScenarioResult& devmgr,
                                  const std::map<int, DraObservation>& observations) {
  DraComparison c(sc, opts, devmgr, observations);
  return c.Go(display);
}

}  // namespace devmgr::scenario
