#include "plugin/device_plugin_service.h"

#include <algorithm>
#include <random>

#include "common/logging.h"
#include "fmt/format.h"
#include "plugin/responses.h"

namespace devmgr::plugin {
namespace {

nlohmann::ordered_json Strings(const google::protobuf::RepeatedPtrField<std::string>& v) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const std::string& s : v) a.push_back(s);
  return a;
}

void Log(PluginCore* core, const char* method, nlohmann::ordered_json args) {
  CallRecord r;
  r.time = absl::Now();
  r.kind = "received";
  r.method = method;
  r.args = std::move(args);
  core->call_log().Add(std::move(r));
  DM_VINFO(2, "Received RPC", {"method", method});
}

// wrong_count: drop responses, or repeat the first one (or an empty one).
template <typename T>
void ResizeResponses(google::protobuf::RepeatedPtrField<T>* rs, int n) {
  while (rs->size() > n) rs->RemoveLast();
  const T first = rs->empty() ? T() : rs->Get(0);
  while (rs->size() < n) *rs->Add() = first;
}

const grpc::Status kStopping(grpc::StatusCode::CANCELLED, "sample plugin is stopping");

}  // namespace

grpc::Status ToGrpcStatus(const RpcError& e) {
  return grpc::Status(static_cast<grpc::StatusCode>(e.code), e.message);
}

void DevicePluginService::BeginShutdown() {
  shutting_down_ = true;
  core_->devices().WakeAll();
}

bool DevicePluginService::Interrupted(grpc::ServerContext* ctx) const {
  return shutting_down_.load() || core_->stopping() || ctx->IsCancelled();
}

