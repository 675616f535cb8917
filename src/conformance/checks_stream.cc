// law.*: the ListAndWatch stream as the kubelet reads it
// (devicemanager/plugin/v1beta1 client.go Run, genericDeviceUpdateCallback).
#include <algorithm>
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
  if (s.KubeletStream() == nullptr)
    return Outcome::Skip("no ListAndWatch stream: the plugin's socket was not found");
  const bool arrived = s.KubeletListArrived();
  StreamRecorder* r = s.KubeletStream();  // the newest connection's, after the wait
  if (!arrived) {
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
  if (s.KubeletStream() == nullptr || !s.KubeletListArrived()) return NoList(s);
  StreamRecorder* r = s.KubeletStream();
  // The kubelet's stream is the list stream here: the window is its own.
  const size_t lists = s.WindowLists().size();
  const bool ended = r->ended() && r->ended_at() <= s.ListWindowEnd();
  if (std::optional<Outcome> o = UnreadableList(s, *r)) return *o;
  if (ended) {
    return Outcome::Fail(
        fmt::format("the stream {} after {} message(s); a kubelet never calls "
                    "ListAndWatch again and marks every device unhealthy "
                    "(allocatable 0) until the plugin registers again",
                    EndText(*r), r->MessageCount()));
  }
  return Outcome::Pass(fmt::format("still open {} after the first list ({} list(s))",
                                   Dur(s.t().list_window), lists));
}

// One list of the window as a kubelet reads it.
struct WindowList {
  size_t index = 0;  // from 1
  size_t of = 0;
  absl::Duration after;  // since the stream opened
  const v1beta1::ListAndWatchResponse* resp = nullptr;
  std::string Name() const {
    return fmt::format("list {} of {} (after {})", index, of, Dur(after));
  }
};

// Every list of the window that a kubelet reads: from 1.34 a later list it
// cannot unmarshal ends its stream (law.stream-open's finding), so the lists
// from there on are not judged. The first list always is.
std::vector<WindowList> ReadLists(Session& s) {
  std::vector<WindowList> out;
  const auto msgs = s.WindowLists();
  StreamRecorder* r = s.ListStream();
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (i > 0 && s.profile().validates_utf8 && transport::FirstInvalidUtf8Field(msgs[i]->resp)) {
      break;
    }
    out.push_back({i + 1, msgs.size(), MonoSub(msgs[i]->at, r->opened_at()), &msgs[i]->resp});
  }
  // Messages() keeps them alive; the pointers above stay valid as long as
  // the stream does (the session's).
  return out;
}

// Judges every list of the window with `problems` (one line per problem
// found in a list). Fails naming the first list with a problem, `what(n,
// list)` saying what its n problems are; the evidence names the list of
// every line. A pass says `pass()` (called after every list was judged).
template <typename Problems, typename What, typename Pass>
Outcome JudgeLists(Session& s, Problems problems, What what, const std::string& consequence,
                   Pass pass) {
  const std::vector<WindowList> lists = ReadLists(s);
  if (lists.empty()) return NoList(s);
  std::vector<std::string> evidence;
  size_t bad_lists = 0;
  std::optional<Outcome> first_bad;
  for (const WindowList& l : lists) {
    std::vector<std::string> found = problems(*l.resp);
    if (found.empty()) continue;
    ++bad_lists;
    if (!first_bad) {
      first_bad = Outcome::Fail(
          fmt::format("{}: {}; {}", l.Name(), what(found.size(), *l.resp), consequence));
    }
    for (const std::string& f : found) evidence.push_back(l.Name() + ": " + f);
  }
  if (!first_bad) {
    return Outcome::Pass(fmt::format("{} in {} list(s) within {} of the first", pass(),
                                     lists.size(), Dur(s.t().list_window)));
  }
  for (size_t i = 0; i < evidence.size() && i < kMaxEvidence; ++i) first_bad->Evidence(evidence[i]);
  if (evidence.size() > kMaxEvidence) {
    first_bad->Evidence(fmt::format("... and {} more", evidence.size() - kMaxEvidence));
  }
  if (bad_lists > 1) {
    first_bad->Evidence(fmt::format("{} of {} list(s) within {} have it", bad_lists, lists.size(),
                                    Dur(s.t().list_window)));
  }
  return *first_bad;
}

template <typename Pred>
Outcome PerDevice(Session& s, Pred bad, const std::string& what, const std::string& consequence) {
  int most = 0;
  auto problems = [&](const v1beta1::ListAndWatchResponse& list) {
    most = std::max(most, list.devices_size());
    std::vector<std::string> found;
    for (const auto& d : list.devices()) {
      std::string why = bad(d);
      if (!why.empty()) found.push_back(why);
    }
    return found;
  };
  return JudgeLists(
      s, problems,
      [&](size_t n, const v1beta1::ListAndWatchResponse& l) {
        return fmt::format("{} of {} device(s) {}", n, l.devices_size(), what);
      },
      consequence, [&] { return fmt::format("{} device(s) checked", most); });
}

