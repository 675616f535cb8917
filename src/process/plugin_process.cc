#include "process/plugin_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string_view>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::node {
namespace {

constexpr size_t kTailLines = 200;

// --- Child-side helpers (run between fork and exec) -------------------------
// They report failures by returning a message; the child writes it to the
// status pipe and exits, and the parent turns it into Start()'s error.

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Whether "exec " can go in front of a simple command: not when it already
// starts with exec, nor when it starts with a variable assignment
// (`CDI_ENABLED=1 ./plugin`), which `exec` would take for the program name.
bool CanPrefixExec(const std::string& command) {
  const size_t start = command.find_first_not_of(" \t");
  if (start == std::string::npos) return true;
  const size_t end = command.find_first_of(" \t", start);
  const std::string word =
      command.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (word == "exec") return false;
  const size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return true;
  for (size_t i = 0; i < eq; ++i) {
    const char c = word[i];
    const bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return true;
  }
  return false;
}

// The program of a simple command, when written as an absolute path, plain
// or in single quotes (as ShellQuote writes it), after an optional `exec`;
// `rest` is the command after it, verbatim. nullopt for anything else (a
// program found through PATH, a relative path, an assignment first).
struct LeadingProgram {
  std::string path;
  std::string rest;
};
std::optional<LeadingProgram> ParseLeadingProgram(std::string_view command) {
  const auto skip_blanks = [&command](size_t i) {
    while (i < command.size() && (command[i] == ' ' || command[i] == '\t')) ++i;
    return i;
  };
  size_t i = skip_blanks(0);
  if (command.substr(i, 5) == "exec " || command.substr(i, 5) == "exec\t") i = skip_blanks(i + 5);
  LeadingProgram lead;
  while (i < command.size() && command[i] != ' ' && command[i] != '\t') {
    const char c = command[i];
    if (c == '\'') {
      const size_t close = command.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      lead.path.append(command.substr(i + 1, close - i - 1));
      i = close + 1;
    } else if (c == '\\' && command.substr(i, 2) == "\\'") {
      lead.path += '\'';
      i += 2;
    } else if (absl::ascii_isalnum(c) ||
               std::string_view("/._+-=:,@%").find(c) != std::string_view::npos) {
      lead.path += c;
      ++i;
    } else {
      return std::nullopt;  // $, `, ", *, ~ ...: the shell's to expand
    }
  }
  if (lead.path.empty() || lead.path[0] != '/') return std::nullopt;
  lead.rest = std::string(command.substr(i));
  return lead;
}

// True when `path` is `dir` or lies below it.
bool PathUnder(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (path.substr(0, dir.size()) != dir) return false;
  return path.size() == dir.size() || path[dir.size()] == '/' || dir == "/";
}

// True when the private mounts cover `path`: the tmpfs on /var/lib/kubelet,
// or an extra bind (a plugin under /tmp with a private /tmp bound in).
bool HiddenByPrivateMounts(const std::string& path, const PluginProcessOptions& o) {
  if (PathUnder(path, kKubeletRoot)) return true;
  for (const auto& [src, dst] : o.extra_binds) {
    if (PathUnder(path, dst)) return true;
  }
  return false;
}

// What the child's shell runs. A simple command is exec'ed so that pid() is
// the plugin's own; a compound one, or one that starts with exec or an
// assignment, runs as written (signals go to the whole group). A program
// under a path the private mounts cover (a clone under /tmp with a private
// /tmp bound in) is opened here, before the mounts, into *program_fd and
// exec'ed through it; when it cannot be opened, the shell reports it as
// before. *program_fd is -1 when no program was opened.
std::string ChildShellCommand(const PluginProcessOptions& o, int* program_fd) {
  *program_fd = -1;
  const bool compound = o.command.find_first_of(";&|\n()") != std::string::npos;
  if (compound) return o.command;
  if (o.private_mount) {
    if (auto lead = ParseLeadingProgram(o.command); lead && HiddenByPrivateMounts(lead->path, o)) {
      *program_fd = open(lead->path.c_str(), O_RDONLY | O_CLOEXEC);
      if (*program_fd >= 0) return fmt::format("exec /proc/self/fd/{}{}", *program_fd, lead->rest);
    }
  }
  return CanPrefixExec(o.command) ? "exec " + o.command : o.command;
}

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

std::string BindMount(const std::string& src, const std::string& dst) {
  if (mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Errno(fmt::format("bind-mount {} over {}", src, dst));
  }
  return "";
}

std::string MakeDir(const std::string& p) {
  if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir " + p);
  return "";
}

// Makes /var/lib/kubelet a fresh, empty tmpfs inside this mount namespace,
// so that nothing below it on the host is visible or writable. When the
// host has no /var/lib/kubelet, /var/lib itself is rebuilt on a tmpfs from
// binds of its entries (kept reachable through `staging`), plus an empty
// kubelet directory.
std::string PrepareKubeletRoot(const std::string& staging) {
  if (IsDir(kKubeletRoot)) {
    if (mount("devmgr", kKubeletRoot, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
      return Errno(fmt::format("mount tmpfs on {}", kKubeletRoot));
    }
    return "";
  }
  const std::string var_lib = "/var/lib";
  if (!IsDir(var_lib)) return "neither /var/lib/kubelet nor /var/lib exists";
  if (std::string e = BindMount(var_lib, staging); !e.empty()) return e;
  if (mount("devmgr", var_lib.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return Errno("mount tmpfs on /var/lib");
  }
  DIR* d = opendir(staging.c_str());
  if (d == nullptr) return Errno("opendir " + staging);
  std::string err;
  while (dirent* ent = readdir(d)) {
    const std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    const std::string src = staging + "/" + name;
    const std::string dst = var_lib + "/" + name;
    struct stat st;
    if (lstat(src.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = readlink(src.c_str(), target, sizeof(target) - 1);
      if (n >= 0) {
        target[n] = '\0';
        (void)symlink(target, dst.c_str());
      }
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      err = MakeDir(dst);
    } else {
      const int fd = open(dst.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) err = Errno("create " + dst);
      if (fd >= 0) close(fd);
    }
    if (err.empty()) err = BindMount(src, dst);
    if (!err.empty()) break;
  }
  closedir(d);
  if (!err.empty()) return err;
  // The entries' binds stand on their own; drop the staging view of /var/lib.
  umount2(staging.c_str(), MNT_DETACH);
  return MakeDir(kKubeletRoot);
}

std::string EnterUserNamespaceIfNeeded() {
  if (geteuid() == 0) {
    if (unshare(CLONE_NEWNS) != 0) return Errno("unshare(CLONE_NEWNS)");
    return "";
  }
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    return Errno(
        "unshare(CLONE_NEWUSER|CLONE_NEWNS) (not root, and unprivileged user "
        "namespaces are unavailable)");
  }
  auto write_file = [](const char* path, const std::string& text) -> std::string {
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Errno(std::string("open ") + path);
    const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    return ok ? "" : Errno(std::string("write ") + path);
  };
  if (std::string e = write_file("/proc/self/setgroups", "deny"); !e.empty()) return e;
  if (std::string e = write_file("/proc/self/uid_map", fmt::format("0 {} 1", uid)); !e.empty()) {
    return e;
  }
  return write_file("/proc/self/gid_map", fmt::format("0 {} 1", gid));
}

std::string SetUpPrivateMounts(const PluginProcessOptions& o, const std::string& staging) {
  if (std::string e = EnterUserNamespaceIfNeeded(); !e.empty()) return e;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make / private");
  }
  if (std::string e = PrepareKubeletRoot(staging); !e.empty()) return e;
  if (std::string e = MakeDir(kDevicePluginPath); !e.empty()) return e;
  if (std::string e = BindMount(o.plugin_dir, kDevicePluginPath); !e.empty()) return e;
  if (!o.registry_dir.empty()) {
    if (std::string e = MakeDir(kPluginsRegistryPath); !e.empty()) return e;
    if (std::string e = BindMount(o.registry_dir, kPluginsRegistryPath); !e.empty()) return e;
  }
  for (const auto& [src, dst] : o.extra_binds) {
    if (!Exists(dst)) {
      if (IsDir(src)) {
        if (std::string e = MakeDir(dst); !e.empty()) return e;
      } else {
        const int fd = open(dst.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) return Errno("create bind target " + dst);
        close(fd);
      }
    }
    if (std::string e = BindMount(src, dst); !e.empty()) return e;
  }
  return "";
}

[[noreturn]] void ChildFail(int status_fd, const std::string& msg) {
  (void)!write(status_fd, msg.data(), msg.size());
  _exit(127);
}

// The forked child: dies with devmgr, in a process group of its own so that
// Stop can signal the plugin's own children too; stdout and stderr to the
// output pipe; then the private mounts, working directory and environment,
// and exec. A failure before exec goes back on the status pipe.
[[noreturn]] void ExecChild(const PluginProcessOptions& opts, const std::string& staging,
                            const std::string& shell_cmd, int program_fd, pid_t parent,
                            const int out_pipe[2], const int status_pipe[2]) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  setpgid(0, 0);
  close(out_pipe[0]);
  close(status_pipe[0]);
  dup2(out_pipe[1], STDOUT_FILENO);
  dup2(out_pipe[1], STDERR_FILENO);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  if (opts.private_mount) {
    if (std::string e = SetUpPrivateMounts(opts, staging); !e.empty()) {
      ChildFail(status_pipe[1], "private mount namespace: " + e);
    }
  }
  if (!opts.working_dir.empty() && chdir(opts.working_dir.c_str()) != 0) {
    ChildFail(status_pipe[1], Errno("chdir " + opts.working_dir));
  }
  // Kept open across the shell's exec, which execs /proc/self/fd/N.
  if (program_fd >= 0) fcntl(program_fd, F_SETFD, 0);
  for (const auto& [k, v] : opts.env) setenv(k.c_str(), v.c_str(), 1);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execl("/bin/sh", "sh", "-c", shell_cmd.c_str(), static_cast<char*>(nullptr));
  ChildFail(status_pipe[1], Errno("exec /bin/sh"));
}

}  // namespace

