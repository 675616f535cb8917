#include "pod/manifest_parser.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pod/uid.h"

namespace devmgr::pod {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string ErrorOf(const std::string& yaml, const std::string& file = "pod.yaml") {
  absl::StatusOr<Pod> pod = ParsePodManifest(yaml, file);
  EXPECT_FALSE(pod.ok());
  return pod.ok() ? "" : std::string(pod.status().message());
}

TEST(ManifestParserTest, GpuPod) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod
  namespace: ml
  uid: 11111111-2222-3333-4444-555555555555
  labels: {app: x}
spec:
  nodeName: whatever
  containers:
  - name: cuda
    image: nvidia/cuda
    resources:
      limits:
        nvidia.com/gpu: 2
        cpu: 500m
        memory: 1Gi
      requests:
        nvidia.com/gpu: "2"
        cpu: 250m
status:
  phase: Running
)";
  absl::StatusOr<Pod> pod = ParsePodManifest(yaml, "gpu.yaml");
  ASSERT_OK(pod);
  EXPECT_EQ(pod->name, "gpu-pod");
  EXPECT_EQ(pod->namespace_, "ml");
  EXPECT_EQ(pod->uid, "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(pod->source, "gpu.yaml");
  EXPECT_EQ(pod->phase, Phase::kRunning);
  EXPECT_TRUE(pod->init_containers.empty());
  ASSERT_EQ(pod->containers.size(), 1u);
  const Container& c = pod->containers[0];
  EXPECT_EQ(c.name, "cuda");
  EXPECT_FALSE(c.restartable);
  EXPECT_THAT(c.limits,
              ElementsAre(Pair("cpu", 1), Pair("memory", 1073741824), Pair("nvidia.com/gpu", 2)));
  EXPECT_THAT(c.requests, ElementsAre(Pair("cpu", 1), Pair("nvidia.com/gpu", 2)));
}

TEST(ManifestParserTest, DefaultsAndDeterministicUid) {
  const char* yaml = R"(
apiVersion: v1
kind: Pod
metadata: {name: gpu-pod}
spec: {containers: [{name: a}]}
)";
  absl::StatusOr<Pod> pod = ParsePodManifest(yaml, "p.yaml");
  ASSERT_OK(pod);
  EXPECT_EQ(pod->namespace_, "default");
  EXPECT_EQ(pod->phase, Phase::kPending);
  // uuid.uuid5(uuid.NAMESPACE_URL, "devmgr://pods/default/gpu-pod")
  EXPECT_EQ(pod->uid, "a29611c3-0946-5f17-927e-809311f673d7");
  absl::StatusOr<Pod> again = ParsePodManifest(yaml, "other.yaml");
  ASSERT_OK(again);
  EXPECT_EQ(again->uid, pod->uid);
}

TEST(ManifestParserTest, KeepsTheDocumentAsJson) {
  const char* kYaml = R"(apiVersion: v1
kind: Pod
metadata: {name: dra, labels: {tier: "1"}}
spec:
  containers:
  - name: c
    resources:
      claims: [{name: gpu}]
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
  priority: 5
  hostNetwork: false
)";
  absl::StatusOr<Pod> p = ParsePodManifest(kYaml, "dra.yaml");
  ASSERT_OK(p);
  EXPECT_EQ(p->manifest_json,
            R"({"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"tier":"1"},"name":"dra"},)"
            R"("spec":{"containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}],)"
            R"("hostNetwork":false,"priority":5,"resourceClaims":[{"name":"gpu",)"
            R"("resourceClaimTemplateName":"gpu-template"}]}})");
}

