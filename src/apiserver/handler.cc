#include "apiserver/handler.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "apiserver/protobuf_codec.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;

// How long a watch without timeoutSeconds lasts (the real server picks
// 30 to 60 minutes from --min-request-timeout).
constexpr absl::Duration kDefaultWatchTimeout = absl::Minutes(30);
// The annotation on the BOOKMARK that ends a watch-list's initial events.
constexpr char kInitialEventsEnd[] = "k8s.io/initial-events-end";

struct Route {
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;
  std::string subresource;
};

// /api/v1/... and /apis/<group>/<version>/..., then
// [namespaces/<ns>/]<resource>[/<name>[/<subresource>]].
std::optional<Route> ParsePath(const std::string& path) {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  std::string group;
  size_t i = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    i = 1;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    i = 2;
  } else {
    return std::nullopt;
  }
  const std::string version = parts[i++];
  Route route;
  if (parts.size() - i >= 3 && parts[i] == "namespaces") {
    route.ns = parts[i + 1];
    i += 2;
  }
  if (i >= parts.size() || parts.size() - i > 3) return std::nullopt;
  route.type = FindResourceType(group, version, parts[i]);
  if (!route.type || (!route.type->namespaced && !route.ns.empty())) return std::nullopt;
  if (i + 1 < parts.size()) route.name = parts[i + 1];
  if (i + 2 < parts.size()) route.subresource = parts[i + 2];
  if (!route.subresource.empty() && (route.subresource != "status" || !route.type->has_status)) {
    return std::nullopt;
  }
  return route;
}

std::string Param(const ApiRequest& r, const std::string& key) {
  auto it = r.params.find(key);
  return it == r.params.end() ? "" : it->second;
}

bool HasParam(const ApiRequest& r, const std::string& key) { return r.params.count(key) > 0; }

bool TrueParam(const std::string& v) { return v == "true" || v == "1"; }

