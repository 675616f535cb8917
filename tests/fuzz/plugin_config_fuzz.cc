// Fuzz target: the reference plugin's configuration parser (`devmgr sample-plugin --config`).
// Property: any text gives a configuration or an error naming the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "plugin/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = devmgr::plugin::ParseConfig(text, "fuzz.yaml");
  if (!c.ok()) {
    FUZZ_CHECK(c.status().message().find("fuzz.yaml") != std::string::npos,
               "error does not name the file: %s", std::string(c.status().message()).c_str());
  }
  return 0;
}
