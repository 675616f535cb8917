#include "apiserver/field_errors.h"

#include <set>
#include <utility>

#include "common/go_format.h"

namespace devmgr::apiserver {
namespace {

FieldError Make(std::string type, std::string field, std::string body, std::string_view detail) {
  if (!detail.empty()) {
    body += ": ";
    body += detail;
  }
  return FieldError{std::move(type), std::move(field), std::move(body)};
}

}  // namespace

std::string BadValue(std::string_view s) { return GoQuote(s); }
std::string BadValue(int64_t v) { return std::to_string(v); }
std::string BadValueBool(bool v) { return v ? "true" : "false"; }

FieldError Required(std::string field, std::string_view detail) {
  return Make("FieldValueRequired", std::move(field), "Required value", detail);
}

FieldError Forbidden(std::string field, std::string_view detail) {
  return Make("FieldValueForbidden", std::move(field), "Forbidden", detail);
}

FieldError Invalid(std::string field, std::string_view bad_value, std::string_view detail) {
  return Make("FieldValueInvalid", std::move(field), "Invalid value: " + std::string(bad_value),
              detail);
}

FieldError Duplicate(std::string field, std::string_view bad_value) {
  return Make("FieldValueDuplicate", std::move(field), "Duplicate value: " + std::string(bad_value),
              "");
}

FieldError NotSupported(std::string field, std::string_view bad_value,
                        const std::vector<std::string>& valid) {
  std::string detail;
  for (const std::string& v : valid)
    detail += (detail.empty() ? "supported values: " : ", ") + GoQuote(v);
  return Make("FieldValueNotSupported", std::move(field),
              "Unsupported value: " + std::string(bad_value), detail);
}

FieldError TooLong(std::string field, int max_length) {
  // field.TooLong always reports the value as omitted, and never shows it.
  const std::string unit = max_length == 1 ? "byte" : "bytes";
  return Make("FieldValueTooLong", std::move(field), "Too long",
              "may not be more than " + std::to_string(max_length) + " " + unit);
}

FieldError TooMany(std::string field, int64_t actual, int64_t max) {
  const std::string unit = max == 1 ? "item" : "items";
  return Make("FieldValueTooMany", std::move(field), "Too many: " + std::to_string(actual),
              "must have at most " + std::to_string(max) + " " + unit);
}

std::string AggregateMessage(const FieldErrors& errors) {
  if (errors.size() == 1) return errors[0].Error();
  std::set<std::string> seen;
  std::string out;
  for (const FieldError& e : errors) {
    std::string msg = e.Error();
    if (!seen.insert(msg).second) continue;
    if (seen.size() > 1) out += ", ";
    out += msg;
  }
  return seen.size() == 1 ? out : "[" + out + "]";
}

void Append(FieldErrors& errors, FieldErrors more) {
  for (FieldError& e : more) errors.push_back(std::move(e));
}

}  // namespace devmgr::apiserver
