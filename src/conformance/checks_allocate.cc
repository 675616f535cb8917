// allocate.*, preferred.*, prestart.*: the answers the kubelet turns into
// container options (devicemanager allocateContainerResources,
// callGetPreferredAllocationIfAvailable, GetDeviceRunContainerOptions).
#include <atomic>
#include <set>
#include <thread>

#include "common/go_format.h"
#include "conformance/checks.h"
#include "conformance/session.h"
#include "conformance/validation.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace devmgr::conformance {
namespace {

constexpr char kUnknownId[] = "devmgr-conformance-no-such-device";
constexpr int kConcurrentCalls = 8;

// Shared preconditions: a client and enough devices a kubelet would hold
// as allocatable. Each skip names why a kubelet could not make the call
// either.
std::optional<Outcome> Needs(Session& s, size_t n, std::vector<std::string>* ids) {
  if (s.Client() == nullptr) return Outcome::Skip("the plugin's socket was not found");
  if (s.DeviceList() == nullptr) {
    return Outcome::Skip("the plugin sent no device list (see law.first-list)");
  }
  if (std::string why = s.KubeletHoldsNoneWhy(); !why.empty()) return Outcome::Skip(why);
  *ids = s.UsableIds();
  if (ids->size() < n) {
    return Outcome::Skip(
        fmt::format("needs {} healthy device(s), the plugin lists {}: a kubelet "
                    "could not allocate {} either",
                    n, ids->size(), n));
  }
  return std::nullopt;
}

std::vector<std::string> FirstN(const std::vector<std::string>& ids, size_t n) {
  return {ids.begin(), ids.begin() + std::min(n, ids.size())};
}

// "Allocate" requests as a kubelet sends them: one container request with
// one device, and (when the plugin lists several) with three or as many as
// there are; the IDs exactly as listed.
std::vector<v1beta1::AllocateRequest> AllocateShapes(const std::vector<std::string>& ids) {
  std::vector<v1beta1::AllocateRequest> out = {AllocateRequestFor({{ids[0]}})};
  if (ids.size() >= 2) out.push_back(AllocateRequestFor({FirstN(ids, 3)}));
  return out;
}

// Allocate with one device and with several, each answer checked by
// `inspect`, which adds a line per problem.
template <typename Inspect>
Outcome InspectAllocate(Session& s, Inspect inspect, const std::string& what,
                        const std::string& consequence) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 1, &ids)) return *o;
  std::vector<std::string> problems;
  std::vector<std::string> requests;
  std::vector<std::string> asked;
  for (const auto& req : AllocateShapes(ids)) {
    const auto& r_ids = req.container_requests(0).devices_ids();
    asked.push_back(GoQuoteList({r_ids.begin(), r_ids.end()}));
    auto r = s.Client()->Allocate(req, s.t().rpc);
    if (!r.ok()) {
      return Outcome::Fail("Allocate failed: " + r.StatusText())
          .Evidence("request: " + req.ShortDebugString());
    }
    const size_t before = problems.size();
    for (const auto& c : r.resp.container_responses()) inspect(c, &problems);
    if (problems.size() > before) requests.push_back("request: " + req.ShortDebugString());
  }
  if (problems.empty())
    return Outcome::Pass(fmt::format("Allocate of {}", fmt::join(asked, " and ")));
  Outcome o = Outcome::Fail(fmt::format("{}; {}", what, consequence));
  for (auto& p : problems) o.Evidence(p);
  for (auto& r : requests) o.Evidence(r);
  return o;
}

Outcome OnePerContainer(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 1, &ids)) return *o;
  const auto req = AllocateRequestFor({{ids[0]}});
  auto r = s.Client()->Allocate(req, s.t().rpc);
  if (!r.ok()) return Outcome::Fail("Allocate failed: " + r.StatusText());
  if (r.resp.container_responses_size() == 1) return Outcome::Pass("1 container response");
  Outcome o = Outcome::Fail(fmt::format(
      "1 container request got {} container response(s); {}", r.resp.container_responses_size(),
      r.resp.container_responses_size() == 0
          ? "a kubelet fails the pod's admission: no containers return in allocation response"
          : "a kubelet uses only the first"));
  return o.Evidence("request: " + req.ShortDebugString());
}

