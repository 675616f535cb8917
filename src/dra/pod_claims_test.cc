// Claims in pods: parsing spec.resourceClaims and container claims, and
// resolving them to ResourceClaims (templates as the claim controller does).
#include "dra/pod_claims.h"

#include <string>
#include <vector>

#include "apiserver/resource_type.h"
#include "common/clock.h"
#include "common/status_testutil.h"
#include "dra/claims_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

using nlohmann::json;
using testing::HasSubstr;
using testing::StartsWith;

class PodClaimsTest : public testing::Test {
 protected:
  PodClaimsTest() : clock_(absl::FromUnixSeconds(1795000000)), store_(clock_) {}

  json Pod(const std::string& name, json resource_claims, json container_claims = json::array()) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}}},
            {"spec",
             {{"containers",
               json::array({{{"name", "ctr"}, {"resources", {{"claims", container_claims}}}}})},
              {"resourceClaims", resource_claims}}}};
  }

  std::string ErrorOf(const json& pod) {
    absl::StatusOr<PodClaimResolution> r = ResolvePodClaims(store_, pod);
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  }

  FakeClock clock_;
  apiserver::Store store_;
};

TEST_F(PodClaimsTest, ATemplateBecomesAClaimOwnedByThePod) {
  std::vector<json> pods = testutil::CreateObjects(store_, "e2e-objects.yaml");
  ASSERT_EQ(pods.size(), 1u);
  absl::StatusOr<PodClaimResolution> r = ResolvePodClaims(store_, pods[0]);
  ASSERT_OK(r);
  ASSERT_EQ(r->claims.size(), 1u);
  const json& claim = r->claims[0].claim;
  EXPECT_TRUE(r->claims[0].generated);
  const std::string name = claim["metadata"]["name"];
  EXPECT_THAT(name, StartsWith("tester-1-my-inline-claim-"));
  EXPECT_EQ(name.size(), std::string("tester-1-my-inline-claim-").size() + 5);
  EXPECT_EQ(claim["metadata"]["namespace"], "dra-1234");
  EXPECT_EQ(claim["metadata"]["annotations"][kPodClaimNameAnnotation], "my-inline-claim");
  EXPECT_EQ(claim["metadata"]["ownerReferences"],
            json::parse(R"([{"apiVersion":"v1","kind":"Pod","name":"tester-1",
              "uid":"3f1c8a52-6b2e-4d6a-9a43-0d6c0e0b5f11","controller":true,
              "blockOwnerDeletion":true}])"));
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
            "test-driver.cdi.k8s.io");
  EXPECT_EQ(r->resource_claim_statuses,
            json::array({{{"name", "my-inline-claim"}, {"resourceClaimName", name}}}));
  const json pod = WithResourceClaimStatuses(pods[0], *r);
  EXPECT_EQ(pod["status"]["resourceClaimStatuses"], r->resource_claim_statuses);

  // Again, with or without the status: the same claim, none created.
  const int64_t rv = store_.ResourceVersion();
  for (const json& p : {pod, pods[0]}) {
    absl::StatusOr<PodClaimResolution> again = ResolvePodClaims(store_, p);
    ASSERT_OK(again);
    EXPECT_EQ(again->claims[0].claim["metadata"]["name"], name);
  }
  EXPECT_EQ(store_.ResourceVersion(), rv);
}

TEST_F(PodClaimsTest, TheDocsPodLoadsWithATemplateAndAnExistingClaim) {
  testutil::CreateObjects(store_, "docs-objects.yaml");
  std::vector<json> pods = testutil::CreateObjects(store_, "docs-pod.yaml");
  ASSERT_EQ(pods.size(), 1u);
  absl::StatusOr<PodClaimResolution> r = ResolvePodClaims(store_, pods[0]);
  ASSERT_OK(r);
  EXPECT_EQ(r->pod.pod.namespace_, "default");
  ASSERT_EQ(r->claims.size(), 2u);
  EXPECT_THAT(r->claims[0].claim["metadata"]["name"].get<std::string>(),
              StartsWith("example-dra-job-x7k2p-separate-gpu-claim-"));
  EXPECT_EQ(r->claims[1].claim["metadata"]["name"], "example-resource-claim");
  EXPECT_FALSE(r->claims[1].generated);
  ASSERT_EQ(r->pod.container_claims.size(), 3u);
  EXPECT_EQ(r->pod.container_claims[2].container_name, "container2");
  EXPECT_EQ(r->pod.container_claims[2].name, "shared-gpu-claim");
  EXPECT_EQ(r->resource_claim_statuses.size(), 1u);  // template entries only
}