bool DevicePluginService::ApplyBlockingFaults(const FaultConfig* f, grpc::ServerContext* ctx,
                                              grpc::Status* status) {
  if (f == nullptr) return false;
  auto interrupted = [&] { return Interrupted(ctx); };
  if (f->exit_code) {
    core_->RequestExit(*f->exit_code);
    // Only reached in-process: behave like a dead process that never answers.
    core_->devices().SleepUntil(absl::InfiniteFuture(), interrupted);
    *status = kStopping;
    return true;
  }
  if (f->delay > absl::ZeroDuration() &&
      !core_->devices().SleepUntil(absl::Now() + f->delay, interrupted)) {
    *status = kStopping;
    return true;
  }
  if (f->hang) {
    core_->devices().SleepUntil(absl::InfiniteFuture(), interrupted);
    *status = kStopping;
    return true;
  }
  return false;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext* ctx,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* resp) {
  Log(core_, "GetDevicePluginOptions", nlohmann::ordered_json::object());
  const FaultConfig* f = core_->CountCall(Rpc::kGetDevicePluginOptions);
  grpc::Status status;
  if (ApplyBlockingFaults(f, ctx, &status)) return status;
  if (f != nullptr && f->error) return ToGrpcStatus(*f->error);
  if (f != nullptr && f->empty) return grpc::Status::OK;
  resp->set_pre_start_required(core_->config().pre_start_required);
  resp->set_get_preferred_allocation_available(core_->config().get_preferred_allocation_available);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* ctx, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  Log(core_, "ListAndWatch", nlohmann::ordered_json::object());
  const FaultConfig* f = core_->CountCall(Rpc::kListAndWatch);
  grpc::Status status;
  if (ApplyBlockingFaults(f, ctx, &status)) return status;
  // -1: the stream never ends by itself.
  const int end_after = f != nullptr && f->end_stream_after ? *f->end_stream_after : -1;
  if (f != nullptr && f->error && end_after < 0) return ToGrpcStatus(*f->error);
  const grpc::Status end_status =
      f != nullptr && f->error ? ToGrpcStatus(*f->error) : grpc::Status::OK;
  if (end_after == 0) return end_status;

  const ListAndWatchConfig& lw = core_->config().list_and_watch;
  std::mt19937_64 rng(lw.seed != 0 ? lw.seed : std::random_device{}());
  const uint64_t epoch = core_->stream_epoch();
  auto interrupted = [&] { return Interrupted(ctx) || core_->stream_epoch() != epoch; };
  int sends = 0;
  uint64_t seen = 0;
  while (true) {
    v1beta1::ListAndWatchResponse resp;
    seen = core_->devices().Fill(&resp);
    if (f != nullptr && f->empty) resp.clear_devices();
    if (lw.shuffle) {
      auto* devs = resp.mutable_devices();
      for (int i = devs->size() - 1; i > 0; --i) {
        std::uniform_int_distribution<int> pick(0, i);
        devs->SwapElements(i, pick(rng));
      }
    }
    DM_VINFO(2, "ListAndWatch sending devices", {"resource", core_->config().resource},
             {"count", resp.devices_size()});
    if (!writer->Write(resp)) {
      DM_VINFO(2, "ListAndWatch stream closed by the client");
      return grpc::Status::OK;
    }
    ++sends;
    if (end_after > 0 && sends >= end_after) return end_status;
    const absl::Time deadline = lw.resend_interval > absl::ZeroDuration()
                                    ? absl::Now() + lw.resend_interval
                                    : absl::InfiniteFuture();
    core_->devices().WaitForChange(seen, deadline, interrupted);
    if (interrupted()) return grpc::Status::OK;
  }
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext* ctx, const v1beta1::PreferredAllocationRequest* req,
    v1beta1::PreferredAllocationResponse* resp) {
  nlohmann::ordered_json reqs = nlohmann::ordered_json::array();
  for (const auto& c : req->container_requests()) {
    reqs.push_back({{"available_deviceIDs", Strings(c.available_deviceids())},
                    {"must_include_deviceIDs", Strings(c.must_include_deviceids())},
                    {"allocation_size", c.allocation_size()}});
  }
  Log(core_, "GetPreferredAllocation", {{"container_requests", reqs}});
  const FaultConfig* f = core_->CountCall(Rpc::kGetPreferredAllocation);
  grpc::Status status;
  if (ApplyBlockingFaults(f, ctx, &status)) return status;
  if (f != nullptr && f->error) return ToGrpcStatus(*f->error);
  if (f != nullptr && f->empty) return grpc::Status::OK;
  for (const auto& c : req->container_requests()) {
    const std::vector<std::string> ids = PreferredDevices(core_->config().preferred_allocation, c);
    auto* out = resp->add_container_responses();
    for (const std::string& id : ids) out->add_deviceids(id);
  }
  if (f != nullptr && f->wrong_count) {
    ResizeResponses(resp->mutable_container_responses(), *f->wrong_count);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext* ctx,
                                           const v1beta1::AllocateRequest* req,
                                           v1beta1::AllocateResponse* resp) {
  nlohmann::ordered_json reqs = nlohmann::ordered_json::array();
  for (const auto& c : req->container_requests()) {
    reqs.push_back({{"devices_ids", Strings(c.devices_ids())}});
  }
  Log(core_, "Allocate", {{"container_requests", reqs}});
  const FaultConfig* f = core_->CountCall(Rpc::kAllocate);
  grpc::Status status;
  if (ApplyBlockingFaults(f, ctx, &status)) return status;
  if (f != nullptr && f->grow_on_allocate) {
    DeviceConfig d;
    d.id = core_->NextGrownId();
    core_->devices().AddDevice(d);
  }
  if (f != nullptr && f->error) return ToGrpcStatus(*f->error);
  if (f != nullptr && f->empty) return grpc::Status::OK;
  const Config& config = core_->config();
  for (const auto& c : req->container_requests()) {
    for (const std::string& id : c.devices_ids()) {
      const std::optional<std::string> health = core_->devices().HealthOf(id);
      if (!health && config.allocate.reject_unknown_devices) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            fmt::format("invalid allocation request for \"{}\": unknown device: {}",
                                        config.resource, id));
      }
      if (health && *health != kHealthy && config.allocate.reject_unhealthy_devices) {
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            fmt::format("invalid allocation request for \"{}\": unhealthy device: {}",
                        config.resource, id));
      }
    }
    std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
    *resp->add_container_responses() = BuildContainerAllocateResponse(config, ids);
  }
  if (f != nullptr && f->wrong_count) {
    ResizeResponses(resp->mutable_container_responses(), *f->wrong_count);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext* ctx,
                                                    const v1beta1::PreStartContainerRequest* req,
                                                    v1beta1::PreStartContainerResponse*) {
  Log(core_, "PreStartContainer", {{"devices_ids", Strings(req->devices_ids())}});
  const FaultConfig* f = core_->CountCall(Rpc::kPreStartContainer);
  grpc::Status status;
  if (ApplyBlockingFaults(f, ctx, &status)) return status;
  if (f != nullptr && f->error) return ToGrpcStatus(*f->error);
  return grpc::Status::OK;
}

}  // namespace devmgr::plugin
