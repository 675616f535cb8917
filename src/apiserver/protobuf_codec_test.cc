// Protobuf request bodies decode into the JSON model a JSON body would give.
#include "apiserver/protobuf_codec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "k8s/api/resource_v1.pb.h"
#include "k8s/apimachinery/meta_v1.pb.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;
namespace resourcev1 = k8s::io::api::resource::v1;
namespace metav1 = k8s::io::apimachinery::pkg::apis::meta::v1;

// A slice as client-go's generated marshaller writes one: every non-pointer
// scalar present even when empty, the zero creationTimestamp included.
resourcev1::ResourceSlice TestDriverSlice() {
  resourcev1::ResourceSlice s;
  auto* meta = s.mutable_metadata();
  meta->set_name("");
  meta->set_generatename("node-1-test-driver.cdi.k8s.io-");
  meta->set_resourceversion("");
  meta->mutable_creationtimestamp()->set_seconds(-62135596800);
  meta->mutable_creationtimestamp()->set_nanos(0);
  auto* owner = meta->add_ownerreferences();
  owner->set_apiversion("v1");
  owner->set_kind("Node");
  owner->set_name("node-1");
  owner->set_uid("6c1c8f4e-1f0e-4a8a-9d2b-3f8f7e6d5c4b");
  owner->set_controller(true);
  auto* spec = s.mutable_spec();
  spec->set_driver("test-driver.cdi.k8s.io");
  spec->mutable_pool()->set_name("node-1");
  spec->mutable_pool()->set_generation(1);
  spec->mutable_pool()->set_resourceslicecount(1);
  spec->set_nodename("node-1");
  auto* d = spec->add_devices();
  d->set_name("device-00");
  (*d->mutable_attributes())["model"].set_string("a100");
  (*d->mutable_attributes())["example.com/index"].set_int_(7);
  (*d->mutable_capacity())["memory"].mutable_value()->set_string("40Gi");
  return s;
}

TEST(ProtobufCodecTest, DecodesAResourceSliceIntoTheJsonModel) {
  ApiOr<DecodedBody> got = DecodeProtobufBody(
      EncodeProtobufBody(TestDriverSlice(), "resource.k8s.io/v1", "ResourceSlice"));
  ASSERT_TRUE(got.ok()) << got.error->message;
  EXPECT_EQ(got.value.kind, "ResourceSlice");
  EXPECT_EQ(got.value.object, json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "", "generateName": "node-1-test-driver.cdi.k8s.io-", "resourceVersion": "",
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                                      "uid": "6c1c8f4e-1f0e-4a8a-9d2b-3f8f7e6d5c4b", "controller": true}]},
    "spec": {"driver": "test-driver.cdi.k8s.io", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "device-00",
                          "attributes": {"model": {"string": "a100"}, "example.com/index": {"int": 7}},
                          "capacity": {"memory": {"value": "40Gi"}}}]}})"));
}

TEST(ProtobufCodecTest, DecodesDeleteOptionsPreconditions) {
  metav1::DeleteOptions opts;
  opts.mutable_preconditions()->set_uid("u1");
  opts.mutable_preconditions()->set_resourceversion("42");
  ApiOr<DecodedBody> got =
      DecodeProtobufBody(EncodeProtobufBody(opts, "resource.k8s.io/v1", "DeleteOptions"));
  ASSERT_TRUE(got.ok()) << got.error->message;
  EXPECT_EQ(got.value.object["preconditions"],
            json::parse(R"({"uid": "u1", "resourceVersion": "42"})"));
}

TEST(ProtobufCodecTest, RefusesBodiesItCannotDecodeFaithfully) {
  ApiOr<DecodedBody> no_magic = DecodeProtobufBody("{}");
  ASSERT_FALSE(no_magic.ok());
  EXPECT_EQ(no_magic.error->message, "protobuf body: the 4-byte prefix \"k8s\\x00\" is missing");
  // A field this build does not know (number 99 on ResourceSliceSpec) is
  // refused rather than dropped.
  resourcev1::ResourceSlice s = TestDriverSlice();
  s.mutable_spec()->GetReflection()->MutableUnknownFields(s.mutable_spec())->AddVarint(99, 1);
  ApiOr<DecodedBody> unknown =
      DecodeProtobufBody(EncodeProtobufBody(s, "resource.k8s.io/v1", "ResourceSlice"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(
      unknown.error->message,
      "protobuf body: spec: field number 99 of k8s.io.api.resource.v1.ResourceSliceSpec is not "
      "known to devmgr (kubernetes v1.37.2 types)");
  ApiOr<DecodedBody> claim =
      DecodeProtobufBody(EncodeProtobufBody(s, "resource.k8s.io/v1", "ResourceClaim"));
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.error->code, 400);
}

}  // namespace
}  // namespace devmgr::apiserver
