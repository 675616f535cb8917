// A device selector's CEL expression (resource.k8s.io/v1 CELDeviceSelector),
// for a documented small subset of CEL that is evaluated exactly; anything
// outside it fails to compile with an error that quotes the expression and
// names the unsupported part. An allocation never proceeds on a guess.
//
// The subset:
//   device.driver                                   a string
//   device.attributes["<domain>"].<name>            string, int or bool value
//   device.capacity["<domain>"].<name>              a quantity
//   "s" 's' 42 -1 true false quantity("64Gi")      literals
//   a == b, a != b                                  same-typed operands
//   a < b, a <= b, a > b, a >= b                    ints
//   q.compareTo(quantity("10Gi"))                   an int: -1, 0, 1
//   q.isGreaterThan(quantity(..)), q.isLessThan(..) bools
//   a && b, ( ... )
// Not supported (compile error): ||, !, has(), in, matches(), semver(),
// list and map literals, arithmetic, ternaries, other functions.
//
// Evaluation follows the API's documented rules (CELDeviceSelector): an
// attribute or capacity named "<name>" without a domain belongs to the
// device's driver's domain; an unknown domain is an empty map; a reference to
// a name the domain lacks is an evaluation error, which aborts the
// allocation. A comparison of differently typed values is an error too
// (CEL's "no such overload"), as is a version attribute (no semver here).
#ifndef DEVMGR_DRA_CEL_SELECTOR_H_
#define DEVMGR_DRA_CEL_SELECTOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {

// Thread-compatible value type; Matches is const and may run concurrently.
class CelSelector {
 public:
  struct Node;

  // InvalidArgument `unsupported CEL expression "<expr>": <why>` for syntax
  // outside the subset (or invalid CEL).
  static absl::StatusOr<CelSelector> Compile(const std::string& expression);

  // Whether the device (a v1 ResourceSlice `spec.devices[]` entry published
  // by `driver`) satisfies the expression. FailedPrecondition `CEL runtime
  // error: <why>` when the evaluation fails (a missing attribute, a type
  // mismatch, a non-bool result).
  absl::StatusOr<bool> Matches(const std::string& driver, const nlohmann::json& device) const;

  const std::string& expression() const { return expression_; }

 private:
  CelSelector(std::string expression, std::shared_ptr<const Node> root)
      : expression_(std::move(expression)), root_(std::move(root)) {}

  std::string expression_;
  std::shared_ptr<const Node> root_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_CEL_SELECTOR_H_
