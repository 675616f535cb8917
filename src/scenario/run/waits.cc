// RunContext: bounded actions and the waits for registrations and devices.
#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "dra/dra_plugin_handler.h"
#include "fmt/format.h"
#include "scenario/expect/expectations.h"
#include "scenario/run/run_context.h"

namespace devmgr::scenario {

absl::Status EnvError(const std::string& msg) { return absl::UnavailableError(msg); }

bool IsEnvError(const absl::Status& s) { return s.code() == absl::StatusCode::kUnavailable; }

void ChangeSignal::Notify() {
  absl::MutexLock l(&mu_);
  ++gen_;
}

void ChangeSignal::WaitBriefly() {
  absl::MutexLock l(&mu_);
  const int64_t seen = gen_;
  auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return gen_ != seen; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), kPoll);
}

const manager::ResourceStatus* FindResource(const std::vector<manager::ResourceStatus>& all,
                                            const std::string& r) {
  for (const auto& s : all) {
    if (s.resource_name == r) return &s;
  }
  return nullptr;
}

bool RunContext::Cancelled() const { return opts.cancel != nullptr && opts.cancel->load(); }

bool RunContext::JobRunning() const {
  if (!worker_) return false;
  absl::MutexLock l(&job_->mu);
  return !job_->done;
}

bool RunContext::WaitJob(absl::Duration timeout) {
  absl::MutexLock l(&job_->mu);
  return job_->mu.AwaitWithTimeout(absl::Condition(&job_->done), timeout);
}