PluginProcess::PluginProcess(PluginProcessOptions opts) : opts_(std::move(opts)) {}

PluginProcess::~PluginProcess() { Stop(absl::Seconds(2)); }

absl::Status PluginProcess::Start() {
  absl::MutexLock l(&mu_);
  if (!exited_) return absl::FailedPreconditionError("plugin process already running");
  if (reader_.joinable()) {
    mu_.Unlock();
    reader_.join();
    mu_.Lock();
  }
  std::string staging;
  if (opts_.private_mount) {
    char tmpl[] = "/tmp/devmgr-varlib-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return absl::InternalError(Errno("mkdtemp"));
    staging = tmpl;
  }
  // Mounted on only inside the child's namespace: removed here on every
  // path, once the child has exec'ed or failed (or was never forked).
  absl::Cleanup remove_staging = [&staging] {
    if (!staging.empty()) rmdir(staging.c_str());
  };
  int out_pipe[2];
  int status_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError(Errno("pipe"));
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    const absl::Status err = absl::InternalError(Errno("pipe"));
    close(out_pipe[0]);
    close(out_pipe[1]);
    return err;
  }
  int program_fd = -1;
  const std::string shell_cmd = ChildShellCommand(opts_, &program_fd);
  absl::Cleanup close_program = [program_fd] {
    if (program_fd >= 0) close(program_fd);
  };
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const absl::Status err = absl::InternalError(Errno("fork"));
    for (const int fd : {out_pipe[0], out_pipe[1], status_pipe[0], status_pipe[1]}) close(fd);
    return err;
  }
  if (pid == 0) ExecChild(opts_, staging, shell_cmd, program_fd, parent, out_pipe, status_pipe);
  close(out_pipe[1]);
  close(status_pipe[1]);
  // EOF on the status pipe means exec succeeded (the pipe is close-on-exec).
  std::string child_error;
  char buf[512];
  ssize_t n;
  while ((n = read(status_pipe[0], buf, sizeof(buf))) > 0) child_error.append(buf, n);
  close(status_pipe[0]);
  std::move(remove_staging).Invoke();
  pid_ = pid;
  exited_ = false;
  exit_code_.reset();
  reader_done_ = false;
  reader_ = std::thread([this, fd = out_pipe[0]] { ReaderLoop(fd); });
  if (!child_error.empty()) {
    ReapLocked();
    return absl::FailedPreconditionError(fmt::format(
        "cannot start plugin {:?}: {}{}", opts_.command, child_error,
        opts_.private_mount ? " (--private-mount needs root, or unprivileged user namespaces)"
                            : ""));
  }
  return absl::OkStatus();
}

