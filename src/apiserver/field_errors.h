// Field errors as the API server's validation reports them
// (k8s.io/apimachinery pkg/util/validation/field): a type, the field's path
// and a body, rendered "<field>: <body>" and aggregated into one message.
#ifndef DEVMGR_APISERVER_FIELD_ERRORS_H_
#define DEVMGR_APISERVER_FIELD_ERRORS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace devmgr::apiserver {

struct FieldError {
  std::string type;   // the StatusCause reason, e.g. "FieldValueRequired"
  std::string field;  // e.g. "spec.devices[0].name"
  std::string body;   // ErrorBody(): e.g. "Required value" or "Invalid value: \"x\": detail"

  // "<field>: <body>", as field.Error.Error().
  std::string Error() const { return field + ": " + body; }
};

using FieldErrors = std::vector<FieldError>;

// A bad value rendered as the field package renders it: strings Go-quoted,
// numbers and booleans bare.
std::string BadValue(std::string_view s);
std::string BadValue(int64_t v);
std::string BadValueBool(bool v);

// The constructors of the field package. `detail` may be empty; `bad_value`
// is already rendered (BadValue above, or JSON for lists and objects).
FieldError Required(std::string field, std::string_view detail);
FieldError Forbidden(std::string field, std::string_view detail);
FieldError Invalid(std::string field, std::string_view bad_value, std::string_view detail);
FieldError Duplicate(std::string field, std::string_view bad_value);
// "Unsupported value: <bad>: supported values: "a", "b"".
FieldError NotSupported(std::string field, std::string_view bad_value,
                        const std::vector<std::string>& valid);
// "Too long: may not be more than N bytes".
FieldError TooLong(std::string field, int max_length);
// "Too many: <actual>: must have at most <max> items".
FieldError TooMany(std::string field, int64_t actual, int64_t max);

// The aggregate's message: one error alone, else "[e1, e2]" with repeated
// messages once (utilerrors.NewAggregate(...).Error()).
std::string AggregateMessage(const FieldErrors& errors);

// Appends every error of `more` to `errors`.
void Append(FieldErrors& errors, FieldErrors more);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_FIELD_ERRORS_H_
