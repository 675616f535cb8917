// The DRA catalogue: dra.registration, dra.serves-first, dra.services, dra.slices, dra.prepare.*,
// dra.unprepare.*, dra.health.stream (dra_health_check.cc), dra.calls.timely, and the disruptive
// dra.restart.*, dra.slices.wiped.
// docs/conformance.md gives each check's source in the kubelet (pkg/kubelet/cm/dra) and the helper
// library.
#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "apiserver/store.h"
#include "conformance/checks.h"
#include "conformance/dra_catalogue.h"
#include "conformance/dra_health_check.h"
#include "conformance/dra_session.h"
#include "conformance/probe.h"
#include "dra/services.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace devmgr::conformance {
namespace {

using nlohmann::json;

std::string D(absl::Duration d) { return Dur(d); }

Outcome NotRegistered(const DraSession& s) {
  return Outcome::Skip(s.NoRegistrationReason() + " (see dra.registration, dra.services)");
}

bool TimedOut(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::StrContains(s.message(), "DeadlineExceeded");
}

// A prepare a check needs before it can judge failed: a skip pointing at the
// check that judges that failure.
Outcome PrepareSkip(const std::string& what, const absl::Status& s) {
  return Outcome::Skip(fmt::format("{} failed: {} (see {})", what, std::string(s.message()),
                                   TimedOut(s) ? "dra.calls.timely" : "dra.prepare.answers-all"));
}

// A failed call: a timeout is dra.calls.timely's finding, anything else this check's.
Outcome CallFailed(const std::string& what, const absl::Status& s) {
  if (TimedOut(s)) {
    return Outcome::Skip(fmt::format("{} was not answered in time: {} (see dra.calls.timely)", what,
                                     std::string(s.message())));
  }
  return Outcome::Fail(fmt::format("{} failed: {}", what, std::string(s.message())));
}

std::string Key(const std::string& pool, const std::string& device) { return pool + "/" + device; }

std::string DevicesText(const std::vector<dra::ResponseDevice>& devices) {
  std::vector<std::string> out;
  for (const dra::ResponseDevice& d : devices) {
    out.push_back(fmt::format("{} (requests [{}], CDI [{}])", Key(d.pool_name, d.device_name),
                              fmt::join(d.request_names, " "), fmt::join(d.cdi_device_ids, " ")));
  }
  return "[" + fmt::format("{}", fmt::join(out, ", ")) + "]";
}

std::set<std::string> DeviceKeys(const std::vector<dra::ResponseDevice>& devices) {
  std::set<std::string> out;
  for (const dra::ResponseDevice& d : devices) out.insert(Key(d.pool_name, d.device_name));
  return out;
}

// The claims a check prepares, unprepared and deleted when it is done.
class Claims {
 public:
  explicit Claims(DraSession& s) : s_(s) {}
  ~Claims() {
    if (!claims_.empty()) s_.Unprepare(Refs()).IgnoreError();
    for (const DraTestClaim& c : claims_) s_.DeleteClaim(c);
  }
  Claims(const Claims&) = delete;
  Claims& operator=(const Claims&) = delete;

  // Creates and allocates claim `name` (spec.devices `devices`, or one
  // request for one device); nullptr with *skip set when it cannot.
  const DraTestClaim* Add(const std::string& name, Outcome* skip, const json& devices = json()) {
    absl::StatusOr<DraTestClaim> c =
        devices.is_null() ? s_.NewClaim(name) : s_.NewClaimWith(name, devices);
    if (!c.ok()) {
      *skip = Outcome::Skip(fmt::format("cannot allocate claim {} from the driver's slices: {}",
                                        name, std::string(c.status().message())));
      return nullptr;
    }
    claims_.push_back(*std::move(c));
    return &claims_.back();
  }
  // Add(name), then one NodePrepareResources of every claim so far: its answer, with *claim
  // the new claim; nullopt with *stop the outcome that ends the check when the claim cannot
  // be made or the call fails (a skip: dra.prepare.answers-all judges the call). `what`
  // names the call in the skip.
  std::optional<dra::PreparedClaims> AddPrepared(const std::string& name,
                                                 const DraTestClaim** claim, Outcome* stop,
                                                 const std::string& what = "NodePrepareResources") {
    *claim = Add(name, stop);
    if (*claim == nullptr) return std::nullopt;
    absl::StatusOr<dra::PreparedClaims> r = s_.Prepare(Refs());
    if (!r.ok()) {
      *stop = Outcome::Skip(fmt::format("{} failed: {} (see dra.prepare.answers-all)", what,
                                        std::string(r.status().message())));
      return std::nullopt;
    }
    return *std::move(r);
  }
  std::vector<dra::Claim> Refs() const {
    std::vector<dra::Claim> out;
    for (const DraTestClaim& c : claims_) out.push_back(c.claim);
    return out;
  }
  std::vector<DraTestClaim> all() const { return {claims_.begin(), claims_.end()}; }