void PluginProcess::ReaderLoop(int fd) {
  std::string partial;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, n);
    size_t pos;
    while ((pos = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, pos);
      partial.erase(0, pos + 1);
      if (!opts_.log_prefix.empty()) std::cerr << opts_.log_prefix << line << "\n";
      absl::MutexLock l(&mu_);
      tail_.push_back(std::move(line));
      if (tail_.size() > kTailLines) tail_.pop_front();
    }
  }
  if (!partial.empty()) {
    if (!opts_.log_prefix.empty()) std::cerr << opts_.log_prefix << partial << "\n";
  }
  close(fd);
  absl::MutexLock l(&mu_);
  if (!partial.empty()) tail_.push_back(std::move(partial));
  reader_done_ = true;
}

void PluginProcess::ReapLocked() {
  if (exited_ || pid_ <= 0) return;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, 0);
  exited_ = true;
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
}

void PluginProcess::Signal(int sig) {
  absl::MutexLock l(&mu_);
  if (!exited_ && pid_ > 0 && kill(-pid_, sig) != 0) kill(pid_, sig);
}

bool PluginProcess::WaitExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (exited_) return true;
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      }
      if (r < 0) {
        exited_ = true;
        return true;
      }
    }
    if (absl::Now() >= deadline) return false;
    // No portable way to wait for a child with a timeout without owning
    // SIGCHLD; poll at a fine grain.
    absl::SleepFor(absl::Milliseconds(10));
  }
}

