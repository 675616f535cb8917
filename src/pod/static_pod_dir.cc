#include "pod/static_pod_dir.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "pod/manifest_parser.h"
#include "pod/uid.h"

namespace devmgr::pod {

namespace fs = std::filesystem;

const char* ManifestChangeKindName(ManifestChange::Kind kind) {
  switch (kind) {
    case ManifestChange::Kind::kAdded:
      return "added";
    case ManifestChange::Kind::kChanged:
      return "changed";
    case ManifestChange::Kind::kRemoved:
      return "removed";
  }
  return "unknown";
}

StaticPodDir::StaticPodDir(StaticPodDirOptions options) : options_(std::move(options)) {}

StaticPodDir::~StaticPodDir() { Stop(); }

bool StaticPodDir::IsManifestName(const std::string& filename) const {
  if (filename.empty() || filename[0] == '.') return false;
  if (!options_.manifest_extensions_only) return true;
  const std::string ext = fs::path(filename).extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

std::vector<std::string> StaticPodDir::ListFiles() const {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::file_status st = fs::status(options_.path, ec);
  if (ec || !fs::exists(st)) return out;  // missing: no pods, like the kubelet
  if (fs::is_regular_file(st)) {
    // A single manifest file: the kubelet reads it whatever its name.
    out.push_back(options_.path);
    return out;
  }
  if (!fs::is_directory(st)) return out;
  for (fs::directory_iterator it(options_.path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!IsManifestName(name)) continue;
    std::error_code type_ec;
    // Follows symlinks, as the kubelet's os.Stat does; no recursion.
    if (!fs::is_regular_file(it->path(), type_ec)) continue;
    out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ManifestChange> StaticPodDir::ScanNow() {
  absl::MutexLock scan_lock(&scan_mu_);
  // Read and parse outside mu_ (I/O); only this scan mutates files_.
  std::map<std::string, std::string> contents;
  std::map<std::string, absl::Status> read_errors;
  for (const std::string& path : ListFiles()) {
    absl::StatusOr<std::string> text = ReadManifestFile(path);
    if (!text.ok() && absl::IsNotFound(text.status())) continue;  // raced a delete
    if (text.ok()) {
      contents[path] = *std::move(text);
    } else {
      contents[path] = "";
      read_errors[path] = text.status();
    }
  }

  std::vector<ManifestChange> changes;
  Callback callback;
  {
    absl::MutexLock l(&mu_);
    for (auto it = files_.begin(); it != files_.end();) {
      if (contents.count(it->first) == 0) {
        ManifestChange c;
        c.kind = ManifestChange::Kind::kRemoved;
        c.path = it->first;
        c.pods = std::move(it->second.pods);
        changes.push_back(std::move(c));
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [path, text] : contents) {
      auto existing = files_.find(path);
      const bool read_failed = read_errors.count(path) > 0;
      if (existing != files_.end()) {
        const FileState& old = existing->second;
        // Same bytes: same pods or same parse error. Same read error: no news.
        if (!read_failed && !old.read_failed && old.content == text) continue;
        if (read_failed && old.read_failed && old.error == read_errors[path]) continue;
      }
      FileState state;
      state.content = text;
      state.read_failed = read_failed;
      if (read_failed) {
        state.error = read_errors[path];
      } else {
        absl::StatusOr<std::vector<Pod>> pods = ParsePodManifests(text, path);
        if (pods.ok()) {
          state.pods = *std::move(pods);
          // A static pod without metadata.uid: a UID of its content, so an
          // edited pod is a new pod (as the kubelet's hash UID makes it).
          for (Pod& p : state.pods) {
            if (p.uid_generated)
              p.uid = StaticPodUid(p.namespace_, p.name, path, p.manifest_digest);
          }
        } else {
          state.error = pods.status();
        }
      }
      ManifestChange c;
      c.kind =
          existing == files_.end() ? ManifestChange::Kind::kAdded : ManifestChange::Kind::kChanged;
      c.path = path;
      c.pods = state.pods;
      c.error = state.error;
      changes.push_back(std::move(c));
      files_[path] = std::move(state);
    }
    callback = callback_;
  }
  std::sort(changes.begin(), changes.end(),
            [](const ManifestChange& a, const ManifestChange& b) { return a.path < b.path; });
  if (callback && !changes.empty()) callback(changes);
  return changes;
}

absl::Status StaticPodDir::Start(Callback callback) {
  {
    absl::MutexLock l(&mu_);
    if (poller_.joinable()) {
      return absl::FailedPreconditionError("static pod watcher already started");
    }
    callback_ = std::move(callback);
    stopping_ = false;
  }
  poller_ = std::thread([this] { PollLoop(); });
  return absl::OkStatus();
}

void StaticPodDir::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    stop_cv_.SignalAll();
  }
  if (poller_.joinable()) poller_.join();
  absl::MutexLock l(&mu_);
  callback_ = nullptr;
}

void StaticPodDir::PollLoop() {
  for (;;) {
    ScanNow();
    absl::MutexLock l(&mu_);
    const absl::Time deadline = absl::Now() + options_.period;
    while (!stopping_) {
      if (stop_cv_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
    }
    if (stopping_) return;
  }
}

std::map<std::string, std::vector<Pod>> StaticPodDir::CurrentPods() const {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::vector<Pod>> out;
  for (const auto& [path, state] : files_) {
    if (state.error.ok()) out[path] = state.pods;
  }
  return out;
}

}  // namespace devmgr::pod