// A byte that is not UTF-8 (yaml-cpp passes it through) is written as Go's json.Marshal writes
// it, U+FFFD, not a crash (the fuzz corpora of manifests and scenarios hold such inputs).
TEST(ParserTest, ManifestJsonOfInvalidUtf8) {
  absl::StatusOr<Pod> p = ParsePodManifest(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: u, labels: {a: \"x\xffy\"}}\n"
      "spec: {containers: [{name: c}]}\n",
      "u.yaml");
  ASSERT_OK(p);
  EXPECT_NE(p->manifest_json.find("\"a\":\"x\xef\xbf\xbdy\""), std::string::npos)
      << p->manifest_json;
}

TEST(UidTest, StableValues) {
  EXPECT_EQ(DeterministicPodUid("default", "gpu-pod"), "a29611c3-0946-5f17-927e-809311f673d7");
  EXPECT_EQ(DeterministicPodUid("kube-system", "a"), "609636d0-0c03-556c-bebe-2d0f1b8e5c4b");
  EXPECT_NE(DeterministicPodUid("a", "bc"), DeterministicPodUid("ab", "c"));
  // FIPS 180 "abc" test vector.
  std::string h = Sha1("abc");
  std::string hex;
  for (unsigned char ch : h) {
    static const char* d = "0123456789abcdef";
    hex += d[ch >> 4];
    hex += d[ch & 15];
  }
  EXPECT_EQ(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(ManifestParserTest, InitContainersAndSidecar) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  initContainers:
  - name: init
    resources:
      limits: {example.com/dev: 2}
  - name: sidecar
    restartPolicy: Always
    resources:
      limits: {example.com/dev: 1}
  containers:
  - name: app
    resources:
      limits: {example.com/dev: 1}
)";
  absl::StatusOr<Pod> pod = ParsePodManifest(yaml, "p.yaml");
  ASSERT_OK(pod);
  ASSERT_EQ(pod->init_containers.size(), 2u);
  EXPECT_FALSE(pod->init_containers[0].restartable);
  EXPECT_TRUE(pod->init_containers[1].restartable);
  std::vector<std::string> order;
  for (const Container* c : AllContainersInKubeletOrder(*pod)) order.push_back(c->name);
  EXPECT_THAT(order, ElementsAre("init", "sidecar", "app"));
  EXPECT_TRUE(IsInitContainer(*pod, "sidecar"));
  EXPECT_FALSE(IsInitContainer(*pod, "app"));
  EXPECT_EQ(FindContainer(*pod, "app"), &pod->containers[0]);
  EXPECT_EQ(FindContainer(*pod, "nope"), nullptr);
  // max(app 1 + sidecar 1, init 2 + 0, sidecar cumulative 1) = 2
  EXPECT_THAT(PodLimits(*pod), ElementsAre(Pair("example.com/dev", 2)));
}

TEST(ManifestParserTest, RequestNotEqualToLimit) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata:
  name: gpu
spec:
  containers:
  - name: cuda
    resources:
      limits:
        nvidia.com/gpu: 2
      requests:
        nvidia.com/gpu: 1
)";
  EXPECT_EQ(ErrorOf(yaml, "gpu.yaml"),
            "gpu.yaml:12:25: Pod \"gpu\" is invalid: spec.containers[0].resources.requests: "
            "Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2 "
            "(container \"cuda\", resource \"nvidia.com/gpu\")");
}

TEST(ManifestParserTest, RequestWithoutLimit) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata: {name: gpu}
spec:
  initContainers:
  - name: prep
    resources:
      requests:
        nvidia.com/gpu: 1
  containers:
  - name: cuda
)";
  EXPECT_EQ(ErrorOf(yaml),
            "pod.yaml:9:25: Pod \"gpu\" is invalid: spec.initContainers[0].resources.limits: "
            "Required value: Limit must be set for non overcommitable resources "
            "(container \"prep\", resource \"nvidia.com/gpu\")");
}

TEST(ManifestParserTest, NonIntegerExtendedResource) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata: {name: gpu}
spec:
  containers:
  - name: cuda
    resources:
      limits: {nvidia.com/gpu: 500m}
)";
  EXPECT_EQ(ErrorOf(yaml),
            "pod.yaml:8:32: Pod \"gpu\" is invalid: "
            "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": "
            "must be an integer (container \"cuda\", resource \"nvidia.com/gpu\")");
}

TEST(ManifestParserTest, NativeResourcesMayOvercommit) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: "2", memory: 1Gi}
      requests: {cpu: 500m, ephemeral-storage: 1Gi}
)";
  absl::StatusOr<Pod> pod = ParsePodManifest(yaml, "p.yaml");
  ASSERT_OK(pod);
  EXPECT_EQ(pod->containers[0].requests.at("cpu"), 1);
}

TEST(ManifestParserTest, RequestAboveLimitForNative) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: "1"}
      requests: {cpu: "2"}
)";
  EXPECT_THAT(ErrorOf(yaml),
              HasSubstr("spec.containers[0].resources.requests: Invalid value: \"2\": "
                        "must be less than or equal to cpu limit of 1"));
}

TEST(ManifestParserTest, ResourceNameChecks) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      limits: {gpu: 1}
)";
  EXPECT_THAT(ErrorOf(yaml),
              HasSubstr("spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": "
                        "must be a standard resource for containers"));
  const char* yaml2 = R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      limits: {Example.com/gpu: 1}
)";
  EXPECT_THAT(ErrorOf(yaml2), HasSubstr("doesn't follow extended resource name standard"));
}

TEST(ManifestParserTest, MissingNames) {
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {}\nspec:\n"
                    "  containers: [{name: a}]\n"),
            "pod.yaml:4:3: Pod \"\" is invalid: metadata.name: Required value: name or "
            "generateName is required");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a}]}\n"),
            "pod.yaml:1:1: Pod \"\" is invalid: metadata.name: Required value: name or "
            "generateName is required");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  containers:\n  - image: x\n"),
            "pod.yaml:6:5: Pod \"p\" is invalid: spec.containers[0].name: Required value");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n"),
            "pod.yaml:4:7: Pod \"p\" is invalid: spec.containers: Required value");
}

