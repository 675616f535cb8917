#include "conformance/dra_health_check.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "conformance/checks.h"
#include "conformance/dra_session.h"
#include "dra/health/v1/api.grpc.pb.h"
#include "dra/health/v1alpha1/api.grpc.pb.h"
#include "dra/health_info.h"
#include "dra/health_stream.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "grpcpp/client_context.h"
#include "kubelet/feature_gates.h"

namespace devmgr::conformance {
namespace {

using nlohmann::json;

// One entry of a NodeWatchResources response, either API version.
struct HealthEntry {
  std::string pool;
  std::string device;
  int health = 0;  // the wire value: UNKNOWN 0, HEALTHY 1, UNHEALTHY 2
  std::string message;
};

// The stream's first message, or how the stream ended without one.
struct FirstReport {
  bool got = false;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string error;
  absl::Duration took;
  std::vector<HealthEntry> entries;
};

// Opens NodeWatchResources of `Service` on `channel` with no request fields,
// as the kubelet does, and reads its first message (up to `within`); then
// cancels the stream.
template <typename Service, typename Request, typename Response>
FirstReport ReadFirst(const std::shared_ptr<grpc::Channel>& channel, absl::Duration within) {
  FirstReport out;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + within));
  const MonoTime start = MonoNow();
  auto stub = Service::NewStub(channel);
  Request req;
  auto reader = stub->NodeWatchResources(&ctx, req);
  Response resp;
  out.got = reader->Read(&resp);
  out.took = MonoSub(MonoNow(), start);
  if (out.got) {
    for (const auto& d : resp.devices()) {
      out.entries.push_back(HealthEntry{d.device().pool_name(), d.device().device_name(),
                                        static_cast<int>(d.health()), d.message()});
    }
    ctx.TryCancel();
  }
  const grpc::Status st = reader->Finish();
  if (!out.got) {
    out.code = st.error_code();
    out.error = st.error_message();
  }
  return out;
}

const char* ServiceName(dra::HealthService s) {
  return s == dra::HealthService::kV1 ? dra::kV1DRAResourceHealth : dra::kV1alpha1DRAResourceHealth;
}

const char* HealthName(int wire) {
  switch (wire) {
    case 0:
      return "Unknown";
    case 1:
      return "Healthy";
    case 2:
      return "Unhealthy";
    default:
      return "?";
  }
}

std::string Key(const std::string& pool, const std::string& device) { return pool + "/" + device; }

// "pool/device Health" of each entry, at most `n` of them.
std::string EntriesText(const std::vector<HealthEntry>& entries, size_t n = 8) {
  std::vector<std::string> out;
  for (size_t i = 0; i < entries.size() && i < n; ++i) {
    out.push_back(fmt::format("{} {}", Key(entries[i].pool, entries[i].device),
                              entries[i].health >= 0 && entries[i].health <= 2
                                  ? HealthName(entries[i].health)
                                  : std::to_string(entries[i].health)));
  }
  if (entries.size() > n) out.push_back(fmt::format("... {} more", entries.size() - n));
  return "[" + fmt::format("{}", fmt::join(out, ", ")) + "]";
}

// "pool/device" of every device of the driver's slices.
std::set<std::string> PublishedDevices(DraSession& s) {
  std::set<std::string> out;
  for (const json& sl : s.Slices()) {
    const json spec = sl.value("spec", json::object());
    const std::string pool = spec.value("pool", json::object()).value("name", "");
    for (const json& d : spec.value("devices", json::array())) {
      out.insert(Key(pool, d.value("name", "")));
    }
  }
  return out;
}

// The first of `items` (at most 5), for messages.
std::string Few(const std::vector<std::string>& items) {
  std::vector<std::string> out(items.begin(), items.begin() + std::min<size_t>(items.size(), 5));
  if (items.size() > 5) out.push_back(fmt::format("... {} more", items.size() - 5));
  return fmt::format("{}", fmt::join(out, ", "));
}

// What is wrong with the first message `r` for the kubelet of `minor`; ""
// when nothing is.
std::string JudgeFirst(const FirstReport& r, const std::set<std::string>& published, int minor) {
  std::set<std::string> listed;
  std::vector<std::string> unknown, bad_health, long_messages;
  for (const HealthEntry& e : r.entries) {
    const std::string k = Key(e.pool, e.device);
    listed.insert(k);
    if (!published.count(k)) unknown.push_back(k);
    if (e.health < 0 || e.health > 2) bad_health.push_back(fmt::format("{} {}", k, e.health));
    if (minor >= 36 && e.message.size() > dra::kHealthMessageMaxLength) {
      long_messages.push_back(fmt::format("{} ({} bytes)", k, e.message.size()));
    }
  }
  std::vector<std::string> missing;
  for (const std::string& k : published) {
    if (!listed.count(k)) missing.push_back(k);
  }
  if (!missing.empty()) {
    return fmt::format(
        "the first message omits {} of the driver's {} published device(s) [{}]; each message "
        "is the driver's complete list, and the kubelet reads a device it has no report of as "
        "Unknown in the status of every pod that holds it",
        missing.size(), published.size(), Few(missing));
  }
  if (!unknown.empty()) {
    return fmt::format(
        "the first message names device(s) [{}] that are in none of the driver's slices "
        "(pool/device); no claim can hold them, and the kubelet keeps their health for "
        "nothing",
        Few(unknown));
  }
  if (!bad_health.empty()) {
    return fmt::format(
        "health value(s) [{}] are not UNKNOWN (0), HEALTHY (1) or UNHEALTHY (2); the kubelet "
        "reads them as Unknown",
        Few(bad_health));
  }
  if (!long_messages.empty()) {
    return fmt::format(
        "message(s) of [{}] are longer than the kubelet's limit of {} bytes; the kubelet "
        "cuts them to {} bytes and \"...\"",
        Few(long_messages), dra::kHealthMessageMaxLength, dra::kHealthMessageMaxLength - 3);
  }
  return "";
}