void PluginProcess::Stop(absl::Duration grace) {
  bool need_kill = false;
  {
    absl::MutexLock l(&mu_);
    if (!exited_ && pid_ > 0) {
      kill(-pid_, SIGCONT);  // a SIGSTOPped plugin cannot act on SIGTERM
      kill(-pid_, SIGTERM);
      need_kill = true;
    }
  }
  if (need_kill && !WaitExit(grace)) {
    Signal(SIGKILL);
    WaitExit(absl::Seconds(10));
  }
  if (reader_.joinable()) reader_.join();
}

bool PluginProcess::running() const {
  absl::MutexLock l(&mu_);
  return !exited_;
}

pid_t PluginProcess::pid() const {
  absl::MutexLock l(&mu_);
  return pid_;
}

std::optional<int> PluginProcess::exit_code() const {
  absl::MutexLock l(&mu_);
  return exit_code_;
}

std::vector<std::string> PluginProcess::OutputTail(size_t n) const {
  absl::MutexLock l(&mu_);
  if (exited_) {
    // The process is gone but its last lines may still be in the pipe: give
    // the reader a moment to drain it (bounded: a grandchild that inherited
    // the pipe may keep it open).
    auto drained = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return reader_done_; };
    mu_.AwaitWithTimeout(absl::Condition(&drained), absl::Seconds(1));
  }
  const size_t start = tail_.size() > n ? tail_.size() - n : 0;
  return {tail_.begin() + start, tail_.end()};
}

absl::Status CheckPrivateMountSupported() {
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(Errno("fork"));
  if (pid == 0) {
    const std::string e = EnterUserNamespaceIfNeeded();
    _exit(e.empty() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "--private-mount needs a private mount namespace: run devmgr as root (or with "
      "CAP_SYS_ADMIN), or enable unprivileged user namespaces "
      "(sysctl kernel.unprivileged_userns_clone=1)");
}

}  // namespace devmgr::node
