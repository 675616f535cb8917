// Allocation and reservation of a pod's claims on a node, and their release.
#include "dra/allocator.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
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

class AllocatorTest : public testing::Test {
 protected:
  AllocatorTest() : clock_(absl::FromUnixSeconds(1795000000)), store_(clock_) {}

  absl::StatusOr<PodClaimResolution> Admit(const json& pod, const std::string& node = "node-1") {
    absl::StatusOr<PodClaimResolution> r = ResolvePodClaims(store_, pod);
    if (!r.ok()) return r.status();
    if (absl::Status s = AllocateAndReserve(store_, node, *r); !s.ok()) return s;
    return r;
  }

  json Claim(const std::string& ns, const std::string& name) {
    apiserver::ApiOr<json> c = store_.Get(apiserver::ResourceClaims(), ns, name);
    EXPECT_TRUE(c.ok()) << name;
    return c.value;
  }

  static std::vector<std::string> Devices(const json& claim) {
    std::vector<std::string> out;
    for (const json& r : claim["status"]["allocation"]["devices"]["results"]) {
      out.push_back(r["request"].get<std::string>() + ":" + r["driver"].get<std::string>() + "/" +
                    r["pool"].get<std::string>() + "/" + r["device"].get<std::string>());
    }
    return out;
  }

  // A pod of `ns` with one claim entry per (name, claim name) pair.
  static json PodUsing(const std::string& ns, const std::string& name,
                       const std::vector<std::string>& claims) {
    json entries = json::array();
    for (const std::string& c : claims) {
      entries.push_back({{"name", "c-" + c.substr(0, c.find('.'))}, {"resourceClaimName", c}});
    }
    return {
        {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}}},
        {"spec", {{"containers", json::array({{{"name", "ctr"}}})}, {"resourceClaims", entries}}}};
  }

  // A claim in `ns` with one request for `count` devices of `cls`.
  void AddClaim(const std::string& ns, const std::string& name, const std::string& cls,
                json exactly_extra = json::object()) {
    json exactly = {{"deviceClassName", cls}};
    exactly.update(exactly_extra);
    json claim = {
        {"metadata", {{"name", name}}},
        {"spec",
         {{"devices", {{"requests", json::array({{{"name", "req"}, {"exactly", exactly}}})}}}}}};
    ASSERT_TRUE(store_.Create(apiserver::ResourceClaims(), ns, claim).ok());
  }

  FakeClock clock_;
  apiserver::Store store_;
};

TEST_F(AllocatorTest, AllocatesAndReservesATemplateClaimThroughTheStore) {
  std::vector<json> pods = testutil::CreateObjects(store_, "e2e-objects.yaml");
  const int64_t before = store_.ResourceVersion();
  absl::StatusOr<PodClaimResolution> r = Admit(pods[0]);
  ASSERT_OK(r);
  const json& claim = r->claims[0].claim;
  EXPECT_EQ(Devices(claim),
            std::vector<std::string>{"my-request:test-driver.cdi.k8s.io/node-1/device-00"});
  EXPECT_EQ(claim["status"]["allocation"]["nodeSelector"], json::parse(R"({"nodeSelectorTerms":
      [{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-1"]}]}]})"));
  EXPECT_EQ(claim["status"]["reservedFor"], json::parse(R"([{"resource":"pods","name":"tester-1",
                             "uid":"3f1c8a52-6b2e-4d6a-9a43-0d6c0e0b5f11"}])"));
  EXPECT_EQ(claim["metadata"]["finalizers"], json::array({kDeleteProtectionFinalizer}));
  EXPECT_EQ(claim, Claim("dra-1234", claim["metadata"]["name"]));
  // Created, finalizer, status: three writes, each a watch event.
  apiserver::ApiOr<std::vector<apiserver::WatchEvent>> ev = store_.EventsAfter(before, absl::Now());
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev.value.size(), 3u);
  EXPECT_EQ(ev.value[0].type, "ADDED");
  EXPECT_EQ(ev.value[2].type, "MODIFIED");
  EXPECT_EQ(ev.value[2].object["metadata"]["resourceVersion"], std::to_string(before + 3));
}