 private:
  DraSession& s_;
  std::deque<DraTestClaim> claims_;  // stable addresses for Add's callers
};

// What a prepare check needs before it can call: a registered driver and its slices.
std::optional<Outcome> NotReady(DraSession& s) {
  if (s.Driver().empty()) return NotRegistered(s);
  if (s.Slices().empty()) {
    return Outcome::Skip("the driver published no complete ResourceSlice pool (see dra.slices)");
  }
  return std::nullopt;
}

std::string ClaimText(const DraTestClaim& c) {
  return fmt::format("claim {}/{} (UID {})", c.claim.namespace_, c.claim.name, c.claim.uid);
}

// " (dialled at HOST)" for an endpoint inside the driver's binds, else "".
std::string Dialled(const DraSession& s, const std::string& endpoint) {
  const std::string host = s.HostPath(endpoint);
  return host == endpoint ? "" : fmt::format(" (dialled at {})", host);
}

Outcome Registration(DraSession& s) {
  std::optional<DraRegistrationRecord> r = s.FirstInfo();
  if (!r) {
    int code = 0;
    Outcome o = Outcome::Fail(
        s.target().Exited(&code)
            ? fmt::format("the driver exited with code {} before it registered", code)
            : fmt::format("no registration socket in {} answered GetInfo within {} of the "
                          "driver's start; the kubelet never learns of the driver",
                          s.env().registry_dir, D(s.t().register_within)));
    for (const DraRegistrationRecord& f : s.Registrations()) {
      o.Evidence(fmt::format("GetInfo on {}: {}", f.socket, std::string(f.info_status.message())));
    }
    for (auto& l : s.DriverOutput(5)) o.Evidence(l);
    return o;
  }
  const pluginmanager::RegistrationInfo& i = r->info;
  const std::string info =
      fmt::format("GetInfo: type \"{}\", name \"{}\", endpoint \"{}\"", i.type, i.name, i.endpoint);
  if (i.type != "DRAPlugin") {
    return Outcome::Fail(fmt::format("GetInfo answers type \"{}\", not \"DRAPlugin\": the kubelet "
                                     "hands the plugin to another handler (or none) and never "
                                     "calls it for ResourceClaims",
                                     i.type))
        .Evidence(info)
        .Evidence("the kubelet answered: " + (r->error.empty() ? "-" : r->error));
  }
  if (i.name.empty()) {
    return Outcome::Fail(
               "GetInfo answers an empty name; the kubelet registers the driver under it but "
               "never calls it (\"DRA driver name is empty\"), and once it is gone for 30 s "
               "deletes every ResourceSlice of the node")
        .Evidence(info);
  }
  if (i.endpoint.empty() || i.endpoint.front() != '/') {
    return Outcome::Fail(fmt::format("endpoint \"{}\" is not an absolute path; the kubelet dials "
                                     "the DRA socket at exactly that path",
                                     i.endpoint))
        .Evidence(info);
  }
  if (!SocketAccepts(s.HostPath(i.endpoint))) {
    return Outcome::Fail(fmt::format("nothing accepts connections on the endpoint {}{}; every "
                                     "NodePrepareResources of the kubelet fails",
                                     i.endpoint, Dialled(s, i.endpoint)))
        .Evidence(info);
  }
  const absl::Duration took = MonoSub(r->at, s.driver_started_at());
  Outcome o =
      Outcome::Pass(fmt::format("driver \"{}\" registered {} after its start, endpoint {}{}",
                                i.name, D(took), i.endpoint, Dialled(s, i.endpoint)));
  o.figures.push_back({"time to GetInfo", D(took)});
  return o;
}

Outcome ServesFirst(DraSession& s) {
  std::optional<DraRegistrationRecord> r = s.FirstInfo();
  if (!r) return Outcome::Skip("the driver never answered GetInfo (see dra.registration)");
  const std::string& e = r->info.endpoint;
  if (e.empty() || e.front() != '/') {
    return Outcome::Skip("the endpoint is not an absolute path (see dra.registration)");
  }
  if (r->served_at_info) {
    return Outcome::Pass("the endpoint accepted a connection when GetInfo answered");
  }
  return Outcome::Fail(fmt::format("the endpoint {} accepted no connection when GetInfo "
                                   "answered; the kubelet registers the driver at once and "
                                   "its calls fail until the socket is served",
                                   e))
      .Evidence(SocketAccepts(s.HostPath(e)) ? "it accepts connections now"
                                             : "it accepts none now");
}

Outcome Services(DraSession& s) {
  std::optional<DraRegistrationRecord> r = s.FirstInfo();
  if (!r) return Outcome::Skip("the driver never answered GetInfo (see dra.registration)");
  const pluginmanager::RegistrationInfo& i = r->info;
  const std::string advertised = fmt::format("[{}]", fmt::join(i.supported_versions, ", "));
  absl::StatusOr<dra::DraService> chosen =
      dra::ChooseService(s.profile(), i.name, i.endpoint, i.supported_versions);
  if (!chosen.ok()) {
    return Outcome::Fail(fmt::format("the kubelet {} refuses the registration: {}",
                                     s.profile().name, std::string(chosen.status().message())))
        .Evidence("supported_versions: " + advertised);
  }
  return Outcome::Pass(fmt::format("the kubelet {} calls {} (advertised {})", s.profile().name,
                                   dra::ServiceName(*chosen), advertised));
}

// Writes of ResourceSlices the endpoint refused, as evidence.
std::vector<std::string> RefusedSliceWrites(DraSession& s) {
  std::vector<std::string> out;
  for (const apiserver::RequestRecord& r : s.api().Requests()) {
    if (r.status >= 400 && r.method != "GET" && absl::StrContains(r.target, "/resourceslices")) {
      out.push_back(fmt::format("{} {} answered {}", r.method, r.target, r.status));
    }
  }
  return out;
}

Outcome Slices(DraSession& s) {
  if (s.Driver().empty()) return NotRegistered(s);
  const std::vector<json>& slices = s.Slices();
  if (slices.empty()) {
    Outcome o = Outcome::Fail(fmt::format(
        "no complete pool of valid ResourceSlices with spec.driver \"{}\" and spec.nodeName "
        "\"{}\" within {}; the scheduler has no device of the driver to allocate",
        s.Driver(), s.env().node_name, D(s.t().publish_within)));
    for (const std::string& e : RefusedSliceWrites(s)) o.Evidence(e);
    for (auto& l : s.DriverOutput(5)) o.Evidence(l);
    return o;
  }
  std::set<std::string> pools;
  size_t devices = 0;
  for (const json& sl : slices) {
    const json spec = sl.value("spec", json::object());
    pools.insert(spec.value("pool", json::object()).value("name", ""));
    devices += spec.value("devices", json::array()).size();
  }
  return Outcome::Pass(fmt::format("{} slice(s), pool(s) [{}], {} device(s)", slices.size(),
                                   fmt::join(pools, ", "), devices));
}

Outcome PrepareAnswersAll(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* c = claims.Add("conformance-answers", &skip);
  if (c == nullptr) return skip;
  absl::StatusOr<dra::PreparedClaims> r = s.Prepare(claims.Refs());
  if (!r.ok()) {
    return CallFailed("NodePrepareResources of " + ClaimText(*c), r.status())
        .Evidence("a kubelet fails the pod's admission with this error and retries");
  }
  return Outcome::Pass(fmt::format("{}: {}", ClaimText(*c), DevicesText(r->at(c->claim.uid))));
}

// Why `devices` (the answer for `c`) do not match its allocation and the
// driver's slices; "" when they do.
std::string DeviceMismatch(DraSession& s, const DraTestClaim& c,
                           const std::vector<dra::ResponseDevice>& devices) {
  std::set<std::string> published, allocated;
  std::map<std::string, std::set<std::string>> requests;  // allocated device -> requests
  for (const json& sl : s.Slices()) {
    const json spec = sl.value("spec", json::object());
    const std::string pool = spec.value("pool", json::object()).value("name", "");
    for (const json& d : spec.value("devices", json::array())) {
      published.insert(Key(pool, d.value("name", "")));
    }
  }
  for (const json& res : c.results) {
    if (res.value("driver", "") != s.Driver()) continue;
    const std::string k = Key(res.value("pool", ""), res.value("device", ""));
    allocated.insert(k);
    requests[k].insert(res.value("request", ""));
  }
  for (const dra::ResponseDevice& d : devices) {
    const std::string k = Key(d.pool_name, d.device_name);
    if (!published.count(k)) return fmt::format("device {} is in none of the driver's slices", k);
    if (!allocated.count(k)) return fmt::format("device {} is not allocated to the claim", k);
    for (const std::string& rn : d.request_names) {
      if (!requests[k].count(rn)) {
        return fmt::format("device {} names request \"{}\", which it is not allocated for", k, rn);
      }
    }
  }
  for (const std::string& k : allocated) {
    if (!DeviceKeys(devices).count(k)) {
      return fmt::format("allocated device {} is missing from the answer", k);
    }
  }
  return "";
}

Outcome PrepareDevices(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome stop;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> r = claims.AddPrepared("conformance-devices", &c, &stop);
  if (!r) return stop;
  const std::vector<dra::ResponseDevice>& got = r->at(c->claim.uid);
  const std::string allocation = "allocation: " + c->results.dump();
  if (std::string why = DeviceMismatch(s, *c, got); !why.empty()) {
    return Outcome::Fail(fmt::format("{}: {}; the kubelet hands the container the CDI devices "
                                     "of the answer, and PodResources reports them",
                                     ClaimText(*c), why))
        .Evidence("answer: " + DevicesText(got))
        .Evidence(allocation);
  }
  return Outcome::Pass(fmt::format("{}: {} as allocated", ClaimText(*c), DevicesText(got)));
}

// The CDI devices of the specs in `dir` (*.json; the tester reads no YAML
// specs), as "<kind>=<name>", and the files it could not read.
std::set<std::string> CdiDevices(const std::string& dir, std::vector<std::string>* unread) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json") {
      if (entry.path().extension() == ".yaml") unread->push_back(path + " (YAML, not read)");
      continue;
    }
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const json spec = json::parse(text.str(), nullptr, false);
    if (spec.is_discarded() || !spec.is_object()) {
      unread->push_back(path + " (not a JSON object)");
      continue;
    }
    const std::string kind = spec.value("kind", "");
    for (const json& d : spec.value("devices", json::array())) {
      if (d.is_object()) out.insert(kind + "=" + d.value("name", ""));
    }
  }
  return out;
}