ApiResponse JsonResponse(int status, const json& body) {
  ApiResponse r;
  r.status = status;
  // Go's encoding/json writes invalid UTF-8 (which a protobuf body can carry) as U+FFFD.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

ApiResponse ErrorResponse(const ApiError& e) { return JsonResponse(e.code, e.ToStatus()); }

// The media type of a Content-Type header, without parameters.
std::string MediaType(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  return t;
}

// A request body as the JSON model: JSON or protobuf by Content-Type.
ApiOr<json> DecodeBody(const ApiRequest& r) {
  const std::string media = MediaType(r.content_type);
  if (media == kProtobufContentType) {
    ApiOr<DecodedBody> decoded = DecodeProtobufBody(r.body);
    if (!decoded.ok()) return *decoded.error;
    return std::move(decoded.value.object);
  }
  if (!media.empty() && media != "application/json") {
    return UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/vnd.kubernetes.protobuf (devmgr)");
  }
  try {
    return json::parse(r.body);
  } catch (const json::exception& e) {
    return BadRequest(std::string("the request body is not valid JSON: ") + e.what());
  }
}

json ListJson(const ResourceType& type, Store::ListResult list) {
  json meta = {{"resourceVersion", std::to_string(list.resource_version)}};
  if (!list.continue_token.empty()) {
    meta["continue"] = list.continue_token;
    meta["remainingItemCount"] = list.remaining;
  }
  json items = json::array();
  for (json& item : list.items) {
    // Items of a typed list carry no kind or apiVersion of their own.
    item.erase("kind");
    item.erase("apiVersion");
    items.push_back(std::move(item));
  }
  return {{"kind", type.kind + "List"},
          {"apiVersion", type.ApiVersion()},
          {"metadata", meta},
          {"items", items}};
}

ResourceType ListOptionsKind() { return ResourceType{"meta.k8s.io", "v1", "", "ListOptions"}; }

// metainternalversion validation.ValidateListOptions with the WatchList
// feature on (its default since 1.32).
FieldErrors ValidateListOptions(const ApiRequest& r, bool watch) {
  FieldErrors errs;
  const std::string match = Param(r, "resourceVersionMatch");
  const bool send_initial = HasParam(r, "sendInitialEvents");
  if (watch) {
    if (send_initial && match != "NotOlderThan") {
      errs.push_back(
          Forbidden("resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
    }
    if (!match.empty()) {
      if (!send_initial) {
        errs.push_back(Forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
      }
      if (match != "NotOlderThan") {
        errs.push_back(NotSupported("resourceVersionMatch", BadValue(match), {"NotOlderThan"}));
      }
    }
    return errs;
  }
  if (!match.empty()) {
    if (Param(r, "resourceVersion").empty()) {
      errs.push_back(
          Forbidden("resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    }
    if (!Param(r, "continue").empty()) {
      errs.push_back(Forbidden("resourceVersionMatch",
                               "resourceVersionMatch is forbidden when continue is provided"));
    }
    if (match != "Exact" && match != "NotOlderThan") {
      errs.push_back(
          NotSupported("resourceVersionMatch", BadValue(match), {"Exact", "NotOlderThan", ""}));
    }
  }
  if (send_initial)
    errs.push_back(Forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  return errs;
}

ApiResponse Watch(Store& store, const Route& route, const FieldSelector& selector,
                  const ApiRequest& r, absl::Time now) {
  absl::Duration timeout = kDefaultWatchTimeout;
  if (int64_t secs = 0; HasParam(r, "timeoutSeconds") &&
                        absl::SimpleAtoi(Param(r, "timeoutSeconds"), &secs) && secs > 0) {
    timeout = absl::Seconds(secs);
  }
  const std::string rv = Param(r, "resourceVersion");
  const bool has_send_initial = HasParam(r, "sendInitialEvents");
  const bool send_initial = TrueParam(Param(r, "sendInitialEvents"));
  std::deque<std::string> initial;
  int64_t from = 0;
  // Watch-list, and a plain watch from "" or "0": the current state as ADDED
  // events first (the latter's "synthetic" events).
  if (send_initial || (!has_send_initial && (rv.empty() || rv == "0"))) {
    ApiOr<Store::ListResult> list = store.List(*route.type, route.ns, selector);
    if (!list.ok()) return ErrorResponse(*list.error);
    for (const json& item : list.value.items) initial.push_back(WatchEventLine("ADDED", item));
    from = list.value.resource_version;
    if (send_initial) {
      json bookmark = {{"kind", route.type->kind},
                       {"apiVersion", route.type->ApiVersion()},
                       {"metadata",
                        {{"resourceVersion", std::to_string(from)},
                         {"creationTimestamp", nullptr},
                         {"annotations", {{kInitialEventsEnd, "true"}}}}}};
      initial.push_back(WatchEventLine("BOOKMARK", bookmark));
    }
  } else if (rv.empty()) {
    from = store.ResourceVersion();
  } else if (!absl::SimpleAtoi(rv, &from) || from < 0) {
    return ErrorResponse(BadRequest("invalid resource version: " + rv));
  }
  ApiResponse res;
  res.watch = std::make_unique<WatchStream>(store, *route.type, route.ns, selector, from,
                                            std::move(initial), now + timeout);
  return res;
}

ApiResponse Collection(Store& store, const Route& route, const ApiRequest& r, absl::Time now) {
  ApiOr<FieldSelector> selector = FieldSelector::Parse(Param(r, "fieldSelector"), *route.type);
  if (!selector.ok()) return ErrorResponse(*selector.error);
  if (r.method != "GET" && route.type->namespaced && route.ns.empty()) {
    // Only list and watch are served across all namespaces.
    return ErrorResponse(MethodNotSupported(*route.type, r.method));
  }
  if (r.method == "DELETE") {
    Store::ListResult deleted;
    deleted.items = store.DeleteCollection(*route.type, route.ns, selector.value);
    deleted.resource_version = store.ResourceVersion();
    return JsonResponse(200, ListJson(*route.type, std::move(deleted)));
  }
  if (r.method == "POST") {
    ApiOr<json> body = DecodeBody(r);
    if (!body.ok()) return ErrorResponse(*body.error);
    ApiOr<json> created = store.Create(*route.type, route.ns, std::move(body.value));
    return created.ok() ? JsonResponse(201, created.value) : ErrorResponse(*created.error);
  }
  if (r.method != "GET") return ErrorResponse(MethodNotSupported(*route.type, r.method));
  const bool watch = TrueParam(Param(r, "watch"));
  if (FieldErrors errs = ValidateListOptions(r, watch); !errs.empty()) {
    return ErrorResponse(Invalid(ListOptionsKind(), "", errs));
  }
  if (watch) return Watch(store, route, selector.value, r, now);
  int64_t limit = 0;
  if (HasParam(r, "limit") && !absl::SimpleAtoi(Param(r, "limit"), &limit)) {
    return ErrorResponse(BadRequest("invalid limit: " + Param(r, "limit")));
  }
  ApiOr<Store::ListResult> list =
      store.List(*route.type, route.ns, selector.value, limit, Param(r, "continue"));
  if (!list.ok()) return ErrorResponse(*list.error);
  return JsonResponse(200, ListJson(*route.type, std::move(list.value)));
}

ApiResponse Delete(Store& store, const Route& route, const ApiRequest& r) {
  Store::Preconditions pre;
  if (!r.body.empty()) {
    ApiOr<json> options = DecodeBody(r);
    if (!options.ok()) return ErrorResponse(*options.error);
    const json& p = options.value.value("preconditions", json::object());
    if (p.contains("uid") && p["uid"].is_string()) pre.uid = p["uid"].get<std::string>();
    if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
      pre.resource_version = p["resourceVersion"].get<std::string>();
    }
  }
  ApiOr<json> deleted = store.Delete(*route.type, route.ns, route.name, pre);
  // The registry returns the deleted object (ReturnDeletedObject).
  return deleted.ok() ? JsonResponse(200, deleted.value) : ErrorResponse(*deleted.error);
}

ApiResponse Object(Store& store, const Route& route, const ApiRequest& r) {
  if (r.method == "GET") {
    ApiOr<json> got = store.Get(*route.type, route.ns, route.name);
    return got.ok() ? JsonResponse(200, got.value) : ErrorResponse(*got.error);
  }
  if (r.method == "PUT") {
    ApiOr<json> body = DecodeBody(r);
    if (!body.ok()) return ErrorResponse(*body.error);
    ApiOr<json> updated = store.Update(*route.type, route.ns, route.name, std::move(body.value),
                                       route.subresource == "status");
    return updated.ok() ? JsonResponse(200, updated.value) : ErrorResponse(*updated.error);
  }
  if (r.method == "DELETE" && route.subresource.empty()) return Delete(store, route, r);
  return ErrorResponse(MethodNotSupported(*route.type, r.method));
}

}  // namespace

std::string WatchEventLine(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump(-1, ' ', false,
                                                       json::error_handler_t::replace) +
         "\n";
}

WatchStream::WatchStream(const Store& store, const ResourceType& type, std::string ns,
                         FieldSelector selector, int64_t from, std::deque<std::string> initial,
                         absl::Time end)
    : store_(store),
      type_(type),
      ns_(std::move(ns)),
      selector_(std::move(selector)),
      end_(end),
      last_(from),
      pending_(std::move(initial)) {}

bool WatchStream::Poll(absl::Time wait_until, std::string* out) {
  if (!pending_.empty()) {
    for (std::string& line : pending_) *out += line;
    pending_.clear();
    return true;
  }
  if (ended_ || absl::Now() >= end_ || store_.IsShutdown()) {
    ended_ = true;
    return false;
  }
  ApiOr<std::vector<WatchEvent>> events = store_.EventsAfter(last_, std::min(wait_until, end_));
  if (!events.ok()) {
    *out += WatchEventLine("ERROR", events.error->ToStatus());
    ended_ = true;
    return false;
  }
  for (const WatchEvent& e : events.value) {
    last_ = e.resource_version;
    if (e.resource != &type_) continue;
    if (!ns_.empty() && e.object["metadata"].value("namespace", "") != ns_) continue;
    if (!selector_.Matches(e.object)) continue;
    *out += WatchEventLine(e.type, e.object);
  }
  return true;
}

ApiResponse Handle(Store& store, const ApiRequest& request, absl::Time now) {
  std::optional<Route> route = ParsePath(request.path);
  if (!route) {
    ApiResponse r;
    r.status = 404;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "404 page not found\n";
    return r;
  }
  if (route->name.empty()) return Collection(store, *route, request, now);
  return Object(store, *route, request);
}

}  // namespace devmgr::apiserver