TEST_F(AllocatorTest, AllocatesNDevicesAndSkipsDevicesOfOtherClaims) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  AddClaim("dra-1234", "two", "test-driver.cdi.k8s.io", {{"count", 2}});
  AddClaim("dra-1234", "three", "test-driver.cdi.k8s.io", {{"count", 3}});
  ASSERT_OK(Admit(PodUsing("dra-1234", "a", {"two"})));
  EXPECT_EQ(Devices(Claim("dra-1234", "two")),
            (std::vector<std::string>{"req:test-driver.cdi.k8s.io/node-1/device-00",
                                      "req:test-driver.cdi.k8s.io/node-1/device-01"}));
  absl::StatusOr<PodClaimResolution> r = Admit(PodUsing("dra-1234", "b", {"three"}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "pod dra-1234/b: cannot allocate all claims on node node-1: claim dra-1234/three, "
            "request \"req\": 3 device(s) requested, 2 of the 4 matching device(s) free");
  EXPECT_FALSE(Claim("dra-1234", "three")["status"].contains("allocation"));
}

TEST_F(AllocatorTest, AllModeTakesEveryMatchingDevice) {
  testutil::CreateObjects(store_, "docs-objects.yaml");
  testutil::CreateObjects(store_, "docs-slice.yaml");
  ASSERT_OK(Admit(PodUsing("default", "p", {"example-resource-claim"})));
  EXPECT_EQ(Devices(Claim("default", "example-resource-claim")),
            (std::vector<std::string>{"single-gpu-claim:driver.example.com/node-1/gpu-0",
                                      "single-gpu-claim:driver.example.com/node-1/gpu-1",
                                      "single-gpu-claim:driver.example.com/node-1/gpu-2"}));
}

TEST_F(AllocatorTest, TheDocsJobPodCannotHaveAllGpusAndOneMore) {
  testutil::CreateObjects(store_, "docs-objects.yaml");
  testutil::CreateObjects(store_, "docs-slice.yaml");
  std::vector<json> pods = testutil::CreateObjects(store_, "docs-pod.yaml");
  absl::StatusOr<PodClaimResolution> r = Admit(pods[0]);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()),
              testing::MatchesRegex(
                  "pod default/example-dra-job-x7k2p: cannot allocate all claims on node node-1: "
                  "claim default/example-dra-job-x7k2p-separate-gpu-claim-....., request "
                  "\"gpu-claim\": 1 device\\(s\\) requested, 0 of the 3 matching device\\(s\\) "
                  "free"));
  EXPECT_FALSE(Claim("default", "example-resource-claim")["status"].contains("allocation"));
}

TEST_F(AllocatorTest, TheTutorialClaimSelectsByCapacity) {
  std::vector<json> pods = testutil::CreateObjects(store_, "docs-tutorial.yaml");
  ASSERT_OK(Admit(pods[0]));
  EXPECT_EQ(Devices(Claim("dra-tutorial", "some-gpu")),
            std::vector<std::string>{"some-gpu:gpu.example.com/node-1/gpu-1"});
}

TEST_F(AllocatorTest, UnsupportedSelectorsFailWithoutWriting) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  AddClaim(
      "dra-1234", "or", "test-driver.cdi.k8s.io",
      {{"selectors", json::parse(R"([{"cel":{"expression":"device.driver == \"a\" || true"}}])")}});
  const int64_t rv = store_.ResourceVersion();
  absl::StatusOr<PodClaimResolution> r = Admit(PodUsing("dra-1234", "p", {"or"}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "pod dra-1234/p: claim dra-1234/or, request \"req\": unsupported CEL expression "
            "\"device.driver == \"a\" || true\": operator '||' at offset 21 is not supported");
  EXPECT_EQ(store_.ResourceVersion(), rv);
}

