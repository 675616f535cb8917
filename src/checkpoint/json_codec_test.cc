// Go encoding/json compatibility of the checkpoint codec: the reader's
// quirks, Go's exact error texts (checked against Go 1.19 via the oracle),
// and json.Marshal's output rules.
#include "checkpoint/json_codec.h"

#include <string>

#include "checkpoint/checkpoint.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

std::string V2Error(std::string_view json) {
  auto cp = DecodeV2(json);
  return cp.ok() ? "OK" : std::string(cp.status().message());
}

std::string V1Error(std::string_view json) {
  auto cp = DecodeV1(json);
  return cp.ok() ? "OK" : std::string(cp.status().message());
}

Checkpoint MustV2(std::string_view json) {
  auto cp = DecodeV2(json);
  EXPECT_OK(cp);
  return cp.ok() ? *cp : Checkpoint{};
}

TEST(Decode, SyntaxErrorsUseGoTextsAndOffsets) {
  EXPECT_EQ(V2Error(""), "unexpected end of JSON input (offset 0)");
  EXPECT_EQ(V2Error("{\"Data\":{"), "unexpected end of JSON input (offset 9)");
  EXPECT_EQ(V2Error("{\"Data\":\x01}"),
            "invalid character '\\x01' looking for beginning of value (offset 8)");
  EXPECT_EQ(V2Error("{\"a\" 1}"), "invalid character '1' after object key (offset 5)");
  EXPECT_EQ(V2Error("{\"a\":tru}"),
            "invalid character '}' in literal true (expecting 'e') (offset 8)");
  EXPECT_EQ(V2Error("{\"a\":\"\\x\"}"), "invalid character 'x' in string escape code (offset 7)");
  EXPECT_EQ(V2Error("{\"a\":1}x"), "invalid character 'x' after top-level value (offset 7)");
  EXPECT_EQ(V2Error("{\"a\":1,}"),
            "invalid character '}' looking for beginning of object key string (offset 7)");
  EXPECT_EQ(V2Error("[1,]"), "invalid character ']' looking for beginning of value (offset 3)");
  EXPECT_EQ(V2Error("[1 2]"), "invalid character '2' after array element (offset 3)");
  EXPECT_EQ(V2Error("{\"a\":1 \"b\":2}"),
            "invalid character '\"' after object key:value pair (offset 7)");
  EXPECT_EQ(V2Error("{\"a\":-x}"), "invalid character 'x' in numeric literal (offset 6)");
  EXPECT_EQ(V2Error("{\"a\":1.}"),
            "invalid character '}' after decimal point in numeric literal (offset 7)");
  EXPECT_EQ(V2Error("{\"a\":1e}"),
            "invalid character '}' in exponent of numeric literal (offset 7)");
  EXPECT_EQ(V2Error("{\"a\":01}"), "invalid character '1' after object key:value pair (offset 6)");
  EXPECT_EQ(V2Error("{\"a\":\"\\u12x4\"}"),
            "invalid character 'x' in \\u hexadecimal character escape (offset 10)");
  EXPECT_EQ(V2Error("{\"a\":\"x\ny\"}"), "invalid character '\\n' in string literal (offset 7)");
  EXPECT_EQ(V2Error("\xEF\xBB\xBF{}"),
            "invalid character '\xC3\xAF' looking for beginning of value (offset 0)");
  EXPECT_EQ(V2Error("{'a':1}"),
            "invalid character '\\'' looking for beginning of object key string (offset 1)");
}

TEST(Decode, SyntaxErrorWinsOverEarlierTypeError) {
  EXPECT_EQ(V2Error("{\"Checksum\":\"x\",}"),
            "invalid character '}' looking for beginning of object key string (offset 16)");
}

TEST(Decode, DeepNestingIsAnErrorNotACrash) {
  std::string deep(200000, '[');
  EXPECT_EQ(V2Error(deep), "invalid character '[' exceeded max depth (offset 10000)");
}

