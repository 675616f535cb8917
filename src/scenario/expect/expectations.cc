#include "scenario/expect/expectations.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::string ListString(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
  return s + "]";
}

const node::PodRecord* FindPod(const std::vector<node::PodRecord>& pods, const std::string& ref) {
  const node::PodRecord* by_name = nullptr;
  int named = 0;
  // The latest record wins (a pod re-created with the same name).
  for (auto it = pods.rbegin(); it != pods.rend(); ++it) {
    const node::PodRecord& r = *it;
    if (r.pod.uid == ref || r.pod.namespace_ + "/" + r.pod.name == ref) return &r;
    if (r.pod.name == ref) {
      if (by_name == nullptr) by_name = &r;
      if (by_name->pod.namespace_ != r.pod.namespace_) ++named;
    }
  }
  return named > 0 ? nullptr : by_name;
}

namespace internal {
bool Augment(size_t i, const std::vector<std::vector<bool>>& ok, std::vector<bool>* seen,
             std::vector<int64_t>* owner) {
  for (size_t j = 0; j < ok[i].size(); ++j) {
    if (!ok[i][j] || (*seen)[j]) continue;
    (*seen)[j] = true;
    if ((*owner)[j] < 0 || Augment(static_cast<size_t>((*owner)[j]), ok, seen, owner)) {
      (*owner)[j] = static_cast<int64_t>(i);
      return true;
    }
  }
  return false;
}
}  // namespace internal

void CheckSet(const SetExpect& e, const Location& loc, const std::string& where,
              const std::optional<std::vector<std::string>>& got_opt,
              const std::map<std::string, std::vector<std::string>>& captures,
              std::vector<Failure>* out) {
  auto fail = [&](std::string what, std::string expected, std::string actual) {
    out->push_back(Failure{loc, std::move(what), std::move(expected), std::move(actual)});
  };
  if (e.absent) {
    if (got_opt) fail(where, "absent", ListString(Sorted(*got_opt)));
    return;
  }
  const std::vector<std::string> got = got_opt ? Sorted(*got_opt) : std::vector<std::string>{};
  const std::string shown = got_opt ? ListString(got) : "absent";
  // A reference's ids and its description ("[a b]" or "$name [a b]").
  auto resolve = [&](const SetRef& r, std::vector<std::string>* ids) -> std::optional<std::string> {
    if (r.capture.empty()) {
      *ids = Sorted(r.ids);
      return ListString(*ids);
    }
    auto it = captures.find(r.capture);
    if (it == captures.end()) {
      fail(where, "$" + r.capture, "no value captured under that name");
      return std::nullopt;
    }
    *ids = it->second;
    return fmt::format("${} {}", r.capture, ListString(*ids));
  };
  if (e.count && static_cast<int64_t>(got.size()) != *e.count) {
    fail(where, fmt::format("{} device(s)", *e.count), fmt::format("{} {}", got.size(), shown));
  }
  if (e.count_of) {
    std::vector<std::string> ids;
    if (auto d = resolve(SetRef{{}, *e.count_of}, &ids); d && ids.size() != got.size()) {
      fail(where, fmt::format("{} device(s), as many as {}", ids.size(), *d),
           fmt::format("{} {}", got.size(), shown));
    }
  }
  std::vector<std::string> ids;
  if (e.ids) {
    if (auto d = resolve(*e.ids, &ids); d && ids != got) fail(where, *d, shown);
  }
  auto missing = [](const std::vector<std::string>& from, const std::vector<std::string>& in) {
    std::vector<std::string> m;
    std::set_difference(from.begin(), from.end(), in.begin(), in.end(), std::back_inserter(m));
    return m;
  };
  if (e.subset_of) {
    if (auto d = resolve(*e.subset_of, &ids); d && !missing(got, ids).empty()) {
      fail(where, "ids within " + *d,
           fmt::format("{} ({} not within)", shown, ListString(missing(got, ids))));
    }
  }
  if (e.superset_of) {
    if (auto d = resolve(*e.superset_of, &ids); d && !missing(ids, got).empty()) {
      fail(where, "ids including " + *d,
           fmt::format("{} ({} missing)", shown, ListString(missing(ids, got))));
    }
  }
  if (e.disjoint_from) {
    if (auto d = resolve(*e.disjoint_from, &ids)) {
      std::vector<std::string> common;
      std::set_intersection(got.begin(), got.end(), ids.begin(), ids.end(),
                            std::back_inserter(common));
      if (!common.empty()) {
        fail(where, "no id in common with " + *d,
             fmt::format("{} ({} in common)", shown, ListString(common)));
      }
    }
  }
}

void CheckDevices(const DeviceExpect& d, const std::string& where, std::vector<std::string> ids,
                  const std::set<int64_t>& numa,
                  const std::map<std::string, std::vector<std::string>>& captures,
                  std::vector<Failure>* out) {
  CheckSet(d.set, d.loc, where, std::move(ids), captures, out);
  if (d.numa) {
    const std::set<int64_t> want(d.numa->begin(), d.numa->end());
    if (numa != want) {
      auto show = [](const std::set<int64_t>& s) {
        std::vector<std::string> v;
        for (int64_t x : s) v.push_back(IntString(x));
        return ListString(v);
      };
      out->push_back(Failure{d.loc, where + ".numa", show(want), show(numa)});
    }
  }
}

std::vector<Failure> CheckExpectations(const Expectations& e, const Observed& o) {
  std::vector<Failure> out;
  for (const ExpectKind* kind : ExpectKinds()) {
    if (kind->check) kind->check(e, o, &out);
  }
  return out;
}

}  // namespace devmgr::scenario
