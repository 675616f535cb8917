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
#include "common/bind_paths.h"
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

// --- The child's set-up, planned before the fork -----------------------------
// Between fork and exec the child of a threaded process makes system calls
// only: another thread may have held a lock (the allocator's, under ASan;
// the environment's) at the fork, and the child would wait for it forever,
// and Start with it, reading the status pipe. Every path, text and message
// the child needs is built here, in the parent.

// One system call of the child's set-up; a failure ends the set-up with
// `what` and errno (unless the step is optional).
struct ChildStep {
  enum class Op {
    kUnshare,
    kWriteFile,
    kMakeRootPrivate,
    kTmpfs,
    kBind,
    kMkdir,
    kCreate,
    kSymlink,
    kUnmount
  };
  Op op;
  std::string a;  // the path acted on (kBind: the source; kSymlink: the link)
  std::string b;  // kBind: the target; kWriteFile: the text; kSymlink: the link's target
  std::string what;
  int flags = 0;                 // kUnshare: the namespaces
  bool only_if_missing = false;  // kMkdir, kCreate: skipped when `a` exists
  bool optional = false;         // a failure is ignored
};

struct ChildPlan {
  std::vector<ChildStep> steps;
  std::string work_dir_what;     // "chdir DIR"
  std::vector<std::string> env;  // NAME=VALUE: the child's whole environment
  std::vector<char*> envp;
  std::string shell_cmd;
};

ChildStep Step(ChildStep::Op op, std::string a, std::string b, std::string what) {
  return ChildStep{op, std::move(a), std::move(b), std::move(what)};
}

ChildStep Bind(const std::string& src, const std::string& dst) {
  return Step(ChildStep::Op::kBind, src, dst, fmt::format("bind-mount {} over {}", src, dst));
}

ChildStep Mkdir(const std::string& p) { return Step(ChildStep::Op::kMkdir, p, "", "mkdir " + p); }

// A private mount namespace, in a user namespace of its own when not root.
void PlanNamespace(std::vector<ChildStep>* steps) {
  using Op = ChildStep::Op;
  if (geteuid() == 0) {
    steps->push_back(Step(Op::kUnshare, "", "", "unshare(CLONE_NEWNS)"));
    steps->back().flags = CLONE_NEWNS;
    return;
  }
  steps->push_back(Step(Op::kUnshare, "", "",
                        "unshare(CLONE_NEWUSER|CLONE_NEWNS) (not root, and unprivileged user "
                        "namespaces are unavailable)"));
  steps->back().flags = CLONE_NEWUSER | CLONE_NEWNS;
  for (const auto& [path, text] :
       {std::pair<std::string, std::string>{"/proc/self/setgroups", "deny"},
        {"/proc/self/uid_map", fmt::format("0 {} 1", geteuid())},
        {"/proc/self/gid_map", fmt::format("0 {} 1", getegid())}}) {
    steps->push_back(Step(Op::kWriteFile, path, text, "write " + path));
  }
}

