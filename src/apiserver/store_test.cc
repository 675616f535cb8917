// The object store: the generic registry's create/update/delete rules and
// errors, one revision counter, and the change history watches read.
#include "apiserver/store.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;

class StoreTest : public testing::Test {
 protected:
  StoreTest() : clock_(absl::FromUnixSeconds(1795000000)), store_(clock_) {}

  json Class(const std::string& name) {
    return {{"metadata", {{"name", name}}}, {"spec", json::object()}};
  }

  FakeClock clock_;
  Store store_;
};

TEST_F(StoreTest, CreateFillsSystemFieldsAndGeneratesNames) {
  ApiOr<json> c =
      store_.Create(DeviceClasses(), "", json{{"metadata", {{"generateName", "gpu-"}}}});
  ASSERT_TRUE(c.ok()) << c.error->message;
  const json& meta = c.value["metadata"];
  const std::string name = meta["name"];
  EXPECT_EQ(name.substr(0, 4), "gpu-");
  EXPECT_EQ(name.size(), 9u);
  EXPECT_EQ(name.find_first_not_of("bcdfghjklmnpqrstvwxz2456789", 4), std::string::npos);
  EXPECT_EQ(meta["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(meta["resourceVersion"], "2");
  EXPECT_EQ(meta["generation"], 1);
  EXPECT_EQ(meta["creationTimestamp"], "2026-11-18T11:06:40Z");
  EXPECT_EQ(c.value["kind"], "DeviceClass");
  EXPECT_EQ(c.value["apiVersion"], "resource.k8s.io/v1");
}

TEST_F(StoreTest, CreateRefusesDuplicatesAndResourceVersions) {
  ASSERT_TRUE(store_.Create(DeviceClasses(), "", Class("gpu")).ok());
  ApiOr<json> again = store_.Create(DeviceClasses(), "", Class("gpu"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error->code, 409);
  EXPECT_EQ(again.error->reason, "AlreadyExists");
  EXPECT_EQ(again.error->message, "deviceclasses.resource.k8s.io \"gpu\" already exists");
  json with_rv = Class("other");
  with_rv["metadata"]["resourceVersion"] = "5";
  ApiOr<json> rv = store_.Create(DeviceClasses(), "", with_rv);
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.error->message, "resourceVersion should not be set on objects to be created");
}

TEST_F(StoreTest, StaleResourceVersionIsAConflict) {
  ApiOr<json> c = store_.Create(DeviceClasses(), "", Class("gpu"));
  ASSERT_TRUE(c.ok());
  json update = c.value;
  update["spec"]["extendedResourceName"] = "example.com/gpu";
  ApiOr<json> u = store_.Update(DeviceClasses(), "", "gpu", update);
  ASSERT_TRUE(u.ok()) << u.error->message;
  EXPECT_EQ(u.value["metadata"]["resourceVersion"], "3");
  EXPECT_EQ(u.value["metadata"]["generation"], 2);
  // The same update again carries the old resourceVersion.
  ApiOr<json> stale = store_.Update(DeviceClasses(), "", "gpu", update);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error->code, 409);
  EXPECT_EQ(stale.error->reason, "Conflict");
  EXPECT_EQ(
      stale.error->message,
      "Operation cannot be fulfilled on deviceclasses.resource.k8s.io \"gpu\": the object has "
      "been modified; please apply your changes to the latest version and try again");
  // An update that changes nothing is not written.
  ApiOr<json> same = store_.Update(DeviceClasses(), "", "gpu", u.value);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same.value["metadata"]["resourceVersion"], "3");
  EXPECT_EQ(store_.ResourceVersion(), 3);
}

TEST_F(StoreTest, DeletePreconditionsAreChecked) {
  ApiOr<json> c = store_.Create(DeviceClasses(), "", Class("gpu"));
  ASSERT_TRUE(c.ok());
  Store::Preconditions wrong_uid;
  wrong_uid.uid = "00000000-0000-0000-0000-000000000000";
  ApiOr<json> d = store_.Delete(DeviceClasses(), "", "gpu", wrong_uid);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error->code, 409);
  EXPECT_EQ(d.error->message,
            "Operation cannot be fulfilled on deviceclasses.resource.k8s.io \"gpu\": StorageError: "
            "invalid object, Code: 4, Key: /registry/deviceclasses/gpu, ResourceVersion: 0, "
            "AdditionalErrorMsg: Precondition failed: UID in precondition: "
            "00000000-0000-0000-0000-000000000000, UID in object meta: " +
                c.value["metadata"]["uid"].get<std::string>());
  Store::Preconditions right;
  right.uid = c.value["metadata"]["uid"].get<std::string>();
  right.resource_version = "2";
  ASSERT_TRUE(store_.Delete(DeviceClasses(), "", "gpu", right).ok());
  ApiOr<json> gone = store_.Get(DeviceClasses(), "", "gpu");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error->message, "deviceclasses.resource.k8s.io \"gpu\" not found");
  EXPECT_EQ(gone.error->ToStatus()["details"],
            json::parse(R"({"name":"gpu","group":"resource.k8s.io","kind":"deviceclasses"})"));
}

