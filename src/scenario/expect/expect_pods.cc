// `expect.pods`: a pod's admission verdict (exists, admitted, phase, reason,
// message, status_message), and the walk into the kinds that read keys of a
// pod's or a container's expectation (expect_kind.h).
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

absl::Status ParseContainer(const ExpectReader& r, const YAML::Node& k, const YAML::Node& v,
                            ContainerExpect* c) {
  DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(k, "container name", &c->name));
  c->loc = r.Loc(k);
  const std::string where = fmt::format("container '{}'", c->name);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v, where));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(v, ContainerKeys(), where));
  for (const ExpectKind* kind : ExpectKinds()) {
    if (kind->parse_container) DEVMGR_RETURN_IF_ERROR(kind->parse_container(r, v, c));
  }
  return absl::OkStatus();
}

// exists, admitted, phase, reason, message, status_message.
absl::Status ParseAdmission(const ExpectReader& r, const YAML::Node& v, PodExpect* p) {
  if (v["exists"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(v["exists"], "exists", &p->exists));
  if (v["admitted"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(v["admitted"], "admitted", &p->admitted));
  if (v["phase"]) {
    std::string ph;
    DEVMGR_RETURN_IF_ERROR(r.String(v["phase"], "phase", &ph));
    if (ph != "Pending" && ph != "Running" && ph != "Succeeded" && ph != "Failed") {
      return r.Error(v["phase"], fmt::format("phase must be Pending, Running, Succeeded or "
                                             "Failed, not '{}'",
                                             ph));
    }
    p->phase = ph;
  }
  if (v["reason"]) DEVMGR_RETURN_IF_ERROR(r.OptMatcher(v["reason"], "reason", &p->reason));
  if (v["message"]) DEVMGR_RETURN_IF_ERROR(r.OptMatcher(v["message"], "message", &p->message));
  if (v["status_message"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptMatcher(v["status_message"], "status_message", &p->status_message));
  }
  return absl::OkStatus();
}

absl::Status ParsePod(const ExpectReader& r, const YAML::Node& k, const YAML::Node& v,
                      PodExpect* p) {
  DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(k, "pod name", &p->ref));
  p->loc = r.Loc(k);
  const std::string where = fmt::format("expect.pods['{}']", p->ref);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v, where));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(v, PodKeys(), where));
  DEVMGR_RETURN_IF_ERROR(ParseAdmission(r, v, p));
  for (const ExpectKind* kind : ExpectKinds()) {
    if (kind->parse_pod) DEVMGR_RETURN_IF_ERROR(kind->parse_pod(r, v, p));
  }
  if (v["containers"]) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v["containers"], where + ".containers"));
    for (auto it = v["containers"].begin(); it != v["containers"].end(); ++it) {
      ContainerExpect c;
      DEVMGR_RETURN_IF_ERROR(ParseContainer(r, it->first, it->second, &c));
      p->containers.push_back(std::move(c));
    }
  }
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& n, Expectations* e) {
  if (!n["pods"]) return absl::OkStatus();
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n["pods"], "expect.pods"));
  for (auto it = n["pods"].begin(); it != n["pods"].end(); ++it) {
    PodExpect p;
    DEVMGR_RETURN_IF_ERROR(ParsePod(r, it->first, it->second, &p));
    e->pods.push_back(std::move(p));
  }
  return absl::OkStatus();
}

void CheckContainer(const Observed& o, const std::string& pw, const node::PodRecord& rec,
                    const ContainerExpect& c, std::vector<Failure>* out) {
  const std::string w = fmt::format("{}.containers['{}']", pw, c.name);
  const node::ContainerRecord* cr = nullptr;
  for (const auto& x : rec.containers) {
    if (x.name == c.name) cr = &x;
  }
  if (cr == nullptr) {
    std::vector<std::string> names;
    for (const auto& x : rec.containers) names.push_back(x.name);
    Fail(out, c.loc, w, "a container of the pod",
         "no such container; the pod has " + ListString(names));
    return;
  }
  const ContainerCheck check{o, c, rec, *cr, w};
  for (const ExpectKind* kind : ExpectKinds()) {
    if (kind->check_container) kind->check_container(check, out);
  }
}

void CheckAdmission(const PodExpect& p, const std::string& w, const node::PodRecord& rec,
                    std::vector<Failure>* out) {
  const bool admitted = !(rec.phase == pod::Phase::kFailed && !rec.reason.empty());
  if (p.admitted && admitted != *p.admitted) {
    Fail(out, p.loc, w + ".admitted", BoolString(*p.admitted),
         admitted ? "true" : fmt::format("false ({}: {})", rec.reason, rec.message));
  }
  const std::string phase(pod::PhaseName(rec.phase));
  if (p.phase && *p.phase != phase) Fail(out, p.loc, w + ".phase", *p.phase, phase);
  if (p.reason && !p.reason->Matches(rec.reason)) {
    Fail(out, p.loc, w + ".reason", p.reason->Describe(), fmt::format("\"{}\"", rec.reason));
  }
  if (p.message && !p.message->Matches(rec.message)) {
    Fail(out, p.loc, w + ".message", p.message->Describe(), fmt::format("\"{}\"", rec.message));
  }
  if (p.status_message) {
    const std::string sm = admitted ? "" : RejectedStatusMessage(rec.message);
    if (!p.status_message->Matches(sm)) {
      Fail(out, p.loc, w + ".status_message", p.status_message->Describe(),
           fmt::format("\"{}\"", sm));
    }
  }
}

void CheckPod(const PodExpect& p, const Observed& o, std::vector<Failure>* out) {
  const std::string w = fmt::format("pods['{}']", p.ref);
  const node::PodRecord* rec = FindPod(o.pods, p.ref);
  if (p.exists && (rec != nullptr) != *p.exists) {
    Fail(out, p.loc, w + ".exists", BoolString(*p.exists), BoolString(rec != nullptr));
    return;
  }
  if (rec == nullptr) {
    if (!p.exists) {
      std::vector<std::string> names;
      for (const auto& r : o.pods) names.push_back(r.pod.namespace_ + "/" + r.pod.name);
      Fail(out, p.loc, w, "a pod admitted by an earlier step",
           "no such pod; pods: " + ListString(names));
    }
    return;
  }
  CheckAdmission(p, w, *rec, out);
  for (const ContainerExpect& c : p.containers) CheckContainer(o, w, *rec, c, out);
  const PodCheck check{o, p, *rec, w};
  for (const ExpectKind* kind : ExpectKinds()) {
    if (kind->check_pod) kind->check_pod(check, out);
  }
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const PodExpect& p : e.pods) CheckPod(p, o, out);
}

}  // namespace

std::string RejectedStatusMessage(const std::string& message) {
  return "Pod was rejected: " + message;
}

const ExpectKind& PodsExpectKind() {
  static const ExpectKind kKind = {
      .name = "pods",
      .expect_keys = {"pods"},
      .pod_keys = {"exists", "admitted", "phase", "reason", "message", "status_message",
                   "containers"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
