#include "conformance/test_kubelet.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/fs.h"
#include "common/go_format.h"
#include "common/logging.h"
#include "common/resource_name.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "metrics/kubelet_metrics.h"
#include "transport/go_path.h"

namespace devmgr::conformance {
namespace {

constexpr char kKubeletSocket[] = "kubelet.sock";

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// os.MkdirAll(path, 0750); errors are FailedPrecondition.
absl::Status MkdirAll(const std::string& path) {
  absl::Status s = fs::MkdirAll(*fs::Default(), path, 0750);
  return s.ok() ? s : absl::FailedPreconditionError(s.message());
}

}  // namespace

class TestKubelet::Service final : public v1beta1::Registration::Service {
 public:
  explicit Service(TestKubelet* k) : k_(k) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    k_->HandleRegister(*req);
    return grpc::Status::OK;
  }

 private:
  TestKubelet* const k_;
};

std::vector<std::string> FindPluginSockets(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name == kKubeletSocket) continue;
      const std::string path = dir + "/" + name;
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        found.emplace_back(
            static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, path);
      }
    }
    ::closedir(d);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

absl::Status WipeDirectory(const std::string& dir) {
  if (absl::Status s = MkdirAll(dir); !s.ok()) return s;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return absl::FailedPreconditionError(fmt::format("open {}: {}", dir, std::strerror(errno)));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const std::string& name : names) {
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::FailedPreconditionError(
          fmt::format("remove {}: {}", path, std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

TestKubelet::TestKubelet(TestKubeletOptions opts)
    : opts_(std::move(opts)),
      socket_path_(opts_.dir + "/" + kKubeletSocket),
      service_(std::make_unique<Service>(this)) {}

TestKubelet::~TestKubelet() { Stop(); }

absl::Status TestKubelet::Start() {
  if (absl::Status s = WipeDirectory(opts_.dir); !s.ok()) return s;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::FailedPreconditionError(fmt::format("listen unix {}: cannot serve", socket_path_));
  }
  absl::MutexLock lock(&mu_);
  started_at_ = MonoNow();
  return absl::OkStatus();
}

void TestKubelet::Stop() {
  std::list<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& c : connections_) {
      if (c->stream) c->stream->Cancel();
    }
  }
  if (server_) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    server_->Wait();
    server_.reset();
    ::unlink(socket_path_.c_str());
  }
  {
    absl::MutexLock lock(&mu_);
    threads.swap(late_threads_);
  }
  for (auto& t : threads) t.join();
  absl::MutexLock lock(&mu_);
  for (auto& c : connections_) {
    // Streams and channels go while the plugin still serves: closing a
    // channel whose peer is gone can block for seconds.
    c->stream.reset();
    c->client.reset();
  }
}

MonoTime TestKubelet::started_at() const {
  absl::MutexLock lock(&mu_);
  return started_at_;
}

void TestKubelet::HandleRegister(const v1beta1::RegisterRequest& req) {
  if (opts_.metrics != nullptr) opts_.metrics->CountRegistration(req.resource_name());
  if (!opts_.resource.empty() && req.resource_name() != opts_.resource) return;
  RegistrationRecord r;
  r.at = MonoNow();
  r.request = req;
  if (req.version() != "v1beta1") {
    r.kubelet_error =
        fmt::format("requested API version {} is not supported by kubelet. Supported version is {}",
                    GoQuote(req.version()), GoQuoteList({"v1beta1"}));
  } else if (!IsExtendedResourceName(req.resource_name())) {
    r.kubelet_error = fmt::format("the ResourceName {} is invalid", GoQuote(req.resource_name()));
  }
  r.joined_path = transport::GoPathJoin({opts_.dir, req.endpoint()});
  r.endpoint_is_socket = transport::IsPlainSocketName(req.endpoint()) && IsSocket(r.joined_path);
  size_t index;
  {
    // Recorded at once: the registration's time is its arrival.
    absl::MutexLock lock(&mu_);
    index = registrations_.size();
    registrations_.push_back(r);
  }
  // The dial-back, as the kubelet does it inside Register.
  const MonoTime deadline = MonoDeadline(opts_.serve_wait);
  std::string path;
  while (true) {
    if (r.endpoint_is_socket || IsSocket(r.joined_path)) {
      if (SocketAccepts(r.joined_path)) {
        path = r.joined_path;
        break;
      }
    } else {
      for (const std::string& s : FindPluginSockets(opts_.dir)) {
        if (SocketAccepts(s)) {
          path = s;
          break;
        }
      }
      if (!path.empty()) break;
    }
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    if (MonoNow() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(20));  // polling a socket file: no event to await
  }
  {
    absl::MutexLock lock(&mu_);
    registrations_[index].served_during_register = !path.empty();
    registrations_[index].socket_path = path;
    if (stopping_) return;
    if (path.empty()) {
      // Not serving yet: keep trying after Register has returned.
      late_threads_.emplace_back([this, index] { Connect("", index); });
      return;
    }
  }
  Connect(path, index);
}

void TestKubelet::Connect(std::string socket_path, size_t index) {
  if (socket_path.empty()) {
    const MonoTime deadline = MonoDeadline(opts_.late_connect);
    while (socket_path.empty()) {
      for (const std::string& s : FindPluginSockets(opts_.dir)) {
        if (SocketAccepts(s)) {
          socket_path = s;
          break;
        }
      }
      if (!socket_path.empty()) break;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      if (MonoNow() >= deadline) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    absl::MutexLock lock(&mu_);
    // Record where the late handshake went.
    registrations_[index].socket_path = socket_path;
  }
  auto conn = std::make_unique<KubeletConnection>();
  conn->socket_path = socket_path;
  conn->client = std::make_shared<ProbeClient>(socket_path);
  if (conn->client->Dial(opts_.serve_wait).ok()) {
    conn->options_called = true;
    conn->options = conn->client->GetDevicePluginOptions(opts_.rpc_timeout);
  }
  // Lenient: ListAndWatch is started even when the options call failed.
  conn->stream = conn->client->ListAndWatch();
  absl::MutexLock lock(&mu_);
  if (stopping_) conn->stream->Cancel();
  connections_.push_back(std::move(conn));
}

bool TestKubelet::WaitForRegistrations(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return registrations_.size() >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

std::optional<size_t> TestKubelet::WaitForRegistrationSince(MonoTime since,
                                                            absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  std::optional<size_t> found;
  auto cond = [this, since, &found]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    for (size_t i = 0; i < registrations_.size(); ++i) {
      if (registrations_[i].at >= since) {
        found = i;
        return true;
      }
    }
    return false;
  };
  mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
  return found;
}

std::vector<RegistrationRecord> TestKubelet::Registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

bool TestKubelet::WaitForConnections(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return connections_.size() >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

size_t TestKubelet::ConnectionCount() const {
  absl::MutexLock lock(&mu_);
  return connections_.size();
}

KubeletConnection* TestKubelet::LatestConnection() const {
  absl::MutexLock lock(&mu_);
  return connections_.empty() ? nullptr : connections_.back().get();
}

}  // namespace devmgr::conformance
