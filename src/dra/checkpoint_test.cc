// dra_manager_state against the kubelet's own golden vectors
// (tests/testdata/dra_manager_state/UPSTREAM.tsv), and the encoder's and
// decoder's Go behaviours one by one. Expected texts and bytes come from the
// kubelet's pkg/kubelet/cm/dra/state code run at v1.34.4 and v1.37.2.
#include "dra/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/file_store.h"
#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

using ::testing::HasSubstr;

std::string DataDir() { return devmgr::testutil::SourcePath("tests/testdata/dra_manager_state"); }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One row of UPSTREAM.tsv: file, tags, case, GetOrCreate result, store.
struct Vector {
  std::string file, tags, name, expect, store;
};
void PrintTo(const Vector& v, std::ostream* os) { *os << v.file; }

std::vector<Vector> ReadVectors() {
  std::vector<Vector> out;
  std::istringstream in(Slurp(DataDir() + "/UPSTREAM.tsv"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Vector v;
    std::getline(fields, v.file, '\t');
    std::getline(fields, v.tags, '\t');
    std::getline(fields, v.name, '\t');
    std::getline(fields, v.expect, '\t');
    std::getline(fields, v.store, '\t');
    out.push_back(v);
  }
  return out;
}

// The layouts whose kubelets the vector's tags cover.
std::vector<StateLayout> LayoutsOf(const Vector& v) {
  if (v.tags == "v1.34.4") return {StateLayout::k134};
  return {StateLayout::k135, StateLayout::k137};
}

// A store in a fresh temp dir holding `bytes` as dra_manager_state.
class TempStore {
 public:
  explicit TempStore(const std::string& bytes) {
    char tmpl[] = "/tmp/devmgr-dra-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    store_ = std::make_unique<checkpoint::FileStore>(dir_, /*fsync=*/false);
    if (!bytes.empty()) {
      EXPECT_OK(store_->Write(kCheckpointName, bytes));
    }
  }
  ~TempStore() { std::filesystem::remove_all(dir_); }
  const checkpoint::FileStore& store() const { return *store_; }

 private:
  std::string dir_;
  std::unique_ptr<checkpoint::FileStore> store_;
};

class UpstreamVectorTest : public ::testing::TestWithParam<Vector> {};

TEST_P(UpstreamVectorTest, GetOrCreateResultIsTheKubelets) {
  const Vector& v = GetParam();
  const std::string bytes = Slurp(DataDir() + "/" + v.file);
  ASSERT_FALSE(bytes.empty()) << v.file;
  for (StateLayout layout : LayoutsOf(v)) {
    TempStore t(bytes);
    absl::StatusOr<CheckpointData> got = ReadAndVerify(t.store(), layout);
    if (v.expect == "ok") {
      ASSERT_OK(got);
      ASSERT_TRUE(got->claim_info_state_list.has_value());
      EXPECT_EQ(got->claim_info_state_list->size(), v.name == "two-claim-info-states" ? 2u : 1u);
    } else if (v.expect == "checkpoint is corrupted") {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_EQ(got.status().message(),
                "create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get "
                "checkpoint dra_manager_state: checkpoint is corrupted");
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(v.expect));
    }
  }
}

class StoreVectorTest : public ::testing::TestWithParam<Vector> {};

TEST_P(StoreVectorTest, StoreWritesTheKubeletsBytes) {
  const Vector& v = GetParam();
  ASSERT_EQ(v.store, "store");
  const std::string bytes = Slurp(DataDir() + "/" + v.file);
  for (StateLayout layout : LayoutsOf(v)) {
    absl::StatusOr<Checkpoint> file = DecodeFile(bytes);
    ASSERT_OK(file);
    absl::StatusOr<CheckpointData> data = DecodeData(file->data, layout);
    ASSERT_OK(data);
    const Checkpoint rewritten = NewCheckpoint(data->claim_info_state_list, layout);
    EXPECT_EQ(EncodeFile(rewritten), bytes) << LayoutName(layout);
  }
}