// Rebuilds `parent` on a tmpfs inside the child's namespace from binds of its
// entries (reached through `staging`, where the host's `parent` is bound
// first), leaving out the entry `name`, which becomes an empty directory:
// `parent/name` then exists in the namespace only, and nothing on the host
// changes. The entries are listed here, as the child will see them; one made
// on the host later is not seen in the namespace.
absl::Status PlanRebuiltParent(const std::string& parent, const std::string& name,
                               const std::string& staging, std::vector<ChildStep>* steps) {
  using Op = ChildStep::Op;
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return absl::FailedPreconditionError(Errno("opendir " + parent));
  steps->push_back(Bind(parent, staging));
  steps->push_back(Step(Op::kTmpfs, parent, "", "mount tmpfs on " + parent));
  while (dirent* ent = readdir(d)) {
    const std::string entry = ent->d_name;
    if (entry == "." || entry == ".." || entry == name) continue;
    const std::string src = staging + "/" + entry;
    const std::string dst = parent + "/" + entry;
    struct stat st;
    if (lstat(dst.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = readlink(dst.c_str(), target, sizeof(target) - 1);
      if (n < 0) continue;
      steps->push_back(Step(Op::kSymlink, dst, std::string(target, n), ""));
      steps->back().optional = true;
      continue;
    }
    steps->push_back(S_ISDIR(st.st_mode) ? Mkdir(dst)
                                         : Step(Op::kCreate, dst, "", "create " + dst));
    steps->push_back(Bind(src, dst));
  }
  closedir(d);
  // The entries' binds stand on their own; the staging view of `parent` goes
  // (and `staging` is free for the next rebuild).
  steps->push_back(Step(Op::kUnmount, staging, "", ""));
  steps->back().optional = true;
  steps->push_back(Mkdir(parent + "/" + name));
  return absl::OkStatus();
}

// Makes `dir` a directory that can be mounted over in the child's namespace
// without the host's changing: nothing to do when the host has it; else its
// parent is rebuilt (PlanRebuiltParent) with an empty `dir`.
absl::Status PlanMountPoint(const std::string& dir, const std::string& staging,
                            std::vector<ChildStep>* steps) {
  if (IsDir(dir)) return absl::OkStatus();
  const size_t slash = dir.rfind('/');
  const std::string parent = slash == 0 ? "/" : dir.substr(0, slash);
  if (!IsDir(parent)) {
    return absl::FailedPreconditionError(fmt::format("neither {} nor {} exists", dir, parent));
  }
  return PlanRebuiltParent(parent, dir.substr(slash + 1), staging, steps);
}

// Makes /var/lib/kubelet a fresh, empty tmpfs inside the child's namespace,
// so that nothing below it on the host is visible or writable. When the host
// has no /var/lib/kubelet, /var/lib itself is rebuilt on a tmpfs with an
// empty kubelet directory (PlanMountPoint).
absl::Status PlanKubeletRoot(const std::string& staging, std::vector<ChildStep>* steps) {
  if (IsDir(kKubeletRoot)) {
    steps->push_back(Step(ChildStep::Op::kTmpfs, kKubeletRoot, "",
                          fmt::format("mount tmpfs on {}", kKubeletRoot)));
    return absl::OkStatus();
  }
  return PlanMountPoint(kKubeletRoot, staging, steps);
}

// The whole private-mount set-up: the namespace, the kubelet root, the
// kubelet's directories and the CDI directories (PrivateMountBinds), each
// made first where the host lacks it, and the extra binds.
absl::Status PlanPrivateMounts(const PluginProcessOptions& o, const std::string& staging,
                               std::vector<ChildStep>* steps) {
  using Op = ChildStep::Op;
  PlanNamespace(steps);
  steps->push_back(Step(Op::kMakeRootPrivate, "/", "", "make / private"));
  if (absl::Status s = PlanKubeletRoot(staging, steps); !s.ok()) return s;
  const std::vector<BindPath> binds = PrivateMountBinds(o);
  const size_t extra_from = binds.size() - o.extra_binds.size();
  for (size_t i = 0; i < binds.size(); ++i) {
    const BindPath& b = binds[i];
    if (i >= extra_from) {
      steps->push_back(IsDir(b.host)
                           ? Mkdir(b.inside)
                           : Step(Op::kCreate, b.inside, "", "create bind target " + b.inside));
      steps->back().only_if_missing = true;
    } else if (PathUnder(b.inside, kKubeletRoot)) {
      steps->push_back(Mkdir(b.inside));  // on the kubelet root's tmpfs
    } else if (absl::Status s = PlanMountPoint(b.inside, staging, steps); !s.ok()) {
      return s;
    }
    steps->push_back(Bind(b.host, b.inside));
  }
  return absl::OkStatus();
}

// This process's environment with `overrides` set (replaced or added).
void PlanEnvironment(const std::map<std::string, std::string>& overrides, ChildPlan* plan) {
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (overrides.count(name) == 0) plan->env.emplace_back(entry);
  }
  for (const auto& [k, v] : overrides) plan->env.push_back(k + "=" + v);
  for (std::string& e : plan->env) plan->envp.push_back(e.data());
  plan->envp.push_back(nullptr);
}