TEST(Decode, TypeErrorsUseGoTexts) {
  EXPECT_EQ(V2Error(R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{"x":["a"]}}]}})"),
            "json: cannot unmarshal number x into Go struct field "
            "PodDevicesEntry.Data.PodDeviceEntries.DeviceIDs of type int64 (offset 43)");
  EXPECT_EQ(V2Error(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"QQ=","DeviceIDs":{"1":[5]}}]}})"),
            "illegal base64 data at input byte 3 (offset 42)");
  EXPECT_EQ(V2Error(R"({"Data":{},"Checksum":-1})"),
            "json: cannot unmarshal number -1 into Go struct field Data.Checksum of type "
            "checksum.Checksum (offset 22)");
  EXPECT_EQ(V2Error("[1,2]"),
            "json: cannot unmarshal array into Go value of type checkpoint.Data (offset 0)");
  EXPECT_EQ(
      V2Error(R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":["a"]}]}})"),
      "json: cannot unmarshal array into Go struct field PodDevicesEntry.Data.PodDeviceEntries."
      "DeviceIDs of type checkpoint.DevicesPerNUMA (offset 42)");
  EXPECT_EQ(
      V1Error(R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{"0":["a"]}}]}})"),
      "json: cannot unmarshal object into Go struct field PodDevicesEntryV1.Data.PodDeviceEntries."
      "DeviceIDs of type []string (offset 42)");
  EXPECT_EQ(V2Error(R"({"Data":{"PodDeviceEntries":[{"AllocResp":[256]}]}})"),
            "json: cannot unmarshal number 256 into Go struct field "
            "PodDevicesEntry.Data.PodDeviceEntries."
            "AllocResp of type uint8 (offset 43)");
  EXPECT_EQ(V2Error(R"({"Data":"x"})"),
            "json: cannot unmarshal string into Go struct field Data.Data of type "
            "checkpoint.checkpointData (offset 8)");
  EXPECT_EQ(
      V2Error(R"({"Data":{"RegisteredDevices":{"r":[1]}}})"),
      "json: cannot unmarshal number into Go struct field checkpointData.Data.RegisteredDevices "
      "of type string (offset 35)");
  // The first type error is reported.
  EXPECT_EQ(
      V2Error(R"({"Data":{"PodDeviceEntries":[{"PodUID":5}]},"Checksum":1.5})"),
      "json: cannot unmarshal number into Go struct field PodDevicesEntry.Data.PodDeviceEntries."
      "PodUID of type string (offset 39)");
  EXPECT_EQ(
      V2Error(R"({"Checksum":"1"})"),
      "json: cannot unmarshal string into Go struct field Data.Checksum of type checksum.Checksum "
      "(offset 12)");
}

TEST(Decode, Base64FollowsStdEncoding) {
  EXPECT_EQ(*MustV2(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"QQ=\n="}]}})")
                 .data.pod_device_entries->at(0)
                 .alloc_resp,
            "A");
  EXPECT_EQ(V2Error(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"QQ==x"}]}})"),
            "illegal base64 data at input byte 4 (offset 42)");
  EXPECT_EQ(V2Error(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"Q"}]}})"),
            "illegal base64 data at input byte 0 (offset 42)");
  EXPECT_EQ(V2Error(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"QUJD RA=="}]}})"),
            "illegal base64 data at input byte 4 (offset 42)");
  // Non-zero trailing bits are accepted (StdEncoding is not Strict).
  EXPECT_EQ(*MustV2(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"QR=="}]}})")
                 .data.pod_device_entries->at(0)
                 .alloc_resp,
            "A");
  // An escaped solidus and \r\n escapes inside the string.
  EXPECT_EQ(*MustV2(R"({"Data":{"PodDeviceEntries":[{"AllocResp":"\/w\r\n=="}]}})")
                 .data.pod_device_entries->at(0)
                 .alloc_resp,
            "\xFF");
}