Outcome RejectsUnknown(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 0, &ids)) return *o;
  auto r = s.Client()->Allocate(AllocateRequestFor({{kUnknownId}}), s.t().rpc);
  if (!r.ok()) return Outcome::Pass("rejected: " + r.StatusText());
  return Outcome::Fail(fmt::format("Allocate of the unknown ID {} succeeded; a plugin that "
                                   "hands out devices it does not have hides bookkeeping bugs",
                                   GoQuote(kUnknownId)))
      .Evidence("answer: " + CanonicalText(r.resp));
}

Outcome RejectsUnhealthy(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 0, &ids)) return *o;
  const auto bad = s.UnhealthyIds();
  if (bad.empty()) return Outcome::Skip("the plugin reports no unhealthy device");
  auto r = s.Client()->Allocate(AllocateRequestFor({{bad[0]}}), s.t().rpc);
  if (!r.ok()) return Outcome::Pass("rejected: " + r.StatusText());
  return Outcome::Fail(fmt::format("Allocate of the unhealthy device {} succeeded; a container "
                                   "would start on a broken device",
                                   GoQuote(bad[0])))
      .Evidence("answer: " + CanonicalText(r.resp));
}

Outcome Deterministic(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 1, &ids)) return *o;
  const auto req = AllocateRequestFor({{ids[0]}});
  auto a = s.Client()->Allocate(req, s.t().rpc);
  auto b = s.Client()->Allocate(req, s.t().rpc);
  const std::string ta = a.ok() ? CanonicalText(a.resp) : a.StatusText();
  const std::string tb = b.ok() ? CanonicalText(b.resp) : b.StatusText();
  if (a.ok() == b.ok() && ta == tb) return Outcome::Pass();
  return Outcome::Fail(
             "the same Allocate request got two different answers; a kubelet that "
             "re-allocates after a restart gives the container different options")
      .Evidence("request: " + req.ShortDebugString())
      .Evidence("first:  " + ta)
      .Evidence("second: " + tb);
}

Outcome AbsolutePaths(Session& s) {
  return InspectAllocate(
      s,
      [](const v1beta1::ContainerAllocateResponse& c, std::vector<std::string>* p) {
        for (const auto& m : c.mounts()) {
          if (!IsAbsolutePath(m.container_path()))
            p->push_back("mount container_path " + GoQuote(m.container_path()));
          if (!IsAbsolutePath(m.host_path()))
            p->push_back("mount host_path " + GoQuote(m.host_path()));
        }
        for (const auto& d : c.devices()) {
          if (!IsAbsolutePath(d.container_path()))
            p->push_back("device container_path " + GoQuote(d.container_path()));
          if (!IsAbsolutePath(d.host_path()))
            p->push_back("device host_path " + GoQuote(d.host_path()));
        }
      },
      "the Allocate answer has paths that are not absolute",
      "the container runtime refuses to create the container");
}

Outcome Permissions(Session& s) {
  return InspectAllocate(
      s,
      [](const v1beta1::ContainerAllocateResponse& c, std::vector<std::string>* p) {
        for (const auto& d : c.devices()) {
          std::string why = PermissionsProblem(d.permissions());
          if (!why.empty()) p->push_back(fmt::format("device {}: {}", d.container_path(), why));
        }
      },
      "device permissions are not a combination of r, w and m",
      "the runtime's device cgroup rule is rejected and the container does not start");
}

Outcome EnvNames(Session& s) {
  return InspectAllocate(
      s,
      [](const v1beta1::ContainerAllocateResponse& c, std::vector<std::string>* p) {
        for (const auto& [k, v] : c.envs()) {
          if (!IsValidEnvName(k)) p->push_back("env name " + GoQuote(k));
        }
      },
      "environment variable names are invalid (allowed: [-._a-zA-Z][-._a-zA-Z0-9]*)",
      "the container sees a broken environment or the runtime rejects it");
}

