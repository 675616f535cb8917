// DraClient: the kubelet's gRPC client to one DRA driver instance (one
// registered DRA socket), calling NodePrepareResources and
// NodeUnprepareResources of the service chosen at registration (v1 or
// v1beta1 DRAPlugin) and checking the responses as the kubelet's DRA manager
// does, with its error texts.
#ifndef DEVMGR_DRA_DRA_CLIENT_H_
#define DEVMGR_DRA_DRA_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/services.h"
#include "grpcpp/channel.h"

namespace devmgr::dra {

// The kubelet's defaultClientCallTimeout: the deadline of every call unless
// configured otherwise.
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(45);

// A ResourceClaim as the DRAPlugin API names it.
struct Claim {
  std::string namespace_;
  std::string uid;
  std::string name;

  bool operator==(const Claim&) const = default;
};

// One prepared device of a NodePrepareResources response, as the client
// reads it (the manager keeps its own dra::PreparedDevice, driver_calls.h).
struct ResponseDevice {
  // Empty: the device serves every request of the claim.
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
  // v1 only (1.35+ drivers); nullopt when the driver sent none.
  std::optional<std::string> share_id;

  bool operator==(const ResponseDevice&) const = default;
};

// Claim UID -> its devices.
using PreparedClaims = std::map<std::string, std::vector<ResponseDevice>>;

// One claim's entry of a NodePrepareResources response, as received: a
// non-empty `error` means the claim failed.
struct PrepareEntry {
  std::vector<ResponseDevice> devices;
  std::string error;

  bool operator==(const PrepareEntry&) const = default;
};

struct DraClientOptions {
  absl::Duration call_timeout = kDefaultCallTimeout;
  // Profile::dra_validates_utf8 (1.35+): a response with invalid UTF-8 in a
  // field the kubelet's Go types declare `string` fails as Go's unmarshal does.
  bool validate_utf8 = false;
  // 1.35+: Device.share_id (field 5 of v1) is read; the 1.34 kubelet's v1
  // API has no such field and ignores it.
  bool read_share_id = true;
  // The channel's reconnect backoff; zero leaves gRPC's default (1 s initial,
  // 120 s max, as grpc-go's). Tests shorten them.
  absl::Duration initial_reconnect_backoff = absl::ZeroDuration();
  absl::Duration max_reconnect_backoff = absl::ZeroDuration();
  // Called after each NodePrepareResources / NodeUnprepareResources call, as
  // the kubelet's unary client interceptor observes it for
  // dra_grpc_operations_duration_seconds (k8s.io/kubernetes v1.34.4-v1.37.2,
  // pkg/kubelet/cm/dra/plugin/dra_plugin.go, newMetricsInterceptor): the
  // driver name, the full method ("/<package>.DRAPlugin/<RPC>"), grpc-go's
  // code name ("OK" also when entries carry errors; "Internal" for a reply
  // that does not unmarshal) and the call's duration. Empty: none.
  std::function<void(const std::string& driver, const std::string& method, const std::string& code,
                     absl::Duration duration)>
      on_rpc;
};

// How the client reads a response, from the bytes of the message gRPC
// received: parsed as the response of `service`, checked for UTF-8 as Go's
// unmarshal checks it (opts.validate_utf8), Device.share_id read as
// opts.read_share_id says. A reply that parses gives what
// CallNodePrepareResources / CallNodeUnprepareResources return for it (the
// client reads its calls' responses with the same code); the fuzz target
// tests/fuzz/dra_replies_fuzz.cc feeds it. Failure, as grpc-go reports it:
// Internal "rpc error: code = Internal desc = grpc: failed to unmarshal the
// received message: <why>" (bytes that are not the message, invalid UTF-8).
absl::StatusOr<std::map<std::string, PrepareEntry>> ReadPrepareResponse(
    DraService service, std::string_view bytes, const DraClientOptions& opts);
// Claim UID -> its error ("" for success).
absl::StatusOr<std::map<std::string, std::string>> ReadUnprepareResponse(
    DraService service, std::string_view bytes, const DraClientOptions& opts);

// Thread-safe. The channel is created by the constructor (insecure,
// "unix:<endpoint>", :authority "localhost", a subchannel of its own) and
// connects lazily; calls fail fast while it is not connected.
class DraClient {
 public:
  DraClient(std::string driver, std::string endpoint, DraService service, DraClientOptions opts);
  DraClient(const DraClient&) = delete;
  DraClient& operator=(const DraClient&) = delete;

  const std::string& driver() const { return driver_; }
  const std::string& endpoint() const { return endpoint_; }
  DraService service() const { return service_; }
  // For connection monitoring (DraPluginHandler).
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  // One NodePrepareResources call with all `claims`. Success: every claim
  // has an entry without error; returns the devices per claim UID. Failure
  // (the first that applies, entries checked in claim UID order):
  //   the call:      "NodePrepareResources: rpc error: code = <Code> desc = <message>"
  //                  (the deadline: "... code = DeadlineExceeded desc = context
  //                  deadline exceeded"; invalid UTF-8 with validate_utf8:
  //                  "... code = Internal desc = grpc: failed to unmarshal the
  //                  received message: string field contains invalid UTF-8")
  //   unknown UID:   "NodePrepareResources returned result for unknown claim UID <uid>"
  //   claim error:   "NodePrepareResources failed for ResourceClaim <name>: <error>"
  //   missing UIDs:  "NodePrepareResources skipped <n> ResourceClaims"
  // REQUIRES: `claims` is not empty.
  absl::StatusOr<PreparedClaims> NodePrepareResources(const std::vector<Claim>& claims);
  // The same for NodeUnprepareResources (texts with "NodeUnprepareResources").
  absl::Status NodeUnprepareResources(const std::vector<Claim>& claims);

  // The calls without the checks of the response, for a caller that makes
  // them itself (the DRA manager, through dra::DriverCalls): the response's
  // map keyed by claim UID, exactly as received. Failure: the call itself,
  // "rpc error: code = <Code> desc = <message>" with no RPC name in front
  // (deadline and invalid UTF-8 as above).
  // REQUIRES: `claims` is not empty.
  absl::StatusOr<std::map<std::string, PrepareEntry>> CallNodePrepareResources(
      const std::vector<Claim>& claims);
  // Claim UID -> its error ("" for success).
  absl::StatusOr<std::map<std::string, std::string>> CallNodeUnprepareResources(
      const std::vector<Claim>& claims);

 private:
  // Hands a finished call to opts_.on_rpc.
  void ObserveRpc(std::string_view service, std::string_view rpc, const grpc::Status& s,
                  absl::Time start) const;
  template <typename Api>
  absl::StatusOr<typename Api::PrepareResponse> PrepareCall(const std::vector<Claim>& claims);
  template <typename Api>
  absl::StatusOr<typename Api::UnprepareResponse> UnprepareCall(const std::vector<Claim>& claims);
  template <typename Api>
  absl::StatusOr<PreparedClaims> Prepare(const std::vector<Claim>& claims);
  template <typename Api>
  absl::Status Unprepare(const std::vector<Claim>& claims);
  template <typename Api>
  absl::StatusOr<std::map<std::string, PrepareEntry>> RawPrepare(const std::vector<Claim>& claims);
  template <typename Api>
  absl::StatusOr<std::map<std::string, std::string>> RawUnprepare(const std::vector<Claim>& claims);

  // Constant after construction.
  const std::string driver_;
  const std::string endpoint_;
  const DraService service_;
  const DraClientOptions opts_;
  const std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_DRA_CLIENT_H_
