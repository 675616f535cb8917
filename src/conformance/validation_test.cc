#include "conformance/validation.h"

#include "gtest/gtest.h"

namespace devmgr::conformance {
namespace {

TEST(DeviceIdProblemTest, AcceptsPrintableIds) {
  EXPECT_EQ(DeviceIdProblem("gpu-0"), "");
  EXPECT_EQ(DeviceIdProblem("GPU-5c3e7a1e-0f2b"), "");
  EXPECT_EQ(DeviceIdProblem("gerät-1"), "");
}

TEST(DeviceIdProblemTest, RejectsControlAndInvalidBytes) {
  EXPECT_EQ(DeviceIdProblem("gpu\x01"), "control byte 0x01 at offset 3");
  EXPECT_EQ(DeviceIdProblem("a\nb"), "control byte 0x0a at offset 1");
  EXPECT_EQ(DeviceIdProblem("x\x7f"), "control byte 0x7f at offset 1");
  EXPECT_EQ(DeviceIdProblem("\xc2\x85"), "control character U+0085 at offset 0");
  EXPECT_EQ(DeviceIdProblem("\xff"), "not valid UTF-8");
  EXPECT_EQ(DeviceIdProblem("   "), "only spaces");
}

TEST(EnvNameTest, KubernetesRules) {
  EXPECT_TRUE(IsValidEnvName("NVIDIA_VISIBLE_DEVICES"));
  EXPECT_TRUE(IsValidEnvName("a.b-c"));
  EXPECT_TRUE(IsValidEnvName("_X1"));
  EXPECT_FALSE(IsValidEnvName(""));
  EXPECT_FALSE(IsValidEnvName("1X"));
  EXPECT_FALSE(IsValidEnvName("A B"));
  EXPECT_FALSE(IsValidEnvName("A=B"));
}

TEST(CdiNameTest, FullyQualifiedNames) {
  EXPECT_EQ(CdiNameProblem("vendor.com/gpu=gpudevice1"), "");
  EXPECT_EQ(CdiNameProblem("nvidia.com/gpu=all"), "");
  EXPECT_EQ(CdiNameProblem("example.com/gpu=0:1"), "");
  EXPECT_EQ(CdiNameProblem("gpu0"), "\"gpu0\" is not of the form <vendor>/<class>=<name>");
  EXPECT_EQ(CdiNameProblem("vendor.com/gpu="), "empty device name");
  EXPECT_EQ(CdiNameProblem("1vendor.com/gpu=x"), "vendor \"1vendor.com\" must start with a letter");
  EXPECT_EQ(CdiNameProblem("vendor.com/g.pu=x"), "class \"g.pu\" holds an invalid character \".\"");
  EXPECT_EQ(CdiNameProblem("vendor.com/gpu=x-"),
            "device name \"x-\" must end with a letter or digit");
}

TEST(PermissionsTest, WithinRwm) {
  EXPECT_EQ(PermissionsProblem("rw"), "");
  EXPECT_EQ(PermissionsProblem("rwm"), "");
  EXPECT_EQ(PermissionsProblem("m"), "");
  EXPECT_EQ(PermissionsProblem(""), "empty permissions");
  EXPECT_EQ(PermissionsProblem("rwx"), "permissions \"rwx\" hold \"x\", not one of r, w, m");
  EXPECT_EQ(PermissionsProblem("rr"), "permissions \"rr\" repeat \"r\"");
}

TEST(CanonicalTextTest, MapOrderDoesNotMatter) {
  v1beta1::ContainerAllocateResponse a, b;
  (*a.mutable_envs())["A"] = "1";
  (*a.mutable_envs())["B"] = "2";
  (*b.mutable_envs())["B"] = "2";
  (*b.mutable_envs())["A"] = "1";
  EXPECT_EQ(CanonicalText(a), CanonicalText(b));
  (*b.mutable_envs())["A"] = "3";
  EXPECT_NE(CanonicalText(a), CanonicalText(b));
}

TEST(DeviceListKeyTest, OrderInsensitiveHealthAndTopologySensitive) {
  v1beta1::ListAndWatchResponse a, b;
  auto* d = a.add_devices();
  d->set_id("x");
  d->set_health("Healthy");
  d = a.add_devices();
  d->set_id("y");
  d->set_health("Healthy");
  d = b.add_devices();
  d->set_id("y");
  d->set_health("Healthy");
  d = b.add_devices();
  d->set_id("x");
  d->set_health("Healthy");
  EXPECT_EQ(DeviceListKey(a), DeviceListKey(b));
  b.mutable_devices(1)->set_health("Unhealthy");
  EXPECT_NE(DeviceListKey(a), DeviceListKey(b));
  b.mutable_devices(1)->set_health("Healthy");
  b.mutable_devices(1)->mutable_topology()->add_nodes()->set_id(0);
  EXPECT_NE(DeviceListKey(a), DeviceListKey(b));
}

TEST(FormatBytesTest, Mebibytes) { EXPECT_EQ(FormatBytes(4194304), "4194304 B (4.00 MiB)"); }

}  // namespace
}  // namespace devmgr::conformance
