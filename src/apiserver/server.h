// devmgr's embedded Kubernetes API endpoint: the Store and its handler
// served over plain HTTP (cpp-httplib) on a loopback address, with every
// request recorded (method, path, content type) and logged at -v=4.
#ifndef DEVMGR_APISERVER_SERVER_H_
#define DEVMGR_APISERVER_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/faults.h"
#include "apiserver/store.h"
#include "common/clock.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace devmgr::apiserver {

// devmgr serve's default --api-listen: loopback, any free port.
inline constexpr char kDefaultApiListen[] = "127.0.0.1:0";

// One request as it arrived.
struct RequestRecord {
  std::string method;
  std::string target;        // path and query, as sent
  std::string content_type;  // of the body ("" without one)
  std::string accept;
  std::string user_agent;
  int status = 0;
  std::string fault;  // the --api-fault spec that fired on it ("" none)
  absl::Time time;    // when it arrived (the real clock: a driver's retries run on it)
  uint64_t seq = 0;   // 1, 2, ... in the order recorded (set by the server)
};

// Thread-safe. Start/Stop once each; Stop is idempotent, safe before Start
// and run by the destructor.
class ApiServer {
 public:
  // `clock` must outlive the server. The store validates ResourceSlices.
  explicit ApiServer(const Clock& clock);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds `address` ("host:port", port 0: any free port) and serves on a
  // thread. Returns the URL, "http://host:port". Unavailable when the
  // address cannot be bound; InvalidArgument for a malformed address.
  absl::StatusOr<std::string> Start(const std::string& address);
  // Ends the watches, stops serving and joins.
  void Stop();

  Store& store() { return store_; }
  // Faults to inject (none by default); may be added while serving.
  FaultInjector& faults() { return faults_; }
  // Every request served so far (the last 10,000), oldest first.
  std::vector<RequestRecord> Requests() const ABSL_LOCKS_EXCLUDED(mu_);
  // How many requests were recorded so far (the seq of the last one).
  uint64_t RequestsRecorded() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until a request matching `pred` has been recorded (a request is
  // recorded after the store has changed, so a store watcher can see a
  // change before its request is here). False on timeout.
  bool WaitForRequest(const std::function<bool(const RequestRecord&)>& pred,
                      absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Record(RequestRecord record) ABSL_LOCKS_EXCLUDED(mu_);
  // Serves one HTTP request (faults first, then the handler).
  void Serve(const httplib::Request& req, httplib::Response& res);

  Store store_;
  FaultInjector faults_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::vector<RequestRecord> requests_ ABSL_GUARDED_BY(mu_);
  uint64_t recorded_ ABSL_GUARDED_BY(mu_) = 0;
};

// Creates the Node `name` in `store` (what a driver GETs for its owner
// reference). AlreadyExists is not an error.
absl::Status CreateNode(Store& store, const std::string& name);

// Deletes node `node`'s ResourceSlices from `store`, only those of `driver`
// when it is not empty, as the kubelet's DeleteCollection with the field
// selector spec.nodeName=<node>[,spec.driver=<driver>] does (at start: every
// driver's; a driver gone for 30 s: its own). Returns the deleted objects.
ApiOr<std::vector<nlohmann::json>> DeleteNodeSlices(Store& store, const std::string& node,
                                                    const std::string& driver);

// Writes a kubeconfig for `url` (plain HTTP, no credentials) to `path`,
// atomically (a temp file renamed over it).
absl::Status WriteKubeconfig(const std::string& path, const std::string& url);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_SERVER_H_
