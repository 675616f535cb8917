#include "draplugin/driver_core.h"

#include <algorithm>
#include <cctype>

#include "common/logging.h"
#include "draplugin/cdi.h"
#include "fmt/format.h"

namespace devmgr::draplugin {
namespace {

using nlohmann::json;

bool Listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// "gpu-0" -> "GPU_0": an environment variable name part.
std::string EnvName(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  return out;
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

DriverCore::DriverCore(Config config, CoreOptions options, const ApiClient* api)
    : config_(std::move(config)), options_(std::move(options)), api_(api) {}

std::string DriverCore::SpecDir() const {
  return config_.misbehave.cdi_spec == CdiSpecMode::kWrongDir ? options_.driver_dir + "/cdi"
                                                              : options_.cdi_dir;
}

absl::Status DriverCore::LoadState() {
  absl::StatusOr<PreparedClaims> loaded = LoadClaimState(StatePath());
  if (absl::IsNotFound(loaded.status())) return absl::OkStatus();
  if (!loaded.ok()) return loaded.status();
  absl::MutexLock l(&mu_);
  prepared_ = *std::move(loaded);
  for (const auto& [uid, claim] : prepared_) restored_.insert(uid);
  DM_INFO("Restored prepared claims", {"count", std::to_string(prepared_.size())});
  return absl::OkStatus();
}

PreparedClaims DriverCore::PreparedForTest() const {
  absl::MutexLock l(&mu_);
  return prepared_;
}

absl::Status DriverCore::SaveLocked() { return SaveClaimState(StatePath(), prepared_); }

std::map<std::string, PrepareResult> DriverCore::Prepare(const std::vector<ClaimRef>& claims) {
  absl::MutexLock l(&mu_);
  std::map<std::string, PrepareResult> out;
  const absl::Duration delay = config_.misbehave.prepare_delay;
  if (delay > absl::ZeroDuration() && stop_.WaitForNotificationWithTimeout(delay)) {
    for (const ClaimRef& c : claims) out[c.uid].error = "the driver is stopping";
    return out;
  }
  for (const ClaimRef& c : claims) {
    if (Listed(config_.misbehave.omit_claims, c.name)) {
      DM_INFO("Misbehaving: leaving the claim out of the answer", {"claim", c.name});
      continue;
    }
    out[c.uid] = PrepareOneLocked(c);
  }
  if (config_.misbehave.batch_mixes_claims && claims.size() > 1 && out.count(claims[0].uid)) {
    DM_INFO("Misbehaving: answering every claim of the batch with the first one's devices");
    for (const ClaimRef& c : claims) {
      if (out.count(c.uid) && out[c.uid].error.empty()) {
        out[c.uid].devices = out[claims[0].uid].devices;
      }
    }
  }
  return out;
}

PrepareResult DriverCore::PrepareOneLocked(const ClaimRef& claim) {
  if (prepared_.count(claim.uid) > 0) return PrepareAgainLocked(claim);
  PrepareResult r;
  if (config_.misbehave.prepare_after_unprepare_fails && unprepared_.count(claim.uid) > 0) {
    DM_INFO("Misbehaving: refusing to prepare an unprepared claim again", {"claim", claim.name});
    r.error = fmt::format("claim {} was unprepared; not preparing it again", claim.uid);
    return r;
  }
  absl::Status config = absl::OkStatus();
  absl::StatusOr<std::vector<PreparedDevice>> devices = AllocatedDevices(claim, &config);
  if (!devices.ok()) {
    r.error = std::string(devices.status().message());
    return r;
  }
  if (!config.ok() && !config_.misbehave.leak_spec_on_failure) {
    // Well-behaved: refused before anything is written.
    r.error = std::string(config.message());
    return r;
  }
  absl::Status s = WriteSpec(claim, *devices);
  if (s.ok() && !config.ok()) {
    DM_INFO("Misbehaving: a claim refused for its config keeps its CDI spec",
            {"claim", claim.name});
    r.error = std::string(config.message());
    return r;
  }
  const bool injected = Listed(config_.misbehave.fail_claims, claim.name);
  if (s.ok() && injected) {
    s = absl::InternalError(
        fmt::format("injected failure preparing claim {}/{}", claim.namespace_, claim.name));
  }
  if (!s.ok() && !(injected && config_.misbehave.leak_state_on_failure)) {
    // Well-behaved: a failed prepare leaves nothing behind.
    (void)RemoveCdiSpec(CdiSpecPath(SpecDir(), config_.driver, claim.uid));
    r.error = std::string(s.message());
    return r;
  }
  prepared_[claim.uid] = PreparedClaim{claim.namespace_, claim.name, *devices};
  absl::Status saved = SaveLocked();
  if (!s.ok()) {
    DM_INFO("Misbehaving: a failed prepare keeps its CDI spec and state", {"claim", claim.name});
    r.error = std::string(s.message());
    return r;
  }
  if (!saved.ok()) {
    prepared_.erase(claim.uid);
    (void)RemoveCdiSpec(CdiSpecPath(SpecDir(), config_.driver, claim.uid));
    r.error = std::string(saved.message());
    return r;
  }
  r.devices = *std::move(devices);
  DM_INFO("Prepared claim", {"claim", claim.namespace_ + "/" + claim.name}, {"uid", claim.uid});
  return r;
}

PrepareResult DriverCore::PrepareAgainLocked(const ClaimRef& claim) {
  if (restored_.count(claim.uid) > 0) reprepared_.insert(claim.uid);
  PrepareResult r;
  r.devices = prepared_[claim.uid].devices;
  if (config_.misbehave.reprepare_skips_spec) {
    DM_INFO("Misbehaving: a repeated prepare does not write the CDI spec again",
            {"claim", claim.name});
    return r;
  }
  if (!config_.misbehave.prepare_not_idempotent) {
    // The spec may be gone (a CDI dir on tmpfs after a reboot): write it again.
    absl::Status s = WriteSpec(claim, r.devices);
    if (s.ok() && config_.misbehave.reprepare_adds_spec) {
      DM_INFO("Misbehaving: a repeated prepare writes another CDI spec", {"claim", claim.name});
      s = WriteCdiSpec(CdiSpecPath(SpecDir(), config_.driver, claim.uid + "-again"),
                       config_.CdiKind(), {CdiDevice{claim.uid + "-again", {}}});
    }
    if (!s.ok()) r = PrepareResult{{}, std::string(s.message())};
    return r;
  }
  DM_INFO("Misbehaving: answering another device on a repeated prepare", {"claim", claim.name});
  for (PreparedDevice& d : r.devices) {
    auto it = std::find_if(config_.devices.begin(), config_.devices.end(),
                           [&](const DeviceConfig& c) { return c.name == d.device_name; });
    size_t next = it == config_.devices.end() ? 0 : (it - config_.devices.begin() + 1);
    d.device_name = config_.devices.size() > 1 ? config_.devices[next % config_.devices.size()].name
                                               : d.device_name + "-again";
    d.cdi_device_ids = {CdiDeviceId(config_.CdiKind(), CdiDeviceName(claim.uid, d.device_name))};
  }
  return r;
}

absl::StatusOr<std::vector<PreparedDevice>> DriverCore::AllocatedDevices(
    const ClaimRef& claim, absl::Status* config) const {
  const std::string id = claim.namespace_ + "/" + claim.name;
  absl::StatusOr<json> got = api_->GetClaim(claim.namespace_, claim.name);
  if (!got.ok()) {
    return absl::Status(got.status().code(), fmt::format("retrieve claim {}: {}", id,
                                                         std::string(got.status().message())));
  }
  const json& meta = got->value("metadata", json::object());
  if (Str(meta, "uid") != claim.uid && !config_.misbehave.prepare_ignores_uid) {
    return absl::FailedPreconditionError(
        fmt::format("claim {}: got replaced (UID {}, want {})", id, Str(meta, "uid"), claim.uid));
  }
  const json status = got->value("status", json::object());
  if (!status.contains("allocation") || status["allocation"].is_null()) {
    return absl::FailedPreconditionError(fmt::format("claim {}: not allocated", id));
  }
  const json allocated = status["allocation"].value("devices", json::object());
  const json results = allocated.value("results", json::array());
  // Opaque configs for this driver: it reads its own API (<driver>/v1),
  // whose kind has no fields yet, and refuses any other.
  for (const json& cfg : allocated.value("config", json::array())) {
    const json opaque = cfg.value("opaque", json::object());
    if (!opaque.is_object() || Str(opaque, "driver") != config_.driver) continue;
    const json params = opaque.value("parameters", json::object());
    const std::string api = params.is_object() ? Str(params, "apiVersion") : "";
    if (api != config_.driver + "/v1") {
      *config = absl::InvalidArgumentError(fmt::format(
          "claim {}: unsupported opaque config {}/{} for request(s) {}; {} reads {}/v1 only", id,
          api, params.is_object() ? Str(params, "kind") : "",
          cfg.value("requests", json::array()).dump(), config_.driver, config_.driver));
      break;
    }
  }
  std::vector<PreparedDevice> devices;
  for (const json& res : results) {
    if (Str(res, "driver") != config_.driver) {
      if (config_.misbehave.foreign_results_fail) {
        DM_INFO("Misbehaving: failing on another driver's result", {"claim", claim.name});
        return absl::FailedPreconditionError(
            fmt::format("claim {}: requested device {}/{} is not allocatable by {}", id,
                        Str(res, "pool"), Str(res, "device"), config_.driver));
      }
      if (!config_.misbehave.prepare_foreign_results) continue;
      DM_INFO("Misbehaving: answering another driver's result", {"claim", claim.name});
    }
    PreparedDevice d;
    d.request_names = {Str(res, "request")};
    d.pool_name = Str(res, "pool");
    d.device_name = Str(res, "device");
    if (config_.misbehave.prepare_wrong_device) d.device_name += "-unallocated";
    d.cdi_device_ids = {CdiDeviceId(config_.CdiKind(), CdiDeviceName(claim.uid, d.device_name))};
    devices.push_back(std::move(d));
  }
  return devices;
}

absl::Status DriverCore::WriteSpec(const ClaimRef& claim,
                                   const std::vector<PreparedDevice>& devices) const {
  if (config_.misbehave.cdi_spec == CdiSpecMode::kSkip) {
    DM_INFO("Misbehaving: not writing the CDI spec", {"claim", claim.name});
    return absl::OkStatus();
  }
  std::vector<CdiDevice> cdi;
  for (const PreparedDevice& d : devices) {
    CdiDevice c;
    c.name = CdiDeviceName(claim.uid, d.device_name);
    const std::string request = d.request_names.empty() ? "" : d.request_names[0];
    c.env.push_back(fmt::format("DRA_{}={}/{}/{}", EnvName(d.device_name), claim.namespace_,
                                claim.name, request));
    for (const DeviceConfig& dc : config_.devices) {
      if (dc.name != d.device_name) continue;
      for (const auto& [k, v] : dc.env) c.env.push_back(k + "=" + v);
    }
    cdi.push_back(std::move(c));
  }
  return WriteCdiSpec(CdiSpecPath(SpecDir(), config_.driver, claim.uid), config_.CdiKind(), cdi);
}

std::map<std::string, std::string> DriverCore::Unprepare(const std::vector<ClaimRef>& claims) {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::string> out;
  for (const ClaimRef& c : claims) {
    std::string& error = out[c.uid];
    auto it = prepared_.find(c.uid);
    if (it == prepared_.end()) {
      // Unprepare needs no claim object and must succeed for one it never saw.
      if (config_.misbehave.unprepare_unknown_fails) {
        error = fmt::format("claim {} is not prepared by {}", c.uid, config_.driver);
      }
      continue;
    }
    // Restored from the state file and not prepared again by this process.
    const bool stale = restored_.count(c.uid) > 0 && reprepared_.count(c.uid) == 0;
    if (config_.misbehave.restored_unprepare_fails && restored_.count(c.uid) > 0) {
      DM_INFO("Misbehaving: cannot unprepare a claim restored from the state file",
              {"claim", c.name});
      error = fmt::format("claim {}/{}: no handle for its devices (restored from {})", c.namespace_,
                          c.name, kStateFileName);
      continue;
    }
    if (config_.misbehave.restored_unprepare_needs_prepare && stale) {
      DM_INFO("Misbehaving: cannot unprepare a restored claim not prepared again",
              {"claim", c.name});
      error = fmt::format("claim {}/{}: not prepared since the restart; no handle for its devices",
                          c.namespace_, c.name);
      continue;
    }
    if (config_.misbehave.unprepare_reads_claim) {
      absl::StatusOr<json> got = api_->GetClaim(c.namespace_, c.name);
      if (!got.ok()) {
        DM_INFO("Misbehaving: unprepare needs the claim object", {"claim", c.name});
        error = fmt::format("retrieve claim {}/{}: {}", c.namespace_, c.name,
                            std::string(got.status().message()));
        continue;
      }
    }
    const bool keep_spec = config_.misbehave.restored_unprepare_keeps_spec && stale;
    if (keep_spec) {
      DM_INFO("Misbehaving: unpreparing a restored claim leaves its CDI spec", {"claim", c.name});
    }
    absl::Status s =
        keep_spec ? absl::OkStatus() : RemoveCdiSpec(CdiSpecPath(SpecDir(), config_.driver, c.uid));
    if (!s.ok()) {
      error = std::string(s.message());
      continue;
    }
    PreparedClaim old = it->second;
    prepared_.erase(it);
    restored_.erase(c.uid);
    reprepared_.erase(c.uid);
    s = SaveLocked();
    if (!s.ok()) {
      prepared_[c.uid] = std::move(old);
      error = std::string(s.message());
      continue;
    }
    unprepared_.insert(c.uid);
    DM_INFO("Unprepared claim", {"claim", c.namespace_ + "/" + c.name}, {"uid", c.uid});
  }
  return out;
}

}  // namespace devmgr::draplugin
