#include "apiserver/faults.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace devmgr::apiserver {
namespace {

absl::Status Bad(const std::string& spec, const std::string& why) {
  return absl::InvalidArgumentError(fmt::format("--api-fault {:?}: {}", spec, why));
}

// The reason and message the real server gives with `code`.
std::pair<std::string, std::string> ReasonFor(int code) {
  static const std::map<int, std::pair<std::string, std::string>> kReasons = {
      {400, {"BadRequest", "the server rejected our request for an unknown reason"}},
      {401, {"Unauthorized", "Unauthorized"}},
      {403, {"Forbidden", "forbidden"}},
      {404, {"NotFound", "the server could not find the requested resource"}},
      {409, {"Conflict", "the server reported a conflict"}},
      {410, {"Expired", "the resource version is too old"}},
      {429,
       {"TooManyRequests",
        "the server has received too many requests and has asked us "
        "to try again later"}},
      {500, {"InternalError", "an error on the server has prevented the request from succeeding"}},
      {503, {"ServiceUnavailable", "the server is currently unable to handle the request"}},
      {504, {"Timeout", "the server was unable to return a response in the time allotted"}},
  };
  auto it = kReasons.find(code);
  return it != kReasons.end() ? it->second
                              : std::make_pair(std::string("Unknown"), std::string(""));
}

absl::Status SetKey(Fault* f, int* actions, const std::string& key, const std::string& value) {
  auto duration = [&](absl::Duration* d) {
    return absl::ParseDuration(value, d) && *d >= absl::ZeroDuration();
  };
  auto count = [&](int* n) { return absl::SimpleAtoi(value, n) && *n >= 0; };
  if (key == "method") {
    if (value != "GET" && value != "POST" && value != "PUT" && value != "DELETE" &&
        value != "PATCH") {
      return Bad(f->spec, "method " + value + " is not one of GET, POST, PUT, DELETE, PATCH");
    }
    f->method = value;
  } else if (key == "path") {
    f->path_prefix = value;
  } else if (key == "watch") {
    if (value != "true" && value != "false") return Bad(f->spec, "watch wants true or false");
    f->watch = value == "true";
  } else if (key == "error") {
    ++*actions;
    f->action = Fault::Action::kError;
    if (!absl::SimpleAtoi(value, &f->code) || f->code < 400 || f->code > 599)
      return Bad(f->spec, "error wants an HTTP code from 400 to 599");
  } else if (key == "delay" || key == "drop-watch") {
    ++*actions;
    f->action = key == "delay" ? Fault::Action::kDelay : Fault::Action::kDropWatch;
    if (!duration(&f->duration)) return Bad(f->spec, key + " wants a duration such as 1.5s");
  } else if (key == "expire") {
    ++*actions;
    f->action = Fault::Action::kExpire;
    if (value != "true") return Bad(f->spec, "expire wants true");
  } else if (key == "times" || key == "skip") {
    if (!count(key == "times" ? &f->times : &f->skip))
      return Bad(f->spec, key + " wants a count (0 or more)");
  } else {
    return Bad(f->spec, "unknown key " + key +
                            " (want method, path, watch, error, delay, drop-watch, expire, "
                            "times, skip)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Fault> ParseFault(const std::string& spec) {
  Fault f;
  f.spec = spec;
  int actions = 0;
  for (absl::string_view part : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (absl::Status s = SetKey(&f, &actions, kv.first, kv.second); !s.ok()) return s;
  }
  if (actions != 1) {
    return Bad(spec, "give exactly one of error=, delay=, drop-watch=, expire=true");
  }
  if ((f.action == Fault::Action::kDropWatch || f.action == Fault::Action::kExpire) &&
      f.watch == false) {
    return Bad(spec, "drop-watch and expire act on watch requests only");
  }
  if (f.action == Fault::Action::kDropWatch || f.action == Fault::Action::kExpire) f.watch = true;
  return f;
}

ApiError InjectedError(int code, const std::string& method, const std::string& path) {
  auto [reason, message] = ReasonFor(code);
  if (code == 500) message = "Internal error occurred: injected by devmgr";
  return ApiError{code, reason,
                  fmt::format("{} (a fault devmgr injected on {} {})", message, method, path),
                  nlohmann::json::object()};
}

absl::Status AddFaultSpecs(FaultInjector& faults, const std::vector<std::string>& specs) {
  std::vector<Fault> parsed;
  for (const std::string& spec : specs) {
    absl::StatusOr<Fault> f = ParseFault(spec);
    if (!f.ok()) return f.status();
    parsed.push_back(*std::move(f));
  }
  for (Fault& f : parsed) faults.Add(std::move(f));
  return absl::OkStatus();
}

void FaultInjector::Add(Fault f) {
  absl::MutexLock lock(&mu_);
  faults_.push_back({std::move(f)});
}

FaultDecision FaultInjector::Decide(const std::string& method, const std::string& path, bool watch,
                                    const std::string& resource_version, int64_t current) {
  absl::MutexLock lock(&mu_);
  FaultDecision d;
  for (Entry& e : faults_) {
    const Fault& f = e.fault;
    if (!f.method.empty() && f.method != method) continue;
    if (!absl::StartsWith(path, f.path_prefix)) continue;
    if (f.watch.has_value() && *f.watch != watch) continue;
    if (f.times != 0 && e.fired >= f.times) continue;
    if (e.matched++ < f.skip) continue;
    ++e.fired;
    d.fired = f.spec;
    switch (f.action) {
      case Fault::Action::kError:
        d.error = InjectedError(f.code, method, path);
        break;
      case Fault::Action::kDelay:
        d.delay = f.duration;
        break;
      case Fault::Action::kDropWatch:
        d.drop_watch_after = f.duration;
        break;
      case Fault::Action::kExpire:
        d.error = Expired(fmt::format("too old resource version: {} ({})",
                                      resource_version.empty() ? "0" : resource_version, current));
        break;
    }
    return d;
  }
  return d;
}

}  // namespace devmgr::apiserver