Outcome PrepareTwice(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome stop;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> first =
      claims.AddPrepared("conformance-twice", &c, &stop, "the first NodePrepareResources");
  if (!first) return stop;
  std::vector<std::string> unread;
  const std::set<std::string> cdi_before = CdiDevices(s.env().cdi_dir, &unread);
  absl::StatusOr<dra::PreparedClaims> second = s.Prepare(claims.Refs());
  if (!second.ok()) {
    return CallFailed("the second NodePrepareResources of a prepared claim", second.status())
        .Evidence(
            "a kubelet calls NodePrepareResources again after its restart (prepared "
            "claims are not checkpointed as prepared)");
  }
  const auto& a = first->at(c->claim.uid);
  const auto& b = second->at(c->claim.uid);
  if (DeviceKeys(a) != DeviceKeys(b)) {
    return Outcome::Fail(fmt::format("{}: a second NodePrepareResources answers other devices; "
                                     "after a kubelet restart its containers would get devices "
                                     "other than those they run with",
                                     ClaimText(*c)))
        .Evidence("first:  " + DevicesText(a))
        .Evidence("second: " + DevicesText(b));
  }
  std::vector<std::string> added;
  for (const std::string& d : CdiDevices(s.env().cdi_dir, &unread)) {
    if (!cdi_before.count(d)) added.push_back(d);
  }
  if (!added.empty()) {
    return Outcome::Fail(
        fmt::format("{}: the second NodePrepareResources added CDI device(s) "
                    "[{}] to the CDI root; every kubelet restart leaves more "
                    "state behind",
                    ClaimText(*c), fmt::join(added, ", ")));
  }
  return Outcome::Pass(fmt::format("{}: {} both times", ClaimText(*c), DevicesText(a)));
}

Outcome UnprepareUnknown(DraSession& s) {
  if (s.Driver().empty()) return NotRegistered(s);
  const dra::Claim unknown{kDraNamespace, apiserver::NewUid(), "conformance-unknown"};
  absl::Status st = s.Unprepare({unknown});
  const std::string what = fmt::format(
      "NodeUnprepareResources of claim {}/{} (UID {}), which the driver never "
      "prepared and the API does not hold",
      unknown.namespace_, unknown.name, unknown.uid);
  if (!st.ok()) {
    return CallFailed(what, st).Evidence(
        "the kubelet unprepares claims whose object is gone, and retries until it succeeds: the "
        "pod stays Terminating meanwhile");
  }
  return Outcome::Pass(what + " succeeded");
}

Outcome UnprepareDeleted(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome stop;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> r = claims.AddPrepared("conformance-deleted", &c, &stop);
  if (!r) return stop;
  // The pod and its claim are gone from the API before the kubelet
  // unprepares (a force-deleted pod, a deleted namespace).
  s.DeleteClaim(*c);
  const std::string what = fmt::format(
      "NodeUnprepareResources of the prepared {}, deleted from the API before", ClaimText(*c));
  if (absl::Status u = s.Unprepare(claims.Refs()); !u.ok()) {
    return CallFailed(what, u).Evidence(
        "the kubelet unprepares without the claim object and retries until it succeeds: the pod "
        "stays Terminating meanwhile");
  }
  return Outcome::Pass(what + " succeeded");
}

Outcome PrepareReplaced(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  const std::string name = "conformance-replaced";
  absl::StatusOr<DraTestClaim> old = s.NewClaim(name);
  if (!old.ok()) {
    return Outcome::Skip(fmt::format("cannot allocate claim {} from the driver's slices: {}", name,
                                     std::string(old.status().message())));
  }
  // Deleted and re-created under the same name (a force-deleted pod's
  // claim), while the kubelet still prepares the one it read.
  s.DeleteClaim(*old);
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* now = claims.Add(name, &skip);
  if (now == nullptr) return skip;
  absl::StatusOr<dra::PreparedClaims> r = s.Prepare({old->claim});
  s.Unprepare({old->claim}).IgnoreError();
  const std::string what = fmt::format(
      "NodePrepareResources of {}, which the API now holds "
      "under UID {}",
      ClaimText(*old), now->claim.uid);
  if (r.ok()) {
    return Outcome::Fail(
        fmt::format("{} prepared it: {}; a driver must compare the UID and "
                    "refuse a replaced claim, or the old pod gets the new "
                    "claim's devices",
                    what, DevicesText(r->at(old->claim.uid))));
  }
  if (TimedOut(r.status())) return CallFailed(what, r.status());
  return Outcome::Pass(fmt::format("{} was refused: {}", what, std::string(r.status().message())));
}