// The TestCheckpointStateStore vectors only.
std::vector<Vector> StoreVectors() {
  std::vector<Vector> out;
  for (const Vector& v : ReadVectors()) {
    if (v.store == "store") out.push_back(v);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Vectors, UpstreamVectorTest, ::testing::ValuesIn(ReadVectors()));
INSTANTIATE_TEST_SUITE_P(Vectors, StoreVectorTest, ::testing::ValuesIn(StoreVectors()));

TEST(DraCheckpointTest, AllUpstreamVectorsAreListed) {
  EXPECT_EQ(ReadVectors().size(), 15u);
  EXPECT_EQ(StoreVectors().size(), 7u);
}

// Files the kubelet's own state package wrote (kubelet/MANIFEST.tsv): decoding
// and re-encoding under that release's layout gives the same bytes.
TEST(DraCheckpointTest, KubeletWrittenFilesReencodeByteForByte) {
  std::istringstream manifest(Slurp(DataDir() + "/kubelet/MANIFEST.tsv"));
  std::string line;
  int files = 0;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string file, tag;
    std::getline(fields, file, '\t');
    std::getline(fields, tag, '\t');
    ASSERT_TRUE(tag == "v1.34.4" || tag == "v1.37.2") << line;
    const StateLayout layout = tag == "v1.34.4" ? StateLayout::k134 : StateLayout::k137;
    const std::string bytes = Slurp(DataDir() + "/kubelet/" + file);
    ASSERT_FALSE(bytes.empty()) << file;
    const VerifyResult r = Verify(bytes, layout);
    ASSERT_TRUE(r.valid) << file << ": " << r.error << r.data_error;
    EXPECT_EQ(EncodeFile(NewCheckpoint(r.data->claim_info_state_list, layout)), bytes) << file;
    ++files;
  }
  EXPECT_EQ(files, 14);
}

TEST(DraCheckpointTest, TheKubeletStoresShareIdFrom135) {
  const std::string dir = DataDir() + "/kubelet/";
  absl::StatusOr<CheckpointData> d134 =
      DecodeData(DecodeFile(Slurp(dir + "oracle-1.34-share-id.json"))->data, StateLayout::k137);
  absl::StatusOr<CheckpointData> d137 =
      DecodeData(DecodeFile(Slurp(dir + "oracle-1.37-share-id.json"))->data, StateLayout::k137);
  ASSERT_OK(d134);
  ASSERT_OK(d137);
  const auto device = [](const CheckpointData& d) {
    return d.claim_info_state_list->at(0).driver_state->begin()->second.devices->at(0);
  };
  EXPECT_FALSE(device(*d134).share_id.has_value());
  EXPECT_EQ(device(*d137).share_id, "share-uid-0");
}

// The state of the "single-claim-info-state" vectors, built by hand.
ClaimInfoStateList SingleClaim(std::optional<std::string> share_id) {
  Device d;
  d.pool_name = "worker-1";
  d.device_name = "dev-1";
  d.share_id = std::move(share_id);
  d.request_names = std::vector<std::string>{"test request"};
  d.cdi_device_ids = std::vector<std::string>{"example.com/example=cdi-example"};
  ClaimInfoState c;
  c.claim_uid = "067798be-454e-4be4-9047-1aa06aea63f7";
  c.claim_name = "example";
  c.namespace_ = "default";
  c.pod_uids = std::set<std::string>{"139cdb46-f989-4f17-9561-ca10cfb509a6"};
  c.driver_state = std::map<std::string, DriverState>{
      {"test-driver.cdi.k8s.io", DriverState{std::vector<Device>{d}, std::nullopt}}};
  return std::vector<ClaimInfoState>{c};
}

TEST(DraCheckpointTest, HandBuiltStateHasTheUpstreamChecksums) {
  EXPECT_EQ(NewCheckpoint(SingleClaim(std::nullopt), StateLayout::k134).checksum, 1656016162u);
  EXPECT_EQ(NewCheckpoint(SingleClaim(std::nullopt), StateLayout::k135).checksum, 2570581864u);
  EXPECT_EQ(NewCheckpoint(SingleClaim(std::nullopt), StateLayout::k137).checksum, 2570581864u);
  EXPECT_EQ(NewCheckpoint(SingleClaim("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"), StateLayout::k135)
                .checksum,
            736302156u);
}

TEST(DraCheckpointTest, DecodesTheUpstreamVectorIntoTheHandBuiltState) {
  const std::string bytes =
      Slurp(DataDir() + "/upstream-v1.35-v1.37/single-claim-info-state-with-share-id.json");
  absl::StatusOr<Checkpoint> file = DecodeFile(bytes);
  ASSERT_OK(file);
  EXPECT_EQ(file->checksum, 736302156u);
  absl::StatusOr<CheckpointData> data = DecodeData(file->data, StateLayout::k137);
  ASSERT_OK(data);
  EXPECT_EQ(data->kind, "DRACheckpoint");
  EXPECT_EQ(data->api_version, "checkpoint.dra.kubelet.k8s.io/v1");
  EXPECT_EQ(data->claim_info_state_list, SingleClaim("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"));
  // A 1.34 kubelet has no ShareID field: the key is ignored.
  data = DecodeData(file->data, StateLayout::k134);
  ASSERT_OK(data);
  EXPECT_EQ(data->claim_info_state_list, SingleClaim(std::nullopt));
}

