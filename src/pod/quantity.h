// Quantity: Kubernetes resource.Quantity (k8s.io/apimachinery) as far as the
// kubelet and the API server's resource validation use it.
//
// Grammar (the API's):
//   <quantity>     ::= <signedNumber><suffix>
//   <signedNumber> ::= [+-]? ( <digits> | <digits>. | <digits>.<digits> | .<digits> )
//   <suffix>       ::= Ki|Mi|Gi|Ti|Pi|Ei            (binary SI)
//                    | n|u|m|""|k|M|G|T|P|E         (decimal SI)
//                    | (e|E)<signed integer>         (decimal exponent)
// Go's lenient corners are kept: "1." and "." and "k" parse (the number part
// may be empty, meaning 0), leading zeros are ignored.
//
// The value is kept exactly to nanounits: like Go, anything finer is rounded
// up (away from zero) to the next nanounit. Binary-SI values are capped at
// 2^63-1 as Go caps them.
//
// Deviation: Go keeps arbitrarily large decimals; here the magnitude must be
// below ~1.7e29 units, beyond which Parse fails with OutOfRange.
#ifndef DEVMGR_POD_QUANTITY_H_
#define DEVMGR_POD_QUANTITY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace devmgr::pod {

class Quantity {
 public:
  enum class Format { kDecimalExponent, kBinarySI, kDecimalSI };

  // Go's resource.ErrFormatWrong / ErrSuffix texts.
  static constexpr char kErrFormatWrong[] =
      "quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  static constexpr char kErrSuffix[] = "unable to parse quantity's suffix";

  Quantity() = default;  // zero, DecimalSI

  // resource.ParseQuantity. InvalidArgument with Go's error text on failure.
  static absl::StatusOr<Quantity> Parse(const std::string& text);
  // A quantity of `units` in DecimalSI format (resource.NewQuantity).
  static Quantity FromInt64(int64_t units);

  // Quantity.Value(): the value rounded up (away from zero) to an integer,
  // saturated to the int64 range.
  int64_t Value() const;
  // Quantity.MilliValue(): value*1000 rounded up, saturated.
  int64_t MilliValue() const;
  // The API server's integer check for integer resources
  // (MilliValue() % 1000 == 0; so 1.9999999 counts as an integer, as in Go).
  bool IsInteger() const { return MilliValue() % 1000 == 0; }
  bool IsZero() const { return nanos_ == 0; }
  int Sign() const { return nanos_ < 0 ? -1 : (nanos_ > 0 ? 1 : 0); }
  // -1, 0, 1 like Quantity.Cmp.
  int Cmp(const Quantity& other) const;
  Format format() const { return format_; }

  // Quantity.String(): the canonical form ("2", "500m", "1Ki", "1e3"), or
  // the text it was parsed from when Go would keep that text (it is already
  // canonical in Go's sense; e.g. "+1" and "01" are kept verbatim).
  std::string String() const;

 private:
  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
  std::string cached_;  // non-empty: String() returns it
};

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_QUANTITY_H_
