// The checkpoint doctor: verifies a node's kubelet_internal_checkpoint on a
// schedule without ever writing it, and exposes the verdict as a log line,
// Prometheus metrics and a readiness state (`devmgr checkpoint doctor`, the
// deploy/checkpoint-doctor DaemonSet).
#ifndef DEVMGR_DOCTOR_CHECKPOINT_DOCTOR_H_
#define DEVMGR_DOCTOR_CHECKPOINT_DOCTOR_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr::doctor {

// What one look at the file found.
enum class State {
  kOk,          // parsed, and the stored checksum is the one the kubelet computes
  kAbsent,      // no file (a kubelet that never wrote one): nothing to repair
  kCorrupt,     // unparseable, or the checksum does not match: the kubelet will
                // discard it and forget every allocation at its next start
  kUnreadable,  // exists but cannot be read (permissions, a directory, I/O)
};

// "ok", "absent", "corrupt", "unreadable" (metric label values).
const char* StateName(State s);

struct Verdict {
  State state = State::kAbsent;
  // One human line, e.g. "OK v2 checksum 1234 (3 entries, 2 pods)".
  std::string summary;
  std::string format;  // "v1"/"v2" when parsed
  uint64_t checksum = 0;
  int entries = 0;
  int pods = 0;
};

// Reads `path` read-only (O_RDONLY, never created or modified) and verifies
// it as `devmgr checkpoint verify` does.
Verdict Examine(const std::string& path);

// Thread-safe: Examine rounds run on one thread while the HTTP server reads.
class CheckpointDoctor {
 public:
  explicit CheckpointDoctor(std::string path);

  // Examines the file once, records the verdict at `now` and returns it.
  Verdict RunOnce(absl::Time now);

  // Prometheus text format (0.0.4):
  //   devmgr_checkpoint_state{path,state} 1 for the current state, 0 others
  //   devmgr_checkpoint_verifications_total{path,result}
  //   devmgr_checkpoint_last_verification_timestamp_seconds{path}
  //   devmgr_checkpoint_entries{path} (entries of the last parsed file)
  std::string RenderMetrics() const;

  // Ready (true) while the last verdict is ok or absent; false before the
  // first round and while the file is corrupt or unreadable. *why says so.
  bool Ready(std::string* why) const;

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  mutable absl::Mutex mu_;
  bool examined_ ABSL_GUARDED_BY(mu_) = false;
  Verdict last_ ABSL_GUARDED_BY(mu_);
  absl::Time last_time_ ABSL_GUARDED_BY(mu_);
  std::map<State, uint64_t> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::doctor

#endif  // DEVMGR_DOCTOR_CHECKPOINT_DOCTOR_H_
