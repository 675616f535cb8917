// restart.*, law.reconnect, latency.*: how the plugin lives through kubelet
// restarts, its own restarts and client disconnects (devicemanager
// re-registration, Start and Stop), and what its RPCs cost.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "common/go_format.h"
#include "conformance/checks.h"
#include "conformance/session.h"
#include "fmt/format.h"

namespace devmgr::conformance {
namespace {

std::set<std::string> Ids(const v1beta1::ListAndWatchResponse& r) {
  std::set<std::string> out;
  for (const auto& d : r.devices()) out.insert(d.id());
  return out;
}

// Leaves a dead socket file at `path`, as a crashed plugin does.
void LeaveStaleSocket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return;
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    // Nothing left behind; the check still runs.
  }
  ::close(fd);
}

// After a restart at `since`: waits for the first registration at or after
// it, its handshake and the first list on the new stream. `*took` is the
// time from `since` to that Register call.
// Without list_required, a missing first list is a skip (law.first-list
// owns that finding).
std::optional<Outcome> AwaitReRegistration(Session& s, const std::string& after, MonoTime since,
                                           size_t connections_before, absl::Duration* took,
                                           bool list_required = true) {
  TestKubelet* k = s.kubelet();
  // In slices, so that a plugin the tester started that has exited non-zero
  // (it cannot register any more) is not waited for the whole window.
  const MonoTime deadline = MonoDeadline(s.t().reregister_within);
  std::optional<size_t> i;
  int code = 0;
  while (!(i = k->WaitForRegistrationSince(since, absl::Milliseconds(100)))) {
    if (MonoNow() >= deadline || (s.target().Exited(&code) && code != 0)) break;
  }
  if (!i) {
    Outcome o = Outcome::Fail(fmt::format(
        "{} after {}; the resource stays at 0 on the node until the plugin registers again",
        code != 0 ? fmt::format("the plugin exited with code {} before it registered again", code)
                  : fmt::format("no Register call within {}", Dur(s.t().reregister_within)),
        after));
    for (auto& l : s.PluginOutput(5)) o.Evidence(l);
    return o;
  }
  *took = MonoSub(k->Registrations()[*i].at, since);
  if (!k->WaitForConnections(connections_before + 1, s.t().serve_wait + s.t().rpc)) {
    return Outcome::Fail(
        fmt::format("re-registered after {} but could not be dialled back", Dur(*took)));
  }
  StreamRecorder* r = k->LatestConnection()->stream.get();
  if (!r->WaitForMessages(1, s.t().first_list_within)) {
    const std::string why =
        fmt::format("re-registered after {}, but {}", Dur(*took), s.NoListReason(r));
    if (!list_required) return Outcome::Skip(why + " (see law.first-list)");
    return Outcome::Fail(why);
  }
  return std::nullopt;
}

Outcome KubeletRestart(Session& s) {
  if (!s.FirstRegistration())
    return Outcome::Skip("the plugin never registered (see registration.timely)");
  // Restart a settled node: the kubelet's stream is open and (normally)
  // has delivered its list.
  if (StreamRecorder* r = s.KubeletStream()) r->WaitForMessages(1, s.t().first_list_within);
  const MonoTime at = MonoNow();
  if (absl::Status st = s.RestartKubelet(); !st.ok()) {
    return Outcome::Fail("could not restart the emulated kubelet: " + std::string(st.message()));
  }
  absl::Duration took;
  if (auto o = AwaitReRegistration(s, "kubelet.sock was re-created in a wiped directory", at, 0,
                                   &took)) {
    return *o;
  }
  Outcome o = Outcome::Pass(fmt::format("re-registered {} after the restart (window {})", Dur(took),
                                        Dur(s.t().reregister_within)));
  o.figures.push_back({"re-registration after kubelet restart", Dur(took)});
  o.Companion(PromptCompanion(s, "re-registered", took, s.t().reregister_within));
  return o;
}