// Writes `what`, a NUL and errno in decimal to the status pipe (the parent
// adds the text: strerror is not safe here), then exits.
[[noreturn]] void ChildFail(int status_fd, std::string_view what, int err) {
  char digits[16];
  int n = 0;
  unsigned v = static_cast<unsigned>(err);
  do {
    digits[sizeof(digits) - 1 - n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && n < static_cast<int>(sizeof(digits)) - 1);
  digits[sizeof(digits) - 1 - n++] = '\0';
  (void)!write(status_fd, what.data(), what.size());
  (void)!write(status_fd, digits + sizeof(digits) - n, n);
  _exit(127);
}

// One step, system calls only. Returns 0, or the errno of the failure.
int RunStep(const ChildStep& st) {
  using Op = ChildStep::Op;
  struct stat sb;
  if (st.only_if_missing && lstat(st.a.c_str(), &sb) == 0) return 0;
  switch (st.op) {
    case Op::kUnshare:
      return unshare(st.flags) == 0 ? 0 : errno;
    case Op::kWriteFile: {
      const int fd = open(st.a.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return errno;
      const bool ok = write(fd, st.b.data(), st.b.size()) == static_cast<ssize_t>(st.b.size());
      const int err = errno;
      close(fd);
      return ok ? 0 : err;
    }
    case Op::kMakeRootPrivate:
      return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : errno;
    case Op::kTmpfs:
      return mount("devmgr", st.a.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0 ? 0
                                                                                            : errno;
    case Op::kBind:
      return mount(st.a.c_str(), st.b.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0 ? 0 : errno;
    case Op::kMkdir:
      return mkdir(st.a.c_str(), 0755) == 0 || errno == EEXIST ? 0 : errno;
    case Op::kCreate: {
      const int fd = open(st.a.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) return errno;
      close(fd);
      return 0;
    }
    case Op::kSymlink:
      return symlink(st.b.c_str(), st.a.c_str()) == 0 ? 0 : errno;
    case Op::kUnmount:
      return umount2(st.a.c_str(), MNT_DETACH) == 0 ? 0 : errno;
  }
  return EINVAL;
}

void RunSteps(const std::vector<ChildStep>& steps, int status_fd) {
  for (const ChildStep& st : steps) {
    if (const int err = RunStep(st); err != 0 && !st.optional) {
      ChildFail(status_fd, st.what, err);
    }
  }
}

// The forked child: dies with devmgr, in a process group of its own so that
// Stop can signal the plugin's own children too; stdout and stderr to the
// output pipe; then the planned set-up, the working directory, and exec with
// the planned environment. A failure before exec goes back on the status pipe.
[[noreturn]] void ExecChild(const ChildPlan& plan, const PluginProcessOptions& opts, int program_fd,
                            pid_t parent, const int out_pipe[2], const int status_pipe[2]) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  setpgid(0, 0);
  close(out_pipe[0]);
  close(status_pipe[0]);
  dup2(out_pipe[1], STDOUT_FILENO);
  dup2(out_pipe[1], STDERR_FILENO);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  RunSteps(plan.steps, status_pipe[1]);
  if (!opts.working_dir.empty() && chdir(opts.working_dir.c_str()) != 0) {
    ChildFail(status_pipe[1], plan.work_dir_what, errno);
  }
  // Kept open across the shell's exec, which execs /proc/self/fd/N.
  if (program_fd >= 0) fcntl(program_fd, F_SETFD, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const char* argv[] = {"sh", "-c", plan.shell_cmd.c_str(), nullptr};
  execve("/bin/sh", const_cast<char* const*>(argv), plan.envp.data());
  ChildFail(status_pipe[1], "exec /bin/sh", errno);
}

// What the child wrote before failing ("what\0errno"), as a message.
std::string ChildError(const std::string& raw) {
  const size_t nul = raw.find('\0');
  if (nul == std::string::npos) return raw;
  int err = 0;
  for (size_t i = nul + 1; i < raw.size() && absl::ascii_isdigit(raw[i]); ++i) {
    err = err * 10 + (raw[i] - '0');
  }
  return raw.substr(0, nul) + ": " + std::strerror(err);
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
  ChildPlan plan;
  plan.shell_cmd = ChildShellCommand(opts_, &program_fd);
  absl::Cleanup close_program = [program_fd] {
    if (program_fd >= 0) close(program_fd);
  };
  if (opts_.private_mount) {
    if (absl::Status s = PlanPrivateMounts(opts_, staging, &plan.steps); !s.ok()) {
      for (const int fd : {out_pipe[0], out_pipe[1], status_pipe[0], status_pipe[1]}) close(fd);
      return absl::FailedPreconditionError(fmt::format(
          "cannot start plugin {:?}: private mount namespace: {} (--private-mount needs root, or "
          "unprivileged user namespaces)",
          opts_.command, std::string(s.message())));
    }
    for (ChildStep& st : plan.steps) st.what = "private mount namespace: " + st.what;
  }
  plan.work_dir_what = "chdir " + opts_.working_dir;
  PlanEnvironment(opts_.env, &plan);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const absl::Status err = absl::InternalError(Errno("fork"));
    for (const int fd : {out_pipe[0], out_pipe[1], status_pipe[0], status_pipe[1]}) close(fd);
    return err;
  }
  if (pid == 0) ExecChild(plan, opts_, program_fd, parent, out_pipe, status_pipe);
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
        "cannot start plugin {:?}: {}{}", opts_.command, ChildError(child_error),
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

std::vector<BindPath> PrivateMountBinds(const PluginProcessOptions& opts) {
  if (!opts.private_mount) return {};
  std::vector<BindPath> binds;
  // A DRA driver's session has no device-plugin directory.
  if (!opts.plugin_dir.empty()) binds.push_back({opts.plugin_dir, kDevicePluginPath});
  if (!opts.registry_dir.empty()) binds.push_back({opts.registry_dir, kPluginsRegistryPath});
  if (!opts.plugins_dir.empty()) binds.push_back({opts.plugins_dir, kPluginsPath});
  if (!opts.cdi_dir.empty()) {
    binds.push_back({opts.cdi_dir, kCdiDynamicPath});
    binds.push_back({opts.cdi_dir, kCdiStaticPath});
  }
  for (const auto& [src, dst] : opts.extra_binds) binds.push_back({src, dst});
  return binds;
}

absl::Status CheckPrivateMountSupported() {
  std::vector<ChildStep> steps;
  PlanNamespace(&steps);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(Errno("fork"));
  if (pid == 0) {
    for (const ChildStep& st : steps) {
      if (RunStep(st) != 0) _exit(1);
    }
    _exit(0);
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
