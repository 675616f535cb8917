// The API endpoint over real HTTP (loopback): routing, JSON and protobuf
// bodies, errors as metav1.Status, and watch-list streams.
#include "apiserver/server.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_split.h"
#include "apiserver/protobuf_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "k8s/api/resource_v1.pb.h"

namespace devmgr::apiserver {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace server_test {

using nlohmann::json;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

json Slice(const std::string& generate_name, const std::string& node) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"generateName", generate_name}}},
          {"spec",
           {{"driver", "test-driver.cdi.k8s.io"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", {{{"name", "device-00"}}}}}}};
}

class ApiServerTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> url = server_.Start(kDefaultApiListen);
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    client_ = std::make_unique<httplib::Client>(url_);
  }

  json Post(const json& body) {
    auto res = client_->Post(kSlices, body.dump(), "application/json");
    EXPECT_TRUE(res);
    return res ? json::parse(res->body) : json();
  }

  RealClock clock_;
  ApiServer server_{clock_};
  std::string url_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ApiServerTest, OtherVersionsOfTheGroupAreNotServed) {
  // As the real server's not-found handler (Go's http.NotFound), so that the
  // client's fallback to v1beta2 and v1beta1 ends where a 1.34+ cluster's does.
  for (const char* path :
       {"/apis/resource.k8s.io/v1beta2/resourceslices",
        "/apis/resource.k8s.io/v1beta1/resourceslices", "/apis/example.com/v1/foos"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_EQ(res->body, "404 page not found\n");
  }
}

TEST_F(ApiServerTest, CreatesFromProtobufAndAnswersInJson) {
  k8s::io::api::resource::v1::ResourceSlice slice;
  slice.mutable_metadata()->set_generatename("node-1-test-driver.cdi.k8s.io-");
  slice.mutable_spec()->set_driver("test-driver.cdi.k8s.io");
  slice.mutable_spec()->set_nodename("node-1");
  slice.mutable_spec()->mutable_pool()->set_name("node-1");
  slice.mutable_spec()->mutable_pool()->set_resourceslicecount(1);
  slice.mutable_spec()->add_devices()->set_name("device-00");
  httplib::Headers headers = {{"Accept", "application/vnd.kubernetes.protobuf,application/json"}};
  auto res = client_->Post(kSlices, headers,
                           EncodeProtobufBody(slice, "resource.k8s.io/v1", "ResourceSlice"),
                           kProtobufContentType);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  json created = json::parse(res->body);
  EXPECT_EQ(created["spec"]["devices"][0]["name"], "device-00");
  ASSERT_EQ(server_.Requests().size(), 1u);
  EXPECT_EQ(server_.Requests()[0].content_type, kProtobufContentType);
}

TEST_F(ApiServerTest, InvalidSliceGetsTheRealStatus) {
  json bad = Slice("node-1-", "node-1");
  bad["spec"]["driver"] = "";
  auto res = client_->Post(kSlices, bad.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 422);
  json status = json::parse(res->body);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["reason"], "Invalid");
  const std::string name = status["details"]["name"];
  EXPECT_EQ(status["message"], "ResourceSlice.resource.k8s.io \"" + name +
                                   "\" is invalid: spec.driver: Required value");
  EXPECT_EQ(
      status["details"]["causes"][0],
      json::parse(
          R"({"reason":"FieldValueRequired","message":"Required value","field":"spec.driver"})"));
}

