#include "scenario/runner.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/profile.h"
#include "fmt/format.h"
#include "node/node.h"
#include "node/node_options.h"
#include "node/plugin_process.h"
#include "node/pod_manager.h"
#include "podresources/observability.h"
#include "podresources/server.h"
#include "scenario/expectations.h"
#include "scenario/observe.h"
#include "scenario/plugin_host.h"
#include "topology/bitmask.h"
#include "topology/hint_provider.h"
#include "topology/topology_manager.h"

namespace devmgr::scenario {
namespace {

constexpr absl::Duration kPoll = absl::Milliseconds(20);

std::string Secs(absl::Duration d) { return fmt::format("{:.2f}s", absl::ToDoubleSeconds(d)); }

topology::ProviderHints ToProviderHints(const ResourceHints& in) {
  topology::ProviderHints out;
  for (const auto& [r, list] : in) {
    if (!list) {
      out[r] = std::nullopt;
      continue;
    }
    std::vector<topology::TopologyHint> hs;
    for (const HintSpec& h : *list) {
      topology::TopologyHint t;
      if (h.numa) t.numa_node_affinity = *topology::BitMask::FromBits(*h.numa);  // 0..63: parser
      t.preferred = h.preferred;
      hs.push_back(t);
    }
    out[r] = std::move(hs);
  }
  return out;
}

absl::Status EnvError(const std::string& msg) { return absl::UnavailableError(msg); }

// A step failure that is the environment's fault (exit code 3).
bool IsEnvError(const absl::Status& s) { return s.code() == absl::StatusCode::kUnavailable; }

// Wakes pollers when the manager reports a change.
class ChangeSignal {
 public:
  void Notify() {
    absl::MutexLock l(&mu_);
    ++gen_;
  }
  // Waits for a change or `kPoll`, whichever comes first.
  void WaitBriefly() {
    absl::MutexLock l(&mu_);
    const int64_t seen = gen_;
    auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return gen_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&changed), kPoll);
  }

 private:
  absl::Mutex mu_;
  int64_t gen_ ABSL_GUARDED_BY(mu_) = 0;
};

// The state a worker thread reports back.
struct Job {
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
};

class Run {
 public:
  Run(const Scenario& sc, const std::string& version, const std::string& display,
      const RunnerOptions& opts)
      : sc_(sc), opts_(opts) {
    profile_ = *ProfileForVersion(version);
    result_.name = display;
    result_.file = sc.file;
    result_.kubelet_version = profile_.name;
  }

  ~Run() { Teardown(); }

  ScenarioResult Go() {
    const absl::Time t0 = absl::Now();
    Print(fmt::format("=== RUN  {}  ({})\n", result_.name, sc_.file));
    bool ok = Setup();
    for (size_t i = 0; i < sc_.steps.size(); ++i) {
      const Step& st = sc_.steps[i];
      StepResult r;
      r.index = static_cast<int>(i + 1);
      r.kind = StepKindName(st.kind);
      r.loc = st.loc;
      r.description = st.name.empty() ? DescribeStep(st) : st.name;
      if (!ok) {
        r.outcome = Outcome::kSkipped;
        result_.steps.push_back(std::move(r));
        continue;
      }
      if (!st.versions.empty() &&
          std::find(st.versions.begin(), st.versions.end(), profile_.name) == st.versions.end()) {
        r.outcome = Outcome::kSkipped;
        r.message = fmt::format("only for kubelet {}", ListString(st.versions));
        Print(fmt::format("  [{}] {}  -- skipped ({})\n", r.index, r.description, r.message));
        result_.steps.push_back(std::move(r));
        continue;
      }
      Print(fmt::format("  [{}] {} ", r.index, r.description));
      const absl::Time s0 = absl::Now();
      RunStep(st, &r);
      r.duration = absl::Now() - s0;
      PrintStepEnd(r);
      if (r.outcome != Outcome::kPassed) {
        ok = false;
        result_.outcome = r.outcome;
        result_.message = fmt::format("step {} ({}) {}: {}", r.index, r.description,
                                      r.outcome == Outcome::kError ? "hit an environment error"
                                                                   : "failed",
                                      r.message);
      }
      result_.steps.push_back(std::move(r));
    }
    if (result_.outcome != Outcome::kPassed) CollectEvidence();
    Teardown();
    result_.duration = absl::Now() - t0;
    PrintSummary();
    return std::move(result_);
  }

 private:
  // ---- output ----

  void Print(const std::string& s) {
    if (opts_.out == nullptr) return;
    *opts_.out << s;
    opts_.out->flush();
  }

