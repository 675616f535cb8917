// The DRA manager's port to the node's DRA drivers: the two calls of the
// DRAPlugin service (NodePrepareResources, NodeUnprepareResources) and the
// registration check, as plain data. The manager (dra/manager.h) sees
// drivers only through this interface; an adapter maps it to the gRPC
// client and the registration handler (not here: no gRPC in the domain,
// docs/architecture.md), and tests use a fake.
#ifndef DEVMGR_DRA_DRIVER_CALLS_H_
#define DEVMGR_DRA_DRIVER_CALLS_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace devmgr::dra {

// A claim as the DRAPlugin API names it (drapb.Claim).
struct ClaimRef {
  std::string uid;
  std::string name;
  std::string namespace_;

  bool operator==(const ClaimRef&) const = default;
};

// One device of a NodePrepareResourceResponse (drapb.Device). An empty list
// is what the wire carries for "none" (the kubelet stores it as nil).
struct PreparedDevice {
  std::vector<std::string> request_names;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;
  // v1 only (KEP-5075); nullopt when the driver sent none.
  std::optional<std::string> share_id;

  bool operator==(const PreparedDevice&) const = default;
};

// The answer for one claim (NodePrepareResourceResponse): a non-empty
// `error` means the claim failed and `devices` are ignored.
struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;
};

// Thread-safe: the manager calls it from whichever thread runs a pod's
// prepare or unprepare, without holding its own locks.
class DriverCalls {
 public:
  virtual ~DriverCalls() = default;

  // NodePrepareResources of `driver` for `claims` (non-empty, distinct UIDs).
  // Success: the response's map, keyed by claim UID, exactly as received
  // (entries may be missing or unknown: the manager checks, as the kubelet
  // does). Failure: the call itself failed (transport error, deadline, the
  // driver's gRPC status); the message is what the kubelet would show after
  // "NodePrepareResources: " (e.g. "rpc error: code = Unavailable desc = ...").
  virtual absl::StatusOr<std::map<std::string, PrepareResult>> Prepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) = 0;

  // NodeUnprepareResources: as Prepare; the map holds each claim's error
  // ("" for success).
  virtual absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) = 0;

  // True when a plugin of `driver` is registered on the node now.
  virtual bool IsRegistered(const std::string& driver) const = 0;
};

// One call made through a DriverCalls, as an observer sees it.
struct DriverCallRecord {
  std::string method;  // "NodePrepareResources" or "NodeUnprepareResources"
  std::string driver;
  std::vector<ClaimRef> claims;
  // "" when the call and each claim's answer succeeded; else the call's
  // error, or the first claim's error (in claim order), or "no answer for
  // claim <uid>".
  std::string error;
};

// A DriverCalls that passes every call to `inner` and then reports it to
// `observe` (the scenario runner's record of what the node asked its
// drivers). Thread-safe when `inner` and `observe` are.
class ObservedDriverCalls final : public DriverCalls {
 public:
  ObservedDriverCalls(DriverCalls* inner, std::function<void(const DriverCallRecord&)> observe)
      : inner_(inner), observe_(std::move(observe)) {}

  absl::StatusOr<std::map<std::string, PrepareResult>> Prepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) override;
  absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) override;
  bool IsRegistered(const std::string& driver) const override {
    return inner_->IsRegistered(driver);
  }

 private:
  DriverCalls* const inner_;
  const std::function<void(const DriverCallRecord&)> observe_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_DRIVER_CALLS_H_
