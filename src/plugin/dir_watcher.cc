#include "plugin/dir_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "fmt/format.h"

namespace devmgr::plugin {
namespace {
constexpr uint32_t kEntriesMask =
    IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF;
constexpr uint32_t kWritesMask = kEntriesMask | IN_CLOSE_WRITE | IN_MODIFY;
}  // namespace

DirWatcher::~DirWatcher() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

absl::Status DirWatcher::Init() {
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) {
    return absl::UnavailableError(fmt::format("inotify_init1: {}", std::strerror(errno)));
  }
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return absl::UnavailableError(fmt::format("eventfd: {}", std::strerror(errno)));
  return absl::OkStatus();
}

void DirWatcher::Watch(const std::string& dir, Content content) {
  const uint32_t mask = content == Content::kWrites ? kWritesMask : kEntriesMask;
  for (Dir& d : dirs_) {
    if (d.path != dir) continue;
    if ((d.mask | mask) == d.mask) return;
    d.mask |= mask;
    // inotify_add_watch on a watched directory replaces its mask (same wd).
    if (d.wd >= 0) d.wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), d.mask);
    return;
  }
  Dir d;
  d.path = dir;
  d.mask = mask;
  d.wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), mask);
  d.ever_watched = d.wd >= 0;
  dirs_.push_back(d);
}

void DirWatcher::AddMissingWatches(std::vector<Event>* events) {
  for (Dir& d : dirs_) {
    if (d.wd >= 0) continue;
    d.wd = ::inotify_add_watch(inotify_fd_, d.path.c_str(), d.mask);
    if (d.wd >= 0) {
      Event e;
      e.dir = d.path;
      e.created = true;
      events->push_back(e);
    }
  }
}

std::vector<DirWatcher::Event> DirWatcher::Wait(absl::Duration timeout, bool* woken) {
  std::vector<Event> events;
  *woken = false;
  AddMissingWatches(&events);
  if (!events.empty()) return events;
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  if (::poll(fds, 2, ms) <= 0) return events;
  if (fds[1].revents & POLLIN) {
    uint64_t v;  // one read takes the whole count
    [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &v, sizeof v);
    *woken = true;
  }
  if (fds[0].revents & POLLIN) {
    alignas(inotify_event) char buf[16384];
    // One read takes what is queued, unless the buffer filled up (less room
    // left than the largest event). What arrives after the read makes the
    // next poll return at once.
    constexpr size_t kLargest = sizeof(inotify_event) + NAME_MAX + 1;
    ssize_t n;
    do {
      n = ::read(inotify_fd_, buf, sizeof buf);
      if (n > 0) Decode(buf, static_cast<size_t>(n), &events);
    } while (n > 0 && sizeof buf - static_cast<size_t>(n) < kLargest);
  }
  return events;
}

void DirWatcher::Decode(const char* buf, size_t n, std::vector<Event>* events) {
  for (const char* p = buf; p < buf + n;) {
    const auto* ev = reinterpret_cast<const inotify_event*>(p);
    p += sizeof(inotify_event) + ev->len;
    if (ev->mask & IN_Q_OVERFLOW) {
      Event e;
      e.overflow = true;
      events->push_back(e);
      continue;
    }
    for (Dir& d : dirs_) {
      if (d.wd != ev->wd) continue;
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        // IN_IGNORED: the kernel dropped the watch; otherwise drop it here.
        if (!(ev->mask & IN_IGNORED)) ::inotify_rm_watch(inotify_fd_, d.wd);
        d.wd = -1;
        break;
      }
      Event e;
      e.dir = d.path;
      e.name = ev->len > 0 ? std::string(ev->name) : "";
      e.created = ev->mask & (IN_CREATE | IN_MOVED_TO);
      e.deleted = ev->mask & (IN_DELETE | IN_MOVED_FROM);
      events->push_back(std::move(e));
      break;
    }
  }
}

void DirWatcher::Wake() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) {
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
}

}  // namespace devmgr::plugin
