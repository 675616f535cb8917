// The API endpoint's object store: objects of every served type as JSON,
// one integer revision counter across all of them (as etcd's revision), and
// a bounded history of changes that watches read from. Create, update and
// delete follow the generic registry's rules (generateName, uid,
// creationTimestamp, generation, optimistic concurrency on resourceVersion,
// delete preconditions) and answer with its errors.
#ifndef DEVMGR_APISERVER_STORE_H_
#define DEVMGR_APISERVER_STORE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/api_error.h"
#include "apiserver/field_errors.h"
#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"

namespace devmgr::apiserver {

// One change: "ADDED", "MODIFIED" or "DELETED", the object after it (for
// DELETED the last state, with the deletion's resourceVersion).
struct WatchEvent {
  std::string type;
  int64_t resource_version = 0;
  const ResourceType* resource = nullptr;
  nlohmann::json object;
};

// Thread-safe.
class Store {
 public:
  // Checks an object before it is stored; `old` is null on create. Returns
  // the field errors (none: valid).
  using Validator =
      std::function<FieldErrors(const nlohmann::json& object, const nlohmann::json* old)>;

  // `clock` stamps creationTimestamp and must outlive the store.
  // `history` bounds the changes kept for watches.
  explicit Store(const Clock& clock, size_t history = 100000);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Before any request: the validator of `type` (ObjectMeta is always checked).
  void SetValidator(const ResourceType& type, Validator validator);

  // Creates `object` in `ns` ("" for cluster-scoped types). The stored object
  // is returned. BadRequest (resourceVersion set, namespace mismatch),
  // Invalid, AlreadyExists.
  ApiOr<nlohmann::json> Create(const ResourceType& type, const std::string& ns,
                               nlohmann::json object);
  // Puts back an object a previous store held (its namespace, name, uid,
  // creationTimestamp, generation, finalizers and status as they were): what
  // outlives the kubelet when devmgr serve restarts. It gets a new
  // resourceVersion. BadRequest (no name), AlreadyExists; not validated.
  ApiOr<nlohmann::json> Restore(const ResourceType& type, nlohmann::json object);
  // NotFound when absent.
  ApiOr<nlohmann::json> Get(const ResourceType& type, const std::string& ns,
                            const std::string& name) const;

  struct ListResult {
    std::vector<nlohmann::json> items;  // in (namespace, name) order
    int64_t resource_version = 0;       // the store's revision at the list
    std::string continue_token;         // set when `limit` cut the list
    int64_t remaining = 0;              // items after the cut
  };
  // `ns` "" lists every namespace. `limit` 0: no limit. `continue_token` from
  // a previous ListResult continues it (BadRequest when malformed).
  ApiOr<ListResult> List(const ResourceType& type, const std::string& ns,
                         const FieldSelector& selector, int64_t limit = 0,
                         const std::string& continue_token = "") const;

  // Replaces the object named `name` with `object` (PUT). An empty
  // metadata.resourceVersion updates unconditionally; a stale one is a
  // Conflict. `status_only`: the status subresource (only .status changes);
  // otherwise a type with a status subresource keeps its old status. An
  // update that changes nothing keeps the resourceVersion. BadRequest (name
  // mismatch), NotFound, Conflict, Invalid.
  ApiOr<nlohmann::json> Update(const ResourceType& type, const std::string& ns,
                               const std::string& name, nlohmann::json object,
                               bool status_only = false);

  struct Preconditions {
    std::optional<std::string> uid;
    std::optional<std::string> resource_version;
  };
  // Deletes and returns the object. NotFound; Conflict when a precondition fails.
  ApiOr<nlohmann::json> Delete(const ResourceType& type, const std::string& ns,
                               const std::string& name, const Preconditions& preconditions);
  // Deletes every object `selector` matches in `ns` and returns them.
  std::vector<nlohmann::json> DeleteCollection(const ResourceType& type, const std::string& ns,
                                               const FieldSelector& selector);

  // The current revision.
  int64_t ResourceVersion() const ABSL_LOCKS_EXCLUDED(mu_);

  // The changes after revision `after`, waiting until `deadline` for at
  // least one (an empty list then), or until Shutdown. Expired ("too old
  // resource version: A (B)") when changes after `after` are no longer kept.
  ApiOr<std::vector<WatchEvent>> EventsAfter(int64_t after, absl::Time deadline) const;

  // Wakes every EventsAfter and makes later ones return at once. Idempotent.
  void Shutdown();
  bool IsShutdown() const;

 private:
  using Objects = std::map<std::string, nlohmann::json>;  // "ns/name" -> object

  static std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }
  Objects& ObjectsLocked(const ResourceType& type) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Objects* FindObjectsLocked(const ResourceType& type) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  FieldErrors ValidateLocked(const ResourceType& type, const nlohmann::json& object,
                             const nlohmann::json* old) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Stamps a new revision on `object`, records the event and wakes watchers.
  void CommitLocked(const ResourceType& type, const std::string& event_type, nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string StorageKey(const ResourceType& type, const std::string& ns,
                         const std::string& name) const;

  // Constant after construction.
  const Clock& clock_;
  const size_t history_limit_;

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;  // signalled on every commit and on Shutdown
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, Objects> objects_ ABSL_GUARDED_BY(mu_);  // by QualifiedResource
  std::map<const ResourceType*, Validator> validators_ ABSL_GUARDED_BY(mu_);
  std::deque<WatchEvent> history_ ABSL_GUARDED_BY(mu_);
  // The oldest revision whose successor changes are all in history_.
  int64_t history_start_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

// A random RFC 4122 version 4 UUID in its lowercase normalized form.
std::string NewUid();

// `generate_name` plus five random characters from the apiserver's
// alphabet (names.SimpleNameGenerator).
std::string GenerateName(const std::string& generate_name);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_STORE_H_