  void PrintStepEnd(const StepResult& r) {
    if (r.outcome == Outcome::kPassed) {
      Print(fmt::format("... ok ({})\n", Secs(r.duration)));
    } else {
      Print(fmt::format("... {} ({})\n", r.outcome == Outcome::kError ? "ERROR" : "FAIL",
                        Secs(r.duration)));
    }
    for (const std::string& n : r.notes) Print(fmt::format("        {}\n", n));
    if (r.outcome == Outcome::kPassed) return;
    if (!r.message.empty()) Print(fmt::format("      {}\n", r.message));
    for (const Failure& f : r.failures) {
      Print(fmt::format("      {}: {}\n", f.loc.ToString(), f.what));
      Print(fmt::format("        expected: {}\n", f.expected));
      Print(fmt::format("        actual:   {}\n", f.actual));
    }
  }

  void PrintSummary() {
    if (result_.outcome != Outcome::kPassed) {
      if (!result_.log_tail.empty()) {
        Print("    recent devmgr log lines:\n");
        for (const auto& l : result_.log_tail) Print(fmt::format("      {}\n", l));
      }
      for (const auto& [name, lines] : result_.plugin_output) {
        Print(fmt::format("    plugin {} output (last {} lines):\n", name, lines.size()));
        for (const auto& l : lines) Print(fmt::format("      {}\n", l));
      }
    }
    if (opts_.keep_dir && !result_.work_dir.empty()) {
      Print(fmt::format("    kept work dir: {}\n", result_.work_dir));
    }
    const char* verdict = result_.outcome == Outcome::kPassed ? "PASS"
                          : result_.outcome == Outcome::kError ? "ERROR"
                                                               : "FAIL";
    Print(fmt::format("--- {} {} ({})\n", verdict, result_.name, Secs(result_.duration)));
  }

  void CollectEvidence() {
    result_.log_tail = RecentLogLines(opts_.log_tail_lines);
    for (const auto& h : hosts_) {
      if (h->spec().external) continue;
      std::vector<std::string> tail = h->OutputTail(opts_.output_tail_lines);
      tail.insert(tail.begin(), fmt::format("[{}]", h->Describe()));
      result_.plugin_output[h->spec().name] = std::move(tail);
    }
  }

  // ---- set-up and teardown ----

  bool Setup() {
    StepResult r;
    r.index = 0;
    r.kind = "setup";
    r.loc = Location{sc_.file, 0, 0};
    std::vector<std::string> names;
    for (const auto& p : sc_.plugins) names.push_back(p.name);
    r.description = fmt::format("start node (kubelet {}){}", profile_.name,
                                names.empty() ? "" : " and plugins " + ListString(names));
    Print(fmt::format("  [0] {} ", r.description));
    const absl::Time s0 = absl::Now();
    absl::Status s = DoSetup();
    r.duration = absl::Now() - s0;
    if (!s.ok()) {
      r.outcome = IsEnvError(s) ? Outcome::kError : Outcome::kFailed;
      r.message = std::string(s.message());
      result_.outcome = r.outcome;
      result_.message = "set-up: " + r.message;
    } else {
      r.notes.push_back(fmt::format("device-plugin dir {}", env_.plugin_dir));
    }
    PrintStepEnd(r);
    result_.steps.push_back(std::move(r));
    return s.ok();
  }