absl::Status RunContext::Bounded(std::function<absl::Status()> fn, absl::Duration timeout,
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
  while (!WaitJob(kPoll)) {
    if (Cancelled()) return absl::CancelledError("interrupted");
    if (absl::Now() >= deadline) {
      std::string hint;
      for (const auto& h : hosts) {
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

absl::Status RunContext::WaitFor(const std::function<bool()>& ready, absl::Duration timeout,
                                 const std::string& what, PluginHost* host,
                                 const std::function<std::string()>& state) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (ready()) return absl::OkStatus();
    if (Cancelled()) return absl::CancelledError("interrupted");
    if (host != nullptr && host->started_once() && !host->running()) {
      return absl::FailedPreconditionError(
          fmt::format("{}: plugin '{}' {}", what, host->spec().name, host->Describe()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(fmt::format("{}: not within {}{}", what,
                                                     absl::FormatDuration(timeout),
                                                     state ? " (" + state() + ")" : std::string()));
    }
    changes.WaitBriefly();
  }
}

std::string RunContext::ResourceState(const std::string& r) {
  auto all = node->manager().Snapshot();
  const auto* s = FindResource(all, r);
  const int64_t regs = node->server() ? node->server()->RegistrationCount(r) : 0;
  if (s == nullptr) return fmt::format("{} unknown to the kubelet, {} registration(s)", r, regs);
  return fmt::format("{}: {} registration(s), {}, capacity {}, {} healthy", r, regs,
                     s->stopped                   ? "disconnected"
                     : s->endpoint_socket.empty() ? "no endpoint"
                                                  : "connected",
                     s->capacity, s->healthy.size());
}

absl::Status RunContext::WaitConnected(const std::string& r, int64_t count_before,
                                       absl::Duration timeout, PluginHost* host, int64_t devices) {
  const bool probe = !env.registry_dir.empty();
  return WaitFor(
      [&] {
        if (!probe && node->server()->RegistrationCount(r) <= count_before) return false;
        auto all = node->manager().Snapshot();
        const auto* s = FindResource(all, r);
        if (s == nullptr || !s->has_endpoint || s->stopped || s->endpoint_socket.empty()) {
          return false;
        }
        // The connection's first device list has been applied.
        if (s->lists_applied == 0) return false;
        return devices < 0 || static_cast<int64_t>(s->devices.size()) == devices;
      },
      timeout, fmt::format("registration of {}", r), host, [&] { return ResourceState(r); });
}

namespace {

// The devices of `driver`'s ResourceSlices for the node, and the slices.
std::pair<int64_t, int64_t> SliceDevices(apiserver::Store& store, const std::string& driver) {
  apiserver::ApiOr<apiserver::FieldSelector> sel = apiserver::FieldSelector::Parse(
      fmt::format("spec.driver={},spec.nodeName={}", driver, kDraNodeName),
      apiserver::ResourceSlices());
  if (!sel.ok()) return {0, 0};
  apiserver::ApiOr<apiserver::Store::ListResult> l =
      store.List(apiserver::ResourceSlices(), "", sel.value);
  if (!l.ok()) return {0, 0};
  int64_t devices = 0;
  for (const nlohmann::json& s : l.value.items) {
    const nlohmann::json* d = s.contains("spec") ? &s["spec"] : nullptr;
    if (d != nullptr && d->contains("devices") && (*d)["devices"].is_array()) {
      devices += static_cast<int64_t>((*d)["devices"].size());
    }
  }
  return {devices, static_cast<int64_t>(l.value.items.size())};
}

}  // namespace

std::string RunContext::DraDriverState(const std::string& driver) {
  if (api == nullptr) return "DRA is off";
  dra::DraPluginHandler* h = node ? node->dra_handler() : nullptr;
  const int64_t regs = h ? h->RegistrationCount(driver) : 0;
  const std::vector<std::string> eps = h ? h->Endpoints(driver) : std::vector<std::string>{};
  const bool connected =
      !eps.empty() && h->WaitForConnection(driver, eps.back(), true, absl::ZeroDuration());
  const auto [devices, slices] = SliceDevices(api->store(), driver);
  return fmt::format("{}: {} registration(s), {}, {} device(s) in {} slice(s)", driver, regs,
                     eps.empty() ? "no instance"
                     : connected ? "connected"
                                 : "not connected",
                     devices, slices);
}

absl::Status RunContext::WaitDraDriver(const std::string& driver, int64_t min_devices,
                                       int64_t registrations_before, absl::Duration timeout,
                                       PluginHost* host) {
  if (api == nullptr || node == nullptr || node->dra_handler() == nullptr) {
    return absl::FailedPreconditionError(fmt::format(
        "waiting for DRA driver {}: DRA is off on this node (kubelet {})", driver, profile.name));
  }
  dra::DraPluginHandler* h = node->dra_handler();
  return WaitFor(
      [&] {
        if (h->RegistrationCount(driver) <= registrations_before) return false;
        const std::vector<std::string> eps = h->Endpoints(driver);
        if (eps.empty() || !h->WaitForConnection(driver, eps.back(), true, absl::ZeroDuration())) {
          return false;
        }
        return SliceDevices(api->store(), driver).first >= min_devices;
      },
      timeout, fmt::format("registration of DRA driver {}", driver), host,
      [&] { return DraDriverState(driver); });
}

absl::Status RunContext::WaitReregistrations(absl::Duration timeout) {
  for (auto& h : hosts) {
    const PluginSpec& p = h->spec();
    if (!p.dra_driver.empty()) {
      if (!p.wait_for_registration || !h->running()) continue;
      // Its slices were deleted by the new kubelet's start: a driver need not
      // publish them again, so only the registration is awaited.
      if (absl::Status s = WaitDraDriver(p.dra_driver, 0, 0, timeout, h.get()); !s.ok()) return s;
      continue;
    }
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

absl::Status RunContext::StartHost(PluginHost& h, bool wait) {
  const PluginSpec& p = h.spec();
  int64_t before = node && node->server() ? node->server()->RegistrationCount(p.resource) : 0;
  if (!p.dra_driver.empty()) {
    before = node && node->dra_handler() ? node->dra_handler()->RegistrationCount(p.dra_driver) : 0;
  }
  absl::Status s = h.Start();
  if (!s.ok()) {
    if (s.code() == absl::StatusCode::kFailedPrecondition && p.private_mount) {
      return EnvError(std::string(s.message()));
    }
    return s;
  }
  if (!wait || !p.wait_for_registration) return absl::OkStatus();
  if (!p.dra_driver.empty()) return WaitDraDriver(p.dra_driver, 1, before, sc.timeouts.wait, &h);
  if (p.resource.empty()) return absl::OkStatus();
  return WaitConnected(p.resource, before, sc.timeouts.wait, &h, p.initial_devices);
}

PluginHost* RunContext::Host(const std::string& name) {
  for (auto& h : hosts) {
    if (h->spec().name == name) return h.get();
  }
  return nullptr;
}

absl::StatusOr<std::string> RunContext::PodUid(const std::string& ref) {
  std::vector<node::PodRecord> all = pods->Pods();
  const node::PodRecord* r = FindPod(all, ref);
  if (r == nullptr) {
    std::vector<std::string> names;
    for (const auto& p : all) names.push_back(p.pod.namespace_ + "/" + p.pod.name);
    return absl::NotFoundError(fmt::format("no pod '{}' (pods: {})", ref, ListString(names)));
  }
  return r->pod.uid;
}

}  // namespace devmgr::scenario
