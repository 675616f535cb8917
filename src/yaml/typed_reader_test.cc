#include "yaml/typed_reader.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::yaml {
namespace {

// The message of `s` (which must be an InvalidArgument error).
std::string Msg(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(TypedReaderTest, ErrorsNameFileLineAndColumn) {
  const YAML::Node root = YAML::Load("a: 1\nb:\n  c: x\n");
  TypedReader r("f.yaml");
  EXPECT_EQ(Msg(r.Error(root["b"]["c"], "bad")), "f.yaml:3:6: bad");
  EXPECT_EQ(Msg(r.Error(root, "bad")), "f.yaml:1:1: bad");
  EXPECT_EQ(Msg(r.Error(YAML::Node(), "bad")), "f.yaml: bad");
  EXPECT_EQ(Msg(r.ErrorAt(YAML::Mark::null_mark(), "bad")), "f.yaml: bad");
  int line = -1, column = -1;
  EXPECT_FALSE(r.Position(YAML::Mark::null_mark(), &line, &column));
  EXPECT_EQ(line, 0);
  EXPECT_EQ(column, 0);
}

TEST(TypedReaderTest, OffsetsShiftLinesAndOnlyTheFirstLinesColumns) {
  const YAML::Node root = YAML::Load("a: 1\nb: 2\n");
  TypedReader::Options o;
  o.line_offset = 10;
  o.column_offset = 4;
  TypedReader r("s.yaml", o);
  EXPECT_EQ(Msg(r.Error(root["a"], "x")), "s.yaml:11:8: x");
  EXPECT_EQ(Msg(r.Error(root["b"], "x")), "s.yaml:12:4: x");
}

TEST(TypedReaderTest, ExceptionError) {
  TypedReader r("f.yaml");
  try {
    YAML::Load("a: [1, 2\n");
    FAIL() << "no exception";
  } catch (const YAML::Exception& e) {
    EXPECT_THAT(Msg(r.ExceptionError(e)), testing::StartsWith("f.yaml:"));
    EXPECT_THAT(Msg(r.ExceptionError(e)), testing::HasSubstr(e.msg));
  }
}

TEST(TypedReaderTest, CheckKeysSuggestsAndKeepsDocumentOrder) {
  const YAML::Node n = YAML::Load("devices: 1\nzzz: 2\nresorce: 3\n");
  TypedReader r("c.yaml");
  EXPECT_EQ(Msg(r.CheckKeys(n, {"devices", "resource"}, "the config")),
            "c.yaml:2:1: unknown key 'zzz' in the config");
  EXPECT_EQ(Msg(r.CheckKeys(n, {"devices", "resource", "zzz"}, "the config")),
            "c.yaml:3:1: unknown key 'resorce' in the config (did you mean 'resource'?)");
  EXPECT_OK(r.CheckKeys(n, {"zzz", "resorce", "devices"}, "x"));
  EXPECT_EQ(Msg(r.CheckKeys(n, {"devices", "resorce"}, "faults.allocate", {"zzz"})),
            "c.yaml:2:1: key 'zzz' does not apply to faults.allocate");
  EXPECT_EQ(Msg(r.CheckKeys(YAML::Load("[a]: 1"), {"a"}, "x")), "c.yaml:1:1: keys must be strings");
}

TEST(TypedReaderTest, DidYouMeanAndUnknownName) {
  EXPECT_EQ(DidYouMean("Alocate", {"Allocate", "Register"}), " (did you mean 'Allocate'?)");
  EXPECT_EQ(DidYouMean("completely-different", {"a"}), "");
  TypedReader r("f");
  const YAML::Node n = YAML::Load("x");
  EXPECT_EQ(Msg(r.UnknownName(n, "unknown method 'Alocate'", "Alocate", {"Allocate"})),
            "f:1:1: unknown method 'Alocate' (did you mean 'Allocate'?)");
}

TEST(TypedReaderTest, Shapes) {
  TypedReader r("f");
  const YAML::Node scalar = YAML::Load("x");
  EXPECT_EQ(Msg(r.ExpectMap(scalar, "node")), "f:1:1: node must be a mapping");
  EXPECT_EQ(Msg(r.ExpectSeq(scalar, "steps")), "f:1:1: steps must be a list");
  EXPECT_OK(r.ExpectMap(YAML::Load("{}"), "node"));
  EXPECT_OK(r.ExpectSeq(YAML::Load("[]"), "steps"));
  EXPECT_OK(r.OptionalMap(YAML::Load("~"), {"a"}, "w"));
  EXPECT_OK(r.OptionalMap(YAML::Load("{a: 1}"), {"a"}, "w"));
  EXPECT_EQ(Msg(r.OptionalMap(scalar, {"a"}, "restart_kubelet")),
            "f:1:1: restart_kubelet takes no value or a mapping");
  EXPECT_EQ(Msg(r.OptionalMap(YAML::Load("{b: 1}"), {"a"}, "w")),
            "f:1:2: unknown key 'b' in w (did you mean 'a'?)");
}

TEST(TypedReaderTest, Strings) {
  TypedReader r("f");
  std::string s;
  EXPECT_OK(r.String(YAML::Load("abc"), "name", &s));
  EXPECT_EQ(s, "abc");
  EXPECT_EQ(Msg(r.String(YAML::Load("[1]"), "name", &s)), "f:1:1: name must be a string");
  EXPECT_EQ(Msg(r.NonEmptyString(YAML::Load("''"), "dir", &s)), "f:1:1: dir must not be empty");
  EXPECT_EQ(Msg(r.NonEmptyString(YAML::Load("{}"), "dir", &s)), "f:1:1: dir must be a string");
}

TEST(TypedReaderTest, Bools) {
  TypedReader r("f");
  bool b = false;
  for (const char* t : {"true", "True", "TRUE"}) {
    EXPECT_OK(r.Bool(YAML::Load(t), "x", &b));
    EXPECT_TRUE(b);
  }
  for (const char* t : {"false", "False", "FALSE"}) {
    EXPECT_OK(r.Bool(YAML::Load(t), "x", &b));
    EXPECT_FALSE(b);
  }
  EXPECT_EQ(Msg(r.Bool(YAML::Load("yes"), "fsync", &b)), "f:1:1: fsync must be true or false");
  std::optional<bool> ob;
  EXPECT_OK(r.OptBool(YAML::Load("true"), "x", &ob));
  EXPECT_EQ(ob, true);
  EXPECT_EQ(Msg(r.OptBool(YAML::Load("1"), "exists", &ob)), "f:1:1: exists must be true or false");
}

TEST(TypedReaderTest, QuotedScalarsAreStringsOnlyWhenAsked) {
  TypedReader loose("f");
  TypedReader::Options o;
  o.quoted_scalars_are_strings = true;
  TypedReader strict("f", o);
  bool b = false;
  int64_t i = 0;
  EXPECT_OK(loose.Bool(YAML::Load("'true'"), "x", &b));
  EXPECT_OK(loose.Int(YAML::Load("\"5\""), "x", 0, &i));
  EXPECT_EQ(i, 5);
  EXPECT_EQ(Msg(strict.Bool(YAML::Load("'true'"), "x", &b)), "f:1:1: x must be true or false");
  EXPECT_EQ(Msg(strict.Int(YAML::Load("\"5\""), "x", 0, &i)), "f:1:1: x must be an integer");
  EXPECT_OK(strict.Int(YAML::Load("5"), "x", 0, &i));
}

TEST(TypedReaderTest, Ints) {
  TypedReader r("f");
  int64_t i = 0;
  EXPECT_OK(r.Int(YAML::Load("-12"), "x", INT64_MIN, &i));
  EXPECT_EQ(i, -12);
  EXPECT_EQ(Msg(r.Int(YAML::Load("3"), "count", 5, &i)), "f:1:1: count must be at least 5");
  EXPECT_EQ(Msg(r.Int(YAML::Load("3x"), "count", 0, &i)), "f:1:1: count must be an integer");
  EXPECT_EQ(Msg(r.Int(YAML::Load("''"), "count", 0, &i)), "f:1:1: count must be an integer");
  EXPECT_EQ(Msg(r.Int(YAML::Load("99999999999999999999"), "count", 0, &i)),
            "f:1:1: count must be an integer");
  std::optional<int64_t> oi;
  EXPECT_OK(r.OptInt(YAML::Load("7"), "x", 0, &oi));
  EXPECT_EQ(oi, 7);
  int i32 = 0;
  EXPECT_OK(r.Int32(YAML::Load("1000000000"), "times", 0, &i32));
  EXPECT_EQ(i32, 1000000000);
  EXPECT_EQ(Msg(r.Int32(YAML::Load("1000000001"), "times", 0, &i32)), "f:1:1: times is too large");
  EXPECT_EQ(Msg(r.Int32(YAML::Load("-1"), "times", 0, &i32)), "f:1:1: times must be at least 0");
}

TEST(TypedReaderTest, DurationsWithTheFormatsExamples) {
  TypedReader r("f");
  absl::Duration d;
  EXPECT_OK(r.Duration(YAML::Load("1m30s"), "x", &d));
  EXPECT_EQ(d, absl::Seconds(90));
  EXPECT_EQ(Msg(r.Duration(YAML::Load("-1s"), "delay", &d)),
            "f:1:1: delay must be a duration such as 500ms, 2s or 1m30s");
  TypedReader::Options o;
  o.duration_examples = "500ms, 2s or 5m1s";
  TypedReader r2("g", o);
  EXPECT_EQ(Msg(r2.Duration(YAML::Load("soon"), "within", &d)),
            "g:1:1: within must be a duration such as 500ms, 2s or 5m1s");
}

TEST(TypedReaderTest, Lists) {
  TypedReader r("f");
  std::vector<std::string> sl = {"old"};
  EXPECT_OK(r.StringList(YAML::Load("[a, b]"), "args", &sl));
  EXPECT_EQ(sl, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Msg(r.StringList(YAML::Load("a"), "args", &sl)), "f:1:1: args must be a list");
  EXPECT_EQ(Msg(r.StringList(YAML::Load("[a, [b]]"), "args", &sl)),
            "f:1:5: args entries must be a string");
  std::optional<std::vector<std::string>> osl;
  EXPECT_OK(r.OptStringList(YAML::Load("[]"), "ids", &osl));
  EXPECT_EQ(osl, std::vector<std::string>{});
  std::vector<int64_t> il = {9};
  EXPECT_OK(r.IntList(YAML::Load("[1, -2]"), "numa", &il));
  EXPECT_EQ(il, (std::vector<int64_t>{9, 1, -2}));
  EXPECT_EQ(Msg(r.IntList(YAML::Load("[1, x]"), "numa", &il)),
            "f:1:5: numa entries must be an integer");
}

TEST(TypedReaderTest, StringMapWithEntryCheck) {
  TypedReader r("f");
  std::map<std::string, std::string> m = {{"keep", "1"}};
  EXPECT_OK(r.StringMap(YAML::Load("{a: x, b: y}"), "env", &m));
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"a", "x"}, {"b", "y"}, {"keep", "1"}}));
  EXPECT_EQ(Msg(r.StringMap(YAML::Load("[]"), "env", &m)), "f:1:1: env must be a mapping");
  EXPECT_EQ(Msg(r.StringMap(YAML::Load("{a: [x]}"), "env", &m)),
            "f:1:5: env values must be a string");
  EXPECT_EQ(Msg(r.StringMap(YAML::Load("{[a]: x}"), "env", &m)),
            "f:1:2: env keys must be a string");
  int calls = 0;
  const absl::Status s = r.StringMap(
      YAML::Load("{ok: 1, bad: 2}"), "envs", &m,
      [&](const YAML::Node& k, const YAML::Node& v, const std::string& ks, const std::string&) {
        ++calls;
        if (ks == "bad") return r.Error(v, "no bad");
        return absl::OkStatus();
      });
  EXPECT_EQ(Msg(s), "f:1:14: no bad");
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace devmgr::yaml
