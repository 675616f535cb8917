// FuzzTempDir: a directory under /tmp for a fuzz target's whole process,
// removed when the process exits (libFuzzer and the replay driver both end
// with exit()).
#ifndef DEVMGR_TESTS_FUZZ_FUZZ_TEMP_DIR_H_
#define DEVMGR_TESTS_FUZZ_FUZZ_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz_check.h"

// Makes /tmp/<prefix>.XXXXXX.
inline std::string FuzzTempDir(const std::string& prefix) {
  static std::vector<std::string>* made = [] {
    auto* v = new std::vector<std::string>;
    std::atexit([] {
      std::error_code ec;
      for (const std::string& d : *made) std::filesystem::remove_all(d, ec);
    });
    return v;
  }();
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  FUZZ_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp %s failed", tmpl.c_str());
  made->push_back(tmpl);
  return tmpl;
}

#endif  // DEVMGR_TESTS_FUZZ_FUZZ_TEMP_DIR_H_