TEST_F(StoreTest, EventsAfterReturnsChangesInOrderAndExpiresOldOnes) {
  Store small(clock_, 2);
  ASSERT_TRUE(small.Create(DeviceClasses(), "", Class("a")).ok());
  ASSERT_TRUE(small.Create(DeviceClasses(), "", Class("b")).ok());
  ASSERT_TRUE(small.Delete(DeviceClasses(), "", "a", {}).ok());
  ApiOr<std::vector<WatchEvent>> events = small.EventsAfter(2, absl::InfinitePast());
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events.value.size(), 2u);
  EXPECT_EQ(events.value[0].type, "ADDED");
  EXPECT_EQ(events.value[1].type, "DELETED");
  EXPECT_EQ(events.value[1].object["metadata"]["resourceVersion"], "4");
  ApiOr<std::vector<WatchEvent>> old = small.EventsAfter(1, absl::InfinitePast());
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error->code, 410);
  EXPECT_EQ(old.error->message, "too old resource version: 1 (2)");
}

TEST_F(StoreTest, ListSelectsByFieldAndPages) {
  for (const char* n : {"a", "b", "c"})
    ASSERT_TRUE(store_.Create(DeviceClasses(), "", Class(n)).ok());
  ApiOr<FieldSelector> sel = FieldSelector::Parse("metadata.name!=b", DeviceClasses());
  ASSERT_TRUE(sel.ok());
  ApiOr<Store::ListResult> page = store_.List(DeviceClasses(), "", sel.value, 1);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page.value.items.size(), 1u);
  EXPECT_EQ(page.value.items[0]["metadata"]["name"], "a");
  EXPECT_EQ(page.value.remaining, 1);
  ApiOr<Store::ListResult> rest =
      store_.List(DeviceClasses(), "", sel.value, 1, page.value.continue_token);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest.value.items.size(), 1u);
  EXPECT_EQ(rest.value.items[0]["metadata"]["name"], "c");
  EXPECT_TRUE(rest.value.continue_token.empty());
}

TEST(FieldSelectorTest, RefusesFieldsTheTypeDoesNotSelectOn) {
  ApiOr<FieldSelector> sel = FieldSelector::Parse("spec.driver=x,spec.foo=y", ResourceSlices());
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.error->code, 400);
  EXPECT_EQ(sel.error->message,
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.foo");
}

}  // namespace
}  // namespace devmgr::apiserver

namespace devmgr::apiserver {
namespace {

TEST(StoreRestoreTest, KeepsIdentityAndGetsANewResourceVersion) {
  FakeClock clock(absl::FromUnixSeconds(1795000000));
  Store old_store(clock);
  ApiOr<nlohmann::json> made =
      old_store.Create(ResourceClaims(), "ns",
                       nlohmann::json{{"metadata", {{"name", "c"}, {"namespace", "ns"}}},
                                      {"spec", {{"devices", nlohmann::json::object()}}}});
  ASSERT_TRUE(made.ok()) << made.error->message;
  made.value["status"] = {{"reservedFor", {{{"resource", "pods"}, {"name", "p"}, {"uid", "u"}}}}};
  Store store(clock);
  ApiOr<nlohmann::json> restored = store.Restore(ResourceClaims(), made.value);
  ASSERT_TRUE(restored.ok()) << restored.error->message;
  ApiOr<nlohmann::json> got = store.Get(ResourceClaims(), "ns", "c");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got.value["metadata"]["uid"], made.value["metadata"]["uid"]);
  EXPECT_EQ(got.value["status"], made.value["status"]);
  EXPECT_EQ(got.value["metadata"]["resourceVersion"], "2");
  EXPECT_FALSE(store.Restore(ResourceClaims(), made.value).ok());  // AlreadyExists
  EXPECT_FALSE(store.Restore(ResourceClaims(), nlohmann::json{{"metadata", {}}}).ok());
}

}  // namespace
}  // namespace devmgr::apiserver
