// An API request's failure as the API server reports it: a metav1.Status
// with an HTTP code, a reason, a message and details. The constructors
// reproduce k8s.io/apimachinery pkg/api/errors (messages, reasons, codes,
// details) so that a client's IsNotFound/IsConflict/... and its logs see
// what a real cluster sends.
#ifndef DEVMGR_APISERVER_API_ERROR_H_
#define DEVMGR_APISERVER_API_ERROR_H_

#include <optional>
#include <string>
#include <utility>

#include "apiserver/field_errors.h"
#include "apiserver/resource_type.h"
#include "nlohmann/json.hpp"

namespace devmgr::apiserver {

struct ApiError {
  int code = 500;
  std::string reason;  // metav1.StatusReason, e.g. "NotFound"
  std::string message;
  nlohmann::json details = nlohmann::json::object();  // metav1.StatusDetails, empty fields left out

  // The metav1.Status object (kind Status, apiVersion v1, status Failure).
  nlohmann::json ToStatus() const;
};

// A value or the API error that stands for it.
template <typename T>
struct ApiOr {
  ApiOr(T v) : value(std::move(v)) {}         // NOLINT: implicit, like StatusOr
  ApiOr(ApiError e) : error(std::move(e)) {}  // NOLINT
  bool ok() const { return !error.has_value(); }
  T value{};
  std::optional<ApiError> error;
};

// `<resource> "<name>" not found` (404 NotFound).
ApiError NotFound(const ResourceType& type, const std::string& name);
// `<resource> "<name>" already exists` (409 AlreadyExists).
ApiError AlreadyExists(const ResourceType& type, const std::string& name);
// `Operation cannot be fulfilled on <resource> "<name>": <why>` (409 Conflict).
ApiError Conflict(const ResourceType& type, const std::string& name, const std::string& why);
// The why of a stale resourceVersion on update.
inline constexpr char kOptimisticLockMessage[] =
    "the object has been modified; please apply your changes to the latest version and try again";
// `<Kind.group> "<name>" is invalid: <errors>` (422 Invalid, one cause per error).
ApiError Invalid(const ResourceType& type, const std::string& name, const FieldErrors& errors);
// 400 BadRequest with `message`.
ApiError BadRequest(std::string message);
// 410 Expired ("too old resource version: X (Y)").
ApiError Expired(std::string message);
// 405 MethodNotAllowed: `<verb> is not supported on resources of kind "<resource>"`.
ApiError MethodNotSupported(const ResourceType& type, const std::string& verb);
// 415 UnsupportedMediaType.
ApiError UnsupportedMediaType(std::string message);
// 500 InternalError: `Internal error occurred: <message>`.
ApiError InternalError(const std::string& message);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_API_ERROR_H_
