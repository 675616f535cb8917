// Test-only helpers: locating and reading tests/testdata/checkpoint.
#ifndef DEVMGR_CHECKPOINT_CHECKPOINT_TESTUTIL_H_
#define DEVMGR_CHECKPOINT_CHECKPOINT_TESTUTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/source_dir_testutil.h"

namespace devmgr::checkpoint::testing {

inline std::string TestDataDir() {
  return devmgr::testutil::SourcePath("tests/testdata/checkpoint");
}

inline std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One row of MANIFEST.tsv.
struct ManifestRow {
  std::string file, verdict, format, stored, correct, spew, description;
};

// Test names and ctest's list show the file, not the struct's bytes.
inline void PrintTo(const ManifestRow& row, std::ostream* os) { *os << row.file; }

inline std::vector<ManifestRow> ReadManifest() {
  std::vector<ManifestRow> rows;
  std::istringstream in(ReadFileOrDie(TestDataDir() + "/MANIFEST.tsv"));
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      header = false;
      continue;
    }
    if (line.empty()) continue;
    std::vector<std::string> cols;
    size_t start = 0;
    while (true) {
      const size_t tab = line.find('\t', start);
      cols.push_back(
          line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    cols.resize(7);
    rows.push_back({cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6]});
  }
  return rows;
}

}  // namespace devmgr::checkpoint::testing

#endif  // DEVMGR_CHECKPOINT_CHECKPOINT_TESTUTIL_H_