Outcome PluginRestart(Session& s) {
  auto first = s.FirstRegistration();
  if (!first) return Outcome::Skip("the plugin never registered (see registration.timely)");
  const v1beta1::ListAndWatchResponse* list = s.DeviceList();
  if (list == nullptr) return Outcome::Skip("the plugin sent no device list (see law.first-list)");
  const std::set<std::string> before = Ids(*list);
  StreamRecorder* old_stream = s.KubeletStream();
  const std::string old_socket = s.SocketPath();
  const MonoTime stop_at = MonoNow();
  if (!s.StopPlugin()) {
    return Outcome::Fail(
        fmt::format("the plugin did not exit within {} of SIGTERM and was killed; "
                    "a DaemonSet rollout then waits the whole grace period",
                    Dur(s.t().stop_grace)));
  }
  if (old_stream != nullptr && !old_stream->WaitForEnd(s.t().stop_grace)) {
    return Outcome::Fail("the kubelet's ListAndWatch stream stayed open after the plugin stopped");
  }
  // A crashed plugin leaves its socket file behind; the new one must cope.
  if (!old_socket.empty()) LeaveStaleSocket(old_socket);
  const size_t connections_before = s.kubelet()->ConnectionCount();
  const MonoTime start_at = MonoNow();
  if (absl::Status st = s.StartPlugin(); !st.ok()) {
    return Outcome::Fail("could not start the plugin again: " + std::string(st.message()));
  }
  absl::Duration took;
  if (auto o = AwaitReRegistration(s, "the plugin was started again", start_at, connections_before,
                                   &took, false)) {
    return *o;
  }
  const auto after = Ids(s.kubelet()->LatestConnection()->stream->First()->resp);
  if (after != before) {
    std::vector<std::string> gone, added;
    for (const auto& id : before)
      if (!after.count(id)) gone.push_back(id);
    for (const auto& id : after)
      if (!before.count(id)) added.push_back(id);
    return Outcome::Fail(
               "device IDs changed across the restart; allocations in the kubelet's "
               "checkpoint refer to the old IDs and restarted containers fail")
        .Evidence("gone: " + GoQuoteList(gone))
        .Evidence("new: " + GoQuoteList(added));
  }
  Outcome o = Outcome::Pass(fmt::format("stopped in {}, re-registered {} after the start",
                                        Dur(MonoSub(start_at, stop_at)), Dur(took)));
  o.figures.push_back({"re-registration after plugin restart", Dur(took)});
  return o;
}

Outcome Reconnect(Session& s) {
  ProbeClient* c = s.Client();
  if (c == nullptr) return Outcome::Skip("the plugin's socket was not found");
  auto first = c->ListAndWatch();
  if (!first->WaitForMessages(1, s.t().first_list_within)) {
    return Outcome::Skip("a new ListAndWatch stream got no list (see law.first-list)");
  }
  first->Cancel();
  auto second = c->ListAndWatch();
  if (!second->WaitForMessages(1, s.t().first_list_within)) {
    auto st = second->end_status();
    return Outcome::Fail(
        fmt::format("after the client closed a ListAndWatch stream, a new stream "
                    "got no device list within {}{}; a restarted kubelet opens "
                    "a new stream and would see no devices",
                    Dur(s.t().first_list_within),
                    st ? " (it ended: " + std::string(st->error_message()) + ")" : ""));
  }
  second->Cancel();
  auto opts = c->GetDevicePluginOptions(s.t().rpc);
  if (!opts.ok()) {
    return Outcome::Fail("after the client disconnects, GetDevicePluginOptions fails: " +
                         opts.StatusText());
  }
  return Outcome::Pass("a second stream got the list; the plugin still answers");
}

struct Samples {
  std::string rpc;
  std::vector<absl::Duration> ok;
  int errors = 0;
};

absl::Duration Percentile(std::vector<absl::Duration> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  i = std::clamp<size_t>(i, 1, v.size());
  return v[i - 1];
}