TEST(DraCheckpointTest, Crc32IsIeee) {
  EXPECT_EQ(Crc32Ieee(""), 0u);
  EXPECT_EQ(Crc32Ieee("123456789"), 0xCBF43926u);
}

TEST(DraCheckpointTest, EmptyStateIsNullList) {
  const Checkpoint cp = NewCheckpoint(std::nullopt, StateLayout::k134);
  EXPECT_EQ(cp.data,
            "{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\","
            "\"ClaimInfoStateList\":null}");
  EXPECT_EQ(cp.checksum, Crc32Ieee(cp.data));
}

TEST(DraCheckpointTest, EncoderKeepsNilAndEmptyApartAndOmitsEmptySkipOperations) {
  ClaimInfoState c;
  c.pod_uids = std::set<std::string>{};
  DriverState s;
  s.devices = std::vector<Device>{};
  s.skip_node_operations = std::vector<std::string>{};
  c.driver_state = std::map<std::string, DriverState>{{"d", s}, {"a", DriverState{}}};
  CheckpointData data;
  data.claim_info_state_list = std::vector<ClaimInfoState>{c};
  EXPECT_EQ(EncodeData(data, StateLayout::k137),
            "{\"ClaimInfoStateList\":[{\"ClaimUID\":\"\",\"ClaimName\":\"\",\"Namespace\":\"\","
            "\"PodUIDs\":{},\"DriverState\":{\"a\":{\"Devices\":null},\"d\":{\"Devices\":[]}}}]}");
  (*data.claim_info_state_list)[0].driver_state->at("d").skip_node_operations =
      std::vector<std::string>{"NodePrepare", "*"};
  EXPECT_THAT(EncodeData(data, StateLayout::k137),
              HasSubstr("\"d\":{\"Devices\":[],\"skipNodeOperations\":[\"NodePrepare\",\"*\"]}"));
  // Before 1.37 the field does not exist.
  EXPECT_THAT(EncodeData(data, StateLayout::k135), HasSubstr("\"d\":{\"Devices\":[]}"));
}

TEST(DraCheckpointTest, EncoderEscapesAsGo) {
  ClaimInfoState c;
  c.claim_name = "<a&b>\xE2\x80\xA8\xE2\x80\xA9\xFFx";
  c.pod_uids = std::set<std::string>{"z", "a", "\xC3\xA9"};
  CheckpointData data;
  data.claim_info_state_list = std::vector<ClaimInfoState>{c};
  const std::string inner = EncodeData(data, StateLayout::k134);
  EXPECT_THAT(inner, HasSubstr("\"ClaimName\":\"\\u003ca\\u0026b\\u003e\\u2028\\u2029\\ufffdx\""));
  EXPECT_THAT(inner, HasSubstr("\"PodUIDs\":{\"a\":{},\"z\":{},\"\xC3\xA9\":{}}"));
  // The outer file escapes the Data string once more.
  const std::string file = EncodeFile(Checkpoint{inner, Crc32Ieee(inner)});
  EXPECT_THAT(file, HasSubstr("\\\"ClaimName\\\":\\\"\\\\u003ca"));
  absl::StatusOr<Checkpoint> back = DecodeFile(file);
  ASSERT_OK(back);
  EXPECT_EQ(back->data, inner);
}

// ---- decoding: what the kubelet's GetOrCreate does with odd files ----

TEST(DraCheckpointTest, NullOrEmptyFileIsTheEmptyCheckpoint) {
  for (const char* bytes : {"null", "{}", " {\"Unknown\":[1,{}]} "}) {
    absl::StatusOr<Checkpoint> cp = DecodeFile(bytes);
    ASSERT_OK(cp);
    EXPECT_EQ(*cp, NewCheckpoint(std::nullopt, StateLayout::k134)) << bytes;
    EXPECT_TRUE(ChecksumMatches(*cp));
  }
}

TEST(DraCheckpointTest, KeysMatchCaseInsensitively) {
  absl::StatusOr<Checkpoint> cp =
      DecodeFile("{\"data\":\"{}\",\"CHECKSUM\":" + std::to_string(Crc32Ieee("{}")) + "}");
  ASSERT_OK(cp);
  EXPECT_EQ(cp->data, "{}");
  EXPECT_TRUE(ChecksumMatches(*cp));
}

