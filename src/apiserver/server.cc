#include "apiserver/server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include "absl/time/clock.h"
#include "apiserver/field_selector.h"
#include "apiserver/handler.h"
#include "apiserver/validation.h"
#include "common/fs.h"
#include "common/logging.h"
#include "httplib.h"
#include "metrics/http_server.h"

namespace devmgr::apiserver {
namespace {

constexpr size_t kMaxRecords = 10000;
// The real server refuses request bodies over 3 MiB (maxRequestBodyBytes).
constexpr size_t kMaxRequestBody = 3 * 1024 * 1024;
// How long a watch's transport waits for events before it checks whether
// the connection or the server is going away.
constexpr absl::Duration kWatchPoll = absl::Milliseconds(500);
// Watches hold a thread each for as long as they last.
constexpr size_t kThreads = 32;

}  // namespace

ApiServer::ApiServer(const Clock& clock) : store_(clock) {
  store_.SetValidator(ResourceSlices(), ValidateResourceSlice);
}

ApiServer::~ApiServer() { Stop(); }

void ApiServer::Record(RequestRecord record) {
  DM_VINFO(4, "API request", {"method", record.method}, {"target", record.target},
           {"contentType", record.content_type}, {"accept", record.accept},
           {"userAgent", record.user_agent}, {"status", record.status});
  absl::MutexLock lock(&mu_);
  record.seq = ++recorded_;
  if (requests_.size() >= kMaxRecords) requests_.erase(requests_.begin());
  requests_.push_back(std::move(record));
}

std::vector<RequestRecord> ApiServer::Requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

uint64_t ApiServer::RequestsRecorded() const {
  absl::MutexLock lock(&mu_);
  return recorded_;
}

bool ApiServer::WaitForRequest(const std::function<bool(const RequestRecord&)>& pred,
                               absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto seen = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return std::any_of(requests_.begin(), requests_.end(), pred);
  };
  return mu_.AwaitWithTimeout(absl::Condition(&seen), timeout);
}

void ApiServer::Serve(const httplib::Request& req, httplib::Response& res) {
  ApiRequest request{req.method, req.path, {}, req.get_header_value("Content-Type"), req.body};
  for (const auto& [k, v] : req.params) request.params.emplace(k, v);
  const std::string watch = req.get_param_value("watch");
  const absl::Time arrived = absl::Now();
  FaultDecision fault =
      faults_.Decide(req.method, req.path, watch == "true" || watch == "1",
                     req.get_param_value("resourceVersion"), store_.ResourceVersion());
  if (fault.delay > absl::ZeroDuration()) absl::SleepFor(fault.delay);  // the fault is the wait
  ApiResponse response;
  if (fault.error) {
    response.status = fault.error->code;
    response.body = fault.error->ToStatus().dump();
    if (fault.error->code == 429) res.set_header("Retry-After", "1");
  } else {
    response = Handle(store_, request, absl::Now());
  }
  Record(RequestRecord{req.method, req.target, req.body.empty() ? "" : request.content_type,
                       req.get_header_value("Accept"), req.get_header_value("User-Agent"),
                       response.status, fault.fired, arrived});
  if (!fault.fired.empty()) {
    DM_INFO("API fault injected", {"fault", fault.fired}, {"method", req.method},
            {"target", req.target}, {"status", response.status});
  }
  res.status = response.status;
  if (!response.watch) {
    res.set_content(response.body, response.content_type.c_str());
    return;
  }
  // httplib gzips an application/json body when the client accepts gzip
  // (Go's transport always does), and its compressor holds back small
  // chunks: watch events would never arrive. The real server does not
  // compress watches; httplib decides after this handler, from the
  // request it owns (a mutable object), so the header is dropped here.
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  std::shared_ptr<WatchStream> stream = std::move(response.watch);
  const absl::Time drop_at =
      fault.drop_watch_after ? absl::Now() + *fault.drop_watch_after : absl::InfiniteFuture();
  res.set_chunked_content_provider(
      "application/json", [stream, drop_at](size_t, httplib::DataSink& sink) {
        std::string out;
        const bool more = stream->Poll(std::min(absl::Now() + kWatchPoll, drop_at), &out);
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;
        if (!more || absl::Now() >= drop_at) sink.done();
        return true;
      });
}

absl::StatusOr<std::string> ApiServer::Start(const std::string& address) {
  if (http_) return absl::FailedPreconditionError("API server already started");
  std::string host;
  int port = 0;
  if (absl::Status s = metrics::ParseHostPort(address, &host, &port); !s.ok()) return s;
  auto http = std::make_unique<httplib::Server>();
  http->new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  http->set_payload_max_length(kMaxRequestBody);
  // As for the metrics endpoint: SO_REUSEADDR only, so a busy port fails.
  http->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  auto serve = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
  http->Get(".*", serve);
  http->Post(".*", serve);
  http->Put(".*", serve);
  http->Delete(".*", serve);
  http->Patch(".*", serve);
  if (port == 0) {
    port = http->bind_to_any_port(host);
    if (port < 0) return absl::UnavailableError("API server: cannot listen on " + address);
  } else if (!http->bind_to_port(host, port)) {
    return absl::UnavailableError("API server: cannot listen on " + address);
  }
  http_ = std::move(http);
  httplib::Server* s = http_.get();
  auto exited = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([s, exited] {
    s->listen_after_bind();
    *exited = true;
  });
  // httplib 0.11 has no wait_until_ready; stop() before the accept loop runs
  // is lost, so wait the microseconds until it does (as metrics::HttpServer).
  while (!s->is_running() && !*exited) std::this_thread::sleep_for(std::chrono::microseconds(100));
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void ApiServer::Stop() {
  store_.Shutdown();  // ends the watches, which would otherwise hold their threads
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

absl::Status CreateNode(Store& store, const std::string& name) {
  nlohmann::json node = {{"metadata", {{"name", name}}}, {"spec", nlohmann::json::object()}};
  ApiOr<nlohmann::json> created = store.Create(Nodes(), "", std::move(node));
  if (created.ok() || created.error->reason == "AlreadyExists") return absl::OkStatus();
  return absl::InvalidArgumentError("node " + name + ": " + created.error->message);
}

ApiOr<std::vector<nlohmann::json>> DeleteNodeSlices(Store& store, const std::string& node,
                                                    const std::string& driver) {
  std::string text = "spec.nodeName=" + node;
  if (!driver.empty()) text += ",spec.driver=" + driver;
  ApiOr<FieldSelector> selector = FieldSelector::Parse(text, ResourceSlices());
  if (!selector.ok()) return *selector.error;
  return store.DeleteCollection(ResourceSlices(), "", selector.value);
}

absl::Status WriteKubeconfig(const std::string& path, const std::string& url) {
  // YAML is JSON's superset; a kubeconfig in JSON loads everywhere.
  nlohmann::json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"clusters", {{{"name", "devmgr"}, {"cluster", {{"server", url}}}}}},
      {"users", {{{"name", "devmgr"}, {"user", nlohmann::json::object()}}}},
      {"contexts",
       {{{"name", "devmgr"}, {"context", {{"cluster", "devmgr"}, {"user", "devmgr"}}}}}},
      {"current-context", "devmgr"},
  };
  return fs::WriteOutputFile(path, config.dump(2) + "\n");
}

}  // namespace devmgr::apiserver