Outcome PrepareCdi(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome stop;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> r = claims.AddPrepared("conformance-cdi", &c, &stop);
  if (!r) return stop;
  std::vector<std::string> unread;
  const std::set<std::string> known = CdiDevices(s.env().cdi_dir, &unread);
  std::vector<std::string> ids, missing;
  for (const dra::ResponseDevice& d : r->at(c->claim.uid)) {
    for (const std::string& id : d.cdi_device_ids) {
      ids.push_back(id);
      if (!known.count(id)) missing.push_back(id);
    }
  }
  if (ids.empty()) return Outcome::Skip("the driver answered no CDI device ID");
  if (!missing.empty()) {
    Outcome o = Outcome::Fail(
        fmt::format("CDI device(s) [{}] of {} resolve to no device of a CDI spec in the CDI "
                    "root {}; the container runtime fails the container (unresolvable CDI "
                    "devices)",
                    fmt::join(missing, ", "), ClaimText(*c), s.env().cdi_dir));
    o.Evidence(fmt::format("devices of the specs there: [{}]", fmt::join(known, ", ")));
    for (const std::string& u : unread) o.Evidence(u);
    return o;
  }
  return Outcome::Pass(
      fmt::format("{}: [{}] resolve in {}", ClaimText(*c), fmt::join(ids, ", "), s.env().cdi_dir));
}

Outcome PrepareAfterUnprepare(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome stop;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> first =
      claims.AddPrepared("conformance-again", &c, &stop, "the first NodePrepareResources");
  if (!first) return stop;
  if (absl::Status u = s.Unprepare(claims.Refs()); !u.ok()) {
    return CallFailed("NodeUnprepareResources of the prepared " + ClaimText(*c), u);
  }
  absl::StatusOr<dra::PreparedClaims> again = s.Prepare(claims.Refs());
  if (!again.ok()) {
    return CallFailed("NodePrepareResources after NodeUnprepareResources of " + ClaimText(*c),
                      again.status())
        .Evidence("a pod that uses the claim again (or a kubelet that retries) needs it");
  }
  const auto& a = first->at(c->claim.uid);
  const auto& b = again->at(c->claim.uid);
  if (DeviceKeys(a) != DeviceKeys(b)) {
    return Outcome::Fail(fmt::format("{}: prepared again, it answers other devices than the "
                                     "same allocation got before",
                                     ClaimText(*c)))
        .Evidence("first: " + DevicesText(a))
        .Evidence("again: " + DevicesText(b));
  }
  return Outcome::Pass(fmt::format("{}: prepared, unprepared and prepared again: {}", ClaimText(*c),
                                   DevicesText(b)));
}

Outcome PrepareBatched(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* a = claims.Add("conformance-batch-a", &skip);
  if (a == nullptr) return skip;
  const DraTestClaim* b = claims.Add("conformance-batch-b", &skip);
  if (b == nullptr) return skip;
  const std::vector<DraTestClaim> all = claims.all();
  absl::StatusOr<dra::PreparedClaims> r = s.Prepare(claims.Refs());
  if (!r.ok()) {
    return CallFailed("NodePrepareResources of two claims in one call", r.status())
        .Evidence("the kubelet batches a pod's claims per driver into one call");
  }
  const auto& da = r->at(all[0].claim.uid);
  const auto& db = r->at(all[1].claim.uid);
  std::set<std::string> both;
  for (const std::string& k : DeviceKeys(da)) {
    if (DeviceKeys(db).count(k)) both.insert(k);
  }
  if (!both.empty() || da.empty() || db.empty()) {
    return Outcome::Fail(fmt::format("two claims prepared in one call are not answered per "
                                     "claim: {}",
                                     both.empty()
                                         ? "a claim has no device"
                                         : fmt::format("both hold [{}]", fmt::join(both, ", "))))
        .Evidence(ClaimText(all[0]) + ": " + DevicesText(da))
        .Evidence(ClaimText(all[1]) + ": " + DevicesText(db));
  }
  return Outcome::Pass(fmt::format("{}: {}; {}: {}", all[0].claim.name, DevicesText(da),
                                   all[1].claim.name, DevicesText(db)));
}

// The spec.devices of dra.prepare.multi-driver's claim: one device of the
// driver (request "req") and one of the tester's second driver (request
// "other"), with an opaque config for the second driver's request, as a
// claim that asks a GPU and a NIC together has.
json MultiDriverDevices() {
  auto request = [](const char* name, const char* device_class) {
    return json{
        {"name", name},
        {"exactly",
         {{"deviceClassName", device_class}, {"allocationMode", "ExactCount"}, {"count", 1}}}};
  };
  const json other_config = {{"apiVersion", std::string(kDraOtherDriver) + "/v1"},
                             {"kind", "OtherConfig"}};
  return {
      {"requests",
       json::array({request("req", kDraDeviceClass), request("other", kDraOtherDeviceClass)})},
      {"config",
       json::array({{{"requests", json::array({"other"})},
                     {"opaque", {{"driver", kDraOtherDriver}, {"parameters", other_config}}}}})}};
}

// "pool/device (request)" of the results of `driver` (of every other driver
// when `other` is set).
std::vector<std::string> ResultsText(const json& results, const std::string& driver, bool other) {
  std::vector<std::string> out;
  for (const json& r : results) {
    if ((r.value("driver", "") == driver) == other) continue;
    out.push_back(fmt::format("{} {} ({})", r.value("driver", ""),
                              Key(r.value("pool", ""), r.value("device", "")),
                              r.value("request", "")));
  }
  return out;
}

// The devices of `answer` that are the other driver's results of `c` and
// none of the driver's own.
std::vector<std::string> ForeignDevices(const DraTestClaim& c, const std::string& driver,
                                        const std::vector<dra::ResponseDevice>& answer) {
  std::set<std::string> own, foreign;
  for (const json& r : c.results) {
    const std::string k = Key(r.value("pool", ""), r.value("device", ""));
    (r.value("driver", "") == driver ? own : foreign).insert(k);
  }
  std::vector<std::string> out;
  for (const std::string& k : DeviceKeys(answer)) {
    if (foreign.count(k) && !own.count(k)) out.push_back(k);
  }
  return out;
}

// Whether the driver answers a claim of its own devices only other than
// allocated too (dra.prepare.devices' finding, not the multi-driver one's).
bool SingleDriverMismatch(DraSession& s) {
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* c = claims.Add("conformance-multi-driver-single", &skip);
  if (c == nullptr) return false;
  absl::StatusOr<dra::PreparedClaims> r = s.Prepare(claims.Refs());
  return r.ok() && !DeviceMismatch(s, *c, r->at(c->claim.uid)).empty();
}

