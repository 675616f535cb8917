#include "doctor/checkpoint_doctor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "checkpoint/checkpoint.h"
#include "fmt/format.h"

namespace devmgr::doctor {
namespace {

// A real checkpoint is kilobytes to a few megabytes; refuse absurd sizes
// instead of reading them into memory.
constexpr off_t kMaxBytes = off_t{1} << 30;

constexpr State kStates[] = {State::kOk, State::kAbsent, State::kCorrupt, State::kUnreadable};

// Label values are escaped as the text format requires.
std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Verdict Unreadable(const std::string& why) {
  Verdict v;
  v.state = State::kUnreadable;
  v.summary = "UNREADABLE " + why;
  return v;
}

}  // namespace

const char* StateName(State s) {
  switch (s) {
    case State::kOk:
      return "ok";
    case State::kAbsent:
      return "absent";
    case State::kCorrupt:
      return "corrupt";
    case State::kUnreadable:
      return "unreadable";
  }
  return "unknown";
}

Verdict Examine(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      Verdict v;
      v.state = State::kAbsent;
      v.summary = "ABSENT no checkpoint file (nothing allocated has been recorded)";
      return v;
    }
    return Unreadable(std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Unreadable(std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Unreadable("not a regular file");
  }
  if (st.st_size > kMaxBytes) {
    ::close(fd);
    return Unreadable(fmt::format("{} bytes is larger than any checkpoint", st.st_size));
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Unreadable(std::strerror(err));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);

  const checkpoint::VerifyResult r = checkpoint::Verify(bytes);
  Verdict v;
  v.format = r.format == checkpoint::FormatVersion::kV1 ? "v1" : "v2";
  v.checksum = r.stored;
  if (r.parsed) {
    std::set<std::string> pods;
    if (r.format == checkpoint::FormatVersion::kV1) {
      if (r.checkpoint.data_v1.pod_device_entries) {
        for (const auto& e : *r.checkpoint.data_v1.pod_device_entries) pods.insert(e.pod_uid);
        v.entries = static_cast<int>(r.checkpoint.data_v1.pod_device_entries->size());
      }
    } else if (r.checkpoint.data.pod_device_entries) {
      for (const auto& e : *r.checkpoint.data.pod_device_entries) pods.insert(e.pod_uid);
      v.entries = static_cast<int>(r.checkpoint.data.pod_device_entries->size());
    }
    v.pods = static_cast<int>(pods.size());
  }
  if (r.valid) {
    v.state = State::kOk;
    v.summary = fmt::format("OK {} checksum {} ({} entries, {} pods)", v.format, r.stored,
                            v.entries, v.pods);
  } else if (!r.parsed) {
    v.state = State::kCorrupt;
    v.format.clear();
    v.summary =
        fmt::format("CORRUPT v2 parse error: {}{}", r.error, bytes.empty() ? " (empty file)" : "");
  } else {
    v.state = State::kCorrupt;
    v.summary = fmt::format("CORRUPT {} checksum mismatch: stored {}, computed {}", v.format,
                            r.stored, r.computed);
  }
  return v;
}

CheckpointDoctor::CheckpointDoctor(std::string path) : path_(std::move(path)) {}

Verdict CheckpointDoctor::RunOnce(absl::Time now) {
  Verdict v = Examine(path_);
  absl::MutexLock lock(&mu_);
  examined_ = true;
  last_ = v;
  last_time_ = now;
  ++counts_[v.state];
  return v;
}

std::string CheckpointDoctor::RenderMetrics() const {
  absl::MutexLock lock(&mu_);
  const std::string p = EscapeLabel(path_);
  std::string out;
  out +=
      "# HELP devmgr_checkpoint_entries Pod device entries in the checkpoint at the last "
      "verification "
      "that could parse it.\n# TYPE devmgr_checkpoint_entries gauge\n";
  out += fmt::format("devmgr_checkpoint_entries{{path=\"{}\"}} {}\n", p,
                     examined_ ? last_.entries : 0);
  out +=
      "# HELP devmgr_checkpoint_last_verification_timestamp_seconds When the checkpoint was last "
      "verified (Unix time; 0 before the first verification).\n"
      "# TYPE devmgr_checkpoint_last_verification_timestamp_seconds gauge\n";
  out += fmt::format("devmgr_checkpoint_last_verification_timestamp_seconds{{path=\"{}\"}} {}\n", p,
                     examined_ ? absl::ToUnixSeconds(last_time_) : 0);
  out +=
      "# HELP devmgr_checkpoint_state 1 for the state of the checkpoint at the last verification "
      "(ok, absent, corrupt, unreadable), 0 for the others.\n# TYPE devmgr_checkpoint_state "
      "gauge\n";
  for (State s : kStates) {
    out += fmt::format("devmgr_checkpoint_state{{path=\"{}\",state=\"{}\"}} {}\n", p, StateName(s),
                       examined_ && last_.state == s ? 1 : 0);
  }
  out +=
      "# HELP devmgr_checkpoint_verifications_total Verifications of the checkpoint by result.\n"
      "# TYPE devmgr_checkpoint_verifications_total counter\n";
  for (State s : kStates) {
    auto it = counts_.find(s);
    out += fmt::format("devmgr_checkpoint_verifications_total{{path=\"{}\",result=\"{}\"}} {}\n", p,
                       StateName(s), it == counts_.end() ? 0 : it->second);
  }
  return out;
}

bool CheckpointDoctor::Ready(std::string* why) const {
  absl::MutexLock lock(&mu_);
  if (!examined_) {
    *why = "not verified yet";
    return false;
  }
  *why = path_ + ": " + last_.summary;
  return last_.state == State::kOk || last_.state == State::kAbsent;
}

}  // namespace devmgr::doctor
