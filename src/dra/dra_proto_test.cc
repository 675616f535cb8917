// The DRA protos (proto/dra) against hand-encoded wire bytes: every field
// number and type is the kubelet's when bytes written from the field
// tables decode into the expected fields (and our encoding is those bytes).
#include <string>

#include "dra/health/v1/api.pb.h"
#include "dra/health/v1alpha1/api.pb.h"
#include "dra/v1/api.pb.h"
#include "dra/v1beta1/api.pb.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// Wire helpers: a tag, a varint, a length-delimited field.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Tag(int field, int wire_type) { return Varint((field << 3) | wire_type); }
std::string Len(int field, const std::string& payload) {
  return Tag(field, 2) + Varint(payload.size()) + payload;
}
std::string VarintField(int field, uint64_t v) { return Tag(field, 0) + Varint(v); }

// Device{request_names=1:"r", pool_name=2:"p", device_name=3:"d",
// cdi_device_ids=4:"c", share_id=5:"s"}, written out byte by byte.
const std::string kDevice(
    "\x0a\x01r\x12\x01p\x1a\x01"
    "d\x22\x01"
    "c\x2a\x01s",
    15);

TEST(DraProtoTest, HandEncodedDeviceHelpersAgree) {
  EXPECT_EQ(kDevice, Len(1, "r") + Len(2, "p") + Len(3, "d") + Len(4, "c") + Len(5, "s"));
}

TEST(DraProtoTest, V1PrepareResponseDecodesFieldByField) {
  // claims = 1: map entry {key = 1: claim UID, value = 2: NodePrepareResourceResponse
  // {devices = 1, error = 2}}.
  const std::string value = Len(1, kDevice) + Len(2, "boom");
  const std::string wire = Len(1, Len(1, "uid-1") + Len(2, value));
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(resp.ParseFromString(wire));
  ASSERT_EQ(resp.claims().size(), 1u);
  const drav1::NodePrepareResourceResponse& r = resp.claims().at("uid-1");
  EXPECT_EQ(r.error(), "boom");
  ASSERT_EQ(r.devices_size(), 1);
  const drav1::Device& d = r.devices(0);
  ASSERT_EQ(d.request_names_size(), 1);
  EXPECT_EQ(d.request_names(0), "r");
  EXPECT_EQ(d.pool_name(), "p");
  EXPECT_EQ(d.device_name(), "d");
  ASSERT_EQ(d.cdi_device_ids_size(), 1);
  EXPECT_EQ(d.cdi_device_ids(0), "c");
  ASSERT_TRUE(d.has_share_id());
  EXPECT_EQ(d.share_id(), "s");
  EXPECT_EQ(d.SerializeAsString(), kDevice);
}

TEST(DraProtoTest, ShareIdIsOptionalAndV1Only) {
  drav1::Device d;
  ASSERT_TRUE(d.ParseFromString(Len(2, "p")));
  EXPECT_FALSE(d.has_share_id());
  // An empty share_id is still present on the wire (proto3 optional).
  d.set_share_id("");
  EXPECT_EQ(d.SerializeAsString(), Len(2, "p") + Len(5, ""));
  // v1beta1 has no field 5: it stays an unknown field.
  drav1beta1::Device b;
  ASSERT_TRUE(b.ParseFromString(kDevice));
  EXPECT_EQ(b.pool_name(), "p");
  EXPECT_EQ(b.GetDescriptor()->FindFieldByNumber(5), nullptr);
  EXPECT_EQ(b.GetReflection()->GetUnknownFields(b).field_count(), 1);
}

TEST(DraProtoTest, PrepareRequestEncodesClaimFields) {
  drav1beta1::NodePrepareResourcesRequest req;
  drav1beta1::Claim* c = req.add_claims();
  c->set_namespace_("ns");
  c->set_uid("u");
  c->set_name("n");
  EXPECT_EQ(req.SerializeAsString(), Len(1, Len(1, "ns") + Len(2, "u") + Len(3, "n")));
}

TEST(DraProtoTest, UnprepareResponseDecodesError) {
  drav1::NodeUnprepareResourcesResponse resp;
  ASSERT_TRUE(resp.ParseFromString(Len(1, Len(1, "uid-2") + Len(2, Len(1, "gone")))));
  EXPECT_EQ(resp.claims().at("uid-2").error(), "gone");
}

TEST(DraProtoTest, InvalidUtf8IsAcceptedInDraPluginStrings) {
  // bytes, not string: the 1.34 kubelet accepts this (see proto/UPSTREAM.md).
  drav1::Device d;
  ASSERT_TRUE(d.ParseFromString(Len(3, std::string("\xff", 1))));
  EXPECT_EQ(d.device_name(), "\xff");
}

TEST(DraProtoTest, ServiceAndMethodNamesAreUpstreams) {
  const auto* v1 = drav1::NodePrepareResourcesRequest::descriptor()->file();
  ASSERT_EQ(v1->service_count(), 1);
  EXPECT_EQ(v1->service(0)->full_name(), "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin");
  EXPECT_NE(v1->service(0)->FindMethodByName("NodePrepareResources"), nullptr);
  EXPECT_NE(v1->service(0)->FindMethodByName("NodeUnprepareResources"), nullptr);
  const auto* b = drav1beta1::NodePrepareResourcesRequest::descriptor()->file();
  EXPECT_EQ(b->service(0)->full_name(), "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin");
  const auto* h = ::v1alpha1::NodeWatchResourcesRequest::descriptor()->file();
  EXPECT_EQ(h->service(0)->full_name(), "v1alpha1.DRAResourceHealth");
  const auto* m = h->service(0)->FindMethodByName("NodeWatchResources");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->server_streaming());
  EXPECT_EQ(::v1::NodeWatchResourcesRequest::descriptor()->file()->service(0)->full_name(),
            "v1.DRAResourceHealth");
}

template <class Response>
void ExpectHealthDecodes() {
  // devices = 1: DeviceHealth{device = 1: {pool_name = 1, device_name = 2},
  // health = 2, last_updated_time = 3, health_check_timeout_seconds = 4,
  // message = 5}.
  const std::string health = Len(1, Len(1, "p") + Len(2, "d")) + VarintField(2, 2) +
                             VarintField(3, 1700000000) + VarintField(4, 30) + Len(5, "hot");
  Response resp;
  ASSERT_TRUE(resp.ParseFromString(Len(1, health)));
  ASSERT_EQ(resp.devices_size(), 1);
  const auto& h = resp.devices(0);
  EXPECT_EQ(h.device().pool_name(), "p");
  EXPECT_EQ(h.device().device_name(), "d");
  EXPECT_EQ(static_cast<int>(h.health()), 2);
  EXPECT_EQ(h.last_updated_time(), 1700000000);
  EXPECT_EQ(h.health_check_timeout_seconds(), 30);
  EXPECT_EQ(h.message(), "hot");
  EXPECT_EQ(resp.SerializeAsString(), Len(1, health));
}

TEST(DraProtoTest, HealthV1alpha1DecodesFieldByField) {
  ExpectHealthDecodes<::v1alpha1::NodeWatchResourcesResponse>();
  EXPECT_EQ(::v1alpha1::UNHEALTHY, 2);
  EXPECT_EQ(::v1alpha1::HEALTHY, 1);
  EXPECT_EQ(::v1alpha1::UNKNOWN, 0);
}

TEST(DraProtoTest, HealthV1DecodesFieldByField) {
  ExpectHealthDecodes<::v1::NodeWatchResourcesResponse>();
  EXPECT_EQ(::v1::UNHEALTHY, 2);
}

}  // namespace
}  // namespace devmgr::dra