TEST(ManifestParserTest, DuplicateContainerNames) {
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  initContainers: [{name: a}]\n  containers: [{name: a}]\n"),
            "pod.yaml:5:27: Pod \"p\" is invalid: spec.initContainers[0].name: Duplicate "
            "value: \"a\"");
}

TEST(ManifestParserTest, RestartPolicies) {
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  containers: [{name: a, restartPolicy: Always}]\n"),
            "pod.yaml:5:41: Pod \"p\" is invalid: spec.containers[0].restartPolicy: "
            "Forbidden: may not be set for non-init containers");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  initContainers: [{name: i, restartPolicy: Never}]\n"
                    "  containers: [{name: a}]\n"),
            "pod.yaml:5:45: Pod \"p\" is invalid: spec.initContainers[0].restartPolicy: "
            "Unsupported value: \"Never\": supported values: \"Always\"");
}

TEST(ManifestParserTest, BadYamlHasLineAndColumn) {
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n"),
            "pod.yaml:5:1: end of sequence flow not found");
  EXPECT_THAT(ErrorOf("apiVersion: v1\n  kind: Pod\n"), HasSubstr("pod.yaml:2:7: "));
}

TEST(ManifestParserTest, WrongTypes) {
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  containers:\n    name: a\n"),
            "pod.yaml:6:5: spec.containers: expected a list, got a mapping");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  containers:\n  - name: a\n    resources:\n      limits: [1]\n"),
            "pod.yaml:8:15: spec.containers[0].resources.limits: expected a mapping, got a "
            "list");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: {a: b}}\n"),
            "pod.yaml:3:18: metadata.name: expected a string, got a mapping");
  EXPECT_EQ(ErrorOf("- a\n- b\n"), "pod.yaml:1:1: a manifest must be a mapping, got a list");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                    "  containers:\n  - name: a\n    resources:\n      limits: {x.com/y: 1x}\n"),
            "pod.yaml:8:25: spec.containers[0].resources.limits[x.com/y]: \"1x\": quantities "
            "must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

TEST(ManifestParserTest, ApiVersionAndKind) {
  EXPECT_EQ(ErrorOf("apiVersion: apps/v1\nkind: Deployment\n"),
            "pod.yaml:1:13: apiVersion: want \"v1\", got \"apps/v1\"");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: Service\n"),
            "pod.yaml:2:7: kind: want \"Pod\", got \"Service\"");
  EXPECT_EQ(ErrorOf("kind: Pod\n"), "pod.yaml:1:1: apiVersion: Required value (want \"v1\")");
  EXPECT_EQ(ErrorOf(""), "pod.yaml: empty manifest");
}

TEST(ManifestParserTest, JsonManifest) {
  const char* json = R"({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "j", "namespace": "ns"},
  "spec": {
    "containers": [
      {"name": "c", "resources": {"limits": {"example.com/dev": 3},
                                  "requests": {"example.com/dev": "3"}}}
    ]
  },
  "status": {"phase": "Succeeded"}
})";
  absl::StatusOr<Pod> pod = ParsePodManifest(json, "p.json");
  ASSERT_OK(pod);
  EXPECT_EQ(pod->name, "j");
  EXPECT_EQ(pod->namespace_, "ns");
  EXPECT_EQ(pod->phase, Phase::kSucceeded);
  EXPECT_EQ(pod->containers[0].limits.at("example.com/dev"), 3);

  absl::StatusOr<Pod> bad =
      ParsePodManifest("{\"apiVersion\": \"v1\",\n \"kind\": \"Pod\"", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("p.json:2:"));
}

TEST(ManifestParserTest, TabIndentedJsonAndEquivalentQuantities) {
  const std::string json =
      "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"Pod\",\n\t\"metadata\": "
      "{\"name\": \"t\"},\n\t\"spec\": {\"containers\": [\n\t\t{\"name\": \"c\", "
      "\"resources\": {\"limits\": {\"a.com/b\": 1.0}, \"requests\": {\"a.com/b\": "
      "\"1000m\"}}}\n\t]}\n}\n";
  absl::StatusOr<Pod> pod = ParsePodManifest(json, "t.json");
  ASSERT_OK(pod);
  EXPECT_EQ(pod->containers[0].limits.at("a.com/b"), 1);
}

