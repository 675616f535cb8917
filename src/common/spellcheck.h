// "Did you mean" suggestions for misspelt names (ninja's SpellcheckString).
#ifndef DEVMGR_COMMON_SPELLCHECK_H_
#define DEVMGR_COMMON_SPELLCHECK_H_

#include <string>
#include <string_view>
#include <vector>

namespace devmgr {

// The candidate closest to `word` by edit distance, if it is within 3 edits
// (or a third of the word's length, whichever is larger); else "".
std::string SpellCheck(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace devmgr

#endif  // DEVMGR_COMMON_SPELLCHECK_H_