Outcome PrepareMultiDriver(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  if (absl::Status st = s.PublishOtherDriver(); !st.ok()) {
    return Outcome::Skip("the tester could not publish its second driver's slice: " +
                         std::string(st.message()));
  }
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* c = claims.Add("conformance-multi-driver", &skip, MultiDriverDevices());
  if (c == nullptr) return skip;
  const std::string what = fmt::format("{}, allocated [{}] and [{}]", ClaimText(*c),
                                       fmt::join(ResultsText(c->results, s.Driver(), false), ", "),
                                       fmt::join(ResultsText(c->results, s.Driver(), true), ", "));
  const std::string kubelet = fmt::format(
      "the kubelet calls NodePrepareResources of each driver of an allocation with the same "
      "claim (here {} and {}): a driver prepares the results whose driver is its own and "
      "skips the others",
      s.Driver(), kDraOtherDriver);
  absl::StatusOr<dra::PreparedClaims> r = s.Prepare(claims.Refs());
  if (!r.ok()) {
    return CallFailed("NodePrepareResources of " + what, r.status())
        .Evidence(kubelet)
        .Evidence("the pod is never admitted: the kubelet retries and fails again");
  }
  const std::vector<dra::ResponseDevice>& got = r->at(c->claim.uid);
  if (std::vector<std::string> foreign = ForeignDevices(*c, s.Driver(), got); !foreign.empty()) {
    return Outcome::Fail(
               fmt::format(
                   "{}: the answer holds [{}], allocated to request(s) of driver {}; the kubelet "
                   "records every device a driver answers as that driver's, so the container gets "
                   "its CDI IDs and PodResources reports the device under {}",
                   what, fmt::join(foreign, ", "), kDraOtherDriver, s.Driver()))
        .Evidence("answer: " + DevicesText(got))
        .Evidence(kubelet);
  }
  if (std::string why = DeviceMismatch(s, *c, got); !why.empty()) {
    if (SingleDriverMismatch(s)) {
      return Outcome::Skip(fmt::format(
          "{}: {}, as for a claim of its own devices only (see dra.prepare.devices)", what, why));
    }
    return Outcome::Fail(fmt::format("{}: {}", what, why))
        .Evidence("answer: " + DevicesText(got))
        .Evidence("a claim of the driver's devices only is answered as allocated")
        .Evidence(kubelet);
  }
  if (absl::Status u = s.Unprepare(claims.Refs()); !u.ok()) {
    return CallFailed("NodeUnprepareResources of " + what, u)
        .Evidence(
            "the kubelet unprepares the claim with each of its drivers and retries until "
            "all succeed: the pod stays Terminating meanwhile");
  }
  return Outcome::Pass(fmt::format("{}: answered {}, then unprepared", what, DevicesText(got)));
}

Outcome CallsTimely(DraSession& s) {
  if (s.Driver().empty()) return NotRegistered(s);
  if (!s.Slices().empty()) {
    Claims claims(s);
    Outcome skip;
    if (claims.Add("conformance-timely", &skip) != nullptr) s.Prepare(claims.Refs()).IgnoreError();
  }
  const std::vector<DraCallRecord> calls = s.Calls();
  if (calls.empty()) return Outcome::Skip("no call was made (see dra.slices)");
  const DraCallRecord* slowest = &calls.front();
  std::vector<const DraCallRecord*> late;
  for (const DraCallRecord& c : calls) {
    if (c.took > slowest->took) slowest = &c;
    if (TimedOut(c.status)) late.push_back(&c);
  }
  Outcome o = late.empty()
                  ? Outcome::Pass(fmt::format("{} call(s), the slowest {} ({})", calls.size(),
                                              D(slowest->took), slowest->method))
                  : Outcome::Fail(fmt::format("{} of {} call(s) not answered within the kubelet's "
                                              "deadline of {}; the kubelet fails them and retries",
                                              late.size(), calls.size(), D(s.t().call)));
  for (const DraCallRecord* c : late) {
    o.Evidence(fmt::format("{} of [{}]: {}", c->method, fmt::join(c->claims, ", "),
                           std::string(c->status.message())));
  }
  o.figures.push_back({"slowest call", D(slowest->took)});
  return o;
}

// Opaque parameters no driver supports: an API group of the tester's and a
// number where drivers commonly read strings.
const json& UnsupportedParameters() {
  static const json* const p = new json{{"apiVersion", "conformance.devmgr.io/v1"},
                                        {"kind", "UnsupportedConfig"},
                                        {"unsupported", 1}};
  return *p;
}

Outcome PrepareFailedNoLeak(DraSession& s) {
  if (auto o = NotReady(s)) return *o;
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* good = claims.Add("conformance-failed-other", &skip);
  if (good == nullptr) return skip;
  // Two requests, the second with a config the driver cannot apply: a
  // driver that works request by request fails half-way.
  auto request = [](const char* name) {
    return json{
        {"name", name},
        {"exactly",
         {{"deviceClassName", kDraDeviceClass}, {"allocationMode", "ExactCount"}, {"count", 1}}}};
  };
  const json devices = {
      {"requests", json::array({request("req"), request("req-b")})},
      {"config",
       json::array(
           {{{"requests", json::array({"req-b"})},
             {"opaque", {{"driver", s.Driver()}, {"parameters", UnsupportedParameters()}}}}})}};
  const DraTestClaim* bad = claims.Add("conformance-failed", &skip, devices);
  if (bad == nullptr) return skip;
  std::vector<std::string> unread;
  const std::set<std::string> before = CdiDevices(s.env().cdi_dir, &unread);
  const std::vector<dra::Claim> both = {bad->claim, good->claim};
  absl::StatusOr<dra::PreparedClaims> r = s.Prepare(both);
  const std::string config = fmt::format("opaque config {} for request req-b of {}",
                                         UnsupportedParameters().dump(), ClaimText(*bad));
  if (r.ok()) {
    return Outcome::Skip(
        fmt::format("the driver prepared {} despite the {}; no failed "
                    "NodePrepareResources to judge",
                    ClaimText(*bad), config));
  }
  if (TimedOut(r.status())) return CallFailed("NodePrepareResources", r.status());
  const std::string failure = std::string(r.status().message());
  // The kubelet keeps both claims, with the pod, in its cache from before
  // the call: when the pod goes, it unprepares them.
  if (absl::Status u = s.Unprepare(both); !u.ok()) {
    const dra::Claim unknown{kDraNamespace, apiserver::NewUid(), "conformance-failed-unknown"};
    if (!s.Unprepare({unknown}).ok()) {
      return Outcome::Skip(
          fmt::format("NodeUnprepareResources of the claims of the failed call "
                      "failed, as it does for a claim it never saw: {} (see "
                      "dra.unprepare.unknown)",
                      std::string(u.message())));
    }
    return CallFailed("NodeUnprepareResources of the claims of a failed NodePrepareResources", u)
        .Evidence("NodePrepareResources: " + failure)
        .Evidence("the kubelet retries until it succeeds: the pod stays Terminating meanwhile");
  }
  std::vector<std::string> added;
  for (const std::string& d : CdiDevices(s.env().cdi_dir, &unread)) {
    if (!before.count(d)) added.push_back(d);
  }
  if (!added.empty()) {
    return Outcome::Fail(fmt::format("NodePrepareResources of {} and {} failed, and after the "
                                     "kubelet's NodeUnprepareResources of both the CDI root "
                                     "still holds CDI device(s) [{}]: what the failed prepare "
                                     "did stays on the node",
                                     ClaimText(*bad), ClaimText(*good), fmt::join(added, ", ")))
        .Evidence("NodePrepareResources: " + failure)
        .Evidence("cause: the " + config);
  }
  return Outcome::Pass(
      fmt::format("NodePrepareResources failed ({}); after NodeUnprepareResources "
                  "of both claims the CDI root holds what it held before",
                  failure));
}

