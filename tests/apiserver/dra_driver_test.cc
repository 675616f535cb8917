// The upstream e2e DRA test driver (k8s.io/kubernetes test/e2e/dra/test-driver,
// its kubelet-plugin subcommand), built by tests/peers/build.sh, run
// unmodified against devmgr's embedded API endpoint with temp directories:
// it must publish its ResourceSlices over the watch-list path with protobuf
// bodies, valid, with its devices, and put them back when they are changed
// behind its back. Exits 77 (skipped) when the driver was not built.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "apiserver/server.h"
#include "apiserver/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process/plugin_process.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "test-driver.cdi.k8s.io";
constexpr char kNode[] = "devmgr-test-node";
constexpr int kDevices = 3;
// The driver's start and first publish take about a second; the bound is
// for a loaded machine.
constexpr absl::Duration kPublishTimeout = absl::Seconds(120);

std::string DriverBinary() {
  const char* dir = getenv("PEERS_DIR");
  const char* release = getenv("DRA_DRIVER_RELEASE");
  return std::string(dir ? dir : "build/peers") + "/dra-test-driver-" +
         (release ? release : "v1.37.2");
}

// The driver's slices for kNode in `store`.
std::vector<json> DriverSlices(Store& store) {
  ApiOr<FieldSelector> sel = FieldSelector::Parse(
      std::string("spec.driver=") + kDriver + ",spec.nodeName=" + kNode, ResourceSlices());
  ApiOr<Store::ListResult> list = store.List(ResourceSlices(), "", sel.value);
  return list.ok() ? list.value.items : std::vector<json>{};
}

// Waits for a change after `*seen` until `done` holds or the deadline passes.
bool AwaitStore(Store& store, int64_t* seen, const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + kPublishTimeout;
  while (!done()) {
    ApiOr<std::vector<WatchEvent>> events = store.EventsAfter(*seen, deadline);
    if (!events.ok() || absl::Now() >= deadline) return done();
    if (!events.value.empty()) *seen = events.value.back().resource_version;
  }
  return true;
}

class DraTestDriverTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devmgr-dra-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* d : {"registry", "plugins/test-driver.cdi.k8s.io", "cdi"}) {
      std::filesystem::create_directories(dir_ + "/" + d);
    }
    absl::StatusOr<std::string> url = server_.Start(kDefaultApiListen);
    ASSERT_TRUE(url.ok()) << url.status();
    ASSERT_TRUE(CreateNode(server_.store(), kNode).ok());
    ASSERT_TRUE(WriteKubeconfig(dir_ + "/kubeconfig", *url).ok());
    node::PluginProcessOptions po;
    po.command = DriverBinary() + " -v=5 kubelet-plugin --node-name " + kNode +
                 " --plugin-registration-path " + dir_ + "/registry --datadir " + dir_ +
                 "/plugins --cdi-dir " + dir_ + "/cdi --num-devices " + std::to_string(kDevices);
    po.env["KUBECONFIG"] = dir_ + "/kubeconfig";
    driver_ = std::make_unique<node::PluginProcess>(po);
    ASSERT_TRUE(driver_->Start().ok());
  }

  void TearDown() override {
    if (driver_) driver_->Stop();
    server_.Stop();
    if (HasFailure() && driver_) {
      for (const std::string& line : driver_->OutputTail(60))
        std::cerr << "[driver] " << line << "\n";
    }
    std::filesystem::remove_all(dir_);
  }

  // Every request the driver made, for the log and the report.
  void PrintRequests() {
    for (const RequestRecord& r : server_.Requests()) {
      std::cout << "request: " << r.method << " " << r.target
                << " content-type=" << (r.content_type.empty() ? "-" : r.content_type)
                << " accept=" << r.accept << " status=" << r.status << "\n";
    }
  }

  std::string dir_;
  RealClock clock_;
  ApiServer server_{clock_};
  std::unique_ptr<node::PluginProcess> driver_;
};

