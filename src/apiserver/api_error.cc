#include "apiserver/api_error.h"

#include "common/go_format.h"

namespace devmgr::apiserver {
namespace {

// StatusDetails as NewNotFound and its siblings fill it: the group (left out
// when empty, as omitempty does), the resource in `kind`, and the name.
nlohmann::json ResourceDetails(const ResourceType& type, const std::string& name) {
  nlohmann::json d = nlohmann::json::object();
  if (!name.empty()) d["name"] = name;
  if (!type.group.empty()) d["group"] = type.group;
  d["kind"] = type.resource;
  return d;
}

}  // namespace

nlohmann::json ApiError::ToStatus() const {
  nlohmann::json s = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  if (!details.empty()) s["details"] = details;
  if (reason.empty()) s.erase("reason");
  return s;
}

ApiError NotFound(const ResourceType& type, const std::string& name) {
  return ApiError{404, "NotFound", type.QualifiedResource() + " " + GoQuote(name) + " not found",
                  ResourceDetails(type, name)};
}

ApiError AlreadyExists(const ResourceType& type, const std::string& name) {
  return ApiError{409, "AlreadyExists",
                  type.QualifiedResource() + " " + GoQuote(name) + " already exists",
                  ResourceDetails(type, name)};
}

ApiError Conflict(const ResourceType& type, const std::string& name, const std::string& why) {
  return ApiError{409, "Conflict",
                  "Operation cannot be fulfilled on " + type.QualifiedResource() + " " +
                      GoQuote(name) + ": " + why,
                  ResourceDetails(type, name)};
}

ApiError Invalid(const ResourceType& type, const std::string& name, const FieldErrors& errors) {
  nlohmann::json causes = nlohmann::json::array();
  for (const FieldError& e : errors) {
    causes.push_back({{"reason", e.type}, {"message", e.body}, {"field", e.field}});
  }
  nlohmann::json d = nlohmann::json::object();
  if (!name.empty()) d["name"] = name;
  if (!type.group.empty()) d["group"] = type.group;
  d["kind"] = type.kind;
  if (!causes.empty()) d["causes"] = causes;
  std::string message = type.QualifiedKind() + " " + GoQuote(name) + " is invalid";
  if (!errors.empty()) message += ": " + AggregateMessage(errors);
  return ApiError{422, "Invalid", message, d};
}

ApiError BadRequest(std::string message) {
  return ApiError{400, "BadRequest", std::move(message), nlohmann::json::object()};
}

ApiError Expired(std::string message) {
  return ApiError{410, "Expired", std::move(message), nlohmann::json::object()};
}

ApiError MethodNotSupported(const ResourceType& type, const std::string& verb) {
  return ApiError{
      405, "MethodNotAllowed",
      verb + " is not supported on resources of kind " + GoQuote(type.QualifiedResource()),
      ResourceDetails(type, "")};
}

ApiError UnsupportedMediaType(std::string message) {
  return ApiError{415, "UnsupportedMediaType", std::move(message), nlohmann::json::object()};
}

ApiError InternalError(const std::string& message) {
  nlohmann::json d = {{"causes", nlohmann::json::array({{{"message", message}}})}};
  return ApiError{500, "InternalError", "Internal error occurred: " + message, d};
}

}  // namespace devmgr::apiserver