// The devices and CDI IDs of a claim prepared before a disruption.
std::vector<std::string> CdiIds(const std::vector<dra::ResponseDevice>& devices) {
  std::vector<std::string> out;
  for (const dra::ResponseDevice& d : devices) {
    out.insert(out.end(), d.cdi_device_ids.begin(), d.cdi_device_ids.end());
  }
  return out;
}

std::string StopText(bool in_time, const DraSession& s) {
  return in_time ? "it exited on SIGTERM"
                 : fmt::format("it did not exit within {} of SIGTERM and was killed",
                               D(s.t().stop_grace));
}

// Prepares claim `c` twice before a disruption, so that a disruptive check
// judges what the disruption changes: the second answer, or a skip when the
// driver is not idempotent even without one (dra.prepare.idempotent judges
// that).
absl::StatusOr<dra::PreparedClaims> PrepareBefore(DraSession& s, const Claims& claims,
                                                  const DraTestClaim& c, const std::string& what,
                                                  Outcome* skip) {
  absl::StatusOr<dra::PreparedClaims> first = s.Prepare(claims.Refs());
  absl::StatusOr<dra::PreparedClaims> second =
      first.ok() ? s.Prepare(claims.Refs()) : first.status();
  if (!second.ok()) {
    *skip = PrepareSkip("NodePrepareResources before the " + what, second.status());
    return second.status();
  }
  if (DeviceKeys(first->at(c.claim.uid)) != DeviceKeys(second->at(c.claim.uid))) {
    *skip =
        Outcome::Skip(fmt::format("{}: a second NodePrepareResources answers other devices "
                                  "even without a {} (see dra.prepare.idempotent)",
                                  ClaimText(c), what));
    return absl::FailedPreconditionError("not idempotent");
  }
  return second;
}

// The opening of the checks that disrupt a prepared claim: the session is
// ready, claim `name` is made and prepared twice before the `what`
// (PrepareBefore). The second answer, with *claim the claim; nullopt with
// *stop the outcome that ends the check.
std::optional<dra::PreparedClaims> PreparedBefore(DraSession& s, Claims& claims,
                                                  const std::string& name, const std::string& what,
                                                  const DraTestClaim** claim, Outcome* stop) {
  if (auto o = NotReady(s)) {
    *stop = *o;
    return std::nullopt;
  }
  *claim = claims.Add(name, stop);
  if (*claim == nullptr) return std::nullopt;
  absl::StatusOr<dra::PreparedClaims> r = PrepareBefore(s, claims, **claim, what, stop);
  if (!r.ok()) return std::nullopt;
  return *std::move(r);
}

// Stops the driver and starts it again: *restart says how it stopped and how
// long it took to be registered again, *back that time. A driver not
// registered again is the check's FAIL, returned.
std::optional<Outcome> RestartOrFail(DraSession& s, std::string* restart, absl::Duration* back) {
  const bool in_time = s.StopDriver();
  const std::string stopped = StopText(in_time, s);
  const MonoTime restarted = MonoNow();
  if (absl::Status st = s.StartDriver(); !st.ok()) {
    Outcome o = Outcome::Fail(fmt::format(
        "stopped ({}) and started again, the driver was not registered again: {}; the kubelet "
        "cannot call it, and pods with its claims are neither admitted nor let go",
        stopped, std::string(st.message())));
    for (auto& l : s.DriverOutput(5)) o.Evidence(l);
    return o;
  }
  *back = MonoSub(MonoNow(), restarted);
  *restart = fmt::format("{}; registered again {} after the start", stopped, D(*back));
  return std::nullopt;
}

Outcome RestartDriver(DraSession& s) {
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> first =
      PreparedBefore(s, claims, "conformance-restart", "restart", &c, &skip);
  if (!first) return skip;
  std::string restart;
  absl::Duration back;
  if (auto o = RestartOrFail(s, &restart, &back)) return *o;
  const std::string what = fmt::format("{}, prepared before the driver's restart", ClaimText(*c));
  absl::StatusOr<dra::PreparedClaims> again = s.Prepare(claims.Refs());
  if (!again.ok()) {
    return CallFailed("NodePrepareResources of " + what, again.status())
        .Evidence(
            "a kubelet restarted with the driver (a node upgrade, a reboot) prepares every claim "
            "of its running pods again, and the pods fail until it succeeds");
  }
  const auto& a = first->at(c->claim.uid);
  const auto& b = again->at(c->claim.uid);
  if (DeviceKeys(a) != DeviceKeys(b)) {
    return Outcome::Fail(fmt::format("{}: NodePrepareResources answers other devices than before "
                                     "the restart; the running containers hold the first ones",
                                     what))
        .Evidence("before: " + DevicesText(a))
        .Evidence("after:  " + DevicesText(b));
  }
  if (absl::Status u = s.Unprepare(claims.Refs()); !u.ok()) {
    return CallFailed("NodeUnprepareResources of " + what, u)
        .Evidence("the kubelet retries until it succeeds: the pod stays Terminating meanwhile");
  }
  Outcome o = Outcome::Pass(
      fmt::format("{}; {}: {} again, then unprepared", restart, ClaimText(*c), DevicesText(b)));
  o.figures.push_back({"time to register again", D(back)});
  return o;
}

// dra.restart.unprepare and dra.restart.no-leak: claim `name`
// prepared, the driver restarted, then the claim unprepared with no Prepare
// first (a pod deleted after a DaemonSet rollout of its driver).
struct UnprepareAfterRestart {
  std::optional<Outcome> stop;  // ends the check: a skip, or the restart's FAIL
  std::string what;             // the claim, for messages
  std::string restart;          // how the driver stopped and came back
  bool cdi = false;             // the Prepare answered CDI device IDs
  absl::Status unprepare;
  std::vector<std::string> left;  // its answered CDI devices that still resolve afterwards
};