TEST(DraCheckpointTest, OuterErrorsAreGos) {
  struct Case {
    const char* bytes;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"[]", "json: cannot unmarshal array into Go value of type state.Checkpoint (offset 0)"},
           {"{\"Checksum\":4294967296}",
            "json: cannot unmarshal number 4294967296 into Go struct field Checkpoint.Checksum of "
            "type uint32 (offset 12)"},
           {"{\"Checksum\":-1}",
            "json: cannot unmarshal number -1 into Go struct field Checkpoint.Checksum of type "
            "uint32 (offset 12)"},
           {"{\"Data\":1}",
            "json: cannot unmarshal number into Go struct field Checkpoint.Data of type string "
            "(offset 8)"},
           {"{} x", "invalid character 'x' after top-level value (offset 3)"},
           {"{", "unexpected end of JSON input (offset 1)"},
       }) {
    absl::StatusOr<Checkpoint> cp = DecodeFile(c.bytes);
    ASSERT_FALSE(cp.ok()) << c.bytes;
    EXPECT_EQ(cp.status().message(), c.error);
  }
}

TEST(DraCheckpointTest, DataErrorsAreGos) {
  struct Case {
    const char* data;
    StateLayout layout;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"x", StateLayout::k134, "invalid character 'x' looking for beginning of value"},
           {"[1]", StateLayout::k134,
            "json: cannot unmarshal array into Go value of type state.CheckpointData"},
           {"{\"kind\":5}", StateLayout::k134,
            "json: cannot unmarshal number into Go struct field CheckpointData.TypeMeta.kind of "
            "type string"},
           {"{\"ClaimInfoStateList\":{}}", StateLayout::k134,
            "json: cannot unmarshal object into Go struct field "
            "CheckpointData.ClaimInfoStateList of type state.ClaimInfoStateList"},
           {"{\"ClaimInfoStateList\":[{\"ClaimUID\":5}]}", StateLayout::k134,
            "json: cannot unmarshal number into Go struct field "
            "ClaimInfoState.ClaimInfoStateList.ClaimUID of type types.UID"},
           {"{\"ClaimInfoStateList\":[{\"PodUIDs\":{\"a\":1}}]}", StateLayout::k134,
            "json: cannot unmarshal number into Go struct field "
            "ClaimInfoState.ClaimInfoStateList.PodUIDs of type sets.Empty"},
           {"{\"ClaimInfoStateList\":[{\"DriverState\":{\"d\":{\"Devices\":\"x\"}}}]}",
            StateLayout::k134,
            "json: cannot unmarshal string into Go struct field "
            "DriverState.ClaimInfoStateList.DriverState.Devices of type []state.Device"},
           {"{\"ClaimInfoStateList\":[{\"DriverState\":{\"d\":{\"Devices\":[1]}}}]}",
            StateLayout::k134,
            "json: cannot unmarshal number into Go struct field "
            "DriverState.ClaimInfoStateList.DriverState.Devices of type state.Device"},
           {"{\"ClaimInfoStateList\":[{\"DriverState\":{\"d\":{\"Devices\":[{\"ShareID\":5}]}}}]}",
            StateLayout::k137,
            "json: cannot unmarshal number into Go struct field "
            "Device.ClaimInfoStateList.DriverState.Devices.ShareID of type types.UID"},
           {"{\"ClaimInfoStateList\":[{\"DriverState\":{\"d\":{\"skipNodeOperations\":5}}}]}",
            StateLayout::k137,
            "json: cannot unmarshal number into Go struct field "
            "DriverState.ClaimInfoStateList.DriverState.skipNodeOperations of type "
            "[]v1.SkipNodeOperation"},
       }) {
    absl::StatusOr<CheckpointData> d = DecodeData(c.data, c.layout);
    ASSERT_FALSE(d.ok()) << c.data;
    EXPECT_THAT(std::string(d.status().message()), ::testing::StartsWith(c.error)) << c.data;
  }
}

TEST(DraCheckpointTest, FieldsALayoutLacksAreIgnored) {
  const char* data =
      "{\"ClaimInfoStateList\":[{\"DriverState\":{\"d\":{\"Devices\":[{\"ShareID\":5}],"
      "\"skipNodeOperations\":5}}}]}";
  absl::StatusOr<CheckpointData> d = DecodeData(data, StateLayout::k134);
  ASSERT_OK(d);
  const Device& dev = *d->claim_info_state_list->at(0).driver_state->at("d").devices->begin();
  EXPECT_FALSE(dev.share_id.has_value());
}

