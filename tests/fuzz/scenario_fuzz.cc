// Fuzz target: the scenario parser (`devmgr run FILE`). Property: any text gives a scenario or
// an error naming the file; never a crash, an uncaught exception or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "scenario/format/scenario_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = devmgr::scenario::ParseScenario(text, "fuzz.yaml");
  if (!s.ok()) {
    FUZZ_CHECK(s.status().message().find("fuzz.yaml") != std::string::npos,
               "error does not name the file: %s", std::string(s.status().message()).c_str());
  }
  return 0;
}