TEST_F(DraTestDriverTest, PublishesValidSlicesOverWatchListWithProtobufBodies) {
  Store& store = server_.store();
  int64_t seen = store.ResourceVersion();
  ASSERT_TRUE(AwaitStore(store, &seen, [&] { return !DriverSlices(store).empty(); }))
      << "the driver published no ResourceSlice within " << kPublishTimeout;
  std::vector<json> slices = DriverSlices(store);
  ASSERT_EQ(slices.size(), 1u);
  const json& slice = slices[0];
  EXPECT_THAT(ValidateResourceSlice(slice, nullptr), testing::IsEmpty());
  EXPECT_EQ(slice["spec"]["pool"]["name"], kNode);
  EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 1);
  ASSERT_EQ(slice["spec"]["devices"].size(), static_cast<size_t>(kDevices));
  for (int i = 0; i < kDevices; ++i) {
    EXPECT_EQ(slice["spec"]["devices"][i]["name"], "device-0" + std::to_string(i));
  }
  // Owned by the node object it read from the endpoint.
  ApiOr<json> node = store.Get(Nodes(), "", kNode);
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(slice["metadata"].contains("ownerReferences"));
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], node.value["metadata"]["uid"]);
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["kind"], "Node");

  // A change behind the driver's back is put back by its slice controller,
  // with a PUT of the resourceVersion it last saw.
  json changed = slice;
  changed["spec"]["devices"].erase(0);
  const std::string name = slice["metadata"]["name"];
  ApiOr<json> updated = store.Update(ResourceSlices(), "", name, changed);
  ASSERT_TRUE(updated.ok()) << updated.error->message;
  ASSERT_TRUE(AwaitStore(store, &seen, [&] {
    std::vector<json> now = DriverSlices(store);
    return now.size() == 1 && now[0]["spec"]["devices"].size() == static_cast<size_t>(kDevices);
  })) << "the driver did not restore its slice";
  // Its PUT is recorded once answered, after the store changed.
  EXPECT_TRUE(server_.WaitForRequest(
      [](const RequestRecord& r) {
        return r.method == "PUT" &&
               absl::StartsWith(r.target, "/apis/resource.k8s.io/v1/resourceslices/") &&
               r.status == 200;
      },
      kPublishTimeout))
      << "the driver's PUT was not answered";

  PrintRequests();
  bool watch_list = false, proto_create = false, proto_update = false, node_get = false;
  for (const RequestRecord& r : server_.Requests()) {
    const bool slices_path = absl::StartsWith(r.target, "/apis/resource.k8s.io/v1/resourceslices");
    watch_list |= r.method == "GET" && slices_path && absl::StrContains(r.target, "watch=true") &&
                  absl::StrContains(r.target, "sendInitialEvents=true") &&
                  absl::StrContains(r.target, "resourceVersionMatch=NotOlderThan") &&
                  absl::StrContains(r.target, "allowWatchBookmarks=true") && r.status == 200;
    proto_create |= r.method == "POST" && slices_path &&
                    r.content_type == "application/vnd.kubernetes.protobuf" && r.status == 201;
    proto_update |= r.method == "PUT" && slices_path &&
                    r.content_type == "application/vnd.kubernetes.protobuf" && r.status == 200;
    node_get |= r.method == "GET" && r.target == std::string("/api/v1/nodes/") + kNode;
    EXPECT_FALSE(absl::StrContains(r.target, "v1beta"))
        << "fell back to an older version: " << r.target;
  }
  EXPECT_TRUE(watch_list) << "no watch-list request on resourceslices";
  EXPECT_TRUE(proto_create) << "no protobuf POST of a ResourceSlice";
  EXPECT_TRUE(proto_update) << "no protobuf PUT of a ResourceSlice";
  EXPECT_TRUE(node_get) << "the driver did not read its node";
  // Its registration socket and DRA socket are in the test's directories.
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/registry/test-driver.cdi.k8s.io-reg.sock"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/plugins/test-driver.cdi.k8s.io/dra.sock"));
}

}  // namespace
}  // namespace devmgr::apiserver

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const std::string binary = devmgr::apiserver::DriverBinary();
  if (access(binary.c_str(), X_OK) != 0) {
    std::cerr << binary << " is not built (tests/peers/build.sh); skipping\n";
    return 77;
  }
  return RUN_ALL_TESTS();
}
