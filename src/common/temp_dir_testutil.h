// Test helpers for files on disk: a temporary directory and a socket file.
// Header-only; included by *_test.cc and other *_testutil.h files only.
#ifndef DEVMGR_COMMON_TEMP_DIR_TESTUTIL_H_
#define DEVMGR_COMMON_TEMP_DIR_TESTUTIL_H_

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace devmgr::testutil {

// A fresh directory under /tmp (short, for socket paths), removed with
// everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/dmtXXXXXX";
    const char* p = ::mkdtemp(tmpl);
    path_ = p != nullptr ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Leaves a unix socket file at `path`: bound, never listened on, the fd
// closed (a stale socket, or one whose connection a fake stands for).
inline void MakeSocketFile(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  ::close(fd);
}

}  // namespace devmgr::testutil

#endif  // DEVMGR_COMMON_TEMP_DIR_TESTUTIL_H_