Outcome CdiNames(Session& s) {
  return InspectAllocate(
      s,
      [](const v1beta1::ContainerAllocateResponse& c, std::vector<std::string>* p) {
        for (const auto& d : c.cdi_devices()) {
          std::string why = CdiNameProblem(d.name());
          if (!why.empty()) p->push_back(why);
        }
      },
      "CDI device names are not fully qualified (<vendor>/<class>=<name>)",
      "the runtime cannot resolve them and the container does not start");
}

Outcome Concurrent(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 1, &ids)) return *o;
  std::vector<CallResult<v1beta1::AllocateResponse>> results(kConcurrentCalls);
  std::vector<std::thread> threads;
  ProbeClient* c = s.Client();
  const absl::Duration timeout = s.t().rpc;
  for (int i = 0; i < kConcurrentCalls; ++i) {
    threads.emplace_back(
        [&, i] { results[i] = c->Allocate(AllocateRequestFor({{ids[i % ids.size()]}}), timeout); });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> failed;
  absl::Duration slowest;
  for (int i = 0; i < kConcurrentCalls; ++i) {
    slowest = std::max(slowest, results[i].latency);
    if (!results[i].ok())
      failed.push_back(fmt::format("call {}: {}", i + 1, results[i].StatusText()));
  }
  Outcome o;
  o.figures.push_back({"slowest of concurrent Allocates", Dur(slowest)});
  if (failed.empty()) {
    o.message =
        fmt::format("{} concurrent calls answered, slowest in {}", kConcurrentCalls, Dur(slowest));
    return o;
  }
  o.status = Status::kFail;
  o.message = fmt::format(
      "{} of {} concurrent Allocate calls failed; the kubelet may allocate "
      "for several pods at once",
      failed.size(), kConcurrentCalls);
  for (auto& f : failed) o.Evidence(f);
  return o;
}

Outcome ListUnchanged(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 1, &ids)) return *o;
  StreamRecorder* r = s.KubeletStream();
  if (r == nullptr || r->MessageCount() == 0) return Outcome::Skip("no ListAndWatch list to watch");
  const size_t before = r->MessageCount();
  const std::string key = DeviceListKey(r->Last()->resp);
  std::set<std::string> ids_before;
  for (const auto& d : r->Last()->resp.devices()) ids_before.insert(d.id());
  s.Client()->Allocate(AllocateRequestFor({{ids[0]}}), s.t().rpc);
  s.Client()->Allocate(AllocateRequestFor({{ids[ids.size() > 1 ? 1 : 0]}}), s.t().rpc);
  r->WaitForMessages(before + 1, s.t().observe);
  r->WaitForEnd(s.t().observe / 4);  // a short grace for follow-up messages
  auto msgs = r->Messages();
  for (size_t i = before; i < msgs.size(); ++i) {
    if (DeviceListKey(msgs[i]->resp) == key) continue;
    std::vector<std::string> added, removed;
    std::set<std::string> now;
    for (const auto& d : msgs[i]->resp.devices()) now.insert(d.id());
    for (const auto& id : now)
      if (!ids_before.count(id)) added.push_back(id);
    for (const auto& id : ids_before)
      if (!now.count(id)) removed.push_back(id);
    return Outcome::Fail(
               "the device list changed after two Allocate calls; the kubelet's "
               "capacity then follows allocations instead of the hardware")
        .Evidence(fmt::format("devices: {} before, {} after", ids_before.size(), now.size()))
        .Evidence("added: " + GoQuoteList(added))
        .Evidence("removed: " + GoQuoteList(removed));
  }
  return Outcome::Pass(
      fmt::format("{} message(s) after Allocate, list unchanged", msgs.size() - before));
}

// GetPreferredAllocation as a kubelet sends it (devicemanager devicesToAllocate):
// available = every free healthy device (here: all of them, no
// pod holds any), must-include = the devices the container already has,
// allocation_size = the container's whole request.
enum class Situation {
  // A fresh pod: nothing reused, must-include empty.
  kFreshPod,
  // An app container reusing a device of its init container: that device
  // is must-include, and the request is larger.
  kReuse,
};
constexpr int kPreferredRequest = 2;

std::string SituationName(Situation w) {
  return w == Situation::kFreshPod ? "fresh pod (must-include empty)"
                                   : "init-container device reused (must-include non-empty)";
}

