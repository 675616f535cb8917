// StaticPodDir: the kubelet's static-pod file source (--pod-manifest-path),
// as a directory watcher that reports which manifest files appeared,
// changed or disappeared, with their parsed pods or parse errors.
//
// Kubelet behaviour kept: entries whose name starts with '.' are ignored;
// subdirectories are not descended into; a missing path means "no pods"
// (not an error); the path may also name a single manifest file; a file
// that fails to parse contributes no pods. The kubelet re-lists every 20 s
// (fileCheckFrequency) besides reacting to inotify; here the poll period is
// an option and tests call ScanNow().
//
// Differences: by default only *.yaml, *.yml and *.json files are read (the
// kubelet reads every non-dot regular file; set manifest_extensions_only =
// false for that); a file may hold several YAML documents or a PodList
// (ParsePodManifests), where the kubelet takes one Pod or one PodList; the
// kubelet suffixes static pod names with "-<nodeName>", devmgr does not.
//
// Thread-safe. Callbacks run on the scanning thread (the poller, or the
// caller of ScanNow), one scan at a time, in scan order; they must not call
// Stop().
#ifndef DEVMGR_POD_STATIC_POD_DIR_H_
#define DEVMGR_POD_STATIC_POD_DIR_H_

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pod/pod.h"

namespace devmgr::pod {

struct ManifestChange {
  enum class Kind { kAdded, kChanged, kRemoved };
  Kind kind = Kind::kAdded;
  std::string path;  // the manifest file
  // kAdded/kChanged: the pods now in the file (empty when `error` is set).
  // A pod without metadata.uid gets StaticPodUid of its content, so an
  // edited pod comes back with a new UID, as from the kubelet's file source.
  // kRemoved: the pods the file held at the previous scan.
  std::vector<Pod> pods;
  // kAdded/kChanged: why the file yields no pods (parse or read error,
  // "file:line:col: ..."); OK otherwise.
  absl::Status error;
};

// "added", "changed", "removed".
const char* ManifestChangeKindName(ManifestChange::Kind kind);

struct StaticPodDirOptions {
  // A directory of manifests or a single manifest file.
  std::string path;
  // Poll period of the background thread started by Start().
  absl::Duration period = absl::Seconds(20);
  // Read only *.yaml, *.yml, *.json (see the header comment).
  bool manifest_extensions_only = true;
};

class StaticPodDir {
 public:
  using Callback = std::function<void(const std::vector<ManifestChange>&)>;

  explicit StaticPodDir(StaticPodDirOptions options);
  ~StaticPodDir();  // Stop()s
  StaticPodDir(const StaticPodDir&) = delete;
  StaticPodDir& operator=(const StaticPodDir&) = delete;

  // Re-reads the path now and returns what changed since the previous scan
  // (the first scan reports every file as added), sorted by path. A file
  // counts as changed when its bytes differ. Also passes a non-empty result
  // to the callback given to Start(), if any.
  std::vector<ManifestChange> ScanNow();

  // Scans immediately, then every `period` on a background thread, passing
  // non-empty change sets to `callback`. FailedPrecondition if running.
  absl::Status Start(Callback callback);
  // Stops and joins the poller. Idempotent.
  void Stop();

  // The pods of every file that parsed at the last scan, by file path.
  std::map<std::string, std::vector<Pod>> CurrentPods() const;

  // True for the names the watcher reads (no leading '.', and a manifest
  // extension when manifest_extensions_only).
  bool IsManifestName(const std::string& filename) const;

 private:
  struct FileState {
    std::string content;
    std::vector<Pod> pods;
    absl::Status error;
    bool read_failed = false;
  };

  // Lists the candidate files (sorted).
  std::vector<std::string> ListFiles() const;
  void PollLoop();

  const StaticPodDirOptions options_;

  absl::Mutex scan_mu_;  // serializes scans and callbacks
  mutable absl::Mutex mu_;
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
  Callback callback_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar stop_cv_;
  std::thread poller_;  // touched only by Start/Stop (callers serialize)
};

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_STATIC_POD_DIR_H_