TEST_F(ApiServerTest, PutWithStaleResourceVersionIsConflict) {
  json created = Post(Slice("s-", "node-1"));
  json update = created;
  update["spec"]["pool"]["generation"] = 2;
  const std::string path =
      std::string(kSlices) + "/" + created["metadata"]["name"].get<std::string>();
  auto ok = client_->Put(path.c_str(), update.dump(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto stale = client_->Put(path.c_str(), update.dump(), "application/json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(json::parse(stale->body)["reason"], "Conflict");
}

TEST_F(ApiServerTest, WatchListStreamsInitialEventsThenBookmarkThenChanges) {
  Post(Slice("a-", "node-1"));
  Post(Slice("b-", "node-2"));
  std::string received;
  int lines = 0;
  bool posted = false;
  httplib::Client watcher(url_);
  watcher.Get(std::string(kSlices) +
                  "?fieldSelector=spec.nodeName%3Dnode-1&sendInitialEvents=true&"
                  "resourceVersionMatch=NotOlderThan"
                  "&allowWatchBookmarks=true&watch=true&timeoutSeconds=30",
              [&](const char* data, size_t n) {
                received.append(data, n);
                lines = static_cast<int>(std::count(received.begin(), received.end(), '\n'));
                if (lines == 2 && !posted) {
                  posted = true;
                  Post(Slice("c-", "node-1"));  // a live event, after the bookmark
                }
                return lines < 3;  // then end the watch from this side
              });
  std::vector<std::string> events = absl::StrSplit(received, '\n', absl::SkipEmpty());
  ASSERT_EQ(events.size(), 3u) << received;
  json first = json::parse(events[0]);
  EXPECT_EQ(first["type"], "ADDED");
  EXPECT_EQ(first["object"]["spec"]["nodeName"], "node-1");
  json bookmark = json::parse(events[1]);
  EXPECT_EQ(bookmark["type"], "BOOKMARK");
  EXPECT_EQ(bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  EXPECT_EQ(bookmark["object"]["metadata"]["resourceVersion"], "3");
  json live = json::parse(events[2]);
  EXPECT_EQ(live["type"], "ADDED");
  EXPECT_EQ(live["object"]["metadata"]["resourceVersion"], "4");
}

TEST_F(ApiServerTest, WatchListNeedsNotOlderThan) {
  auto res = client_->Get(std::string(kSlices) + "?watch=true&sendInitialEvents=true");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 422);
  EXPECT_EQ(json::parse(res->body)["message"],
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
}

TEST_F(ApiServerTest, DeleteCollectionBySelectorAndKubeconfig) {
  Post(Slice("a-", "node-1"));
  Post(Slice("b-", "node-2"));
  auto res = client_->Delete(std::string(kSlices) + "?fieldSelector=spec.nodeName%3Dnode-1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["items"].size(), 1u);
  auto left = client_->Get(std::string(kSlices) + "?limit=500&resourceVersion=0");
  ASSERT_TRUE(left);
  json list = json::parse(left->body);
  EXPECT_EQ(list["kind"], "ResourceSliceList");
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["spec"]["nodeName"], "node-2");
  EXPECT_FALSE(list["items"][0].contains("kind"));
}

// The kubelet's wipes: every driver's slices of the node at start (an empty
// driver name), one driver's when it is gone; other nodes' slices stay.
TEST_F(ApiServerTest, DeleteNodeSlicesWipesOneDriverOrTheWholeNode) {
  Post(Slice("a-", "node-1"));
  json other = Slice("b-", "node-1");
  other["spec"]["driver"] = "other.example.com";
  Post(other);
  Post(Slice("c-", "node-2"));
  ApiOr<std::vector<json>> one = DeleteNodeSlices(server_.store(), "node-1", "other.example.com");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one.value.size(), 1u);
  EXPECT_EQ(one.value[0]["spec"]["driver"], "other.example.com");
  Post(other);
  ApiOr<std::vector<json>> all = DeleteNodeSlices(server_.store(), "node-1", "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all.value.size(), 2u);
  ApiOr<Store::ListResult> left = server_.store().List(ResourceSlices(), "", {});
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left.value.items.size(), 1u);
  EXPECT_EQ(left.value.items[0]["spec"]["nodeName"], "node-2");
}

TEST_F(ApiServerTest, ServesTheNode) {
  ASSERT_TRUE(CreateNode(server_.store(), "node-1").ok());
  auto res = client_->Get("/api/v1/nodes/node-1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  json node = json::parse(res->body);
  EXPECT_EQ(node["kind"], "Node");
  EXPECT_EQ(node["apiVersion"], "v1");
  EXPECT_EQ(node["metadata"]["uid"].get<std::string>().size(), 36u);
  auto missing = client_->Get("/api/v1/nodes/node-2");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["message"], "nodes \"node-2\" not found");
}

}  // namespace server_test
}  // namespace devmgr::apiserver
