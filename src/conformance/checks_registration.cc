// registration.* and options.*: what the plugin sends in Register and how
// it answers the kubelet's dial-back (devicemanager/plugin/v1beta1 server.go
// and handler.go, IsExtendedResourceName).

#include "common/go_format.h"
#include "common/resource_name.h"
#include "conformance/checks.h"
#include "conformance/session.h"
#include "fmt/format.h"
#include "transport/go_path.h"

namespace devmgr::conformance {
namespace {

Outcome NoRegistration(Session& s) {
  return Outcome::Skip(s.NoRegistrationReason() + " (see registration.timely)");
}

Outcome Version(Session& s) {
  auto r = s.FirstRegistration();
  if (!r) return NoRegistration(s);
  const std::string& v = r->request.version();
  if (v == "v1beta1") return Outcome::Pass("version \"v1beta1\"");
  return Outcome::Fail(
             fmt::format("RegisterRequest.version is {}; a kubelet refuses the registration: "
                         "requested API version {} is not supported by kubelet. Supported "
                         "version is [\"v1beta1\"]",
                         GoQuote(v), GoQuote(v)))
      .Evidence("RegisterRequest: " + r->request.ShortDebugString());
}

Outcome ResourceName(Session& s) {
  auto r = s.FirstRegistration();
  if (!r) return NoRegistration(s);
  const std::string& n = r->request.resource_name();
  if (IsExtendedResourceName(n)) return Outcome::Pass(fmt::format("resource {}", GoQuote(n)));
  return Outcome::Fail(fmt::format("{} is not an extended resource name; a kubelet refuses the "
                                   "registration: the ResourceName {} is invalid",
                                   GoQuote(n), GoQuote(n)))
      .Evidence(
          "an extended resource name has exactly one '/', a lowercase DNS subdomain "
          "before it, no \"kubernetes.io/\", and a name of at most 63 characters")
      .Evidence("RegisterRequest: " + r->request.ShortDebugString());
}

Outcome Endpoint(Session& s) {
  auto r = s.FirstRegistration();
  if (!r) return NoRegistration(s);
  const std::string& e = r->request.endpoint();
  const std::string joined = transport::GoPathJoin({s.dir(), e});
  if (!transport::IsPlainSocketName(e)) {
    return Outcome::Fail(fmt::format("endpoint {} is not a plain file name inside the device "
                                     "plugin directory; a kubelet joins it with the directory "
                                     "and dials {}",
                                     GoQuote(e), joined))
        .Evidence(fmt::format("the plugin's socket is {}",
                              s.SocketPath().empty() ? "not found" : s.SocketPath()));
  }
  // Judged as the kubelet saw it: it dials the endpoint inside Register, so
  // a socket there at the time, or one that accepted the tester's dial at
  // that path then or later (registration.serves-first judges the timing),
  // passes; a socket removed since (the plugin restarting) does not fail it.
  if (!r->endpoint_is_socket && r->socket_path != joined) {
    return Outcome::Fail(
        fmt::format("endpoint {}: {} is not a socket; a kubelet fails the "
                    "registration with \"failed to dial device plugin: context "
                    "deadline exceeded\"",
                    GoQuote(e), joined));
  }
  return Outcome::Pass(fmt::format("endpoint {}", GoQuote(e)));
}

Outcome ServesFirst(Session& s) {
  auto r = s.FirstRegistration();
  if (!r) return NoRegistration(s);
  if (r->served_during_register) return Outcome::Pass("the socket answered during Register");
  Outcome o = Outcome::Fail(fmt::format(
      "the plugin's socket did not accept a connection while Register was pending (waited {}); "
      "a kubelet dials back inside Register and fails it with \"failed to dial device plugin: "
      "context deadline exceeded\"",
      Dur(s.t().serve_wait)));
  if (!r->socket_path.empty()) o.Evidence("it served afterwards on " + r->socket_path);
  return o;
}

Outcome Timely(Session& s) {
  auto r = s.FirstRegistration();
  if (!r) {
    int code = 0;
    Outcome o = Outcome::Fail(
        s.target().Exited(&code) && code != 0
            ? s.NoRegistrationReason() + "; the resource never appears on the node"
            : fmt::format("no Register call on kubelet.sock within {} of the plugin's start; the "
                          "resource never appears on the node",
                          Dur(s.t().register_within)));
    for (auto& l : s.PluginOutput(5)) o.Evidence(l);
    return o;
  }
  const absl::Duration took = MonoSub(r->at, s.plugin_started_at());
  Outcome o = took <= s.t().register_within
                  ? Outcome::Pass(fmt::format("registered {} after start (window {})", Dur(took),
                                              Dur(s.t().register_within)))
                  : Outcome::Fail(fmt::format("registered {} after start, over the {} limit",
                                              Dur(took), Dur(s.t().register_within)));
  o.figures.push_back({"time to Register", Dur(took)});
  if (o.status == Status::kPass) {
    o.Companion(PromptCompanion(s, "registered", took, s.t().register_within));
  }
  return o;
}

Outcome OptionsAnswers(Session& s) {
  CallResult<v1beta1::DevicePluginOptions> res;
  std::string when = "during Register";
  KubeletConnection* c = s.kubelet() != nullptr ? s.kubelet()->LatestConnection() : nullptr;
  if (c != nullptr && c->options_called) {
    res = c->options;
  } else {
    ProbeClient* client = s.Client();
    if (client == nullptr) return Outcome::Skip("the plugin's socket was not found");
    res = client->GetDevicePluginOptions(s.t().rpc);
    when = "when called by the tester";
  }
  if (!res.ok()) {
    return Outcome::Fail(fmt::format("GetDevicePluginOptions failed {}: {}; a kubelet fails the "
                                     "registration with \"failed to get device plugin options: "
                                     "{}\"",
                                     when, res.StatusText(), res.StatusText()))
        .Evidence(fmt::format("latency {}", Dur(res.latency)));
  }
  Outcome o = Outcome::Pass(fmt::format("{} in {}", res.resp.ShortDebugString(), Dur(res.latency)));
  if (o.message.rfind(" in ", 0) == 0) o.message = "all options false" + o.message;
  return o;
}

Outcome OptionsBacked(Session& s) {
  ProbeClient* client = s.Client();
  if (client == nullptr) return Outcome::Skip("the plugin's socket was not found");
  std::optional<v1beta1::DevicePluginOptions> opts = s.Options();
  if (!opts) {
    auto r = client->GetDevicePluginOptions(s.t().rpc);
    if (!r.ok()) return Outcome::Skip("GetDevicePluginOptions fails (see options.answers)");
    opts = r.resp;
  }
  if (!opts->get_preferred_allocation_available() && !opts->pre_start_required()) {
    return Outcome::Pass("no optional RPC advertised");
  }
  const std::vector<std::string> ids = s.UsableIds();
  Outcome o = Outcome::Pass();
  std::vector<std::string> failed;
  if (opts->get_preferred_allocation_available()) {
    v1beta1::PreferredAllocationRequest req;
    auto* c = req.add_container_requests();
    for (size_t i = 0; i < ids.size() && i < 4; ++i) c->add_available_deviceids(ids[i]);
    c->set_allocation_size(ids.empty() ? 0 : 1);
    auto r = client->GetPreferredAllocation(req, s.t().rpc);
    o.Evidence("GetPreferredAllocation: " + r.StatusText());
    if (r.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      failed.push_back("GetPreferredAllocation");
    }
  }
  if (opts->pre_start_required()) {
    v1beta1::PreStartContainerRequest req;
    if (!ids.empty()) req.add_devices_ids(ids[0]);
    auto r = client->PreStartContainer(req, s.t().rpc);
    o.Evidence("PreStartContainer: " + r.StatusText());
    if (r.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      failed.push_back("PreStartContainer");
    }
  }
  if (!failed.empty()) {
    o.status = Status::kFail;
    o.message = fmt::format(
        "advertised in DevicePluginOptions but not implemented: {}; the "
        "kubelet calls what is advertised and fails the pod's admission or "
        "start",
        GoList(failed));
  } else {
    o.message = "advertised RPCs are implemented";
  }
  return o;
}

}  // namespace

std::vector<CheckInfo> RegistrationChecks() {
  return {
      {"registration.version",
       "Register sends version \"v1beta1\"",
       Level::kMust,
       {},
       kNeedRegistration,
       Version},
      {"registration.resource-name",
       "Register sends a valid extended resource name",
       Level::kMust,
       {},
       kNeedRegistration,
       ResourceName},
      {"registration.endpoint",
       "Register's endpoint is a plain socket file name inside the device-plugin directory",
       Level::kMust,
       {},
       kNeedRegistration,
       Endpoint},
      {"registration.serves-first",
       "The plugin serves its socket before it calls Register",
       Level::kMust,
       {},
       kNeedRegistration,
       ServesFirst},
      {"registration.timely",
       "The plugin registers soon after it starts",
       Level::kMust,
       {},
       kNeedRegistration,
       Timely,
       CompanionInfo{"registration.prompt", "The plugin registers promptly after it starts",
                     Level::kShould}},
      {"options.answers",
       "GetDevicePluginOptions answers with a message",
       Level::kMust,
       {},
       kNeedNothing,
       OptionsAnswers},
      {"options.backed",
       "Advertised optional RPCs are implemented",
       Level::kMust,
       {},
       kNeedNothing,
       OptionsBacked},
  };
}

Outcome PromptCompanion(const Session& s, const std::string& what, absl::Duration took,
                        absl::Duration must_window) {
  if (took <= s.t().prompt_within) {
    return Outcome::Pass(
        fmt::format("{} after {}, within {}", what, Dur(took), Dur(s.t().prompt_within)));
  }
  Outcome o = Outcome::Fail(fmt::format(
      "{} after {}; within the e2e window of {}, slower than the SHOULD of {}: until then the "
      "node shows the resource at 0 and pods that need it are not admitted",
      what, Dur(took), Dur(must_window), Dur(s.t().prompt_within)));
  o.figures.push_back({what + " after", Dur(took)});
  return o;
}

std::string Dur(absl::Duration d) {
  if (d < absl::Milliseconds(1)) return absl::FormatDuration(absl::Trunc(d, absl::Microseconds(1)));
  if (d < absl::Seconds(1)) return absl::FormatDuration(absl::Trunc(d, absl::Microseconds(100)));
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(10)));
}

}  // namespace devmgr::conformance
