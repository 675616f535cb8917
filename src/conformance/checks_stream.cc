// law.*: the ListAndWatch stream as the kubelet reads it
// (devicemanager/plugin/v1beta1 client.go Run, genericDeviceUpdateCallback).
#include <map>
#include <optional>
#include <set>

#include "common/go_format.h"
#include "conformance/checks.h"
#include "conformance/session.h"
#include "conformance/validation.h"
#include "fmt/format.h"
#include "transport/go_grpc_error.h"
#include "transport/utf8_fields.h"

namespace devmgr::conformance {
namespace {

constexpr size_t kMaxEvidence = 5;

// A skip for checks that need the device list (law.first-list judges it):
// why there is none.
Outcome NoList(Session& s) {
  return Outcome::Skip(s.NoListReason(s.KubeletStream()) + " (see law.first-list)");
}

std::string EndText(const StreamRecorder& r) {
  auto st = r.end_status();
  if (!st) return "still open";
  return st->ok() ? "ended with status OK" : "ended: " + transport::GoRpcErrorText(*st);
}

// Why a 1.34+ kubelet cannot read a list holding invalid UTF-8 in `field`.
std::string Unreadable(Session& s, const std::string& field) {
  return fmt::format(
      "holds a {} that is not valid UTF-8: a {} kubelet's gRPC client fails to unmarshal it "
      "(\"{}\")",
      field, s.profile().name, transport::kInvalidUtf8Error);
}

Outcome FirstList(Session& s) {
  StreamRecorder* r = s.KubeletStream();
  if (r == nullptr)
    return Outcome::Skip("no ListAndWatch stream: the plugin's socket was not found");
  if (!r->WaitForMessages(1, s.t().first_list_within)) {
    int code = 0;
    if (r->end_status().has_value() || s.target().Exited(&code)) {
      return Outcome::Fail(s.NoListReason(r) +
                           "; the resource stays at 0 until the first list arrives");
    }
    return Outcome::Fail(
        fmt::format("no device list within {} of opening ListAndWatch (stream {}); "
                    "the resource stays at 0 until the first list arrives",
                    Dur(s.t().first_list_within), EndText(*r)));
  }
  const absl::Duration took = MonoSub(r->First()->at, r->opened_at());
  // From 1.34 the kubelet's Go types check proto3 strings while unmarshalling:
  // the list never reaches the device manager and the stream is dropped.
  if (s.profile().validates_utf8) {
    if (std::optional<std::string> field = transport::FirstInvalidUtf8Field(r->First()->resp)) {
      return Outcome::Fail(fmt::format(
          "the first list (after {}) {}, logs \"ListAndWatch ended unexpectedly for device "
          "plugin\" and drops the stream; the resource stays at 0",
          Dur(took), Unreadable(s, *field)));
    }
  }
  Outcome o = Outcome::Pass(
      fmt::format("first list after {} (window {})", Dur(took), Dur(s.t().first_list_within)));
  o.figures.push_back({"time to first list", Dur(took)});
  o.Companion(PromptCompanion(s, "first list", took, s.t().first_list_within));
  return o;
}

// From 1.34 (see FirstList) a list a kubelet cannot unmarshal ends its
// stream there: the first such list of the stream, as a failure.
std::optional<Outcome> UnreadableList(Session& s, const StreamRecorder& r) {
  if (!s.profile().validates_utf8) return std::nullopt;
  const auto msgs = r.Messages();
  for (size_t i = 0; i < msgs.size(); ++i) {
    std::optional<std::string> field = transport::FirstInvalidUtf8Field(msgs[i]->resp);
    if (!field) continue;
    if (i == 0) {
      return Outcome::Skip(fmt::format(
          "a {} kubelet's stream ends at the first list, which it cannot unmarshal (see "
          "law.first-list)",
          s.profile().name));
    }
    return Outcome::Fail(fmt::format(
        "list {} of {} (after {}) {} and drops the stream there; it never calls ListAndWatch "
        "again and marks every device unhealthy (allocatable 0) until the plugin registers "
        "again",
        i + 1, msgs.size(), Dur(MonoSub(msgs[i]->at, r.opened_at())), Unreadable(s, *field)));
  }
  return std::nullopt;
}

Outcome StreamOpen(Session& s) {
  StreamRecorder* r = s.KubeletStream();
  if (r == nullptr || !r->WaitForMessages(1, s.t().first_list_within)) return NoList(s);
  const bool ended = r->WaitForEnd(s.t().observe);
  if (std::optional<Outcome> o = UnreadableList(s, *r)) return *o;
  if (ended) {
    return Outcome::Fail(
        fmt::format("the stream {} after {} message(s); a kubelet never calls "
                    "ListAndWatch again and marks every device unhealthy "
                    "(allocatable 0) until the plugin registers again",
                    EndText(*r), r->MessageCount()));
  }
  return Outcome::Pass(fmt::format("still open after {}", Dur(s.t().observe)));
}

template <typename Pred>
Outcome PerDevice(Session& s, Pred bad, const std::string& what, const std::string& consequence) {
  const v1beta1::ListAndWatchResponse* list = s.DeviceList();
  if (list == nullptr) return NoList(s);
  std::vector<std::string> found;
  for (const auto& d : list->devices()) {
    std::string why = bad(d);
    if (!why.empty()) found.push_back(why);
  }
  if (found.empty())
    return Outcome::Pass(fmt::format("{} device(s) checked", list->devices_size()));
  Outcome o = Outcome::Fail(fmt::format("{} of {} device(s) {}; {}", found.size(),
                                        list->devices_size(), what, consequence));
  for (size_t i = 0; i < found.size() && i < kMaxEvidence; ++i) o.Evidence(found[i]);
  if (found.size() > kMaxEvidence)
    o.Evidence(fmt::format("... and {} more", found.size() - kMaxEvidence));
  return o;
}

Outcome IdsUnique(Session& s) {
  const v1beta1::ListAndWatchResponse* list = s.DeviceList();
  if (list == nullptr) return NoList(s);
  std::map<std::string, int> counts;
  for (const auto& d : list->devices()) ++counts[d.id()];
  std::vector<std::string> dups;
  for (const auto& [id, n] : counts) {
    if (n > 1) dups.push_back(fmt::format("ID {} appears {} times", GoQuote(id), n));
  }
  if (dups.empty()) return Outcome::Pass(fmt::format("{} distinct ID(s)", counts.size()));
  Outcome o = Outcome::Fail(fmt::format(
      "{} ID(s) appear more than once; a kubelet keeps only the last entry, so capacity is lower "
      "than the list and a duplicate with mixed health counts as both healthy and unhealthy",
      dups.size()));
  for (size_t i = 0; i < dups.size() && i < kMaxEvidence; ++i) o.Evidence(dups[i]);
  return o;
}

Outcome IdsNonEmpty(Session& s) {
  return PerDevice(
      s, [](const v1beta1::Device& d) { return d.id().empty() ? "a device has ID \"\"" : ""; },
      "have an empty ID",
      "an empty ID cannot be told apart and breaks allocation bookkeeping and the checkpoint");
}

Outcome IdsPrintable(Session& s) {
  return PerDevice(
      s,
      [](const v1beta1::Device& d) -> std::string {
        if (d.id().empty()) return "";
        std::string p = DeviceIdProblem(d.id());
        return p.empty() ? "" : fmt::format("ID {}: {}", GoQuote(d.id()), p);
      },
      "have IDs that are not printable UTF-8",
      "such IDs end up in logs, the checkpoint, PodResources answers and environment variables");
}

Outcome HealthValues(Session& s) {
  return PerDevice(
      s,
      [](const v1beta1::Device& d) -> std::string {
        if (d.health() == kHealthy || d.health() == kUnhealthy) return "";
        return fmt::format("device {} has health {}", GoQuote(d.id()), GoQuote(d.health()));
      },
      "have a health other than exactly \"Healthy\" or \"Unhealthy\"",
      "a kubelet treats any value but \"Healthy\" as unhealthy, so those devices are never "
      "allocatable");
}

Outcome NumaIds(Session& s) {
  return PerDevice(
      s,
      [](const v1beta1::Device& d) -> std::string {
        if (!d.has_topology()) return "";
        for (const auto& n : d.topology().nodes()) {
          if (n.id() < 0 || n.id() > kMaxNumaId) {
            return fmt::format("device {} has NUMA node {}", GoQuote(d.id()), n.id());
          }
        }
        return "";
      },
      fmt::format("have NUMA node IDs outside 0..{}", kMaxNumaId),
      "the topology manager builds a NUMA bitmask from them and fails on such IDs, so no "
      "topology hint can be built");
}

Outcome Size(Session& s) {
  const v1beta1::ListAndWatchResponse* list = s.DeviceList();
  if (list == nullptr) return NoList(s);
  int64_t biggest = static_cast<int64_t>(list->ByteSizeLong());
  if (StreamRecorder* r = s.KubeletStream()) {
    for (const auto& m : r->Messages()) biggest = std::max(biggest, m->bytes);
  }
  const int64_t headroom = kKubeletMaxRecvMsgSize - biggest;
  Outcome o;
  o.figures.push_back({"largest ListAndWatch message", FormatBytes(biggest)});
  o.figures.push_back({"headroom under 4 MiB", FormatBytes(headroom)});
  if (biggest > kKubeletMaxRecvMsgSize) {
    o.status = Status::kFail;
    o.message = fmt::format(
        "the largest ListAndWatch message is {}, over the kubelet's 4 MiB receive limit by {}; "
        "the kubelet's stream fails and the resource reads 0",
        FormatBytes(biggest), FormatBytes(-headroom));
    o.Evidence(fmt::format("{} device(s), about {} bytes each", list->devices_size(),
                           list->devices_size() == 0 ? 0 : biggest / list->devices_size()));
  } else {
    o.message = fmt::format("largest message {}, headroom {} ({:.1f}%)", FormatBytes(biggest),
                            FormatBytes(headroom),
                            100.0 * static_cast<double>(headroom) / kKubeletMaxRecvMsgSize);
  }
  return o;
}

Outcome NoResend(Session& s) {
  StreamRecorder* r = s.KubeletStream();
  if (r == nullptr || !r->WaitForMessages(1, s.t().first_list_within)) return NoList(s);
  r->WaitForEnd(s.t().observe);  // bounded observation window
  auto msgs = r->Messages();
  int repeats = 0;
  for (size_t i = 1; i < msgs.size(); ++i) {
    if (DeviceListKey(msgs[i]->resp) == DeviceListKey(msgs[i - 1]->resp)) ++repeats;
  }
  if (repeats == 0) {
    return Outcome::Pass(
        fmt::format("{} message(s) in {}, none repeated", msgs.size(), Dur(s.t().observe)));
  }
  const absl::Duration span = MonoSub(msgs.back()->at, msgs.front()->at);
  return Outcome::Fail(
      fmt::format("{} of {} message(s) in {} re-sent an unchanged list (every "
                  "~{}); each one makes the kubelet rebuild the device sets and "
                  "write its checkpoint",
                  repeats, msgs.size(), Dur(s.t().observe), Dur(span / std::max(1, repeats))));
}

}  // namespace

std::vector<CheckInfo> StreamChecks() {
  return {
      {"law.first-list",
       "ListAndWatch sends the first device list",
       Level::kMust,
       {},
       kNeedNothing,
       FirstList,
       CompanionInfo{"law.first-list-prompt", "ListAndWatch sends the first device list promptly",
                     Level::kShould}},
      {"law.stream-open",
       "ListAndWatch keeps the stream open after the first list",
       Level::kMust,
       {"[Slow]"},
       kNeedNothing,
       StreamOpen},
      {"law.ids-unique", "Device IDs are unique", Level::kMust, {}, kNeedNothing, IdsUnique},
      {"law.ids-nonempty", "Device IDs are not empty", Level::kMust, {}, kNeedNothing, IdsNonEmpty},
      {"law.ids-printable",
       "Device IDs are printable UTF-8 without control characters",
       Level::kShould,
       {},
       kNeedNothing,
       IdsPrintable},
      {"law.health-values",
       "Device health is exactly \"Healthy\" or \"Unhealthy\"",
       Level::kMust,
       {},
       kNeedNothing,
       HealthValues},
      {"law.numa-ids", "NUMA node IDs are valid", Level::kMust, {}, kNeedNothing, NumaIds},
      {"law.size",
       "The device list fits the kubelet's 4 MiB message limit",
       Level::kMust,
       {},
       kNeedNothing,
       Size},
      {"law.no-resend",
       "ListAndWatch sends only changes, not the same list again",
       Level::kShould,
       {"[Slow]"},
       kNeedNothing,
       NoResend},
  };
}

}  // namespace devmgr::conformance