TEST(Decode, NullEmptyMissingArePreserved) {
  Checkpoint cp = MustV2(R"({"Data":{}})");
  ASSERT_TRUE(cp.data.pod_device_entries.has_value());
  EXPECT_TRUE(cp.data.pod_device_entries->empty());
  ASSERT_TRUE(cp.data.registered_devices.has_value());
  EXPECT_EQ(cp.checksum, 0u);

  cp = MustV2(R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":null}})");
  EXPECT_FALSE(cp.data.pod_device_entries.has_value());
  EXPECT_FALSE(cp.data.registered_devices.has_value());

  cp = MustV2(R"({"Data":{"PodDeviceEntries":[{"PodUID":"u"},{"DeviceIDs":{},"AllocResp":""}]}})");
  const auto& e = *cp.data.pod_device_entries;
  EXPECT_FALSE(e[0].device_ids.has_value());
  EXPECT_FALSE(e[0].alloc_resp.has_value());
  ASSERT_TRUE(e[1].device_ids.has_value());
  EXPECT_TRUE(e[1].device_ids->empty());
  ASSERT_TRUE(e[1].alloc_resp.has_value());
  EXPECT_TRUE(e[1].alloc_resp->empty());

  // "Data": null and a top-level null leave the pre-initialised values.
  cp = MustV2(R"({"Data":null,"Checksum":null})");
  EXPECT_TRUE(cp.data.pod_device_entries.has_value());
  cp = MustV2("null");
  EXPECT_TRUE(cp.data.registered_devices.has_value());
}

TEST(Decode, KeysCaseInsensitiveUnknownIgnoredLastDuplicateWins) {
  Checkpoint cp = MustV2(
      R"({"DATA":{"podDeviceEntries":[{"poduid":"a","PODUID":"b","Extra":{"x":[1,{"y":null}]}}]},)"
      R"("checksum":1,"Checksum":2,"Version":"v3"})");
  EXPECT_EQ(cp.data.pod_device_entries->at(0).pod_uid, "b");
  EXPECT_EQ(cp.checksum, 2u);
  // Go folds U+017F (long s) to s and U+212A (Kelvin) to k.
  cp = MustV2("{\"Chec\xE2\x84\xAAsum\":7,\"Data\":{\"RegisteredDevice\xC5\xBF\":null}}");
  EXPECT_EQ(cp.checksum, 7u);
  EXPECT_FALSE(cp.data.registered_devices.has_value());
  // Other non-ASCII look-alikes do not match.
  cp = MustV2("{\"Checksum\xC4\xB1\":7}");
  EXPECT_EQ(cp.checksum, 0u);
}

TEST(Decode, DuplicateListsReuseGoSliceElementsAndMapsMerge) {
  // Go decodes a later array into the same slice, reusing (not zeroing) the
  // elements, including stale ones beyond the current length; maps merge.
  // Text checked against the Go oracle.
  Checkpoint cp = MustV2(
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"a","ContainerName":"ca"},{"PodUID":"b","ContainerName":"cb"}],)"
      R"("PodDeviceEntries":[{"PodUID":"x"}],"PodDeviceEntries":[{"PodUID":"y"},{"ResourceName":"z"}],)"
      R"("RegisteredDevices":{"a":["1"]},"RegisteredDevices":{"b":["2"]}}})");
  EXPECT_EQ(
      SpewV2(cp.data),
      "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:(string)"
      "y "
      "ContainerName:(string)ca ResourceName:(string) DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> "
      "AllocResp:([]uint8)<nil>} {PodUID:(string)b ContainerName:(string)cb ResourceName:(string)z "
      "DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> AllocResp:([]uint8)<nil>}] "
      "RegisteredDevices:(map[string][]string)map[a:[1] b:[2]]}");
  // []byte from a JSON array of numbers; null elements leave zero.
  cp = MustV2(R"({"Data":{"PodDeviceEntries":[{"AllocResp":[1,2,null]}]}})");
  EXPECT_EQ(*cp.data.pod_device_entries->at(0).alloc_resp, std::string("\x01\x02\x00", 3));
  // An empty array replaces the backing array entirely.
  cp = MustV2(
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"a"}],"PodDeviceEntries":[],"PodDeviceEntries":[{}]}})");
  EXPECT_EQ(cp.data.pod_device_entries->at(0).pod_uid, "");
}

