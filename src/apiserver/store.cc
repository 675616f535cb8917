#include "apiserver/store.h"

#include <iterator>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "apiserver/validation.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;

std::mt19937_64& Rng() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

std::string MetaString(const json& object, const char* key) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto it = meta->find(key);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : "";
}

// The object with its metadata's system fields cleared, for "did this
// update change anything" (an update that changes nothing is not written,
// as etcd3's GuaranteedUpdate skips it).
json WithoutSystemFields(json object) {
  if (object.contains("metadata") && object["metadata"].is_object()) {
    object["metadata"].erase("resourceVersion");
    object["metadata"].erase("generation");
  }
  return object;
}

// A list continuation: the revision it started at and the last key served.
std::string ContinueToken(int64_t rv, const std::string& last_key) {
  return std::to_string(rv) + ":" + last_key;
}

}  // namespace

std::string NewUid() {
  std::uniform_int_distribution<int> nibble(0, 15);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string uid;
  for (int i = 0; i < 36; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      uid += '-';
    } else if (i == 14) {
      uid += '4';
    } else if (i == 19) {
      uid += kHex[8 + nibble(Rng()) % 4];
    } else {
      uid += kHex[nibble(Rng())];
    }
  }
  return uid;
}

std::string GenerateName(const std::string& generate_name) {
  // names.SimpleNameGenerator: at most 58 characters of the base, then 5
  // random ones from utilrand's alphabet (no vowels, no confusable digits).
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<int> pick(0, sizeof(kAlphabet) - 2);
  std::string name = generate_name.substr(0, 58);
  for (int i = 0; i < 5; ++i) name += kAlphabet[pick(Rng())];
  return name;
}

Store::Store(const Clock& clock, size_t history) : clock_(clock), history_limit_(history) {}

void Store::SetValidator(const ResourceType& type, Validator validator) {
  absl::MutexLock lock(&mu_);
  validators_[&type] = std::move(validator);
}

Store::Objects& Store::ObjectsLocked(const ResourceType& type) {
  return objects_[type.QualifiedResource()];
}

const Store::Objects* Store::FindObjectsLocked(const ResourceType& type) const {
  auto it = objects_.find(type.QualifiedResource());
  return it == objects_.end() ? nullptr : &it->second;
}

FieldErrors Store::ValidateLocked(const ResourceType& type, const json& object,
                                  const json* old) const {
  // A type without its own validator gets ObjectMeta's checks on create.
  auto it = validators_.find(&type);
  if (it != validators_.end()) return it->second(object, old);
  return old ? FieldErrors{} : ValidateObjectMeta(object);
}

std::string Store::StorageKey(const ResourceType& type, const std::string& ns,
                              const std::string& name) const {
  return "/registry/" + type.resource + "/" + (ns.empty() ? "" : ns + "/") + name;
}

void Store::CommitLocked(const ResourceType& type, const std::string& event_type, json& object) {
  ++revision_;
  object["metadata"]["resourceVersion"] = std::to_string(revision_);
  history_.push_back(WatchEvent{event_type, revision_, &type, object});
  while (history_.size() > history_limit_) {
    history_start_ = history_.front().resource_version;
    history_.pop_front();
  }
  changed_.SignalAll();
}