TEST(DraCheckpointTest, DuplicateKeysBehaveAsInGo) {
  // A second list reuses the first one's elements (stale fields stay), maps
  // merge, and a map value starts from zero.
  const char* data =
      "{\"ClaimInfoStateList\":[{\"ClaimName\":\"a\",\"PodUIDs\":{\"p1\":{}},\"DriverState\":"
      "{\"d\":{\"Devices\":[{\"PoolName\":\"x\",\"RequestNames\":[\"r\"]}]}}},{\"ClaimName\":"
      "\"b\"}],\"ClaimInfoStateList\":[{\"PodUIDs\":{\"p2\":{}}},{},{\"claimname\":\"c\","
      "\"DriverState\":{\"e\":{}}}]}";
  absl::StatusOr<CheckpointData> d = DecodeData(data, StateLayout::k137);
  ASSERT_OK(d);
  // What the kubelet's json.Marshal writes for the state it decoded (v1.34.4).
  EXPECT_EQ(EncodeData(*d, StateLayout::k134),
            "{\"ClaimInfoStateList\":[{\"ClaimUID\":\"\",\"ClaimName\":\"a\",\"Namespace\":\"\","
            "\"PodUIDs\":{\"p1\":{},\"p2\":{}},\"DriverState\":{\"d\":{\"Devices\":[{\"PoolName\":"
            "\"x\",\"DeviceName\":\"\",\"RequestNames\":[\"r\"],\"CDIDeviceIDs\":null}]}}},"
            "{\"ClaimUID\":\"\",\"ClaimName\":\"b\",\"Namespace\":\"\",\"PodUIDs\":null,"
            "\"DriverState\":null},{\"ClaimUID\":\"\",\"ClaimName\":\"c\",\"Namespace\":\"\","
            "\"PodUIDs\":null,\"DriverState\":{\"e\":{\"Devices\":null}}}]}");
}

TEST(DraCheckpointTest, ReadAndVerifyReportsDataErrorsAsGetEntries) {
  const std::string inner = "{\"ClaimInfoStateList\":5}";
  TempStore t(EncodeFile(Checkpoint{inner, Crc32Ieee(inner)}));
  absl::StatusOr<CheckpointData> got = ReadAndVerify(t.store(), StateLayout::k135);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              ::testing::StartsWith("create ResourceClaim cache: GetEntries() on checkpoint: json: "
                                    "cannot unmarshal number into Go struct field"));
}

TEST(DraCheckpointTest, ReadAndVerifyOfAMissingFileIsNotFound) {
  TempStore t("");
  absl::StatusOr<CheckpointData> got = ReadAndVerify(t.store(), StateLayout::k137);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(), "checkpoint is not found");
}

TEST(DraCheckpointTest, VerifyFindsAFlippedByte) {
  std::string bytes = Slurp(DataDir() + "/upstream-v1.34/single-claim-info-state.json");
  VerifyResult ok = Verify(bytes, StateLayout::k134);
  EXPECT_TRUE(ok.valid);
  EXPECT_EQ(ok.stored, 1656016162u);
  const size_t at = bytes.find("worker-1");
  bytes[at] = 'W';
  VerifyResult bad = Verify(bytes, StateLayout::k134);
  EXPECT_TRUE(bad.parsed);
  EXPECT_FALSE(bad.valid);
  EXPECT_EQ(bad.stored, 1656016162u);
  EXPECT_NE(bad.computed, bad.stored);
}

TEST(DraCheckpointTest, ShapeTellsTheTwoCheckpointsApart) {
  EXPECT_TRUE(LooksLikeDraCheckpoint("{\"Data\":\"{}\",\"Checksum\":1}"));
  EXPECT_TRUE(LooksLikeDraCheckpoint(" {\"data\":\"\"} "));
  EXPECT_FALSE(LooksLikeDraCheckpoint("{\"Data\":{\"PodDeviceEntries\":null},\"Checksum\":1}"));
  EXPECT_FALSE(LooksLikeDraCheckpoint("{\"Checksum\":1}"));
  EXPECT_FALSE(LooksLikeDraCheckpoint("{\"Data\":\"x\""));
  EXPECT_FALSE(LooksLikeDraCheckpoint("[]"));
}

}  // namespace
}  // namespace devmgr::dra