TEST_F(AllocatorTest, ARuntimeErrorAbortsTheAllocation) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  AddClaim("dra-1234", "model", "test-driver.cdi.k8s.io",
           {{"selectors", json::parse(R"([{"cel":{"expression":
              "device.attributes[\"test-driver.cdi.k8s.io\"].model == \"a\""}}])")}});
  absl::StatusOr<PodClaimResolution> r = Admit(PodUsing("dra-1234", "p", {"model"}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("device test-driver.cdi.k8s.io/node-1/device-00: selector "
                        "\"device.attributes[\\\"test-driver.cdi.k8s.io\\\"].model == \\\"a\\\"\": "
                        "CEL runtime error: no such key: model"));
}

TEST_F(AllocatorTest, BacktracksSoThatALaterRequestIsNotStarved) {
  testutil::CreateObjects(store_, "docs-objects.yaml");
  testutil::CreateObjects(store_, "docs-slice.yaml");
  AddClaim("default", "any", "example-device-class", {{"count", 4}});
  AddClaim("default", "fpga", "example-device-class",
           {{"selectors", json::parse(R"([{"cel":{"expression":
              "device.attributes['driver.example.com'].type == 'fpga'"}}])")}});
  ASSERT_OK(Admit(PodUsing("default", "p", {"any", "fpga"})));
  EXPECT_EQ(Devices(Claim("default", "fpga")),
            std::vector<std::string>{"req:driver.example.com/node-1/fpga-0"});
  EXPECT_EQ(Devices(Claim("default", "any")).size(), 4u);
}

TEST_F(AllocatorTest, OnlyTheNewestPoolGenerationCounts) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  json slice = testutil::LoadDocuments("e2e-objects.yaml")[2];
  slice["metadata"]["name"] = "newer";
  slice["spec"]["pool"]["generation"] = 2;
  slice["spec"]["devices"] = json::array({{{"name", "device-new"}}});
  ASSERT_TRUE(store_.Create(apiserver::ResourceSlices(), "", slice).ok());
  AddClaim("dra-1234", "one", "test-driver.cdi.k8s.io");
  ASSERT_OK(Admit(PodUsing("dra-1234", "p", {"one"})));
  EXPECT_EQ(Devices(Claim("dra-1234", "one")),
            std::vector<std::string>{"req:test-driver.cdi.k8s.io/node-1/device-new"});
  // Another node has none of them.
  AddClaim("dra-1234", "elsewhere", "test-driver.cdi.k8s.io");
  EXPECT_THAT(
      std::string(Admit(PodUsing("dra-1234", "q", {"elsewhere"}), "node-2").status().message()),
      HasSubstr("0 of the 0 matching device(s) free"));
}

TEST_F(AllocatorTest, TwoPodsShareAClaimAndReleaseItInTurn) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  AddClaim("dra-1234", "shared", "test-driver.cdi.k8s.io");
  const json a = PodUsing("dra-1234", "a", {"shared"});
  const json b = PodUsing("dra-1234", "b", {"shared"});
  ASSERT_OK(Admit(a));
  ASSERT_OK(Admit(b));
  json claim = Claim("dra-1234", "shared");
  EXPECT_EQ(Devices(claim),
            std::vector<std::string>{"req:test-driver.cdi.k8s.io/node-1/device-00"});
  EXPECT_EQ(claim["status"]["reservedFor"].size(), 2u);
  ASSERT_OK(ReleasePodClaims(store_, a));
  claim = Claim("dra-1234", "shared");
  EXPECT_EQ(claim["status"]["reservedFor"],
            json::parse(R"([{"resource":"pods","name":"b","uid":"uid-b"}])"));
  EXPECT_EQ(Devices(claim).size(), 1u);
  ASSERT_OK(ReleasePodClaims(store_, b));
  claim = Claim("dra-1234", "shared");
  EXPECT_FALSE(claim["status"].contains("allocation"));
  EXPECT_FALSE(claim["status"].contains("reservedFor"));
  EXPECT_FALSE(claim["metadata"].contains("finalizers"));
}

