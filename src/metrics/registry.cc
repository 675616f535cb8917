#include "metrics/registry.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "fmt/format.h"
#include "metrics/go_float.h"

namespace devmgr::metrics {
namespace {

const char* StabilityPrefix(Stability s) {
  switch (s) {
    case Stability::kInternal:
      return "[INTERNAL] ";
    case Stability::kAlpha:
      return "[ALPHA] ";
    case Stability::kBeta:
      return "[BETA] ";
    case Stability::kStable:
      return "[STABLE] ";
  }
  return "";
}

std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// Label positions in name order (rendering and series order use it).
std::vector<size_t> NameOrder(const std::vector<std::string>& names) {
  std::vector<size_t> idx(names.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  return idx;
}

// {a="x",b="y"} (plus `extra`, already rendered, last); "" when empty.
std::string LabelSet(const std::vector<std::string>& names, const std::vector<size_t>& order,
                     const std::vector<std::string>& values, const std::string& extra = "") {
  std::string out;
  for (size_t i : order) {
    if (!out.empty()) out += ',';
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra.empty()) {
    if (!out.empty()) out += ',';
    out += extra;
  }
  return out.empty() ? "" : "{" + out + "}";
}

// Series keys sorted as the Go client sorts them: by values in label-name
// order.
template <typename Map>
std::vector<const typename Map::value_type*> SortedSeries(const Map& m,
                                                          const std::vector<size_t>& order) {
  std::vector<const typename Map::value_type*> out;
  for (const auto& kv : m) out.push_back(&kv);
  std::sort(out.begin(), out.end(), [&](const auto* a, const auto* b) {
    for (size_t i : order) {
      if (a->first[i] != b->first[i]) return a->first[i] < b->first[i];
    }
    return false;
  });
  return out;
}

void Header(std::string* out, const MetricOpts& o, const char* type) {
  *out += fmt::format("# HELP {} {}{}\n", o.name, StabilityPrefix(o.stability), EscapeHelp(o.help));
  *out += fmt::format("# TYPE {} {}\n", o.name, type);
}

// A counter or gauge family; "" when it has no series to render.
std::string ScalarFamily(const MetricOpts& o, std::map<std::vector<std::string>, double> values,
                         const char* type) {
  if (o.labels.empty() && values.empty()) values[{}] = 0;
  if (values.empty()) return "";
  const auto order = NameOrder(o.labels);
  std::string out;
  Header(&out, o, type);
  for (const auto* kv : SortedSeries(values, order)) {
    out += o.name + LabelSet(o.labels, order, kv->first) + " " + FormatGoFloat(kv->second) + "\n";
  }
  return out;
}

}  // namespace

std::vector<double> DefBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(start);
    start *= factor;
  }
  return out;
}

void CounterVec::Inc(const std::vector<std::string>& label_values, double delta) {
  if (label_values.size() != opts_.labels.size()) return;
  absl::MutexLock l(mu_);
  values_[label_values] += delta;
}

void CounterVec::Set(const std::vector<std::string>& label_values, double value) {
  if (label_values.size() != opts_.labels.size()) return;
  absl::MutexLock l(mu_);
  values_[label_values] = value;
}

double CounterVec::Value(const std::vector<std::string>& label_values) const {
  absl::MutexLock l(mu_);
  auto it = values_.find(label_values);
  return it == values_.end() ? 0 : it->second;
}

void GaugeVec::ReplaceAll(const std::map<std::vector<std::string>, double>& series) {
  absl::MutexLock l(mu_);
  values_.clear();
  for (const auto& [labels, value] : series) {
    if (labels.size() == opts_.labels.size()) values_[labels] = value;
  }
}

double GaugeVec::Value(const std::vector<std::string>& label_values) const {
  absl::MutexLock l(mu_);
  auto it = values_.find(label_values);
  return it == values_.end() ? 0 : it->second;
}

void HistogramVec::Observe(const std::vector<std::string>& label_values, double value) {
  if (label_values.size() != opts_.labels.size()) return;
  absl::MutexLock l(mu_);
  Data& d = values_[label_values];
  if (d.cumulative.empty()) d.cumulative.assign(buckets_.size(), 0);
  // Stored per bucket; made cumulative when read.
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (value <= buckets_[i]) {
      ++d.cumulative[i];
      break;
    }
  }
  ++d.count;
  d.sum += value;
}

