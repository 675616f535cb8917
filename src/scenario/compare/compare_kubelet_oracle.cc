#include "scenario/compare/compare_kubelet_oracle.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace devmgr::scenario {

absl::Status OracleProcess::Start(const std::string& binary, const std::string& plugin_dir,
                                  const std::string& stderr_path, absl::Duration timeout) {
  stderr_path_ = stderr_path;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::UnavailableError(fmt::format("socketpair: {}", std::strerror(errno)));
  }
  const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (err < 0) {
    close(sv[0]);
    close(sv[1]);
    return absl::UnavailableError(fmt::format("{}: {}", stderr_path, std::strerror(errno)));
  }
  const std::string dir_flag = "--dir";
  const std::string v_flag = "--v=1";
  const pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    close(err);
    return absl::UnavailableError(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    dup2(sv[1], 0);
    dup2(sv[1], 1);
    dup2(err, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);
    const char* argv[] = {binary.c_str(), dir_flag.c_str(), plugin_dir.c_str(), v_flag.c_str(),
                          nullptr};
    execv(binary.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  close(sv[1]);
  close(err);
  pid_ = pid;
  fd_ = sv[0];
  absl::StatusOr<std::string> hello = ReadLine(timeout);
  if (!hello.ok()) return hello.status();
  nlohmann::json j = nlohmann::json::parse(*hello, nullptr, false);
  if (j.is_discarded() || !j.value("ready", false)) {
    return absl::UnavailableError(fmt::format("kubelet-oracle did not start: {}", *hello));
  }
  kubernetes_ = j.value("kubernetes", "");
  return absl::OkStatus();
}

std::string OracleProcess::StderrTail() const {
  std::ifstream in(stderr_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > 1500) s = "..." + s.substr(s.size() - 1500);
  return s;
}

absl::StatusOr<std::string> OracleProcess::ReadLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          fmt::format("kubelet-oracle did not answer within {}", absl::FormatDuration(timeout)));
    }
    pollfd p{fd_, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[65536];
    const ssize_t got = read(fd_, buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return absl::UnavailableError(
          fmt::format("kubelet-oracle exited; its stderr: {}", StderrTail()));
    }
    buffer_.append(buf, static_cast<size_t>(got));
  }
}

absl::StatusOr<nlohmann::json> OracleProcess::Call(nlohmann::json request, absl::Duration timeout) {
  if (fd_ < 0) return absl::FailedPreconditionError("kubelet-oracle is not running");
  const int id = next_id_++;
  request["id"] = id;
  const std::string line = request.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(fmt::format("kubelet-oracle: write: {}; its stderr: {}",
                                                std::strerror(errno), StderrTail()));
    }
    off += static_cast<size_t>(n);
  }
  for (;;) {
    absl::StatusOr<std::string> l = ReadLine(timeout);
    if (!l.ok()) return l.status();
    nlohmann::json j = nlohmann::json::parse(*l, nullptr, false);
    if (j.is_discarded()) {
      return absl::UnavailableError(fmt::format("kubelet-oracle: not JSON: {}", *l));
    }
    if (j.value("id", 0) == id) return j;
  }
}

void OracleProcess::Stop() {
  if (pid_ < 0) return;
  if (fd_ >= 0) {
    const std::string quit = "{\"op\":\"quit\"}\n";
    (void)send(fd_, quit.data(), quit.size(), MSG_NOSIGNAL);
  }
  int status = 0;
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped = true;
    } else {
      usleep(50 * 1000);
    }
  }
  if (!reaped) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace devmgr::scenario