TEST_F(AllocatorTest, AGeneratedClaimIsDeletedWithItsPod) {
  std::vector<json> pods = testutil::CreateObjects(store_, "e2e-objects.yaml");
  absl::StatusOr<PodClaimResolution> r = Admit(pods[0]);
  ASSERT_OK(r);
  const std::string name = r->claims[0].claim["metadata"]["name"];
  ASSERT_OK(ReleasePodClaims(store_, WithResourceClaimStatuses(pods[0], *r)));
  EXPECT_FALSE(store_.Get(apiserver::ResourceClaims(), "dra-1234", name).ok());
  ASSERT_OK(ReleasePodClaims(store_, pods[0]));  // again: nothing left to do
  // Its device is free again.
  AddClaim("dra-1234", "four", "test-driver.cdi.k8s.io", {{"count", 4}});
  EXPECT_OK(Admit(PodUsing("dra-1234", "p", {"four"})));
}

TEST_F(AllocatorTest, APreAllocatedClaimIsOnlyReserved) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  json claim = {
      {"metadata", {{"name", "pre"}}},
      {"spec",
       {{"devices",
         {{"requests",
           json::array({{{"name", "req"},
                         {"exactly", {{"deviceClassName", "test-driver.cdi.k8s.io"}}}}})}}}}},
      {"status", json::parse(R"({"allocation":{"devices":{"results":[{"request":"req",
                    "driver":"test-driver.cdi.k8s.io","pool":"node-1","device":"device-03"}]},
                    "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",
                    "operator":"In","values":["node-1"]}]}]}}})")}};
  ASSERT_TRUE(store_.Create(apiserver::ResourceClaims(), "dra-1234", claim).ok());
  ASSERT_OK(Admit(PodUsing("dra-1234", "p", {"pre"})));
  json stored = Claim("dra-1234", "pre");
  EXPECT_EQ(Devices(stored),
            std::vector<std::string>{"req:test-driver.cdi.k8s.io/node-1/device-03"});
  EXPECT_EQ(stored["status"]["reservedFor"].size(), 1u);
  EXPECT_FALSE(stored["metadata"].contains("finalizers"));
  // Its device is taken: a claim for all four fails.
  AddClaim("dra-1234", "all", "test-driver.cdi.k8s.io", {{"allocationMode", "All"}});
  EXPECT_THAT(std::string(Admit(PodUsing("dra-1234", "q", {"all"})).status().message()),
              HasSubstr("asks for all devices, but device test-driver.cdi.k8s.io/node-1/device-03 "
                        "is already allocated"));
  // Released by its last pod, it keeps its allocation (not made here).
  ASSERT_OK(ReleasePodClaims(store_, PodUsing("dra-1234", "p", {"pre"})));
  EXPECT_EQ(Devices(Claim("dra-1234", "pre")).size(), 1u);
  // On another node it cannot be used.
  EXPECT_THAT(
      std::string(Admit(PodUsing("dra-1234", "r", {"pre"}), "node-2").status().message()),
      HasSubstr("pod dra-1234/r: cannot allocate all claims on node node-2: claim "
                "dra-1234/pre is allocated, and its nodeSelector does not select the node"));
}

TEST_F(AllocatorTest, UnsupportedRequestFieldsAreRefused) {
  testutil::CreateObjects(store_, "e2e-objects.yaml");
  AddClaim("dra-1234", "admin", "test-driver.cdi.k8s.io", {{"adminAccess", true}});
  EXPECT_EQ(Admit(PodUsing("dra-1234", "p", {"admin"})).status().message(),
            "pod dra-1234/p: claim dra-1234/admin, request \"req\": exactly.adminAccess is not "
            "supported");
  AddClaim("dra-1234", "noclass", "missing-class");
  EXPECT_EQ(Admit(PodUsing("dra-1234", "p", {"noclass"})).status().message(),
            "pod dra-1234/p: claim dra-1234/noclass, request \"req\": exactly.deviceClassName: "
            "deviceclasses.resource.k8s.io \"missing-class\" not found");
}

}  // namespace
}  // namespace devmgr::dra
