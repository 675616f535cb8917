// Fuzz target: the Pod manifest parser (`devmgr serve --pod-manifest-path`, scenarios). Property:
// any text gives pods or an error naming the file; every pod parsed has a name and a UID.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "pod/manifest_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto pods = devmgr::pod::ParsePodManifests(text, "fuzz.yaml");
  if (!pods.ok()) {
    FUZZ_CHECK(pods.status().message().find("fuzz.yaml") != std::string::npos,
               "error does not name the file: %s", std::string(pods.status().message()).c_str());
    return 0;
  }
  for (const auto& p : *pods) {
    FUZZ_CHECK(!p.name.empty() && !p.uid.empty(), "pod without name or uid");
  }
  return 0;
}
