#include "manager/endpoint.h"

#include <cstdint>
#include <utility>

#include "fmt/format.h"

namespace devmgr::manager {
namespace {

// Go's time.Time{wall, ext, loc} as %v prints it for an unexported field
// (no String method): {wall ext loc}. A zero time is {0 0 <nil>}. A time
// from time.Now() carries a monotonic reading: wall = hasMonotonic |
// seconds-since-1885 << 30 | nanoseconds, ext = monotonic nanoseconds.
std::string GoTimeStruct(absl::Time t) {
  if (t == absl::InfinitePast()) return "{0 0 <nil>}";
  static const absl::Time process_start = absl::Now();
  constexpr uint64_t kHasMonotonic = uint64_t{1} << 63;
  constexpr int64_t kUnixToWall = 2682288000;  // 1885-01-01 to 1970-01-01
  int64_t unix_ns = absl::ToUnixNanos(t);
  int64_t sec = unix_ns / 1000000000;
  int64_t nsec = unix_ns % 1000000000;
  uint64_t wall = kHasMonotonic | (static_cast<uint64_t>(sec + kUnixToWall) << 30) |
                  static_cast<uint64_t>(nsec);
  int64_t ext = absl::ToInt64Nanoseconds(t - process_start);
  static const int local_loc = 0;
  return fmt::format("{{{} {} {}}}", wall, ext, fmt::ptr(&local_loc));
}

std::string GoPointer(const void* p) {
  if (p == nullptr) return "<nil>";
  return fmt::format("{}", fmt::ptr(p));
}

}  // namespace

Endpoint::Endpoint(std::string resource_name, std::shared_ptr<PluginClient> client)
    : resource_name_(std::move(resource_name)), client_(std::move(client)) {}

std::shared_ptr<Endpoint> Endpoint::NewStopped(std::string resource_name, absl::Time stop_time) {
  auto e = std::make_shared<Endpoint>(std::move(resource_name), nullptr);
  e->SetStopTime(stop_time);
  return e;
}

std::string Endpoint::SocketPath() const { return client_ ? client_->SocketPath() : ""; }

bool Endpoint::IsStopped() const {
  absl::MutexLock l(&mu_);
  return stop_time_ != absl::InfinitePast();
}

bool Endpoint::StopGracePeriodExpired(absl::Time now) const {
  absl::MutexLock l(&mu_);
  return stop_time_ != absl::InfinitePast() && now - stop_time_ > kEndpointStopGracePeriod;
}

void Endpoint::SetStopTime(absl::Time t) {
  absl::MutexLock l(&mu_);
  stop_time_ = t;
}

absl::Time Endpoint::StopTime() const {
  absl::MutexLock l(&mu_);
  return stop_time_;
}

std::string Endpoint::StoppedErrorText() const {
  // &endpointImpl{mutex sync.Mutex, resourceName, api, stopTime, client}
  return fmt::format("endpoint &{{{{0 0}} {} {} {} {}}} has been stopped", resource_name_,
                     GoPointer(client_.get()), GoTimeStruct(StopTime()), GoPointer(client_.get()));
}

absl::StatusOr<v1beta1::AllocateResponse> Endpoint::Allocate(
    const std::vector<std::string>& devs) const {
  if (IsStopped() || client_ == nullptr) return absl::UnavailableError(StoppedErrorText());
  v1beta1::AllocateRequest req;
  auto* c = req.add_container_requests();
  for (const std::string& d : devs) c->add_devices_ids(d);
  return client_->Allocate(req);
}

absl::StatusOr<v1beta1::PreStartContainerResponse> Endpoint::PreStartContainer(
    const std::vector<std::string>& devs) const {
  if (IsStopped() || client_ == nullptr) return absl::UnavailableError(StoppedErrorText());
  v1beta1::PreStartContainerRequest req;
  for (const std::string& d : devs) req.add_devices_ids(d);
  return client_->PreStartContainer(req, kPreStartContainerTimeout);
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> Endpoint::GetPreferredAllocation(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) const {
  if (IsStopped() || client_ == nullptr) return absl::UnavailableError(StoppedErrorText());
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const std::string& d : available) c->add_available_deviceids(d);
  for (const std::string& d : must_include) c->add_must_include_deviceids(d);
  c->set_allocation_size(size);
  return client_->GetPreferredAllocation(req);
}

}  // namespace devmgr::manager