// The resource claim controller's generateName (k8s.io/kubernetes
// v1.34.4-v1.37.2, pkg/controller/resourceclaim/controller.go, handleClaim):
// `<pod>-<claim>-` up to 57 bytes; longer, each name cut to
// len * 57 / len("<pod>-<claim>-") bytes (integer division), joined by one
// hyphen, no trailing hyphen. The API adds 5 random characters.
TEST_F(PodClaimsTest, LongNamesAreCutInProportionAsTheControllerCutsThem) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  struct Case {
    size_t pod, claim;
    std::string base;
  };
  const std::string p(200, 'p'), c(63, 'c');
  const std::vector<Case> cases = {
      // 56 and 57 bytes: kept whole, trailing hyphen included.
      {27, 27, p.substr(0, 27) + "-" + c.substr(0, 27) + "-"},
      {28, 27, p.substr(0, 28) + "-" + c.substr(0, 27) + "-"},
      // 58 bytes: 28 * 57 / 58 = 27 of each.
      {28, 28, p.substr(0, 27) + "-" + c.substr(0, 27)},
      // 82 bytes: 40 * 57 / 82 = 27 of each.
      {40, 40, p.substr(0, 27) + "-" + c.substr(0, 27)},
      // Long pod, short claim (105 bytes): 100 * 57 / 105 = 54, 3 * 57 / 105 = 1.
      {100, 3, p.substr(0, 54) + "-" + c.substr(0, 1)},
      // The claim's share rounds down to nothing (63 bytes): 54 and 0.
      {60, 1, p.substr(0, 54) + "-"},
      // Short pod, long claim (68 bytes): 3 * 57 / 68 = 2, 63 * 57 / 68 = 52.
      {3, 63, p.substr(0, 2) + "-" + c.substr(0, 52)},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(testing::Message() << "pod " << k.pod << ", claim " << k.claim);
    json pod =
        Pod(p.substr(0, k.pod), json::array({{{"name", c.substr(0, k.claim)},
                                              {"resourceClaimTemplateName", "external-claim"}}}));
    pod["metadata"]["namespace"] = "dra-1234";
    absl::StatusOr<PodClaimResolution> r = ResolvePodClaims(store_, pod);
    ASSERT_OK(r);
    const json& meta = r->claims[0].claim["metadata"];
    EXPECT_EQ(meta["generateName"], k.base);
    const std::string name = meta["name"];
    EXPECT_THAT(name, StartsWith(k.base));
    EXPECT_EQ(name.size(), k.base.size() + 5);
  }
}

TEST_F(PodClaimsTest, MissingObjectsAreNamedWithTheField) {
  EXPECT_EQ(ErrorOf(Pod("p", json::array({{{"name", "gpu"}, {"resourceClaimName", "nope"}}}))),
            "pod ns/p: spec.resourceClaims[0].resourceClaimName: "
            "resourceclaims.resource.k8s.io \"nope\" not found");
  EXPECT_EQ(
      ErrorOf(Pod("p", json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "nope"}}}))),
      "pod ns/p: spec.resourceClaims[0].resourceClaimTemplateName: "
      "resourceclaimtemplates.resource.k8s.io \"nope\" not found");
}

TEST_F(PodClaimsTest, BadReferencesAreInvalid) {
  EXPECT_EQ(ErrorOf(Pod("p", json::array({{{"name", "gpu"}}}))),
            "pod ns/p: spec.resourceClaims[0]: exactly one of resourceClaimName and "
            "resourceClaimTemplateName must be set");
  EXPECT_EQ(ErrorOf(Pod("p", json::array({{{"name", "a"}, {"resourceClaimName", "x"}},
                                          {{"name", "a"}, {"resourceClaimName", "y"}}}))),
            "pod ns/p: spec.resourceClaims[1].name: Duplicate value: \"a\"");
  EXPECT_THAT(ErrorOf(Pod("p", json::array({{{"name", "Bad_Name"}, {"resourceClaimName", "x"}}}))),
              StartsWith("pod ns/p: spec.resourceClaims[0].name: Invalid value: \"Bad_Name\": "));
  EXPECT_EQ(ErrorOf(Pod("p", json::array({{{"name", "gpu"}, {"resourceClaimName", "x"}}}),
                        json::array({{{"name", "gpus"}}}))),
            "pod ns/p: spec.containers[0].resources.claims[0].name: \"gpus\" is not the name of "
            "an entry of spec.resourceClaims (\"gpu\")");
}

TEST_F(PodClaimsTest, AContainerRequestMustBeAClaimRequest) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  json pod =
      Pod("p", json::array({{{"name", "c"}, {"resourceClaimTemplateName", "external-claim"}}}),
          json::array({{{"name", "c"}, {"request", "other"}}}));
  pod["metadata"]["namespace"] = "dra-1234";
  EXPECT_THAT(ErrorOf(pod), testing::MatchesRegex(
                                "pod dra-1234/p: spec.containers\\[0\\].resources.claims\\[0\\]."
                                "request: claim \"c\" \\(ResourceClaim dra-1234/p-c-.....\\) has "
                                "no request \"other\""));
}

TEST_F(PodClaimsTest, ARecordedClaimNotOwnedByThePodIsRefused) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  ASSERT_TRUE(store_
                  .Create(apiserver::ResourceClaims(), "dra-1234",
                          {{"metadata", {{"name", "someone-elses"}}}, {"spec", json::object()}})
                  .ok());
  json pod =
      Pod("p", json::array({{{"name", "c"}, {"resourceClaimTemplateName", "external-claim"}}}));
  pod["metadata"]["namespace"] = "dra-1234";
  pod["status"]["resourceClaimStatuses"] =
      json::array({{{"name", "c"}, {"resourceClaimName", "someone-elses"}}});
  absl::StatusOr<PodClaimResolution> r = ResolvePodClaims(store_, pod);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("was not created for the pod"));
  // A status entry without a claim name: no claim needed.
  pod["status"]["resourceClaimStatuses"] = json::array({{{"name", "c"}}});
  r = ResolvePodClaims(store_, pod);
  ASSERT_OK(r);
  EXPECT_TRUE(r->claims.empty());
}

}  // namespace
}  // namespace devmgr::dra