std::optional<HistogramVec::Data> HistogramVec::Get(
    const std::vector<std::string>& label_values) const {
  absl::MutexLock l(mu_);
  auto it = values_.find(label_values);
  if (it == values_.end()) {
    if (!opts_.labels.empty()) return std::nullopt;
    Data zero;
    zero.cumulative.assign(buckets_.size(), 0);
    return zero;
  }
  Data d = it->second;
  for (size_t i = 1; i < d.cumulative.size(); ++i) d.cumulative[i] += d.cumulative[i - 1];
  return d;
}

CounterVec* Registry::AddCounter(MetricOpts opts) {
  absl::MutexLock l(&mu_);
  counters_.push_back(std::unique_ptr<CounterVec>(new CounterVec(std::move(opts), &mu_)));
  return counters_.back().get();
}

HistogramVec* Registry::AddHistogram(MetricOpts opts, std::vector<double> buckets) {
  absl::MutexLock l(&mu_);
  histograms_.push_back(
      std::unique_ptr<HistogramVec>(new HistogramVec(std::move(opts), std::move(buckets), &mu_)));
  return histograms_.back().get();
}

GaugeVec* Registry::AddGauge(MetricOpts opts) {
  absl::MutexLock l(&mu_);
  gauges_.push_back(std::unique_ptr<GaugeVec>(new GaugeVec(std::move(opts), &mu_)));
  return gauges_.back().get();
}

void Registry::AddCollectHook(std::function<void()> hook) {
  absl::MutexLock l(&mu_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::Render() const {
  std::vector<std::function<void()>> hooks;
  {
    absl::MutexLock l(&mu_);
    hooks = hooks_;
  }
  for (const auto& h : hooks) h();

  absl::MutexLock l(&mu_);
  // name -> rendered family
  std::map<std::string, std::string> families;
  for (const auto& c : counters_) {
    c->mu_->AssertHeld();  // every family shares the registry's mu_
    std::string out = ScalarFamily(c->opts_, c->values_, "counter");
    if (!out.empty()) families[c->opts_.name] = std::move(out);
  }
  for (const auto& g : gauges_) {
    g->mu_->AssertHeld();
    std::string out = ScalarFamily(g->opts_, g->values_, "gauge");
    if (!out.empty()) families[g->opts_.name] = std::move(out);
  }
  for (const auto& h : histograms_) {
    const MetricOpts& o = h->opts_;
    h->mu_->AssertHeld();  // every family shares the registry's mu_
    std::map<std::vector<std::string>, HistogramVec::Data> values = h->values_;
    if (o.labels.empty() && values.empty()) {
      values[{}].cumulative.assign(h->buckets_.size(), 0);
    }
    if (values.empty()) continue;
    const auto order = NameOrder(o.labels);
    std::string out;
    Header(&out, o, "histogram");
    for (const auto* kv : SortedSeries(values, order)) {
      uint64_t acc = 0;
      for (size_t i = 0; i < h->buckets_.size(); ++i) {
        acc += kv->second.cumulative[i];
        out +=
            o.name + "_bucket" +
            LabelSet(o.labels, order, kv->first, "le=\"" + FormatGoFloat(h->buckets_[i]) + "\"") +
            " " + std::to_string(acc) + "\n";
      }
      out += o.name + "_bucket" + LabelSet(o.labels, order, kv->first, "le=\"+Inf\"") + " " +
             std::to_string(kv->second.count) + "\n";
      out += o.name + "_sum" + LabelSet(o.labels, order, kv->first) + " " +
             FormatGoFloat(kv->second.sum) + "\n";
      out += o.name + "_count" + LabelSet(o.labels, order, kv->first) + " " +
             std::to_string(kv->second.count) + "\n";
    }
    families[o.name] = std::move(out);
  }
  std::string text;
  for (const auto& [name, body] : families) text += body;
  return text;
}

}  // namespace devmgr::metrics
