#include "plugin/control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>

#include "common/spellcheck.h"
#include "fmt/format.h"

namespace devmgr::plugin {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::vector<std::string>> Split(const std::string& line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
      continue;
    }
    std::string w;
    if (line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          w += c;
          continue;
        }
        if (i >= line.size()) break;
        const char e = line[i++];
        switch (e) {
          case '\\':
            w += '\\';
            break;
          case '"':
            w += '"';
            break;
          case 'n':
            w += '\n';
            break;
          case 't':
            w += '\t';
            break;
          case 'r':
            w += '\r';
            break;
          case '0':
            w += '\0';
            break;
          case 'x': {
            const int hi = i < line.size() ? HexValue(line[i]) : -1;
            const int lo = i + 1 < line.size() ? HexValue(line[i + 1]) : -1;
            if (hi < 0 || lo < 0) return absl::InvalidArgumentError("bad \\x escape");
            w += static_cast<char>(hi * 16 + lo);
            i += 2;
            break;
          }
          default:
            return absl::InvalidArgumentError(fmt::format("unknown escape \\{}", e));
        }
      }
      if (!closed) return absl::InvalidArgumentError("unterminated quoted word");
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
        w += line[i++];
    }
    words.push_back(std::move(w));
  }
  return words;
}

absl::Status ParseNuma(const std::string& s, DeviceConfig* d) {
  if (s == "-") {
    d->has_topology = false;
    return absl::OkStatus();
  }
  d->has_topology = true;
  if (s == "none") return absl::OkStatus();
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (...) {
      used = 0;
    }
    if (part.empty() || used != part.size()) {
      return absl::InvalidArgumentError(fmt::format("bad NUMA node list '{}'", s));
    }
    d->numa_nodes.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(const std::string& line) {
  size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string::npos || line[first] == '#') return std::nullopt;
  absl::StatusOr<std::vector<std::string>> words_or = Split(line);
  if (!words_or.ok()) return words_or.status();
  const std::vector<std::string>& w = *words_or;
  using Kind = ControlCommand::Kind;
  ControlCommand c;
  const std::string& verb = w[0];
  auto want = [&](size_t min, size_t max, const char* usage) -> absl::Status {
    if (w.size() < min || w.size() > max) {
      return absl::InvalidArgumentError(fmt::format("usage: {}", usage));
    }
    return absl::OkStatus();
  };
  absl::Status s;
  if (verb == "health") {
    s = want(3, 3, "health ID HEALTH");
    c.kind = Kind::kHealth;
    if (s.ok()) {
      c.device.id = w[1];
      c.device.health = w[2];
    }
  } else if (verb == "add") {
    s = want(2, 4, "add ID [HEALTH [NUMA]]");
    c.kind = Kind::kAdd;
    if (s.ok()) {
      c.device.id = w[1];
      if (w.size() > 2) c.device.health = w[2];
      if (w.size() > 3) s = ParseNuma(w[3], &c.device);
    }
  } else if (verb == "remove") {
    s = want(2, 2, "remove ID");
    c.kind = Kind::kRemove;
    if (s.ok()) c.device.id = w[1];
  } else if (verb == "end-streams") {
    s = want(1, 1, "end-streams");
    c.kind = Kind::kEndStreams;
  } else if (verb == "restart") {
    s = want(1, 1, "restart");
    c.kind = Kind::kRestart;
  } else if (verb == "register") {
    s = want(1, 1, "register");
    c.kind = Kind::kRegister;
  } else {
    std::string msg = fmt::format("unknown control command '{}'", verb);
    const std::string guess =
        SpellCheck(verb, {"health", "add", "remove", "end-streams", "restart", "register"});
    if (!guess.empty()) msg += fmt::format(" (did you mean '{}'?)", guess);
    return absl::InvalidArgumentError(msg);
  }
  if (!s.ok()) return s;
  return c;
}

std::vector<std::string> ControlFileReader::ReadNewLines() {
  std::vector<std::string> lines;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (st.st_ino != inode_ || st.st_size < offset_) {
      inode_ = st.st_ino;
      offset_ = 0;
      partial_.clear();
    }
    char buf[4096];
    while (true) {
      const ssize_t n = ::pread(fd, buf, sizeof buf, offset_);
      if (n <= 0) break;
      offset_ += n;
      partial_.append(buf, static_cast<size_t>(n));
    }
    size_t nl;
    while ((nl = partial_.find('\n')) != std::string::npos) {
      lines.push_back(partial_.substr(0, nl));
      partial_.erase(0, nl + 1);
    }
  }
  ::close(fd);
  return lines;
}

}  // namespace devmgr::plugin
