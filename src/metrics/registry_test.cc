#include "metrics/registry.h"

#include "gtest/gtest.h"

namespace devmgr::metrics {
namespace {

TEST(RegistryTest, LabelledCounterWithoutSeriesIsNotRendered) {
  Registry r;
  r.AddCounter({"a_total", "Help.", Stability::kAlpha, {"x"}});
  EXPECT_EQ(r.Render(), "");
}

TEST(RegistryTest, UnlabelledCounterRendersZero) {
  Registry r;
  r.AddCounter({"a_total", "Some help.", Stability::kAlpha, {}});
  EXPECT_EQ(r.Render(),
            "# HELP a_total [ALPHA] Some help.\n"
            "# TYPE a_total counter\n"
            "a_total 0\n");
}

TEST(RegistryTest, FamiliesSortedByNameAndSeriesByLabelValues) {
  Registry r;
  CounterVec* z = r.AddCounter({"z_total", "Z.", Stability::kStable, {"name"}});
  CounterVec* a = r.AddCounter({"a_total", "A.", Stability::kBeta, {"scope", "boundary"}});
  z->Inc({"b"});
  z->Inc({"a"}, 2);
  z->Inc({"b"});
  a->Inc({"pod", "numa_node"});
  a->Inc({"container", "numa_node"});
  EXPECT_EQ(r.Render(),
            "# HELP a_total [BETA] A.\n"
            "# TYPE a_total counter\n"
            "a_total{boundary=\"numa_node\",scope=\"container\"} 1\n"
            "a_total{boundary=\"numa_node\",scope=\"pod\"} 1\n"
            "# HELP z_total [STABLE] Z.\n"
            "# TYPE z_total counter\n"
            "z_total{name=\"a\"} 2\n"
            "z_total{name=\"b\"} 2\n");
  EXPECT_EQ(z->Value({"b"}), 2);
  EXPECT_EQ(z->Value({"c"}), 0);
}

TEST(RegistryTest, LabelValuesAndHelpAreEscaped) {
  Registry r;
  CounterVec* c = r.AddCounter({"c_total", "back\\slash\nnewline", Stability::kAlpha, {"l"}});
  c->Inc({"q\"b\\n\n"});
  EXPECT_EQ(r.Render(),
            "# HELP c_total [ALPHA] back\\\\slash\\nnewline\n"
            "# TYPE c_total counter\n"
            "c_total{l=\"q\\\"b\\\\n\\n\"} 1\n");
}

TEST(RegistryTest, WrongLabelCountIsIgnored) {
  Registry r;
  CounterVec* c = r.AddCounter({"c_total", "h", Stability::kAlpha, {"l"}});
  c->Inc({});
  c->Inc({"a", "b"});
  EXPECT_EQ(r.Render(), "");
}

TEST(RegistryTest, HistogramBucketsAreCumulative) {
  Registry r;
  HistogramVec* h =
      r.AddHistogram({"d_seconds", "D.", Stability::kAlpha, {"resource_name"}}, {0.1, 1, 10});
  h->Observe({"x"}, 0.05);
  h->Observe({"x"}, 0.5);
  h->Observe({"x"}, 1);  // le is inclusive
  h->Observe({"x"}, 100);
  EXPECT_EQ(r.Render(),
            "# HELP d_seconds [ALPHA] D.\n"
            "# TYPE d_seconds histogram\n"
            "d_seconds_bucket{resource_name=\"x\",le=\"0.1\"} 1\n"
            "d_seconds_bucket{resource_name=\"x\",le=\"1\"} 3\n"
            "d_seconds_bucket{resource_name=\"x\",le=\"10\"} 3\n"
            "d_seconds_bucket{resource_name=\"x\",le=\"+Inf\"} 4\n"
            "d_seconds_sum{resource_name=\"x\"} 101.55\n"
            "d_seconds_count{resource_name=\"x\"} 4\n");
  auto d = h->Get({"x"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->count, 4u);
  EXPECT_EQ(d->cumulative, (std::vector<uint64_t>{1, 3, 3}));
  EXPECT_FALSE(h->Get({"y"}).has_value());
}

TEST(RegistryTest, UnlabelledHistogramRendersEmptyBuckets) {
  Registry r;
  r.AddHistogram({"h_ms", "H.", Stability::kAlpha, {}}, {1, 2});
  EXPECT_EQ(r.Render(),
            "# HELP h_ms [ALPHA] H.\n"
            "# TYPE h_ms histogram\n"
            "h_ms_bucket{le=\"1\"} 0\n"
            "h_ms_bucket{le=\"2\"} 0\n"
            "h_ms_bucket{le=\"+Inf\"} 0\n"
            "h_ms_sum 0\n"
            "h_ms_count 0\n");
}

TEST(RegistryTest, CollectHooksRunBeforeRender) {
  Registry r;
  CounterVec* c = r.AddCounter({"m_total", "M.", Stability::kAlpha, {"l"}});
  int n = 0;
  r.AddCollectHook([&] { c->Set({"a"}, ++n); });
  EXPECT_NE(r.Render().find("m_total{l=\"a\"} 1\n"), std::string::npos);
  EXPECT_NE(r.Render().find("m_total{l=\"a\"} 2\n"), std::string::npos);
}

TEST(RegistryTest, GaugeSeriesAreReplacedAsAWhole) {
  Registry r;
  GaugeVec* g = r.AddGauge({"g_in_use", "G.", Stability::kAlpha, {"driver_name"}});
  EXPECT_EQ(r.Render(), "");                                 // labelled, no series yet
  g->ReplaceAll({{{"b"}, 1}, {{"a"}, 2}, {{"x", "y"}, 9}});  // the last has too many labels
  EXPECT_EQ(r.Render(),
            "# HELP g_in_use [ALPHA] G.\n"
            "# TYPE g_in_use gauge\n"
            "g_in_use{driver_name=\"a\"} 2\n"
            "g_in_use{driver_name=\"b\"} 1\n");
  g->ReplaceAll({{{"a"}, 0}});
  EXPECT_EQ(g->Value({"b"}), 0);
  EXPECT_EQ(r.Render(),
            "# HELP g_in_use [ALPHA] G.\n"
            "# TYPE g_in_use gauge\n"
            "g_in_use{driver_name=\"a\"} 0\n");
}

TEST(BucketsTest, DefAndExponential) {
  EXPECT_EQ(DefBuckets(), (std::vector<double>{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}));
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace devmgr::metrics
