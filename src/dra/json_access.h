// Lenient reads of API objects held as JSON: a missing or mistyped field
// reads as empty (null), as Go's typed decoding leaves a zero value.
#ifndef DEVMGR_DRA_JSON_ACCESS_H_
#define DEVMGR_DRA_JSON_ACCESS_H_

#include <string>

#include "nlohmann/json.hpp"

namespace devmgr::dra {

// object[key] when it is a string, else "".
inline std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// object[key], or a null value when `object` is no object or lacks `key`.
inline const nlohmann::json& Member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_JSON_ACCESS_H_