TEST(Decode, StringsAreUnescapedAndInvalidUtf8Replaced) {
  Checkpoint cp = MustV2(
      "{\"Data\":{\"RegisteredDevices\":{\"r\":[\"\\u00e9\\/"
      "\\ud83d\\ude80\",\"bad\xFFx\",\"\\ud800\","
      "\"\\udc00\\u0041\",\"\\ud800\\u0041\",\"\xE2\x82\",\"\xED\xA0\x80\",\"\\u0000\"]}}}");
  const auto& ids = *cp.data.registered_devices->at("r");
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_EQ(ids[0], "\xC3\xA9/\xF0\x9F\x9A\x80");
  EXPECT_EQ(ids[1], "bad\xEF\xBF\xBDx");
  EXPECT_EQ(ids[2], "\xEF\xBF\xBD");
  EXPECT_EQ(ids[3],
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(ids[4],
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(ids[5], "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ids[6], "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ids[7], std::string(1, '\0'));
}

TEST(Decode, NumaKeysUseParseInt) {
  Checkpoint cp =
      MustV2(R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{"+1":["a"],"007":["b"],"-0":["c"],)"
             R"("-9223372036854775808":["d"],"9223372036854775807":["e"]}}]}})");
  const auto& m = *cp.data.pod_device_entries->at(0).device_ids;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m.begin()->first, INT64_MIN);
  EXPECT_EQ(m.rbegin()->first, INT64_MAX);
  EXPECT_EQ(m.count(1), 1u);
  EXPECT_EQ(m.count(7), 1u);
  EXPECT_EQ(m.count(0), 1u);
  for (const char* bad : {"9223372036854775808", "", "1_0", "0x1", " 1", "1.0", "+", "--1"}) {
    const std::string json =
        std::string(R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{")") + bad + R"(":[]}}]}})";
    EXPECT_NE(V2Error(json).find("json: cannot unmarshal number " + std::string(bad) + " into"),
              std::string::npos)
        << bad;
  }
}

TEST(Encode, MatchesJsonMarshal) {
  CheckpointData d;
  d.pod_device_entries = std::vector<PodDevicesEntry>{
      {"u<>&", "c\u2028\u2029", "r\"\\\n\r\t\b\f\x01\x7f",
       std::map<int64_t, DeviceList>{{10, std::vector<std::string>{"a"}},
                                     {2, std::nullopt},
                                     {-1, std::vector<std::string>{}},
                                     {-2, std::vector<std::string>{"bad\xFF"}}},
       std::string("\x00\xFF\xFE", 3)}};
  d.registered_devices =
      std::map<std::string, DeviceList>{{"b", std::nullopt}, {"a", std::vector<std::string>{}}};
  Checkpoint cp;
  cp.data = d;
  cp.checksum = 4294967295u;
  EXPECT_EQ(
      Encode(cp),
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u\u003c\u003e\u0026","ContainerName":"c\u2028\u2029",)"
      R"("ResourceName":"r\"\\\n\r\t\b\f\u0001)"
      "\x7f"
      R"(","DeviceIDs":{"-1":[],"-2":["bad\ufffd"],"10":["a"],"2":null},"AllocResp":"AP/+"}],)"
      R"("RegisteredDevices":{"a":[],"b":null}},"Checksum":4294967295})");
  cp.data = CheckpointData{};
  cp.boot_id = "boot";
  EXPECT_EQ(
      Encode(cp),
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":null},"Checksum":4294967295,"BootID":"boot"})");
}

TEST(Encode, Base64Padding) {
  std::string out;
  AppendBase64(&out, "");
  AppendBase64(&out, "A");
  out += '|';
  AppendBase64(&out, "AB");
  out += '|';
  AppendBase64(&out, "ABC");
  EXPECT_EQ(out, "QQ==|QUI=|QUJD");
}

TEST(Encode, RoundTripOfValidCheckpointReverifies) {
  Checkpoint cp =
      MakeV2(MustV2(R"({"Data":{"PodDeviceEntries":[{"PodUID":"p","ContainerName":"c",)"
                    R"("ResourceName":"r","DeviceIDs":{"0":["d"]},"AllocResp":"CgA="}],)"
                    R"("RegisteredDevices":{"r":["d","e"]}}})")
                 .data);
  const std::string bytes = Encode(cp);
  auto back = DecodeV2(bytes);
  ASSERT_OK(back);
  EXPECT_TRUE(ChecksumMatches(*back));
  EXPECT_EQ(Encode(*back), bytes);
}

}  // namespace
}  // namespace devmgr::checkpoint