struct PreferredProbe {
  Situation situation;
  v1beta1::PreferredAllocationRequest req;
  CallResult<v1beta1::PreferredAllocationResponse> res;
  const v1beta1::ContainerPreferredAllocationRequest& creq() const {
    return req.container_requests(0);
  }
  std::vector<std::string> Answer() const {
    const auto& ids = res.resp.container_responses(0).deviceids();
    return {ids.begin(), ids.end()};
  }
  std::string Evidence() const {
    return fmt::format("{}: request {} answer {}", SituationName(situation), req.ShortDebugString(),
                       res.resp.ShortDebugString());
  }
};

v1beta1::PreferredAllocationRequest PreferredRequestFor(Situation w,
                                                        const std::vector<std::string>& ids) {
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : ids) c->add_available_deviceids(id);
  if (w == Situation::kReuse) c->add_must_include_deviceids(ids[0]);
  c->set_allocation_size(std::min<int>(kPreferredRequest, static_cast<int>(ids.size())));
  return req;
}

// Whether a kubelet would call GetPreferredAllocation at all.
std::optional<Outcome> PreferredAdvertised(Session& s, std::vector<std::string>* ids) {
  if (auto o = Needs(s, 1, ids)) return *o;
  auto opts = s.Options();
  if (!opts) return Outcome::Skip("GetDevicePluginOptions failed (see options.answers)");
  if (!opts->get_preferred_allocation_available()) {
    return Outcome::Skip("GetPreferredAllocation is not advertised: a kubelet never calls it");
  }
  return std::nullopt;
}

// Calls GetPreferredAllocation for `w`. A reuse needs two devices (one
// reused, one more requested); with one, a kubelet never sends it.
std::optional<Outcome> CallPreferred(Session& s, Situation w, const std::vector<std::string>& ids,
                                     PreferredProbe* p) {
  p->situation = w;
  p->req = PreferredRequestFor(w, ids);
  p->res = s.Client()->GetPreferredAllocation(p->req, s.t().rpc);
  if (p->res.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return Outcome::Skip("GetPreferredAllocation is not implemented (see options.backed)");
  }
  if (!p->res.ok()) {
    return Outcome::Fail("GetPreferredAllocation failed: " + p->res.StatusText() +
                         "; the kubelet fails the pod's admission with \"device plugin "
                         "GetPreferredAllocation rpc failed with err: ...\"")
        .Evidence(SituationName(w) + ": request " + p->req.ShortDebugString());
  }
  if (p->res.resp.container_responses_size() == 0) {
    return Outcome::Fail("GetPreferredAllocation returned no container response")
        .Evidence(p->Evidence());
  }
  return std::nullopt;
}

// The situations a check covers, given the devices: a reuse needs two.
std::vector<Situation> Situations(const std::vector<std::string>& ids) {
  if (ids.size() >= 2) return {Situation::kFreshPod, Situation::kReuse};
  return {Situation::kFreshPod};
}

// Runs `judge` on the answer to each situation; a line per problem.
template <typename Judge>
Outcome JudgePreferred(Session& s, const std::vector<Situation>& situations, Judge judge,
                       const std::string& what) {
  std::vector<std::string> ids;
  if (auto o = PreferredAdvertised(s, &ids)) return *o;
  std::vector<std::string> problems, evidence, passed;
  for (Situation w : situations) {
    if (w == Situation::kReuse && ids.size() < 2) continue;
    PreferredProbe p;
    if (auto o = CallPreferred(s, w, ids, &p)) return *o;
    std::string problem = judge(p);
    if (problem.empty()) {
      passed.push_back(fmt::format("{}: {}", w == Situation::kFreshPod ? "fresh pod" : "reuse",
                                   GoQuoteList(p.Answer())));
    } else {
      problems.push_back(problem);
      evidence.push_back(p.Evidence());
    }
  }
  if (problems.empty()) return Outcome::Pass(fmt::format("{}", fmt::join(passed, "; ")));
  Outcome o = Outcome::Fail(fmt::format("{}: {}", what, fmt::join(problems, "; ")));
  for (auto& e : evidence) o.Evidence(e);
  return o;
}