Outcome IdsUnique(Session& s) {
  std::set<std::string> ids;
  auto problems = [&](const v1beta1::ListAndWatchResponse& list) {
    std::map<std::string, int> counts;
    for (const auto& d : list.devices()) ++counts[d.id()];
    std::vector<std::string> dups;
    for (const auto& [id, n] : counts) {
      ids.insert(id);
      if (n > 1) dups.push_back(fmt::format("ID {} appears {} times", GoQuote(id), n));
    }
    return dups;
  };
  return JudgeLists(
      s, problems,
      [](size_t n, const v1beta1::ListAndWatchResponse&) {
        return fmt::format("{} ID(s) appear more than once", n);
      },
      "a kubelet keeps only the last entry, so capacity is lower than the list and a duplicate "
      "with mixed health counts as both healthy and unhealthy",
      [&] { return fmt::format("{} distinct ID(s)", ids.size()); });
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
  const auto msgs = s.WindowLists();
  if (msgs.empty()) return NoList(s);
  size_t largest = 0;
  for (size_t i = 1; i < msgs.size(); ++i) {
    if (msgs[i]->bytes > msgs[largest]->bytes) largest = i;
  }
  const int64_t biggest = msgs[largest]->bytes;
  const int devices = msgs[largest]->resp.devices_size();
  const std::string which =
      fmt::format("list {} of {} within {}", largest + 1, msgs.size(), Dur(s.t().list_window));
  const int64_t headroom = kKubeletMaxRecvMsgSize - biggest;
  Outcome o;
  o.figures.push_back({"largest ListAndWatch message", FormatBytes(biggest)});
  o.figures.push_back({"headroom under 4 MiB", FormatBytes(headroom)});
  if (biggest > kKubeletMaxRecvMsgSize) {
    o.status = Status::kFail;
    o.message = fmt::format(
        "the largest ListAndWatch message ({}) is {}, over the kubelet's 4 MiB receive limit by "
        "{}; the kubelet's stream fails and the resource reads 0",
        which, FormatBytes(biggest), FormatBytes(-headroom));
    o.Evidence(fmt::format("{} device(s), about {} bytes each", devices,
                           devices == 0 ? 0 : biggest / devices));
  } else {
    o.message = fmt::format("largest message {} ({}), headroom {} ({:.1f}%)", FormatBytes(biggest),
                            which, FormatBytes(headroom),
                            100.0 * static_cast<double>(headroom) / kKubeletMaxRecvMsgSize);
  }
  return o;
}

// Re-sends are judged over the list window, which every session spends
// anyway; the period is the mean gap between a list and its unchanged
// repeat.
Outcome NoResend(Session& s) {
  const auto msgs = s.WindowLists();
  if (msgs.empty()) return NoList(s);
  StreamRecorder* r = s.ListStream();
  std::vector<absl::Duration> gaps;
  std::vector<std::string> evidence;
  for (size_t i = 1; i < msgs.size(); ++i) {
    if (DeviceListKey(msgs[i]->resp) != DeviceListKey(msgs[i - 1]->resp)) continue;
    gaps.push_back(MonoSub(msgs[i]->at, msgs[i - 1]->at));
    if (evidence.size() < kMaxEvidence) {
      evidence.push_back(fmt::format("list {} (after {}) repeats list {} {} later", i + 1,
                                     Dur(MonoSub(msgs[i]->at, r->opened_at())), i,
                                     Dur(gaps.back())));
    }
  }
  if (gaps.empty()) {
    return Outcome::Pass(fmt::format("{} message(s) in {} after the first, none repeated",
                                     msgs.size(), Dur(s.t().list_window)));
  }
  absl::Duration sum, lo = gaps[0], hi = gaps[0];
  for (absl::Duration g : gaps) {
    sum += g;
    lo = std::min(lo, g);
    hi = std::max(hi, g);
  }
  const absl::Duration period = sum / static_cast<int64_t>(gaps.size());
  Outcome o = Outcome::Fail(fmt::format(
      "{} of {} message(s) within {} of the first re-sent an unchanged list, every {}{}; "
      "each one makes the kubelet rebuild the device sets and write its checkpoint",
      gaps.size(), msgs.size(), Dur(s.t().list_window), Dur(period),
      lo == hi ? "" : fmt::format(" ({} to {})", Dur(lo), Dur(hi))));
  o.figures.push_back({"re-send period", Dur(period)});
  for (auto& e : evidence) o.Evidence(e);
  return o;
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
