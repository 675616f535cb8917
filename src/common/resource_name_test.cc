#include "common/resource_name.h"

#include <string>

#include "gtest/gtest.h"

namespace devmgr {
namespace {

class AcceptedName : public testing::TestWithParam<std::string> {};
class RejectedName : public testing::TestWithParam<std::string> {};

TEST_P(AcceptedName, IsExtended) { EXPECT_TRUE(IsExtendedResourceName(GetParam())); }
TEST_P(RejectedName, IsNotExtended) { EXPECT_FALSE(IsExtendedResourceName(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Reference, AcceptedName,
                         testing::Values("fake-domain/resource", "nvidia.com/gpu",
                                         "example.com/Res_1.x", "a/b", "intel.com/sriov_netdevice",
                                         "example.com/x", "0.com/9", "example.com/a-b_c.d",
                                         "x.y-z.example/GPU"));

INSTANTIATE_TEST_SUITE_P(Reference, RejectedName,
                         testing::Values(
                             // Rule 1: no slash is a native resource.
                             "gpu", "resource2", "",
                             // Rule 2: "kubernetes.io/" anywhere.
                             "kubernetes.io/gpu", "foo.kubernetes.io/gpu", "xkubernetes.io/x",
                             "a/kubernetes.io/x",
                             // Rule 3: the quota prefix.
                             "requests.example.com/x",
                             // Rule 4: IsQualifiedName("requests." + name).
                             "Example.com/gpu", "example.com/", "/gpu", "example.com/a/b",
                             "example.com/-x", "example.com/x-", "example.com/_x", "example..com/x",
                             "-example.com/x", "example-.com/x", "example.com./x", "exa_mple.com/x",
                             "example.com/x y", "example.com/gp\xc3\xbc",
                             std::string("example.com/a\0b", 15)));

TEST(IsExtendedResourceNameTest, NamePartLimitIs63Bytes) {
  EXPECT_TRUE(IsExtendedResourceName("example.com/" + std::string(63, 'a')));
  EXPECT_FALSE(IsExtendedResourceName("example.com/" + std::string(64, 'a')));
}

TEST(IsExtendedResourceNameTest, DomainLimitIs244BytesBecauseOfTheRequestsPrefix) {
  // "requests." (9 bytes) + domain must be <= 253 bytes. Labels of 60 bytes
  // joined by dots: 4 * 60 + 3 = 243, plus one more byte label (".a") = 245.
  const std::string label(60, 'a');
  const std::string d243 = label + "." + label + "." + label + "." + label;
  ASSERT_EQ(d243.size(), 243u);
  EXPECT_TRUE(IsExtendedResourceName(d243 + "b/x"));    // 244
  EXPECT_FALSE(IsExtendedResourceName(d243 + "bc/x"));  // 245
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
  EXPECT_TRUE(IsDns1123Subdomain(std::string(253, 'a')));
}

TEST(IsQualifiedNameTest, PrefixIsOptional) {
  EXPECT_TRUE(IsQualifiedName("gpu"));
  EXPECT_TRUE(IsQualifiedName("example.com/gpu"));
  EXPECT_FALSE(IsQualifiedName("/gpu"));
  EXPECT_FALSE(IsQualifiedName("a/b/c"));
  EXPECT_FALSE(IsQualifiedName(""));
}

}  // namespace
}  // namespace devmgr
