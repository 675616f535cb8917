#include "manager/endpoint.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/fake_plugin_client.h"

namespace devmgr::manager {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(EndpointTest, GracePeriodIsStrictlyMoreThanFiveMinutes) {
  absl::Time t0 = absl::FromUnixSeconds(1000);
  auto e = Endpoint::NewStopped("r", t0);
  EXPECT_TRUE(e->IsStopped());
  EXPECT_FALSE(e->StopGracePeriodExpired(t0 + absl::Minutes(5)));
  EXPECT_TRUE(e->StopGracePeriodExpired(t0 + absl::Minutes(5) + absl::Nanoseconds(1)));
  Endpoint live("r", std::make_shared<FakePluginClient>());
  EXPECT_FALSE(live.IsStopped());
  EXPECT_FALSE(live.StopGracePeriodExpired(t0 + absl::Hours(1)));
}

TEST(EndpointTest, RpcsSendOneContainerRequest) {
  auto c = std::make_shared<FakePluginClient>();
  Endpoint e("r", c);
  ASSERT_OK(e.Allocate({"a", "b"}));
  ASSERT_OK(e.PreStartContainer({"a"}));
  ASSERT_OK(e.GetPreferredAllocation({"a", "b"}, {"a"}, 2));
  auto calls = c->calls();
  ASSERT_EQ(calls.allocate.size(), 1u);
  EXPECT_EQ(calls.allocate[0].container_requests_size(), 1);
  EXPECT_EQ(calls.prestart_timeouts[0], absl::Seconds(30));
  EXPECT_EQ(calls.preferred[0].container_requests(0).allocation_size(), 2);
}

TEST(EndpointTest, StoppedEndpointRefusesRpcsWithTheKubeletsText) {
  auto c = std::make_shared<FakePluginClient>();
  Endpoint e("vendor.com/gpu", c);
  e.SetStopTime(absl::Now());
  auto r = e.Allocate({"a"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              MatchesRegex("endpoint &\\{\\{0 0\\} vendor\\.com/gpu 0x[0-9a-f]+ \\{[0-9]+ -?[0-9]+ "
                           "0x[0-9a-f]+\\} 0x[0-9a-f]+\\} has been stopped"));
  EXPECT_TRUE(c->calls().allocate.empty());
  auto placeholder = Endpoint::NewStopped("x.io/y", absl::Now());
  EXPECT_THAT(std::string(placeholder->PreStartContainer({}).status().message()),
              HasSubstr("x.io/y <nil> {"));
}

}  // namespace
}  // namespace devmgr::manager
