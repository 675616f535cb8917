// The CEL selector subset: what it evaluates, and the errors for the rest.
#include "dra/cel_selector.h"

#include <string>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

using nlohmann::json;
using testing::HasSubstr;

const json kGpu = json::parse(R"({
  "name": "gpu-0",
  "attributes": {"type": {"string": "gpu"}, "index": {"int": 3},
                 "healthy": {"bool": true}, "ext.example.com/family": {"string": "x"},
                 "driverVersion": {"version": "1.2.0"}},
  "capacity": {"memory": {"value": "64Gi"}}
})");

bool Eval(const std::string& expr, const json& device = kGpu,
          const std::string& driver = "driver.example.com") {
  absl::StatusOr<CelSelector> s = CelSelector::Compile(expr);
  EXPECT_OK(s);
  if (!s.ok()) return false;
  absl::StatusOr<bool> m = s->Matches(driver, device);
  EXPECT_OK(m) << expr;
  return m.ok() && *m;
}

std::string CompileError(const std::string& expr) {
  absl::StatusOr<CelSelector> s = CelSelector::Compile(expr);
  EXPECT_FALSE(s.ok()) << expr;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.status().message());
}

std::string RuntimeError(const std::string& expr) {
  absl::StatusOr<CelSelector> s = CelSelector::Compile(expr);
  EXPECT_OK(s);
  if (!s.ok()) return "";
  absl::StatusOr<bool> m = s->Matches("driver.example.com", kGpu);
  EXPECT_FALSE(m.ok()) << expr;
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  return std::string(m.status().message());
}

TEST(CelSelectorTest, ComparesTheDriverInEitherQuoting) {
  EXPECT_TRUE(Eval(R"(device.driver == "driver.example.com")"));
  EXPECT_TRUE(Eval("device.driver == 'driver.example.com'"));
  EXPECT_FALSE(Eval(R"(device.driver == "other.example.com")"));
  EXPECT_TRUE(Eval(R"(device.driver != "other.example.com")"));
}

TEST(CelSelectorTest, ReadsAttributesOfTheDriversDomainAndQualifiedOnes) {
  EXPECT_TRUE(Eval(R"(device.attributes["driver.example.com"].type == "gpu")"));
  EXPECT_TRUE(Eval(R"(device.attributes["ext.example.com"].family == "x")"));
  EXPECT_TRUE(Eval(R"(device.attributes["driver.example.com"].index >= 3)"));
  EXPECT_FALSE(Eval(R"(device.attributes["driver.example.com"].index < 3)"));
  EXPECT_TRUE(Eval(R"(device.attributes["driver.example.com"].index == 3)"));
  EXPECT_TRUE(Eval(R"(device.attributes["driver.example.com"].healthy == true)"));
  // Another driver's device: its unqualified attributes are in its own domain.
  EXPECT_TRUE(
      Eval(R"(device.attributes["other.example.com"].type == "gpu")", kGpu, "other.example.com"));
}

TEST(CelSelectorTest, ComparesCapacitiesAsQuantities) {
  EXPECT_TRUE(Eval(R"(device.capacity["driver.example.com"].memory == quantity("64Gi"))"));
  EXPECT_TRUE(Eval(R"(device.capacity["driver.example.com"].memory == quantity("68719476736"))"));
  EXPECT_TRUE(
      Eval("device.capacity['driver.example.com'].memory.compareTo(quantity('10Gi')) >= 0"));
  EXPECT_FALSE(
      Eval("device.capacity['driver.example.com'].memory.compareTo(quantity('80Gi')) >= 0"));
  EXPECT_TRUE(Eval(R"(device.capacity["driver.example.com"].memory.isGreaterThan(quantity("1")))"));
  EXPECT_FALSE(Eval(R"(device.capacity["driver.example.com"].memory.isLessThan(quantity("1")))"));
}

TEST(CelSelectorTest, AndShortCircuitsOverErrorsOnEitherSide) {
  EXPECT_TRUE(
      Eval("device.driver == 'driver.example.com' && (device.attributes"
           "['driver.example.com'].type == 'gpu')"));
  EXPECT_FALSE(Eval(R"(device.driver == "x" && device.attributes["d"].missing == 1)"));
  EXPECT_FALSE(Eval(R"(device.attributes["d"].missing == 1 && device.driver == "x")"));
}

TEST(CelSelectorTest, AMissingAttributeIsARuntimeError) {
  EXPECT_EQ(RuntimeError(R"(device.attributes["driver.example.com"].model == "a")"),
            "CEL runtime error: no such key: model");
  EXPECT_EQ(RuntimeError(R"(device.attributes["unknown.example.com"].type == "gpu")"),
            "CEL runtime error: no such key: type");
  EXPECT_EQ(RuntimeError(R"(device.capacity["driver.example.com"].cores == quantity("1"))"),
            "CEL runtime error: no such key: cores");
}

TEST(CelSelectorTest, TypeMismatchesAndVersionsAreRuntimeErrors) {
  EXPECT_EQ(RuntimeError(R"(device.attributes["driver.example.com"].index == "3")"),
            "CEL runtime error: no such overload: int == string");
  EXPECT_THAT(RuntimeError(R"(device.attributes["driver.example.com"].driverVersion == "1")"),
              HasSubstr("semver values are not supported"));
  EXPECT_EQ(RuntimeError("device.driver"),
            "CEL runtime error: expression must evaluate to bool, got string");
  EXPECT_THAT(RuntimeError(R"(device.capacity["driver.example.com"].memory > quantity("1"))"),
              HasSubstr("ordering is supported on ints only"));
}

TEST(CelSelectorTest, RejectsWhatIsOutsideTheSubset) {
  EXPECT_EQ(CompileError(R"(device.driver == "a" || device.driver == "b")"),
            "unsupported CEL expression \"device.driver == \"a\" || device.driver == \"b\"\": "
            "operator '||' at offset 21 is not supported");
  EXPECT_THAT(CompileError(R"(!(device.driver == "a"))"), HasSubstr("operator '!'"));
  EXPECT_THAT(CompileError(R"(has(device.attributes["a"].b))"),
              HasSubstr("identifier 'has' at offset 0 is not supported"));
  EXPECT_THAT(CompileError(R"(device.driver in ["a", "b"])"),
              HasSubstr("identifier 'in' at offset 14 is not supported"));
  EXPECT_THAT(CompileError(R"(device.attributes["a"].b.matches("x"))"),
              HasSubstr("member 'matches'"));
  EXPECT_THAT(CompileError("device.allowMultipleAllocations == true"),
              HasSubstr("device.allowMultipleAllocations"));
  EXPECT_THAT(CompileError("device.attributes['a'].b + 1 == 2"),
              HasSubstr("unexpected '+' at offset 25"));
  EXPECT_THAT(CompileError("1.5 == 1.5"), HasSubstr("only decimal ints"));
  EXPECT_THAT(CompileError(R"(device.capacity["a"].m == quantity("12x"))"),
              HasSubstr("quantity(\"12x\")"));
}

}  // namespace
}  // namespace devmgr::dra