Outcome PreferredFreshPod(Session& s) {
  return JudgePreferred(
      s, {Situation::kFreshPod},
      [](const PreferredProbe& p) -> std::string {
        if (!p.Answer().empty()) return "";
        return fmt::format("{} device(s) offered, {} requested, none preferred",
                           p.creq().available_deviceids_size(), p.creq().allocation_size());
      },
      "a fresh pod's request (must-include empty) got an empty preferred set; the kubelet then "
      "picks the devices at random, so the placement the plugin advertises "
      "GetPreferredAllocation for is lost for every new pod");
}

Outcome PreferredSubset(Session& s) {
  return JudgePreferred(
      s, {Situation::kFreshPod, Situation::kReuse},
      [](const PreferredProbe& p) -> std::string {
        const auto& avail = p.creq().available_deviceids();
        std::set<std::string> a(avail.begin(), avail.end());
        std::vector<std::string> extra;
        for (const auto& id : p.Answer()) {
          if (!a.count(id)) extra.push_back(id);
        }
        if (extra.empty()) return "";
        return fmt::format("{}: {} not offered", SituationName(p.situation), GoQuoteList(extra));
      },
      "the preferred set holds IDs that were not offered, which a kubelet drops before picking "
      "other devices at random");
}

Outcome PreferredMustInclude(Session& s) {
  std::vector<std::string> ids;
  if (auto o = PreferredAdvertised(s, &ids)) return *o;
  if (ids.size() < 2) {
    return Outcome::Skip(
        "must-include is sent only when a container reuses a device and requests "
        "more: needs 2 healthy devices, the plugin lists 1");
  }
  return JudgePreferred(
      s, {Situation::kReuse},
      [](const PreferredProbe& p) -> std::string {
        const auto got = p.Answer();
        std::set<std::string> g(got.begin(), got.end());
        std::vector<std::string> missing;
        for (const auto& id : p.creq().must_include_deviceids()) {
          if (!g.count(id)) missing.push_back(id);
        }
        if (missing.empty()) return "";
        return fmt::format("{} left out", GoQuoteList(missing));
      },
      "the preferred set leaves out must-include IDs; the kubelet keeps them anyway, so the "
      "preference is not what the container gets");
}

Outcome PreferredSize(Session& s) {
  return JudgePreferred(
      s, {Situation::kFreshPod, Situation::kReuse},
      [](const PreferredProbe& p) -> std::string {
        const size_t n = p.Answer().size();
        // An empty answer is preferred.fresh-pod's (or, with must-include,
        // preferred.must-include's) finding.
        if (n == 0 || static_cast<int>(n) == p.creq().allocation_size()) return "";
        return fmt::format("{}: allocation_size {} got {} ID(s)", SituationName(p.situation),
                           p.creq().allocation_size(), n);
      },
      "the preferred set is not allocation_size devices; the kubelet fills up or cuts down at "
      "random, losing the plugin's preference");
}

Outcome PreferredDeterministic(Session& s) {
  std::vector<std::string> ids;
  if (auto o = PreferredAdvertised(s, &ids)) return *o;
  const std::vector<Situation> situations = Situations(ids);
  std::vector<std::string> first;
  for (Situation w : situations) {
    PreferredProbe p;
    if (auto o = CallPreferred(s, w, ids, &p)) return *o;
    first.push_back(CanonicalText(p.res.resp));
  }
  for (size_t i = 0; i < situations.size(); ++i) {
    const auto req = PreferredRequestFor(situations[i], ids);
    auto again = s.Client()->GetPreferredAllocation(req, s.t().rpc);
    const std::string b = again.ok() ? CanonicalText(again.resp) : again.StatusText();
    if (again.ok() && b == first[i]) continue;
    return Outcome::Fail("the same GetPreferredAllocation request got two different answers")
        .Evidence(SituationName(situations[i]) + ": request " + req.ShortDebugString())
        .Evidence("first:  " + first[i])
        .Evidence("second: " + b);
  }
  return Outcome::Pass(fmt::format("{} request(s) asked twice, same answers", situations.size()));
}