ApiOr<json> Store::Create(const ResourceType& type, const std::string& ns, json object) {
  if (!object.is_object()) return BadRequest("the object to create is not a JSON object");
  json& meta = object["metadata"];
  if (!meta.is_object()) meta = json::object();
  if (!MetaString(object, "resourceVersion").empty()) {
    return BadRequest("resourceVersion should not be set on objects to be created");
  }
  const std::string body_ns = MetaString(object, "namespace");
  if (type.namespaced) {
    if (!body_ns.empty() && body_ns != ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  // rest.BeforeCreate: the name is generated before validation, which then
  // checks the generated name.
  if (MetaString(object, "name").empty() && !MetaString(object, "generateName").empty()) {
    meta["name"] = GenerateName(MetaString(object, "generateName"));
  }
  meta["uid"] = NewUid();
  meta["creationTimestamp"] =
      absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", clock_.Now(), absl::UTCTimeZone());
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("selfLink");
  object["apiVersion"] = type.ApiVersion();
  object["kind"] = type.kind;
  const std::string name = MetaString(object, "name");

  absl::MutexLock lock(&mu_);
  if (FieldErrors errs = ValidateLocked(type, object, nullptr); !errs.empty()) {
    return Invalid(type, name, errs);
  }
  Objects& objects = ObjectsLocked(type);
  const std::string key = Key(type.namespaced ? ns : "", name);
  if (objects.count(key)) return AlreadyExists(type, name);
  CommitLocked(type, "ADDED", object);
  objects[key] = object;
  return object;
}

ApiOr<json> Store::Restore(const ResourceType& type, json object) {
  if (!object.is_object() || !object["metadata"].is_object()) {
    return BadRequest("the object to restore has no metadata");
  }
  const std::string name = MetaString(object, "name");
  if (name.empty()) return BadRequest("the object to restore has no name");
  const std::string ns = type.namespaced ? MetaString(object, "namespace") : "";
  object["apiVersion"] = type.ApiVersion();
  object["kind"] = type.kind;
  absl::MutexLock lock(&mu_);
  Objects& objects = ObjectsLocked(type);
  const std::string key = Key(ns, name);
  if (objects.count(key)) return AlreadyExists(type, name);
  CommitLocked(type, "ADDED", object);
  objects[key] = object;
  return object;
}

ApiOr<json> Store::Get(const ResourceType& type, const std::string& ns,
                       const std::string& name) const {
  absl::ReaderMutexLock lock(&mu_);
  const Objects* objects = FindObjectsLocked(type);
  if (objects) {
    auto it = objects->find(Key(type.namespaced ? ns : "", name));
    if (it != objects->end()) return it->second;
  }
  return NotFound(type, name);
}

ApiOr<Store::ListResult> Store::List(const ResourceType& type, const std::string& ns,
                                     const FieldSelector& selector, int64_t limit,
                                     const std::string& continue_token) const {
  std::string start_after;
  if (!continue_token.empty()) {
    const size_t colon = continue_token.find(':');
    int64_t unused = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(continue_token.substr(0, colon), &unused)) {
      return BadRequest("invalid continue token: " + continue_token);
    }
    start_after = continue_token.substr(colon + 1);
  }
  absl::ReaderMutexLock lock(&mu_);
  ListResult result;
  result.resource_version = revision_;
  const Objects* objects = FindObjectsLocked(type);
  if (!objects) return result;
  auto it = start_after.empty() ? objects->begin() : objects->upper_bound(start_after);
  for (; it != objects->end(); ++it) {
    if (!ns.empty() && MetaString(it->second, "namespace") != ns) continue;
    if (!selector.Matches(it->second)) continue;
    if (limit > 0 && static_cast<int64_t>(result.items.size()) == limit) {
      if (result.continue_token.empty()) {
        result.continue_token = ContinueToken(revision_, std::prev(it)->first);
      }
      ++result.remaining;
      continue;
    }
    result.items.push_back(it->second);
  }
  return result;
}

ApiOr<json> Store::Update(const ResourceType& type, const std::string& ns, const std::string& name,
                          json object, bool status_only) {
  if (!object.is_object()) return BadRequest("the object to update is not a JSON object");
  if (!object["metadata"].is_object()) object["metadata"] = json::object();
  const std::string body_name = MetaString(object, "name");
  if (body_name != name) {
    return BadRequest("the name of the object (" + body_name +
                      ") does not match the name on the URL (" + name + ")");
  }
  const std::string rv = MetaString(object, "resourceVersion");
  absl::MutexLock lock(&mu_);
  Objects& objects = ObjectsLocked(type);
  auto it = objects.find(Key(type.namespaced ? ns : "", name));
  if (it == objects.end()) return NotFound(type, name);
  const json& old = it->second;
  if (!rv.empty() && rv != MetaString(old, "resourceVersion")) {
    return Conflict(type, name, kOptimisticLockMessage);
  }
  json updated;
  if (status_only) {
    updated = old;
    if (object.contains("status")) {
      updated["status"] = object["status"];
    } else {
      updated.erase("status");
    }
  } else {
    updated = std::move(object);
    // rest.BeforeUpdate keeps what the client may not change.
    for (const char* k : {"uid", "creationTimestamp", "namespace", "generation"}) {
      if (old["metadata"].contains(k)) updated["metadata"][k] = old["metadata"][k];
    }
    if (type.has_status) {
      if (old.contains("status")) {
        updated["status"] = old["status"];
      } else {
        updated.erase("status");
      }
    }
    if (updated.value("spec", json()) != old.value("spec", json())) {
      updated["metadata"]["generation"] = old["metadata"].value("generation", 0) + 1;
    }
  }
  updated["apiVersion"] = type.ApiVersion();
  updated["kind"] = type.kind;
  if (FieldErrors errs = ValidateLocked(type, updated, &old); !errs.empty()) {
    return Invalid(type, name, errs);
  }
  if (WithoutSystemFields(updated) == WithoutSystemFields(old)) return old;
  CommitLocked(type, "MODIFIED", updated);
  it->second = updated;
  return updated;
}

ApiOr<json> Store::Delete(const ResourceType& type, const std::string& ns, const std::string& name,
                          const Preconditions& preconditions) {
  absl::MutexLock lock(&mu_);
  Objects& objects = ObjectsLocked(type);
  auto it = objects.find(Key(type.namespaced ? ns : "", name));
  if (it == objects.end()) return NotFound(type, name);
  // storage.Preconditions.Check fails with an invalid-object StorageError,
  // which the registry turns into a Conflict quoting the error whole.
  auto failed = [&](const std::string& what, const std::string& want, const std::string& have) {
    return Conflict(type, name,
                    "StorageError: invalid object, Code: 4, Key: " + StorageKey(type, ns, name) +
                        ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: " + what +
                        " in precondition: " + want + ", " + what + " in object meta: " + have);
  };
  if (preconditions.uid && *preconditions.uid != MetaString(it->second, "uid")) {
    return failed("UID", *preconditions.uid, MetaString(it->second, "uid"));
  }
  if (preconditions.resource_version &&
      *preconditions.resource_version != MetaString(it->second, "resourceVersion")) {
    return failed("ResourceVersion", *preconditions.resource_version,
                  MetaString(it->second, "resourceVersion"));
  }
  json deleted = std::move(it->second);
  objects.erase(it);
  CommitLocked(type, "DELETED", deleted);
  return deleted;
}

std::vector<json> Store::DeleteCollection(const ResourceType& type, const std::string& ns,
                                          const FieldSelector& selector) {
  absl::MutexLock lock(&mu_);
  Objects& objects = ObjectsLocked(type);
  std::vector<json> deleted;
  for (auto it = objects.begin(); it != objects.end();) {
    if ((!ns.empty() && MetaString(it->second, "namespace") != ns) ||
        !selector.Matches(it->second)) {
      ++it;
      continue;
    }
    json object = std::move(it->second);
    it = objects.erase(it);
    CommitLocked(type, "DELETED", object);
    deleted.push_back(std::move(object));
  }
  return deleted;
}

int64_t Store::ResourceVersion() const {
  absl::ReaderMutexLock lock(&mu_);
  return revision_;
}

ApiOr<std::vector<WatchEvent>> Store::EventsAfter(int64_t after, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  if (after < history_start_) {
    return Expired("too old resource version: " + std::to_string(after) + " (" +
                   std::to_string(history_start_) + ")");
  }
  while (!shutdown_ && revision_ <= after) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;  // the deadline passed
  }
  std::vector<WatchEvent> events;
  for (auto it = history_.rbegin(); it != history_.rend() && it->resource_version > after; ++it) {
    events.push_back(*it);
  }
  return std::vector<WatchEvent>(events.rbegin(), events.rend());
}

void Store::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  changed_.SignalAll();
}

bool Store::IsShutdown() const {
  absl::ReaderMutexLock lock(&mu_);
  return shutdown_;
}

}  // namespace devmgr::apiserver