bool Advertised(const std::vector<std::string>& versions, const char* service) {
  return std::find(versions.begin(), versions.end(), service) != versions.end();
}

// How the stream ended without a first message: a skip when the driver does
// not serve (and does not advertise) the service, else the check's FAIL.
Outcome NoFirstMessage(DraSession& s, dra::HealthService service, bool advertised,
                       const FirstReport& r) {
  const std::string svc = ServiceName(service);
  const std::string& k = s.profile().name;
  if (r.code == grpc::StatusCode::UNIMPLEMENTED) {
    // The kubelet's own reading of Unimplemented: no health service
    // (1.37: not watched again until the driver registers again; up to
    // 1.36: opened again every 5 s, each failure logged).
    return Outcome::Skip(fmt::format(
        "the driver does not serve {} (NodeWatchResources: Unimplemented{}); {}", svc,
        advertised ? ", though it advertises it" : "",
        s.profile().minor >= 37
            ? "the kubelet " + k + " stops watching its health until it registers again"
            : "the kubelet " + k + " opens the stream for every driver and tries again every 5 s"));
  }
  if (r.code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Outcome::Fail(fmt::format(
        "NodeWatchResources ({}) sent no message within {}; until the first one the kubelet "
        "reads every device of the driver as Unknown, and one report is worth {} to it",
        svc, Dur(s.t().health_within), Dur(dra::kDefaultHealthTimeout)));
  }
  return Outcome::Fail(
             fmt::format("NodeWatchResources ({}) ended before its first message ({}: {}); the "
                         "kubelet clears the driver's health and opens the stream again 5 s later",
                         svc, static_cast<int>(r.code), r.error))
      .Evidence(r.code == grpc::StatusCode::OK ? "the driver closed the stream with status OK"
                                               : "the call failed");
}

// Which service the kubelet of the session's profile opens, or the skip
// that says why it opens none.
std::optional<Outcome> NotWatched(DraSession& s, dra::HealthService* service, bool* advertised) {
  const std::optional<DraRegistrationRecord> info = s.FirstInfo();
  const std::vector<std::string> versions =
      info ? info->info.supported_versions : std::vector<std::string>{};
  const Profile& p = s.profile();
  if (!p.gates.Enabled(kGateResourceHealthStatus)) {
    return Outcome::Skip(fmt::format(
        "the kubelet {} opens no health stream: its feature gate {} is off (--feature-gates "
        "{}=true judges the stream as that kubelet would open it)",
        p.name, kGateResourceHealthStatus, kGateResourceHealthStatus));
  }
  *service = dra::ChooseHealthService(p.minor, true, versions);
  if (*service == dra::HealthService::kNone) {
    return Outcome::Skip(fmt::format(
        "the driver advertises no DRAResourceHealth service ([{}]); the kubelet {} watches the "
        "health only of drivers that do",
        fmt::join(versions, ", "), p.name));
  }
  *advertised = Advertised(versions, ServiceName(*service));
  return std::nullopt;
}

}  // namespace

Outcome HealthStreamCheck(DraSession& s) {
  if (s.Driver().empty()) {
    return Outcome::Skip(s.NoRegistrationReason() + " (see dra.registration, dra.services)");
  }
  dra::HealthService service = dra::HealthService::kNone;
  bool advertised = false;
  if (auto o = NotWatched(s, &service, &advertised)) return *o;
  if (s.Slices().empty()) {
    return Outcome::Skip("the driver published no complete ResourceSlice pool (see dra.slices)");
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> ch = s.DriverChannel();
  if (!ch.ok()) return Outcome::Skip(std::string(ch.status().message()));
  const FirstReport r =
      service == dra::HealthService::kV1
          ? ReadFirst<::v1::DRAResourceHealth, ::v1::NodeWatchResourcesRequest,
                      ::v1::NodeWatchResourcesResponse>(*ch, s.t().health_within)
          : ReadFirst<::v1alpha1::DRAResourceHealth, ::v1alpha1::NodeWatchResourcesRequest,
                      ::v1alpha1::NodeWatchResourcesResponse>(*ch, s.t().health_within);
  if (!r.got) return NoFirstMessage(s, service, advertised, r);
  const std::set<std::string> published = PublishedDevices(s);
  const std::string svc = ServiceName(service);
  if (std::string why = JudgeFirst(r, published, s.profile().minor); !why.empty()) {
    return Outcome::Fail(fmt::format("NodeWatchResources ({}): {}", svc, why))
        .Evidence(fmt::format("first message after {}: {} entr{} {}", Dur(r.took), r.entries.size(),
                              r.entries.size() == 1 ? "y" : "ies", EntriesText(r.entries)))
        .Evidence(fmt::format("published: [{}]",
                              Few(std::vector<std::string>(published.begin(), published.end()))));
  }
  Outcome o = Outcome::Pass(fmt::format(
      "the kubelet {} opens {}{}; its first message, after {}, lists the {} published device(s): "
      "{}",
      s.profile().name, svc, advertised ? "" : " (not advertised)", Dur(r.took), published.size(),
      EntriesText(r.entries)));
  o.figures.push_back({"time to first health message", Dur(r.took)});
  return o;
}

}  // namespace devmgr::conformance
