// Fuzz target: the resource quantity parser (Pod limits/requests). Property: a parsed quantity's
// canonical String() parses again to an equal quantity, and that one's String() is a fixed
// point. (Not String() itself: as in Go, "-62.5Ki" prints as "-64000", which parses as a
// DecimalSI quantity and so prints as "-64k"; regressions/quantity/binary-si-fraction-*.)
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "pod/quantity.h"

using devmgr::pod::Quantity;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return 0;  // quantities are short; keep the search on the grammar
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto q = Quantity::Parse(text);
  if (!q.ok()) return 0;
  (void)q->Value();
  (void)q->MilliValue();
  const std::string s = q->String();
  auto r = Quantity::Parse(s);
  FUZZ_CHECK(r.ok(), "canonical form %s of %s refused: %s", s.c_str(), text.c_str(),
             std::string(r.status().message()).c_str());
  FUZZ_CHECK(r->Cmp(*q) == 0, "%s -> %s changes the value", text.c_str(), s.c_str());
  const std::string s2 = r->String();
  auto r2 = Quantity::Parse(s2);
  FUZZ_CHECK(r2.ok() && r2->Cmp(*q) == 0 && r2->String() == s2, "%s -> %s -> %s -> %s",
             text.c_str(), s.c_str(), s2.c_str(), r2.ok() ? r2->String().c_str() : "error");
  return 0;
}