TEST(ManifestParserTest, MultiDocumentAndLists) {
  const char* yaml = R"(apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c}]}
---
---
apiVersion: v1
kind: PodList
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: c}]}
)";
  absl::StatusOr<std::vector<Pod>> pods = ParsePodManifests(yaml, "m.yaml");
  ASSERT_OK(pods);
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].name, "a");
  EXPECT_EQ((*pods)[1].name, "b");

  absl::StatusOr<Pod> single = ParsePodManifest(yaml, "m.yaml");
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.status().message(), "m.yaml:7:1: a Pod manifest must hold a single document");

  absl::StatusOr<std::vector<Pod>> wrong = ParsePodManifests(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n"
      "---\napiVersion: v1\nkind: ConfigMap\n",
      "m.yaml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "m.yaml:7:7: kind: want \"Pod\", got \"ConfigMap\" (or a PodList)");
  absl::StatusOr<std::vector<Pod>> none = ParsePodManifests("", "e.yaml");
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST(ManifestParserTest, LoadFromFile) {
  char dir[] = "/tmp/devmgr-pod-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/p.yaml";
  {
    std::ofstream out(path);
    out << "apiVersion: v1\nkind: Pod\nmetadata: {name: f}\nspec: {containers: [{name: c}]}\n";
  }
  absl::StatusOr<Pod> pod = LoadPodManifest(path);
  ASSERT_OK(pod);
  EXPECT_EQ(pod->source, path);
  absl::StatusOr<Pod> missing = LoadPodManifest(std::string(dir) + "/nope.yaml");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace devmgr::pod

namespace devmgr::pod {
namespace {

constexpr char kDraPod[] = R"(apiVersion: v1
kind: Pod
metadata: {name: dra}
spec:
  containers:
  - name: app
    resources: {limits: {example.com/gpu: 1, example.com/nic: 1}}
status:
  extendedResourceClaimStatus:
    resourceClaimName: dra-claim
    requestMappings:
    - {containerName: app, resourceName: example.com/gpu, requestName: r0}
)";

TEST(ManifestParserTest, ExtendedResourceClaimStatus) {
  absl::StatusOr<Pod> pod = ParsePodManifest(kDraPod, "dra.yaml");
  ASSERT_OK(pod);
  EXPECT_EQ(pod->extended_resource_claim_name, "dra-claim");
  ASSERT_EQ(pod->extended_resource_mappings.size(), 1u);
  EXPECT_EQ(pod->extended_resource_mappings[0].request_name, "r0");
  EXPECT_TRUE(IsDraBackedResource(*pod, "app", "example.com/gpu"));
  EXPECT_FALSE(IsDraBackedResource(*pod, "app", "example.com/nic"));
  EXPECT_FALSE(IsDraBackedResource(*pod, "other", "example.com/gpu"));
}

TEST(ManifestParserTest, ExtendedResourceClaimStatusErrors) {
  std::string y = kDraPod;
  std::string bad = y;
  bad.replace(bad.find("containerName: app"), 18, "containerName: nope");
  absl::StatusOr<Pod> pod = ParsePodManifest(bad, "dra.yaml");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(std::string(pod.status().message()), ::testing::HasSubstr("dra.yaml:12:23:"));
  EXPECT_THAT(std::string(pod.status().message()),
              ::testing::HasSubstr("status.extendedResourceClaimStatus.requestMappings[0]."
                                   "containerName: Not found: \"nope\""));
  std::string no_res = y;
  no_res.replace(no_res.find("resourceName: example.com/gpu, "), 31, "");
  pod = ParsePodManifest(no_res, "dra.yaml");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(std::string(pod.status().message()),
              ::testing::HasSubstr("requestMappings[0].resourceName: Required value"));
  std::string not_list = y.substr(0, y.find("    requestMappings:")) + "    requestMappings: 3\n";
  pod = ParsePodManifest(not_list, "dra.yaml");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(std::string(pod.status().message()),
              ::testing::HasSubstr("requestMappings: expected a list"));
}

TEST(ManifestParserTest, YamlDocumentsAsJsonKeepsEveryDocumentInTheApiSchema) {
  // Empty documents are skipped; plain scalars that read as integers,
  // booleans or null become those, quoted ones stay strings.
  const char* kYaml = R"(---
kind: ResourceClaim
spec: {count: 2, quoted: "2", on: true, off: "false", none: null, tilde: ~, neg: -3}
---
---
kind: DeviceClass
list: [a, "1", 1]
)";
  absl::StatusOr<std::vector<std::string>> docs = YamlDocumentsAsJson(kYaml, "objects.yaml");
  ASSERT_OK(docs);
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0],
            R"({"kind":"ResourceClaim","spec":{"count":2,"neg":-3,"none":null,"off":"false",)"
            R"("on":true,"quoted":"2","tilde":null}})");
  EXPECT_EQ((*docs)[1], R"({"kind":"DeviceClass","list":["a","1",1]})");
  EXPECT_THAT(std::string(YamlDocumentsAsJson("a: [1, 2\n", "bad.yaml").status().message()),
              ::testing::StartsWith("bad.yaml:"));
}

}  // namespace
}  // namespace devmgr::pod