Outcome Latency(Session& s) {
  ProbeClient* c = s.Client();
  if (c == nullptr) return Outcome::Skip("the plugin's socket was not found");
  const int n = std::max(1, s.t().latency_samples);
  std::vector<Samples> all;
  auto measure = [&](const std::string& name, auto call) {
    Samples smp{name, {}, 0};
    for (int i = 0; i < n; ++i) {
      auto r = call();
      if (r.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) return;
      if (r.ok()) {
        smp.ok.push_back(r.latency);
      } else {
        ++smp.errors;
      }
    }
    all.push_back(std::move(smp));
  };
  measure("GetDevicePluginOptions", [&] { return c->GetDevicePluginOptions(s.t().rpc); });
  const std::vector<std::string> ids = s.UsableIds();
  if (!ids.empty()) {
    const auto req = AllocateRequestFor({{ids[0]}});
    measure("Allocate", [&] { return c->Allocate(req, s.t().rpc); });
  }
  auto opts = s.Options();
  if (opts && opts->get_preferred_allocation_available() && ids.size() >= 2) {
    v1beta1::PreferredAllocationRequest req;
    auto* cr = req.add_container_requests();
    for (const auto& id : ids) cr->add_available_deviceids(id);
    cr->set_allocation_size(1);
    measure("GetPreferredAllocation", [&] { return c->GetPreferredAllocation(req, s.t().rpc); });
  }
  Outcome o;
  std::vector<std::string> over;
  for (const auto& smp : all) {
    if (smp.ok.empty()) {
      o.figures.push_back({smp.rpc, fmt::format("no successful call, {} error(s)", smp.errors)});
      continue;
    }
    const absl::Duration p50 = Percentile(smp.ok, 0.5), p99 = Percentile(smp.ok, 0.99);
    o.figures.push_back({smp.rpc + " p50", Dur(p50)});
    o.figures.push_back({smp.rpc + " p99", Dur(p99)});
    if (smp.errors > 0)
      o.figures.push_back({smp.rpc + " errors", fmt::format("{}/{}", smp.errors, n)});
    if (p99 > s.t().latency_budget) over.push_back(fmt::format("{} p99 {}", smp.rpc, Dur(p99)));
  }
  if (StreamRecorder* r = s.KubeletStream(); r != nullptr && r->First() != nullptr) {
    o.figures.push_back({"ListAndWatch first list", Dur(MonoSub(r->First()->at, r->opened_at()))});
  }
  std::string summary;
  for (const auto& f : o.figures) summary += (summary.empty() ? "" : ", ") + f.name + " " + f.value;
  if (!over.empty()) {
    o.status = Status::kFail;
    o.message =
        fmt::format("over the {} budget: {}", Dur(s.t().latency_budget), fmt::join(over, ", "));
    o.Evidence(summary);
  } else {
    o.message = summary;
  }
  return o;
}

}  // namespace

std::vector<CheckInfo> LifecycleChecks() {
  return {
      {"law.reconnect",
       "After a client disconnect, a second ListAndWatch gets the list and the plugin still "
       "answers",
       Level::kMust,
       {},
       kNeedNothing,
       Reconnect},
      {"restart.kubelet",
       "The plugin re-registers after a kubelet restart",
       Level::kMust,
       {"[Disruptive]"},
       kNeedRegistration,
       KubeletRestart,
       CompanionInfo{"restart.kubelet-prompt",
                     "The plugin re-registers promptly after a kubelet restart", Level::kShould}},
      {"restart.plugin",
       "The plugin stops on SIGTERM and comes back with the same devices",
       Level::kMust,
       {"[Disruptive]"},
       kNeedRegistration | kNeedStartedByTester | kNeedDeviceList,
       PluginRestart},
      {"latency.rpcs", "RPC latency (p50/p99) per RPC", Level::kInfo, {}, kNeedNothing, Latency},
  };
}

}  // namespace devmgr::conformance