UnprepareAfterRestart RunUnprepareAfterRestart(DraSession& s, const std::string& name) {
  UnprepareAfterRestart r;
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> first = PreparedBefore(s, claims, name, "restart", &c, &skip);
  if (!first) {
    r.stop = skip;
    return r;
  }
  const std::vector<std::string> ids = CdiIds(first->at(c->claim.uid));
  r.cdi = !ids.empty();
  absl::Duration back;
  if (auto o = RestartOrFail(s, &r.restart, &back)) {
    r.stop = *o;
    return r;
  }
  r.what = fmt::format("{}, prepared before the driver's restart and not since", ClaimText(*c));
  r.unprepare = s.Unprepare(claims.Refs());
  std::vector<std::string> unread;
  const std::set<std::string> known = CdiDevices(s.env().cdi_dir, &unread);
  for (const std::string& id : ids) {
    if (known.count(id)) r.left.push_back(id);
  }
  return r;
}

Outcome RestartUnprepare(DraSession& s) {
  UnprepareAfterRestart r = RunUnprepareAfterRestart(s, "conformance-restart-unprepare");
  if (r.stop) return *r.stop;
  if (!r.unprepare.ok()) {
    return CallFailed("NodeUnprepareResources of " + r.what, r.unprepare)
        .Evidence(
            "a pod deleted after its driver restarted (a DaemonSet rollout) is unprepared with no "
            "NodePrepareResources first; the kubelet retries until it succeeds, and the pod stays "
            "Terminating meanwhile");
  }
  return Outcome::Pass(
      fmt::format("{}; NodeUnprepareResources of {} succeeded", r.restart, r.what));
}

Outcome RestartNoLeak(DraSession& s) {
  UnprepareAfterRestart r = RunUnprepareAfterRestart(s, "conformance-restart-no-leak");
  if (r.stop) return *r.stop;
  if (!r.unprepare.ok()) {
    return Outcome::Skip(
        fmt::format("NodeUnprepareResources of {} failed (see dra.restart.unprepare)", r.what));
  }
  if (!r.cdi) return Outcome::Skip("the driver answered no CDI device ID");
  if (r.left.empty()) {
    return Outcome::Pass(fmt::format(
        "after NodeUnprepareResources of {}, none of its CDI devices resolves any more", r.what));
  }
  return Outcome::Fail(fmt::format("after NodeUnprepareResources of {}, its CDI device(s) [{}] "
                                   "still resolve: the spec written before the restart stays "
                                   "on the node",
                                   r.what, fmt::join(r.left, ", ")))
      .Evidence(
          "the driver keeps no record across its restart of what it prepared, or its "
          "NodeUnprepareResources does not use it; the kubelet calls it once and forgets the "
          "claim");
}

// Removes every entry of the CDI root (a tmpfs after a reboot); how many.
size_t EmptyDir(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code rm;
    if (std::filesystem::remove_all(entry.path(), rm) > 0) ++n;
  }
  return n;
}

Outcome RestartReboot(DraSession& s) {
  Claims claims(s);
  Outcome skip;
  const DraTestClaim* c = nullptr;
  std::optional<dra::PreparedClaims> first =
      PreparedBefore(s, claims, "conformance-reboot", "reboot", &c, &skip);
  if (!first) return skip;
  if (CdiIds(first->at(c->claim.uid)).empty()) {
    return Outcome::Skip("the driver answered no CDI device ID");
  }
  std::vector<std::string> unread;
  const std::set<std::string> before = CdiDevices(s.env().cdi_dir, &unread);
  for (const std::string& id : CdiIds(first->at(c->claim.uid))) {
    if (!before.count(id)) {
      return Outcome::Skip(
          fmt::format("{}: CDI device {} resolves in no CDI spec even before the "
                      "reboot (see dra.prepare.cdi)",
                      ClaimText(*c), id));
    }
  }
  // The node goes down: the driver and the kubelet stop; /var/run/cdi is a
  // tmpfs, empty when the node is up again; the kubelet starts (deleting the
  // node's ResourceSlices), then the driver.
  s.StopDriver();
  s.StopKubelet();
  const size_t removed = EmptyDir(s.env().cdi_dir);
  if (absl::Status st = s.StartKubelet(); !st.ok()) {
    return Outcome::Skip("the tester could not start its kubelet again: " +
                         std::string(st.message()));
  }
  if (absl::Status st = s.StartDriver(); !st.ok()) {
    return Outcome::Skip(
        fmt::format("after the reboot the driver was not registered again: {} "
                    "(see dra.restart.driver)",
                    std::string(st.message())));
  }
  const std::string what =
      fmt::format("{}, prepared before a reboot that emptied the CDI root", ClaimText(*c));
  absl::StatusOr<dra::PreparedClaims> again = s.Prepare(claims.Refs());
  if (!again.ok()) {
    return CallFailed("NodePrepareResources of " + what, again.status())
        .Evidence(
            "after a reboot the kubelet restores its claims unprepared and prepares them again "
            "before it restarts their pods");
  }
  unread.clear();
  const std::set<std::string> known = CdiDevices(s.env().cdi_dir, &unread);
  const std::vector<std::string> ids = CdiIds(again->at(c->claim.uid));
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (!known.count(id)) missing.push_back(id);
  }
  if (ids.empty() || !missing.empty()) {
    Outcome o = Outcome::Fail(fmt::format(
        "{}: CDI device(s) [{}] answered after the reboot resolve to no device of a CDI spec in "
        "{}; the container runtime fails the pod's containers (unresolvable CDI devices): a "
        "driver must write the specs again for a claim it had prepared",
        what, fmt::join(ids.empty() ? CdiIds(first->at(c->claim.uid)) : missing, ", "),
        s.env().cdi_dir));
    o.Evidence(fmt::format("answer after the reboot: {}", DevicesText(again->at(c->claim.uid))));
    o.Evidence(fmt::format("devices of the specs there: [{}]", fmt::join(known, ", ")));
    for (const std::string& u : unread) o.Evidence(u);
    return o;
  }
  // Its Unprepare (at the end) is dra.restart.driver's to judge.
  return Outcome::Pass(fmt::format("{}: [{}] resolve again ({} entr{} of the CDI root removed)",
                                   what, fmt::join(ids, ", "), removed,
                                   removed == 1 ? "y" : "ies"));
}

std::string SlicesText(const std::vector<json>& slices) {
  size_t devices = 0;
  for (const json& sl : slices) {
    devices += sl.value("spec", json::object()).value("devices", json::array()).size();
  }
  return fmt::format("{} slice(s), {} device(s)", slices.size(), devices);
}

