#include "apiserver/field_selector.h"

#include <algorithm>

namespace devmgr::apiserver {
namespace {

// Splits on `sep` outside backslash escapes (fields.ParseSelector's
// splitTerms), keeping the escapes for the next step.
std::vector<std::string> SplitUnescaped(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      cur += s[i];
      cur += s[++i];
    } else if (s[i] == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  out.push_back(cur);
  return out;
}

// Finds the first unescaped operator: "!=", "==" or "=".
bool SplitTerm(const std::string& term, std::string* lhs, std::string* op, std::string* rhs) {
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '\\') {
      ++i;
      continue;
    }
    for (const char* candidate : {"!=", "==", "="}) {
      const std::string c = candidate;
      if (term.compare(i, c.size(), c) == 0) {
        *lhs = term.substr(0, i);
        *op = c;
        *rhs = term.substr(i + c.size());
        return true;
      }
    }
  }
  return false;
}

std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

}  // namespace

ApiOr<FieldSelector> FieldSelector::Parse(const std::string& text, const ResourceType& type) {
  FieldSelector sel;
  if (text.empty()) return sel;
  for (const std::string& term : SplitUnescaped(text, ',')) {
    if (term.empty()) continue;
    std::string lhs, op, rhs;
    if (!SplitTerm(term, &lhs, &op, &rhs)) {
      return BadRequest("invalid selector: '" + text + "'; can't understand '" + term + "'");
    }
    const bool allowed = lhs == "metadata.name" ||
                         (type.namespaced && lhs == "metadata.namespace") ||
                         std::find(type.selectable_fields.begin(), type.selectable_fields.end(),
                                   lhs) != type.selectable_fields.end();
    if (!allowed) {
      return BadRequest("field label not supported for " + type.GroupVersionKind() + ": " + lhs);
    }
    sel.requirements_.push_back(Requirement{lhs, op != "!=", Unescape(rhs)});
  }
  return sel;
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& r) {
    return (FieldValue(object, r.field) == r.value) == r.equals;
  });
}

std::string FieldValue(const nlohmann::json& object, const std::string& path) {
  const nlohmann::json* cur = &object;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string key = path.substr(start, dot - start);
    if (!cur->is_object()) return "";
    auto it = cur->find(key);
    if (it == cur->end()) return "";
    cur = &*it;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_boolean()) return cur->get<bool>() ? "true" : "false";
  if (cur->is_number()) return cur->dump();
  return "";
}

}  // namespace devmgr::apiserver
