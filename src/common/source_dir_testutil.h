// Test-only: where the source tree is (tests/testdata, examples), for test binaries.
#ifndef DEVMGR_COMMON_SOURCE_DIR_TESTUTIL_H_
#define DEVMGR_COMMON_SOURCE_DIR_TESTUTIL_H_

#include <string>

namespace devmgr::testutil {

// The source tree the build directory was configured from. It is defined in one small file
// that CMake writes into the build directory, not passed as a compile flag: a flag holding the
// clone's path would change every test object's ccache key from one clone to the next.
const char* SourceDir();

// SourceDir() + "/" + relative.
inline std::string SourcePath(const std::string& relative) {
  return std::string(SourceDir()) + "/" + relative;
}

}  // namespace devmgr::testutil

#endif  // DEVMGR_COMMON_SOURCE_DIR_TESTUTIL_H_