Outcome SlicesWiped(DraSession& s) {
  if (s.Driver().empty()) return NotRegistered(s);
  const size_t before = s.Slices().size();
  if (before == 0) {
    return Outcome::Skip("the driver published no complete ResourceSlice pool (see dra.slices)");
  }
  const std::string published = SlicesText(s.Slices());
  const bool in_time = s.StopDriver();
  // The kubelet's 30 s wiping delay is the kubelet's own: skipped, not waited.
  if (!s.SkipToWipe()) {
    return Outcome::Skip(fmt::format(
        "the kubelet scheduled no wipe of the driver's ResourceSlices after the driver stopped "
        "({})",
        StopText(in_time, s)));
  }
  const std::vector<json> left = s.ListSlices();
  if (!left.empty()) {
    return Outcome::Skip(
        fmt::format("{} of the driver's ResourceSlices outlived the kubelet's wipe", left.size()));
  }
  if (absl::Status st = s.StartDriver(); !st.ok()) {
    return Outcome::Skip(
        fmt::format("the driver was not registered again after its restart: {} "
                    "(see dra.restart.driver)",
                    std::string(st.message())));
  }
  const MonoTime back = MonoNow();
  const std::vector<json> again = s.WaitForSlices(s.t().publish_within);
  if (again.empty()) {
    Outcome o = Outcome::Fail(fmt::format(
        "the kubelet wiped the driver's ResourceSlices ({}) {} after its connection dropped; "
        "registered again, the driver published no complete pool for the node within {}: the "
        "scheduler has no device of the node to allocate",
        published, D(dra::kDefaultWipingDelay), D(s.t().publish_within)));
    for (const std::string& e : RefusedSliceWrites(s)) o.Evidence(e);
    for (auto& l : s.DriverOutput(5)) o.Evidence(l);
    return o;
  }
  const absl::Duration took = MonoSub(MonoNow(), back);
  Outcome o = Outcome::Pass(
      fmt::format("wiped by the kubelet {} after the driver stopped ({}), published again: {}, {} "
                  "after it registered again",
                  D(dra::kDefaultWipingDelay), published, SlicesText(again), D(took)));
  o.figures.push_back({"time to publish again", D(took)});
  return o;
}

// A catalogue row; rank: its place in the shared session (registration,
// services and slices first, the calls next, dra.calls.timely last: it
// judges every call of the session).
DraCheckInfo Row(std::string id, std::string title, Level level,
                 std::function<Outcome(DraSession&)> run, int rank) {
  DraCheckInfo c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.level = level;
  c.run = std::move(run);
  c.shared_rank = rank;
  return c;
}

// A row whose check stops the driver (or the kubelet): a session of its own.
DraCheckInfo Disruptive(std::string id, std::string title, Level level,
                        std::function<Outcome(DraSession&)> run) {
  DraCheckInfo c = Row(std::move(id), std::move(title), level, std::move(run), 0);
  c.tags = {"[Disruptive]"};
  c.session = SessionUse::kOwn;
  return c;
}

}  // namespace

const std::vector<DraCheckInfo>& DraCatalogue() {
  static const std::vector<DraCheckInfo>* const all = new std::vector<DraCheckInfo>{
      Row("dra.registration",
          "The driver registers in plugins_registry as a DRAPlugin with a name and a served "
          "absolute endpoint",
          Level::kMust, Registration, 0),
      Row("dra.serves-first", "The driver serves its DRA socket before it registers",
          Level::kShould, ServesFirst, 0),
      Row("dra.services",
          "The advertised services include one the kubelet supports, first in its list",
          Level::kMust, Services, 0),
      Row("dra.slices", "The driver publishes complete, valid ResourceSlices for the node",
          Level::kMust, Slices, 0),
      Row("dra.prepare.answers-all",
          "NodePrepareResources answers every claim asked, without error", Level::kMust,
          PrepareAnswersAll, 1),
      Row("dra.prepare.devices",
          "NodePrepareResources answers the devices allocated to the claim, from the driver's "
          "slices",
          Level::kMust, PrepareDevices, 1),
      Row("dra.prepare.idempotent",
          "NodePrepareResources of a prepared claim answers the same devices again", Level::kMust,
          PrepareTwice, 1),
      Row("dra.unprepare.unknown",
          "NodeUnprepareResources of a claim the driver never prepared succeeds", Level::kMust,
          UnprepareUnknown, 1),
      Row("dra.unprepare.deleted",
          "NodeUnprepareResources of a prepared claim deleted from the API succeeds", Level::kMust,
          UnprepareDeleted, 1),
      Row("dra.prepare.cdi", "Every CDI device ID answered resolves in a CDI spec of the CDI root",
          Level::kMust, PrepareCdi, 1),
      Row("dra.prepare.replaced",
          "NodePrepareResources of a claim replaced in the API (same name, new UID) fails for it",
          Level::kMust, PrepareReplaced, 1),
      Row("dra.prepare.after-unprepare",
          "A claim prepared, unprepared and prepared again gets its devices again", Level::kMust,
          PrepareAfterUnprepare, 1),
      Row("dra.prepare.batched", "Two claims in one NodePrepareResources are answered per claim",
          Level::kMust, PrepareBatched, 1),
      Row("dra.prepare.multi-driver",
          "NodePrepareResources of a claim with devices of two drivers answers the driver's "
          "own devices only, and NodeUnprepareResources of it succeeds",
          Level::kMust, PrepareMultiDriver, 1),
      Row("dra.prepare.failed-no-leak",
          "A NodePrepareResources that fails for a claim leaves nothing behind once the kubelet "
          "unprepared it",
          Level::kShould, PrepareFailedNoLeak, 1),
      Row("dra.health.stream",
          "The DRAResourceHealth stream the kubelet opens sends at once a complete, well-formed "
          "list of the driver's devices",
          Level::kShould, HealthStreamCheck, 1),
      Row("dra.calls.timely",
          "Every NodePrepareResources and NodeUnprepareResources is answered within the "
          "kubelet's deadline",
          Level::kMust, CallsTimely, 2),
      Disruptive("dra.restart.driver",
                 "Stopped and started again, the driver registers again and prepares a claim "
                 "prepared before with the same devices, then unprepares it",
                 Level::kMust, RestartDriver),
      Disruptive("dra.restart.unprepare",
                 "Stopped and started again, the driver unprepares a claim prepared before its "
                 "restart and not since",
                 Level::kMust, RestartUnprepare),
      Disruptive("dra.restart.no-leak",
                 "Stopped and started again, the driver removes the CDI spec of a claim prepared "
                 "before its restart when it unprepares it",
                 Level::kShould, RestartNoLeak),
      Disruptive("dra.restart.reboot",
                 "After a reboot (driver and kubelet restarted, CDI root emptied) the CDI IDs "
                 "of a claim prepared again resolve in the CDI root",
                 Level::kMust, RestartReboot),
      Disruptive("dra.slices.wiped",
                 "After the kubelet wiped its ResourceSlices (30 s without a connection), the "
                 "driver started again publishes them again",
                 Level::kMust, SlicesWiped),
  };
  return *all;
}

}  // namespace devmgr::conformance
