// Fault injection for the embedded API endpoint, off by default: answer a
// chosen call with an error, delay it, end a watch early, or make a watch
// find its resourceVersion expired. A DRA driver's API code must retry,
// back off, re-watch and re-list; these faults make each of those happen on
// demand (`devmgr serve --api-fault SPEC`, docs/api-server.md).
//
// A SPEC is comma-separated key=value pairs:
//   method=GET|POST|PUT|DELETE|PATCH  the request's method (default: any)
//   path=PREFIX                       the path starts with PREFIX (default: any)
//   watch=true|false                  only watch requests / only the others
//   error=CODE                        answer a metav1.Status with that code
//   delay=DURATION                    serve the request that much later
//   drop-watch=DURATION               end a watch's stream that long after it opened
//   expire=true                       answer a watch 410 Expired ("too old
//                                     resource version"), as after compaction
//   times=N                           fire N times (default 1; 0: every match)
//   skip=N                            let the first N matches through (default 0)
// Exactly one of error, delay, drop-watch, expire. DURATION as Go writes it
// ("1.5s", "200ms").
#ifndef DEVMGR_APISERVER_FAULTS_H_
#define DEVMGR_APISERVER_FAULTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/api_error.h"

namespace devmgr::apiserver {

struct Fault {
  enum class Action { kError, kDelay, kDropWatch, kExpire };
  std::string spec;  // as given, for logs and records
  std::string method;
  std::string path_prefix;
  std::optional<bool> watch;
  Action action = Action::kError;
  int code = 500;
  absl::Duration duration;  // kDelay, kDropWatch
  int times = 1;
  int skip = 0;
};

// InvalidArgument naming the key or value at fault.
absl::StatusOr<Fault> ParseFault(const std::string& spec);

class FaultInjector;
// Parses every SPEC and, when all are valid, adds them to `faults` in order;
// else adds none and returns the first ParseFault error.
absl::Status AddFaultSpecs(FaultInjector& faults, const std::vector<std::string>& specs);

// The error a fault with `error=code` answers: the reason and message a real
// server gives for that code, marked as injected.
ApiError InjectedError(int code, const std::string& method, const std::string& path);

// What to do with one request.
struct FaultDecision {
  std::string fired;  // the spec of the fault that fired ("" none)
  std::optional<ApiError> error;
  absl::Duration delay;
  std::optional<absl::Duration> drop_watch_after;
};

// Thread-safe.
class FaultInjector {
 public:
  void Add(Fault f) ABSL_LOCKS_EXCLUDED(mu_);
  // The first fault (in the order added) that matches and still fires; its
  // counters advance. `resource_version`: the request's parameter (for
  // expire's message); `current`: the store's revision.
  FaultDecision Decide(const std::string& method, const std::string& path, bool watch,
                       const std::string& resource_version, int64_t current)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    Fault fault;
    int matched = 0;
    int fired = 0;
  };
  absl::Mutex mu_;
  std::vector<Entry> faults_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_FAULTS_H_