Outcome PrestartTimely(Session& s) {
  std::vector<std::string> ids;
  if (auto o = Needs(s, 1, &ids)) return *o;
  auto opts = s.Options();
  if (!opts) return Outcome::Skip("GetDevicePluginOptions failed (see options.answers)");
  if (!opts->pre_start_required()) return Outcome::Skip("PreStartContainer is not required");
  s.Client()->Allocate(AllocateRequestFor({{ids[0]}}), s.t().rpc);
  v1beta1::PreStartContainerRequest req;
  req.add_devices_ids(ids[0]);
  auto r = s.Client()->PreStartContainer(req, s.t().prestart);
  if (r.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return Outcome::Skip("PreStartContainer is not implemented (see options.backed)");
  }
  Outcome o = r.ok() ? Outcome::Pass(fmt::format("answered in {}", Dur(r.latency)))
                     : Outcome::Fail(fmt::format("PreStartContainer did not answer OK within {}: "
                                                 "{}; the kubelet fails the container's start with "
                                                 "\"device plugin PreStartContainer rpc failed "
                                                 "with err: ...\"",
                                                 Dur(s.t().prestart), r.StatusText()));
  o.figures.push_back({"PreStartContainer latency", Dur(r.latency)});
  return o;
}

}  // namespace

std::vector<CheckInfo> AllocateChecks() {
  return {
      {"allocate.one-per-container",
       "Allocate answers one response per container request",
       Level::kMust,
       {},
       kNeedNothing,
       OnePerContainer},
      {"allocate.rejects-unknown",
       "Allocate rejects device IDs the plugin does not have",
       Level::kShould,
       {},
       kNeedNothing,
       RejectsUnknown},
      {"allocate.rejects-unhealthy",
       "Allocate rejects unhealthy devices",
       Level::kShould,
       {},
       kNeedNothing,
       RejectsUnhealthy},
      {"allocate.deterministic",
       "Allocate gives the same answer to the same request",
       Level::kShould,
       {},
       kNeedNothing,
       Deterministic},
      {"allocate.absolute-paths",
       "Allocate's mount and device paths are absolute",
       Level::kMust,
       {},
       kNeedNothing,
       AbsolutePaths},
      {"allocate.permissions",
       "Allocate's device permissions are within \"rwm\"",
       Level::kMust,
       {},
       kNeedNothing,
       Permissions},
      {"allocate.env-names",
       "Allocate's environment variable names are valid",
       Level::kMust,
       {},
       kNeedNothing,
       EnvNames},
      {"allocate.cdi-names",
       "Allocate's CDI device names are fully qualified",
       Level::kMust,
       {},
       kNeedNothing,
       CdiNames},
      {"allocate.concurrent",
       "Allocate handles concurrent requests",
       Level::kShould,
       {},
       kNeedNothing,
       Concurrent},
      {"allocate.list-unchanged",
       "Allocate does not change the device list",
       Level::kMust,
       {"[Slow]"},
       kNeedNothing,
       ListUnchanged},
      {"preferred.fresh-pod",
       "GetPreferredAllocation prefers devices for a fresh pod (empty must-include)",
       Level::kMust,
       {},
       kNeedNothing,
       PreferredFreshPod},
      {"preferred.subset",
       "GetPreferredAllocation picks only from the available devices",
       Level::kMust,
       {},
       kNeedNothing,
       PreferredSubset},
      {"preferred.must-include",
       "GetPreferredAllocation includes every must-include device",
       Level::kMust,
       {},
       kNeedNothing,
       PreferredMustInclude},
      {"preferred.size",
       "GetPreferredAllocation returns exactly allocation_size devices",
       Level::kShould,
       {},
       kNeedNothing,
       PreferredSize},
      {"preferred.deterministic",
       "GetPreferredAllocation gives the same answer to the same request",
       Level::kShould,
       {},
       kNeedNothing,
       PreferredDeterministic},
      {"prestart.timely",
       "PreStartContainer answers within 30 s when required",
       Level::kMust,
       {},
       kNeedNothing,
       PrestartTimely},
  };
}

}  // namespace devmgr::conformance