  absl::Status DoSetup() {
    char tmpl[] = "/tmp/dmrun-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      return EnvError(fmt::format("cannot create a temp dir: {}", std::strerror(errno)));
    }
    work_dir_ = tmpl;
    result_.work_dir = work_dir_;
    env_.devmgr_bin = opts_.devmgr_bin;
    env_.work_dir = work_dir_;
    env_.scenario_dir = sc_.dir;
    env_.kubelet_version = profile_.name;
    env_.metrics_url = opts_.metrics_url;
    if (sc_.node.dir.empty()) {
      env_.plugin_dir = work_dir_ + "/dp";
    } else if (sc_.node.dir[0] == '/') {
      env_.plugin_dir = sc_.node.dir;
    } else {
      char cwd[4096];
      env_.plugin_dir = std::string(getcwd(cwd, sizeof cwd) ? cwd : ".") + "/" + sc_.node.dir;
    }
    if (sc_.node.plugins_registry) env_.registry_dir = work_dir_ + "/reg";
    pr_opts_ = podresources::OptionsForProfile(profile_);
    if (absl::Status s = podresources::ApplyFeatureGates(sc_.node.feature_gates, &pr_opts_); !s.ok()) {
      return s;  // the parser checked it
    }
    if (opts_.pod_resources_socket.empty()) {
      env_.pod_resources_socket = work_dir_ + "/pod-resources/" + podresources::kSocketName;
    } else if (opts_.pod_resources_socket != podresources::kOff) {
      env_.pod_resources_socket = opts_.pod_resources_socket;
      if (node::SocketAnswers(env_.pod_resources_socket)) {
        return EnvError(fmt::format(
            "{} answers: a kubelet (or another devmgr) serves the PodResources API there; use "
            "another --pod-resources-socket",
            env_.pod_resources_socket));
      }
    }
    for (const std::string& d : {env_.plugin_dir, env_.registry_dir, work_dir_ + "/plugins"}) {
      if (d.empty()) continue;
      if (mkdir(d.c_str(), 0750) != 0 && errno != EEXIST) {
        return EnvError(fmt::format("mkdir {}: {}", d, std::strerror(errno)));
      }
    }
    for (const PluginSpec& p : sc_.plugins) {
      if (p.private_mount) {
        if (absl::Status s = node::CheckPrivateMountSupported(); !s.ok()) {
          return EnvError(fmt::format("plugin '{}' needs a private mount namespace: {}", p.name,
                                      std::string(s.message())));
        }
      }
      hosts_.push_back(std::make_unique<PluginHost>(p, env_));
      if (absl::Status s = hosts_.back()->Prepare(); !s.ok()) return EnvError(std::string(s.message()));
    }
    for (auto& h : hosts_) {
      if (h->spec().start != PluginStart::kBeforeKubelet || h->spec().external) continue;
      if (absl::Status s = StartHost(*h, /*wait=*/false); !s.ok()) return s;
    }
    node_ = MakeNode();
    pods_ = std::make_unique<node::PodManager>(node_.get());
    if (absl::Status s = node_->Start(pods_->MakeStartOptions(/*node_rebooted=*/false)); !s.ok()) {
      return EnvError(fmt::format("the emulated kubelet did not start: {}", std::string(s.message())));
    }
    if (opts_.metrics != nullptr) opts_.metrics->Attach(node_.get());
    if (absl::Status s = StartPodResources(); !s.ok()) return s;
    for (auto& h : hosts_) {
      const PluginSpec& p = h->spec();
      if (p.external) {
        if (!p.socket.empty()) {
          if (absl::Status s = RegisterExternal(p); !s.ok()) return s;
        }
        if (p.wait_for_registration) {
          if (absl::Status s = WaitConnected(p.resource, 0, sc_.timeouts.wait, nullptr); !s.ok()) {
            return s;
          }
        }
        continue;
      }
      if (p.start == PluginStart::kAfterKubelet) {
        if (absl::Status s = StartHost(*h, /*wait=*/true); !s.ok()) return s;
      } else if (p.start == PluginStart::kBeforeKubelet && p.wait_for_registration &&
                 !p.resource.empty()) {
        if (absl::Status s =
                WaitConnected(p.resource, 0, sc_.timeouts.wait, h.get(), p.initial_devices);
            !s.ok()) {
          return s;
        }
      }
    }
    return absl::OkStatus();
  }

  std::unique_ptr<node::Node> MakeNode() {
    node::NodeOptionsBuilder b(env_.plugin_dir, profile_);
    b.RegistryDir(env_.registry_dir)
        .WithClock(&clock_)
        .Fsync(sc_.node.fsync)
        .MaxRecvMsgSize(static_cast<int>(sc_.node.max_recv_msg_size))
        .DialTimeout(sc_.node.dial_timeout)
        .Numa(sc_.node.numa_nodes, sc_.node.numa_distances)
        .Topology(sc_.node.topology_policy, sc_.node.topology_scope,
                  sc_.node.topology_policy_options);
    for (const HintProviderSpec& h : sc_.node.hint_providers) {
      topology::StaticProviderSpec sp;
      sp.name = h.name;
      sp.hints = ToProviderHints(h.hints);
      for (const auto& [c, hints] : h.containers) sp.per_container[c] = ToProviderHints(hints);
      if (h.pod) sp.pod = ToProviderHints(*h.pod);
      b.AddHintProvider(std::move(sp));
    }
    node::NodeOptions o = b.options();
    if (opts_.metrics != nullptr) opts_.metrics->Hook(&o);
    auto n = std::make_unique<node::Node>(o);
    n->manager().SetChangeCallback([this] { changes_.Notify(); });
    return n;
  }

  absl::Status StartNode(manager::StartOptions start) {
    node_ = MakeNode();
    if (absl::Status s = node_->Start(std::move(start)); !s.ok()) {
      return EnvError(fmt::format("the emulated kubelet did not start: {}", std::string(s.message())));
    }
    if (opts_.metrics != nullptr) opts_.metrics->Attach(node_.get());
    return StartPodResources();
  }

  // Stops the PodResources server and the node, as a stopping kubelet does
  // (the node object stays alive for the caller).
  void StopNode() {
    StopPodResources();
    node_->Stop();
    if (opts_.metrics != nullptr) opts_.metrics->Detach(node_.get());
  }

  // The PodResources socket over the current node (none when off).
  absl::Status StartPodResources() {
    if (env_.pod_resources_socket.empty()) return absl::OkStatus();
    podresources::ServerOptions so;
    so.socket_path = env_.pod_resources_socket;
    so.api = pr_opts_;
    so.metrics = opts_.metrics != nullptr ? &opts_.metrics->metrics() : nullptr;
    pr_server_ = std::make_unique<podresources::Server>(node_.get(), pods_.get(), so);
    if (absl::Status s = pr_server_->Start(); !s.ok()) {
      pr_server_.reset();
      return EnvError(fmt::format("the PodResources server did not start on {}: {}",
                                  env_.pod_resources_socket, std::string(s.message())));
    }
    return absl::OkStatus();
  }

  void StopPodResources() {
    if (pr_server_) pr_server_->Stop();
    pr_server_.reset();
  }

  void Teardown() {
    if (torn_down_) return;
    torn_down_ = true;
    // A hung worker: kill plugins at once so that its RPC fails.
    const bool hung = worker_ && !JobDone(*job_);
    for (auto& h : hosts_) {
      if (hung) h->Kill();
      h->Stop(absl::Seconds(2));
    }
    if (node_) StopNode();
    if (worker_) {
      if (WaitJob(*job_, absl::Seconds(10))) {
        worker_->join();
      } else {
        // Still stuck: never free what it uses.
        worker_->detach();
        (void)pods_.release();
        (void)node_.release();
      }
      worker_.reset();
    }
    pods_.reset();
    node_.reset();
    hosts_.clear();
    if (!work_dir_.empty() && !opts_.keep_dir) {
      std::system(fmt::format("rm -rf {}", ShellQuote(work_dir_)).c_str());
      result_.work_dir.clear();
    }
  }

  // ---- waiting ----

  bool Cancelled() const { return opts_.cancel != nullptr && opts_.cancel->load(); }

  static bool JobDone(Job& j) {
    absl::MutexLock l(&j.mu);
    return j.done;
  }
  static bool WaitJob(Job& j, absl::Duration timeout) {
    absl::MutexLock l(&j.mu);
    return j.mu.AwaitWithTimeout(absl::Condition(&j.done), timeout);
  }

  // Runs `fn` on a worker thread, waiting up to `timeout`. A timed-out
  // worker is left running; teardown ends it.
  absl::Status Bounded(std::function<absl::Status()> fn, absl::Duration timeout,
                       const std::string& what) {
    job_ = std::make_shared<Job>();
    std::shared_ptr<Job> job = job_;
    worker_ = std::make_unique<std::thread>([job, fn = std::move(fn)] {
      absl::Status s = fn();
      absl::MutexLock l(&job->mu);
      job->status = s;
      job->done = true;
    });
    const absl::Time deadline = absl::Now() + timeout;
    while (!WaitJob(*job, kPoll)) {
      if (Cancelled()) return absl::CancelledError("interrupted");
      if (absl::Now() >= deadline) {
        std::string hint;
        for (const auto& h : hosts_) {
          if (h->paused()) hint += fmt::format("; plugin '{}' is stopped (SIGSTOP)", h->spec().name);
        }
        return absl::DeadlineExceededError(fmt::format(
            "{} did not finish within {} (a plugin RPC may be hanging: the kubelet sets no "
            "deadline on Allocate or GetPreferredAllocation){}",
            what, absl::FormatDuration(timeout), hint));
      }
    }
    worker_->join();
    worker_.reset();
    absl::MutexLock l(&job->mu);
    return job->status;
  }

  // Polls `ready` until it holds, the host's process exits, or timeout.
  absl::Status WaitFor(const std::function<bool()>& ready, absl::Duration timeout,
                       const std::string& what, PluginHost* host,
                       const std::function<std::string()>& state = nullptr) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      if (ready()) return absl::OkStatus();
      if (Cancelled()) return absl::CancelledError("interrupted");
      if (host != nullptr && host->started_once() && !host->running()) {
        return absl::FailedPreconditionError(
            fmt::format("{}: plugin '{}' {}", what, host->spec().name, host->Describe()));
      }
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(fmt::format(
            "{}: not within {}{}", what, absl::FormatDuration(timeout),
            state ? " (" + state() + ")" : std::string()));
      }
      changes_.WaitBriefly();
    }
  }

  const manager::ResourceStatus* FindResource(const std::vector<manager::ResourceStatus>& all,
                                              const std::string& r) {
    for (const auto& s : all) {
      if (s.resource_name == r) return &s;
    }
    return nullptr;
  }

  bool Connected(const std::string& r) {
    auto all = node_->manager().Snapshot();
    const auto* s = FindResource(all, r);
    return s != nullptr && s->has_endpoint && !s->stopped && !s->endpoint_socket.empty();
  }

  std::string ResourceState(const std::string& r) {
    auto all = node_->manager().Snapshot();
    const auto* s = FindResource(all, r);
    const int64_t regs = node_->server() ? node_->server()->RegistrationCount(r) : 0;
    if (s == nullptr) return fmt::format("{} unknown to the kubelet, {} registration(s)", r, regs);
    return fmt::format("{}: {} registration(s), {}, capacity {}, {} healthy", r, regs,
                       s->stopped ? "disconnected" : s->endpoint_socket.empty() ? "no endpoint"
                                                                                  : "connected",
                       s->capacity, s->healthy.size());
  }

  // Waits for resource `r` to be registered more than `count_before` times
  // (kubelet-sock mode), connected, and its first device list received:
  // `devices` of them when known (>= 0), else any (or 1s after connecting,
  // for a plugin that lists none).
  absl::Status WaitConnected(const std::string& r, int64_t count_before, absl::Duration timeout,
                             PluginHost* host, int64_t devices = -1) {
    const bool probe = !env_.registry_dir.empty();
    std::optional<absl::Time> connected_at;
    return WaitFor(
        [&] {
          if (!probe && node_->server()->RegistrationCount(r) <= count_before) return false;
          auto all = node_->manager().Snapshot();
          const auto* s = FindResource(all, r);
          if (s == nullptr || !s->has_endpoint || s->stopped || s->endpoint_socket.empty()) {
            return false;
          }
          if (devices >= 0) return static_cast<int64_t>(s->devices.size()) == devices;
          if (!s->devices.empty()) return true;
          if (!connected_at) connected_at = absl::Now();
          return absl::Now() - *connected_at >= absl::Seconds(1);
        },
        timeout, fmt::format("registration of {}", r), host, [&] { return ResourceState(r); });
  }

  absl::Status StartHost(PluginHost& h, bool wait) {
    const PluginSpec& p = h.spec();
    const int64_t before =
        node_ && node_->server() ? node_->server()->RegistrationCount(p.resource) : 0;
    absl::Status s = h.Start();
    if (!s.ok()) {
      if (s.code() == absl::StatusCode::kFailedPrecondition && p.private_mount) {
        return EnvError(std::string(s.message()));
      }
      return s;
    }
    if (!wait || !p.wait_for_registration || p.resource.empty()) return absl::OkStatus();
    return WaitConnected(p.resource, before, sc_.timeouts.wait, &h, p.initial_devices);
  }

  // Registers an already-running plugin's socket on its behalf.
  absl::Status RegisterExternal(const PluginSpec& p) {
    std::string endpoint = p.socket;
    const std::string prefix = env_.plugin_dir + "/";
    if (endpoint.rfind(prefix, 0) == 0) endpoint = endpoint.substr(prefix.size());
    if (endpoint.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "plugin '{}': socket {} must be inside the device-plugin dir {}", p.name, p.socket,
          env_.plugin_dir));
    }
    v1beta1::RegisterRequest req;
    req.set_version("v1beta1");
    req.set_endpoint(endpoint);
    req.set_resource_name(p.resource);
    absl::Status s = node_->server()->Register(req);
    if (!s.ok()) {
      return absl::FailedPreconditionError(
          fmt::format("registering plugin '{}' at {}: {}", p.name, p.socket, std::string(s.message())));
    }
    return absl::OkStatus();
  }

  PluginHost* Host(const std::string& name) {
    for (auto& h : hosts_) {
      if (h->spec().name == name) return h.get();
    }
    return nullptr;
  }

  // ---- steps ----

  void RunStep(const Step& st, StepResult* r) {
    for (auto& h : hosts_) h->MarkCalls();
    const std::vector<std::string> last = RecentLogLines(1);
    log_mark_ = last.empty() ? "" : last.back();
    absl::Status s = Action(st, r);
    if (s.ok() && !st.expect.empty()) {
      s = Expect(st, r);
    }
    if (s.ok() && st.kind == StepKind::kAdmit) s = RejectedWithoutExpectation(st);
    if (s.ok()) return;
    r->outcome = IsEnvError(s) ? Outcome::kError : Outcome::kFailed;
    r->message = std::string(s.message());
  }

  // An admit step whose pod was rejected fails unless its expectations
  // mention the pod.
  absl::Status RejectedWithoutExpectation(const Step& st) {
    auto rec = pods_->Find(st.pod.uid);
    if (!rec || rec->phase != pod::Phase::kFailed || rec->reason.empty()) return absl::OkStatus();
    for (const PodExpect& p : st.expect.pods) {
      const std::vector<node::PodRecord> one = {*rec};
      if (FindPod(one, p.ref) != nullptr) return absl::OkStatus();
    }
    return absl::FailedPreconditionError(fmt::format(
        "pod {}/{} was rejected: {}: {} (if intended, expect it: pods: {{{}: {{admitted: false}}}})",
        rec->pod.namespace_, rec->pod.name, rec->reason, rec->message, rec->pod.name));
  }

  absl::Duration StepTimeout(const Step& st) const { return st.timeout.value_or(sc_.timeouts.step); }

  absl::StatusOr<std::string> PodUid(const std::string& ref) {
    std::vector<node::PodRecord> all = pods_->Pods();
    const node::PodRecord* r = FindPod(all, ref);
    if (r == nullptr) {
      std::vector<std::string> names;
      for (const auto& p : all) names.push_back(p.pod.namespace_ + "/" + p.pod.name);
      return absl::NotFoundError(fmt::format("no pod '{}' (pods: {})", ref, ListString(names)));
    }
    return r->pod.uid;
  }

  std::string CheckpointPath() const {
    return env_.plugin_dir + "/" + checkpoint::kCheckpointName;
  }

  absl::Status WaitReregistrations(absl::Duration timeout) {
    for (auto& h : hosts_) {
      const PluginSpec& p = h->spec();
      if (p.resource.empty() || !p.wait_for_registration) continue;
      if (!p.external && (!h->running() || !p.reregisters)) continue;
      // -1: the running plugin's list may differ from its initial one.
      if (absl::Status s = WaitConnected(p.resource, 0, timeout, p.external ? nullptr : h.get());
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Action(const Step& st, StepResult* r) {
    const absl::Duration timeout = StepTimeout(st);
    switch (st.kind) {
      case StepKind::kAdmit: {
        const pod::Pod pod = st.pod;
        absl::Status s = Bounded(
            [this, pod] { return pods_->AddPod(pod).status(); }, timeout,
            fmt::format("admission of pod {}/{}", pod.namespace_, pod.name));
        if (!s.ok()) return s;
        AdmissionNotes(pod.uid, r);
        return absl::OkStatus();
      }
      case StepKind::kDeletePod: {
        absl::StatusOr<std::string> uid = PodUid(st.pod_ref);
        if (!uid.ok()) return uid.status();
        return pods_->DeletePod(*uid);
      }
      case StepKind::kSetPhase: {
        absl::StatusOr<std::string> uid = PodUid(st.pod_ref);
        if (!uid.ok()) return uid.status();
        return pods_->SetPhase(*uid, st.phase);
      }
      case StepKind::kRestartContainer: {
        absl::StatusOr<std::string> uid = PodUid(st.pod_ref);
        if (!uid.ok()) return uid.status();
        const std::string u = *uid, c = st.container;
        return Bounded([this, u, c] { return pods_->RestartContainer(u, c); }, timeout,
                       "container restart");
      }
      case StepKind::kRestartKubelet: {
        manager::StartOptions start = pods_->MakeStartOptions(/*node_rebooted=*/false);
        StopNode();
        std::unique_ptr<node::Node> old = std::move(node_);
        if (absl::Status s = StartNode(std::move(start)); !s.ok()) return s;
        node::Node* fresh = node_.get();
        absl::Status s = Bounded(
            [this, fresh] {
              pods_->ReadmitAfterRestart(fresh);
              return absl::OkStatus();
            },
            timeout, "re-admission of active pods after the restart");
        if (!s.ok()) return s;
        old.reset();
        if (st.wait_for_registration) return WaitReregistrations(sc_.timeouts.wait);
        return absl::OkStatus();
      }
      case StepKind::kRebootNode: {
        std::vector<PluginHost*> restart;
        for (auto& h : hosts_) {
          if (h->running()) {
            restart.push_back(h.get());
            h->Stop();
          }
        }
        manager::StartOptions start = pods_->MakeStartOptions(/*node_rebooted=*/true);
        StopNode();
        std::unique_ptr<node::Node> old = std::move(node_);
        if (absl::Status s = StartNode(std::move(start)); !s.ok()) return s;
        for (PluginHost* h : restart) {
          if (absl::Status s = StartHost(*h, st.wait_for_registration); !s.ok()) return s;
        }
        node::Node* fresh = node_.get();
        absl::Status s = Bounded(
            [this, fresh] {
              pods_->ReadmitAfterReboot(fresh);
              return absl::OkStatus();
            },
            timeout, "re-admission of active pods after the reboot");
        if (!s.ok()) return s;
        old.reset();
        return absl::OkStatus();
      }
      case StepKind::kStartPlugin: {
        PluginHost* h = Host(st.plugin);
        return StartHost(*h, st.wait_for_registration);
      }
      case StepKind::kRestartPlugin: {
        PluginHost* h = Host(st.plugin);
        h->Stop();
        return StartHost(*h, st.wait_for_registration);
      }
      case StepKind::kStopPlugin:
        Host(st.plugin)->Stop();
        return absl::OkStatus();
      case StepKind::kKillPlugin:
        Host(st.plugin)->Kill();
        return absl::OkStatus();
      case StepKind::kPausePlugin:
        Host(st.plugin)->Signal(SIGSTOP);
        return absl::OkStatus();
      case StepKind::kResumePlugin:
        Host(st.plugin)->Signal(SIGCONT);
        return absl::OkStatus();
      case StepKind::kAdvanceClock: {
        clock_.Advance(st.advance);
        node::NodeResources nr = node_->UpdateNodeStatus();
        std::string s;
        for (const auto& [k, v] : nr.capacity) {
          s += fmt::format("{}{}: capacity {} allocatable {}", s.empty() ? "" : "; ", k, v,
                           nr.allocatable.count(k) ? nr.allocatable.at(k) : v);
        }
        if (!s.empty()) r->notes.push_back("node status: " + s);
        return absl::OkStatus();
      }
      case StepKind::kNodeStatus:
        node_->UpdateNodeStatus();
        return absl::OkStatus();
      case StepKind::kWaitRegistration: {
        PluginHost* h = st.plugin.empty() ? nullptr : Host(st.plugin);
        if (h != nullptr && h->spec().external) h = nullptr;
        if (st.count) {
          const std::string res = st.resource;
          const int64_t n = *st.count;
          return WaitFor([&] { return node_->server()->RegistrationCount(res) >= n; },
                         st.timeout.value_or(sc_.timeouts.wait),
                         fmt::format("registration #{} of {}", n, res), h,
                         [&] { return ResourceState(res); });
        }
        return WaitConnected(st.resource, 0, st.timeout.value_or(sc_.timeouts.wait), h);
      }
      case StepKind::kWaitDevices: {
        auto ready = [&] {
          auto all = node_->manager().Snapshot();
          const auto* s = FindResource(all, st.resource);
          if (s == nullptr) return false;
          if (st.capacity && s->capacity != *st.capacity) return false;
          if (st.allocatable && s->allocatable.value_or(s->capacity) != *st.allocatable) {
            return false;
          }
          if (st.healthy && static_cast<int64_t>(s->healthy.size()) != *st.healthy) return false;
          return true;
        };
        return WaitFor(ready, st.timeout.value_or(sc_.timeouts.wait), DescribeStep(st), nullptr,
                       [&] { return ResourceState(st.resource); });
      }
      case StepKind::kSetHealth: {
        PluginHost* h = Host(st.plugin);
        if (absl::Status s = h->Control(fmt::format("health {} {}", st.device, st.health)); !s.ok()) {
          return s;
        }
        if (!st.wait) return absl::OkStatus();
        const std::string res = h->spec().resource;
        auto seen = [&] {
          auto all = node_->manager().Snapshot();
          const auto* s = FindResource(all, res);
          if (s == nullptr) return false;
          for (const auto& d : s->devices) {
            if (d.id == st.device) return d.health == st.health;
          }
          return false;
        };
        return WaitFor(seen, st.timeout.value_or(sc_.timeouts.wait),
                       fmt::format("the kubelet to see {} {}", st.device, st.health), h,
                       [&] { return ResourceState(res); });
      }
      case StepKind::kControl:
        return Host(st.plugin)->Control(st.control_line);
      case StepKind::kDeleteCheckpoint:
        if (unlink(CheckpointPath().c_str()) != 0 && errno != ENOENT) {
          return absl::FailedPreconditionError(
              fmt::format("unlink {}: {}", CheckpointPath(), std::strerror(errno)));
        }
        return absl::OkStatus();
      case StepKind::kTruncateCheckpoint:
        if (truncate(CheckpointPath().c_str(), st.truncate_to) != 0) {
          return absl::FailedPreconditionError(
              fmt::format("truncate {}: {}", CheckpointPath(), std::strerror(errno)));
        }
        return absl::OkStatus();
      case StepKind::kCorruptCheckpoint:
        return CorruptCheckpoint();
      case StepKind::kWriteCheckpoint: {
        std::ofstream out(CheckpointPath(), std::ios::binary | std::ios::trunc);
        out << st.content;
        out.close();
        if (!out) return absl::FailedPreconditionError("cannot write " + CheckpointPath());
        return absl::OkStatus();
      }
      case StepKind::kRun:
        return RunCommand(st, r);
      case StepKind::kCheck:
        return absl::OkStatus();
    }
    return absl::InternalError("unhandled step");
  }

  void AdmissionNotes(const std::string& uid, StepResult* r) {
    auto rec = pods_->Find(uid);
    if (!rec) return;
    if (rec->phase == pod::Phase::kFailed && !rec->reason.empty()) {
      r->notes.push_back(fmt::format("rejected: {}: {}", rec->reason, rec->message));
      return;
    }
    for (const auto& p : node_->manager().Allocations()) {
      if (p.pod_uid != uid) continue;
      for (const auto& c : p.containers) {
        std::string s;
        for (const auto& [res, ids] : c.devices) {
          s += fmt::format("{}{}={}", s.empty() ? "" : " ", res, ListString(ids));
        }
        if (!s.empty()) r->notes.push_back(fmt::format("{}: {}", c.container_name, s));
      }
    }
    for (const auto& c : rec->containers) {
      if (!c.start_error.empty()) {
        r->notes.push_back(fmt::format("{}: start failed: {}", c.name, c.start_error));
      }
    }
  }

  absl::Status CorruptCheckpoint() {
    std::ifstream in(CheckpointPath(), std::ios::binary);
    if (!in) return absl::FailedPreconditionError("no checkpoint to corrupt at " + CheckpointPath());
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    in.close();
    // Change the stored checksum (the JSON stays valid), else flip a byte.
    const size_t k = text.find("\"Checksum\":");
    bool changed = false;
    if (k != std::string::npos) {
      size_t i = k + 11;
      while (i < text.size() && text[i] == ' ') ++i;
      if (i < text.size() && isdigit(static_cast<unsigned char>(text[i]))) {
        text[i] = text[i] == '9' ? '1' : static_cast<char>(text[i] + 1);
        changed = true;
      }
    }
    if (!changed && !text.empty()) text[text.size() / 2] ^= 0x20;
    std::ofstream out(CheckpointPath(), std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::FailedPreconditionError("cannot write " + CheckpointPath());
    return absl::OkStatus();
  }

  absl::Status RunCommand(const Step& st, StepResult* r) {
    node::PluginProcessOptions o;
    o.command = st.command;
    o.env = env_.Vars();
    o.working_dir = sc_.dir;
    node::PluginProcess p(o);
    if (absl::Status s = p.Start(); !s.ok()) return EnvError(std::string(s.message()));
    const absl::Time deadline = absl::Now() + StepTimeout(st);
    while (!p.WaitExit(kPoll)) {
      if (Cancelled()) {
        p.Stop(absl::Seconds(1));
        return absl::CancelledError("interrupted");
      }
      if (absl::Now() >= deadline) {
        p.Stop(absl::Seconds(1));
        return absl::DeadlineExceededError(fmt::format(
            "command did not finish within {}; output: {}", absl::FormatDuration(StepTimeout(st)),
            ListString(p.OutputTail(5))));
      }
    }
    const int code = p.exit_code().value_or(-1);
    for (const auto& l : p.OutputTail(5)) r->notes.push_back("| " + l);
    if (code != st.expect_exit) {
      r->failures.push_back(Failure{st.loc, "exit code", std::to_string(st.expect_exit),
                                    std::to_string(code)});
      return absl::FailedPreconditionError(
          fmt::format("command exited with {} (expected {})", code, st.expect_exit));
    }
    return absl::OkStatus();
  }

  // ---- expectations ----

  Observed ObserveNow(const Expectations& e) {
    ObserveContext c;
    c.node = node_.get();
    c.pods = pods_.get();
    c.pod_resources = &pr_opts_;
    c.checkpoint_path = CheckpointPath();
    c.host = [this](const std::string& name) { return Host(name); };
    c.log_mark = log_mark_;
    return Observe(e, c);
  }

  absl::Status Expect(const Step& st, StepResult* r) {
    const absl::Duration within = st.expect.within.value_or(sc_.timeouts.expect);
    const absl::Time deadline = absl::Now() + within;
    std::vector<Failure> failures;
    for (;;) {
      failures = CheckExpectations(st.expect, ObserveNow(st.expect));
      if (failures.empty()) return absl::OkStatus();
      if (Cancelled()) return absl::CancelledError("interrupted");
      if (absl::Now() >= deadline) break;
      changes_.WaitBriefly();
    }
    r->failures = std::move(failures);
    return absl::FailedPreconditionError(
        fmt::format("{} expectation(s) did not hold within {}", r->failures.size(),
                    absl::FormatDuration(within)));
  }

  const Scenario& sc_;
  const RunnerOptions& opts_;
  Profile profile_;
  ScenarioResult result_;
  FakeClock clock_;
  ChangeSignal changes_;
  HostEnv env_;
  std::string work_dir_;
  std::vector<std::unique_ptr<PluginHost>> hosts_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  podresources::Options pr_opts_;
  std::unique_ptr<podresources::Server> pr_server_;
  std::shared_ptr<Job> job_;
  std::unique_ptr<std::thread> worker_;
  bool torn_down_ = false;
  std::string log_mark_;  // the last log line before the current step
};

}  // namespace

std::vector<std::string> ScenarioVersions(const Scenario& sc, const std::string& default_version) {
  if (!sc.node.kubelet_versions.empty()) return sc.node.kubelet_versions;
  return {default_version};
}

ScenarioResult RunScenario(const Scenario& sc, const std::string& version,
                           const std::string& display_name, const RunnerOptions& opts) {
  Run run(sc, version, display_name, opts);
  return run.Go();
}

}  // namespace devmgr::scenario
