#include "draplugin/api_client.h"

#include "fmt/format.h"
#include "httplib.h"

namespace devmgr::draplugin {
namespace {

using nlohmann::json;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
constexpr time_t kTimeoutSeconds = 10;

httplib::Client NewClient(const std::string& server) {
  httplib::Client c(server);
  c.set_connection_timeout(kTimeoutSeconds, 0);
  c.set_read_timeout(kTimeoutSeconds, 0);
  c.set_write_timeout(kTimeoutSeconds, 0);
  return c;
}

// The message of a metav1.Status body, else the body itself.
std::string StatusMessage(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return body;
}

// Accept: application/json, and the User-Agent when there is one.
httplib::Headers JsonHeaders(const std::string& user_agent) {
  httplib::Headers h = {{"Accept", "application/json"}};
  if (!user_agent.empty()) h.emplace("User-Agent", user_agent);
  return h;
}

// The JSON body of a 2xx answer, or the error of `res`.
absl::StatusOr<json> Decode(const httplib::Result& res, const std::string& what) {
  if (!res) {
    return absl::UnavailableError(fmt::format("{}: {}", what, httplib::to_string(res.error())));
  }
  if (res->status == 404) {
    return absl::NotFoundError(fmt::format("{}: {}", what, StatusMessage(res->body)));
  }
  if (res->status == 422) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", what, StatusMessage(res->body)));
  }
  if (res->status < 200 || res->status > 299) {
    return absl::InternalError(
        fmt::format("{}: HTTP {}: {}", what, res->status, StatusMessage(res->body)));
  }
  json j = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InternalError(what + ": the answer is not JSON");
  return j;
}

}  // namespace

absl::StatusOr<json> ApiClient::GetClaim(const std::string& ns, const std::string& name) const {
  const std::string path =
      fmt::format("/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}", ns, name);
  httplib::Client c = NewClient(server_);
  return Decode(c.Get(path, JsonHeaders(user_agent_)), "GET " + path);
}

absl::StatusOr<std::vector<json>> ApiClient::ListSlices(const std::string& driver,
                                                        const std::string& node) const {
  const std::string path = std::string(kSlices) + "?fieldSelector=" +
                           httplib::detail::encode_query_param(
                               fmt::format("spec.driver={},spec.nodeName={}", driver, node));
  httplib::Client c = NewClient(server_);
  absl::StatusOr<json> list = Decode(c.Get(path, JsonHeaders(user_agent_)), "GET " + path);
  if (!list.ok()) return list.status();
  std::vector<json> items;
  if (list->contains("items") && (*list)["items"].is_array()) {
    for (const json& item : (*list)["items"]) items.push_back(item);
  }
  return items;
}

absl::Status ApiClient::DeleteSlice(const std::string& name) const {
  const std::string path = std::string(kSlices) + "/" + name;
  httplib::Client c = NewClient(server_);
  absl::StatusOr<json> res = Decode(c.Delete(path, JsonHeaders(user_agent_)), "DELETE " + path);
  if (absl::IsNotFound(res.status())) return absl::OkStatus();
  return res.status();
}

absl::StatusOr<json> ApiClient::CreateSlice(const json& slice) const {
  httplib::Client c = NewClient(server_);
  return Decode(c.Post(kSlices, JsonHeaders(user_agent_), slice.dump(), "application/json"),
                std::string("POST ") + kSlices);
}

}  // namespace devmgr::draplugin
