// Go fmt compatibility: the kubelet's error texts use %q and %v on strings and
// string slices, and devmgr reproduces those texts byte for byte.
#ifndef DEVMGR_COMMON_GO_FORMAT_H_
#define DEVMGR_COMMON_GO_FORMAT_H_

#include <string>
#include <string_view>
#include <vector>

namespace devmgr {

// Go's strconv.Quote (what %q prints for a string): double-quoted, with
// \a \b \f \n \r \t \v \\ \" escapes, \xNN for invalid UTF-8 bytes, \uNNNN or
// \UNNNNNNNN for non-printable runes; printable UTF-8 is kept as is.
std::string GoQuote(std::string_view s);

// What %q prints for a []string or an array of strings: ["a" "b"].
std::string GoQuoteList(const std::vector<std::string>& v);

// What %v prints for a []string: [a b].
std::string GoList(const std::vector<std::string>& v);

// True when the whole string is valid UTF-8 (Go's utf8.ValidString).
bool IsValidUtf8(std::string_view s);

}  // namespace devmgr

#endif  // DEVMGR_COMMON_GO_FORMAT_H_
