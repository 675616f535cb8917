// A small metrics registry: counters, gauges and histograms with labels, rendered in
// the Prometheus text exposition format (0.0.4) the way the kubelet's
// component-base registry renders them: families sorted by name, a
// "[ALPHA] " (etc.) stability prefix on HELP, series sorted by label
// values, labels sorted by name, histogram buckets cumulative with le="+Inf",
// and a labelled family with no series left out entirely.
#ifndef DEVMGR_METRICS_REGISTRY_H_
#define DEVMGR_METRICS_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace devmgr::metrics {

// component-base's StabilityLevel; rendered as a HELP prefix.
enum class Stability { kInternal, kAlpha, kBeta, kStable };

struct MetricOpts {
  // Full name, e.g. "kubelet_device_plugin_registration_total".
  std::string name;
  std::string help;
  Stability stability = Stability::kAlpha;
  // Label names; empty: a single unlabelled series, always rendered.
  std::vector<std::string> labels;
};

// DefBuckets: {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}.
std::vector<double> DefBuckets();
// start, start*factor, ... (count values).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class Registry;

// A counter family. Thread-safe; owned by its Registry.
class CounterVec {
 public:
  // `label_values` must have one value per label name (else ignored).
  void Inc(const std::vector<std::string>& label_values, double delta = 1);
  // Overwrites the value (for counters mirrored from another source).
  void Set(const std::vector<std::string>& label_values, double value);
  // 0 for a series never touched.
  double Value(const std::vector<std::string>& label_values) const;

 private:
  friend class Registry;
  CounterVec(MetricOpts opts, absl::Mutex* mu) : opts_(std::move(opts)), mu_(mu) {}
  const MetricOpts opts_;
  absl::Mutex* const mu_;
  std::map<std::vector<std::string>, double> values_ ABSL_GUARDED_BY(*mu_);
};

// A gauge family whose series are replaced as a whole, as a Go collector's
// const metrics are made anew at every collect (a label value absent from the
// last ReplaceAll is not rendered). Thread-safe; owned by its Registry.
class GaugeVec {
 public:
  // Label values (one per label name; others ignored) -> value.
  void ReplaceAll(const std::map<std::vector<std::string>, double>& series);
  // 0 for a series not set.
  double Value(const std::vector<std::string>& label_values) const;

 private:
  friend class Registry;
  GaugeVec(MetricOpts opts, absl::Mutex* mu) : opts_(std::move(opts)), mu_(mu) {}
  const MetricOpts opts_;
  absl::Mutex* const mu_;
  std::map<std::vector<std::string>, double> values_ ABSL_GUARDED_BY(*mu_);
};

// A histogram family. Thread-safe; owned by its Registry.
class HistogramVec {
 public:
  struct Data {
    std::vector<uint64_t> cumulative;  // one per bucket bound (le)
    uint64_t count = 0;
    double sum = 0;
  };
  void Observe(const std::vector<std::string>& label_values, double value);
  std::optional<Data> Get(const std::vector<std::string>& label_values) const;
  const std::vector<double>& buckets() const { return buckets_; }

 private:
  friend class Registry;
  HistogramVec(MetricOpts opts, std::vector<double> buckets, absl::Mutex* mu)
      : opts_(std::move(opts)), buckets_(std::move(buckets)), mu_(mu) {}
  const MetricOpts opts_;
  const std::vector<double> buckets_;
  absl::Mutex* const mu_;
  // Per-bucket (non-cumulative) counts, plus count and sum.
  std::map<std::vector<std::string>, Data> values_ ABSL_GUARDED_BY(*mu_);
};

// Thread-safe. Families live as long as the registry.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  CounterVec* AddCounter(MetricOpts opts);
  HistogramVec* AddHistogram(MetricOpts opts, std::vector<double> buckets);
  GaugeVec* AddGauge(MetricOpts opts);
  // Runs (without the registry's lock) before every Render, e.g. to mirror
  // counts kept elsewhere.
  void AddCollectHook(std::function<void()> hook);

  // The text exposition format.
  std::string Render() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<CounterVec>> counters_;
  std::vector<std::unique_ptr<HistogramVec>> histograms_;
  std::vector<std::unique_ptr<GaugeVec>> gauges_;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace devmgr::metrics

#endif  // DEVMGR_METRICS_REGISTRY_H_
