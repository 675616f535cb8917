// The service a DRA driver's registration is served with, per profile, and
// the kubelet's refusals (docs/profiles.md, "DRA": oracle-confirmed texts).
#include "dra/services.h"

#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

class ServicesTest : public testing::TestWithParam<int> {
 protected:
  absl::StatusOr<DraService> Choose(const std::vector<std::string>& versions) {
    return ChooseService(ProfileForMinor(GetParam()), "drv.example.com", "/p/dra.sock", versions);
  }
};

TEST_P(ServicesTest, TakesThePluginsFirstSupportedEntry) {
  EXPECT_EQ(*Choose({"v1.DRAPlugin", "v1beta1.DRAPlugin"}), DraService::kV1);
  EXPECT_EQ(*Choose({"v1beta1.DRAPlugin", "v1.DRAPlugin"}), DraService::kV1beta1);
  EXPECT_EQ(*Choose({"v1alpha4.DRAPlugin", "v1beta1.DRAPlugin"}), DraService::kV1beta1);
  EXPECT_EQ(*Choose({"v1alpha1.DRAResourceHealth", "v1.DRAPlugin"}), DraService::kV1);
}

TEST_P(ServicesTest, RefusesAnEmptyList) {
  const absl::StatusOr<DraService> s = Choose({});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "invalid supported gRPC versions of DRA driver plugin drv.example.com at endpoint "
            "/p/dra.sock: empty list of supported gRPC services (aka supported versions)");
}

TEST_P(ServicesTest, RefusesAListWithoutASupportedService) {
  EXPECT_EQ(Choose({"v1alpha4.DRAPlugin"}).status().message(),
            "invalid supported gRPC versions of DRA driver plugin drv.example.com at endpoint "
            "/p/dra.sock: none of services supported by the plugin ([\"v1alpha4.DRAPlugin\"]) "
            "are supported by the kubelet ([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])");
  EXPECT_EQ(Choose({"v1alpha1.DRAResourceHealth"}).status().message(),
            "invalid supported gRPC versions of DRA driver plugin drv.example.com at endpoint "
            "/p/dra.sock: none of services supported by the plugin "
            "([\"v1alpha1.DRAResourceHealth\"]) are supported by the kubelet "
            "([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])");
}

INSTANTIATE_TEST_SUITE_P(Profiles, ServicesTest, testing::Values(34, 35, 36, 37),
                         [](const testing::TestParamInfo<int>& p) {
                           return "v1_" + std::to_string(p.param);
                         });

TEST(ServiceNameTest, IsTheRegistrationString) {
  EXPECT_EQ(ServiceName(DraService::kV1), "v1.DRAPlugin");
  EXPECT_EQ(ServiceName(DraService::kV1beta1), "v1beta1.DRAPlugin");
}

}  // namespace
}  // namespace devmgr::dra
