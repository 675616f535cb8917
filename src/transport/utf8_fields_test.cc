#include "transport/utf8_fields.h"

#include <functional>

#include "gtest/gtest.h"

namespace devmgr::transport {
namespace {

constexpr char kBad[] = "\xff\xfe";

TEST(FirstInvalidUtf8FieldTest, ListAndWatchResponseChecksIdAndHealth) {
  v1beta1::ListAndWatchResponse r;
  auto* ok = r.add_devices();
  ok->set_id("gpu-0");
  ok->set_health("Healthy");
  ok->mutable_topology()->add_nodes()->set_id(1);
  EXPECT_EQ(FirstInvalidUtf8Field(r), std::nullopt);
  r.add_devices()->set_health(kBad);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "Device.Health");
  r.add_devices()->set_id(kBad);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "Device.Health");  // the first one
  r.mutable_devices()->DeleteSubrange(1, 1);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "Device.ID");
  EXPECT_EQ(FirstInvalidUtf8Field(v1beta1::ListAndWatchResponse()), std::nullopt);
}

TEST(FirstInvalidUtf8FieldTest, ValidMultiByteUtf8Passes) {
  v1beta1::ListAndWatchResponse r;
  r.add_devices()->set_id("gpu-\xc3\xa9-\xe2\x82\xac");  // é, €
  EXPECT_EQ(FirstInvalidUtf8Field(r), std::nullopt);
  // A UTF-16 surrogate encoded in UTF-8 is invalid for Go.
  r.mutable_devices(0)->set_id("\xed\xa0\x80");
  EXPECT_EQ(FirstInvalidUtf8Field(r), "Device.ID");
}

TEST(FirstInvalidUtf8FieldTest, AllocateResponseChecksEveryStringField) {
  // Builds a response whose only invalid field is set by `poison`.
  auto check = [](const std::function<void(v1beta1::ContainerAllocateResponse*)>& poison) {
    v1beta1::AllocateResponse r;
    auto* c = r.add_container_responses();
    (*c->mutable_envs())["A"] = "1";
    auto* m = c->add_mounts();
    m->set_container_path("/c");
    m->set_host_path("/h");
    auto* d = c->add_devices();
    d->set_container_path("/dev/c");
    d->set_host_path("/dev/h");
    d->set_permissions("rw");
    (*c->mutable_annotations())["k"] = "v";
    c->add_cdi_devices()->set_name("vendor.com/gpu=0");
    EXPECT_EQ(FirstInvalidUtf8Field(r), std::nullopt);
    poison(r.add_container_responses());
    return FirstInvalidUtf8Field(r);
  };
  using C = v1beta1::ContainerAllocateResponse;
  // C++ refuses to even hold some of these when parsing; set directly here.
  EXPECT_EQ(check([](C* c) { (*c->mutable_envs())[kBad] = "v"; }),
            "ContainerAllocateResponse.Envs");
  EXPECT_EQ(check([](C* c) { (*c->mutable_envs())["k"] = kBad; }),
            "ContainerAllocateResponse.Envs");
  EXPECT_EQ(check([](C* c) { c->add_mounts()->set_container_path(kBad); }), "Mount.ContainerPath");
  EXPECT_EQ(check([](C* c) { c->add_mounts()->set_host_path(kBad); }), "Mount.HostPath");
  EXPECT_EQ(check([](C* c) { c->add_devices()->set_container_path(kBad); }),
            "DeviceSpec.ContainerPath");
  EXPECT_EQ(check([](C* c) { c->add_devices()->set_host_path(kBad); }), "DeviceSpec.HostPath");
  EXPECT_EQ(check([](C* c) { c->add_devices()->set_permissions(kBad); }), "DeviceSpec.Permissions");
  EXPECT_EQ(check([](C* c) { (*c->mutable_annotations())[kBad] = "v"; }),
            "ContainerAllocateResponse.Annotations");
  EXPECT_EQ(check([](C* c) { (*c->mutable_annotations())["k"] = kBad; }),
            "ContainerAllocateResponse.Annotations");
  EXPECT_EQ(check([](C* c) { c->add_cdi_devices()->set_name(kBad); }), "CDIDevice.Name");
}

TEST(FirstInvalidUtf8FieldTest, PreferredAllocationResponseChecksDeviceIds) {
  v1beta1::PreferredAllocationResponse r;
  r.add_container_responses()->add_deviceids("gpu-0");
  EXPECT_EQ(FirstInvalidUtf8Field(r), std::nullopt);
  r.add_container_responses()->add_deviceids(kBad);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "ContainerPreferredAllocationResponse.DeviceIDs");
}

TEST(FirstInvalidUtf8FieldTest, RegisterRequestChecksItsThreeStrings) {
  v1beta1::RegisterRequest r;
  r.set_version("v1beta1");
  r.set_endpoint("p.sock");
  r.set_resource_name("example.com/gpu");
  r.mutable_options()->set_pre_start_required(true);
  EXPECT_EQ(FirstInvalidUtf8Field(r), std::nullopt);
  r.set_resource_name(kBad);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "RegisterRequest.ResourceName");
  r.set_endpoint(kBad);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "RegisterRequest.Endpoint");
  r.set_version(kBad);
  EXPECT_EQ(FirstInvalidUtf8Field(r), "RegisterRequest.Version");
}

TEST(Utf8StatusTest, GrpcGoTexts) {
  EXPECT_EQ(ClientInvalidUtf8Status().error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(ClientInvalidUtf8Status().error_message(),
            "grpc: failed to unmarshal the received message: string field contains invalid UTF-8");
  EXPECT_EQ(ServerInvalidUtf8Status().error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(ServerInvalidUtf8Status().error_message(),
            "grpc: error unmarshalling request: string field contains invalid UTF-8");
}

}  // namespace
}  // namespace devmgr::transport
