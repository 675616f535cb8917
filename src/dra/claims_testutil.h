// Test helpers for the claim tests: YAML test data (tests/testdata/dra/) as
// the API's JSON, created in a Store by kind. Test-only: yaml-cpp here stays
// out of the library.
#ifndef DEVMGR_DRA_CLAIMS_TESTUTIL_H_
#define DEVMGR_DRA_CLAIMS_TESTUTIL_H_

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace devmgr::dra::testutil {

// A YAML node as JSON: plain scalars that read as ints, booleans or null
// become those (YAML 1.2 core schema, as the API's YAML decoder); quoted
// scalars stay strings.
inline nlohmann::json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : n) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      int64_t i = 0;
      if (absl::SimpleAtoi(s, &i) && s.find_first_not_of("-0123456789") == std::string::npos) {
        return i;
      }
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      return s;
    }
    default:
      return nullptr;
  }
}

inline std::string TestDataPath(const std::string& name) {
  return std::string(DEVMGR_SOURCE_DIR) + "/tests/testdata/dra/" + name;
}

// Every document of a test data file.
inline std::vector<nlohmann::json> LoadDocuments(const std::string& name) {
  std::ifstream in(TestDataPath(name));
  std::stringstream text;
  text << in.rdbuf();
  std::vector<nlohmann::json> docs;
  for (const YAML::Node& doc : YAML::LoadAll(text.str())) {
    if (!doc.IsNull()) docs.push_back(YamlToJson(doc));
  }
  return docs;
}

// Creates every API object of the file in `store` (namespaced ones in their
// metadata.namespace, else "default") and returns the Pods.
inline std::vector<nlohmann::json> CreateObjects(apiserver::Store& store, const std::string& name) {
  std::vector<nlohmann::json> pods;
  for (const nlohmann::json& doc : LoadDocuments(name)) {
    const std::string kind = doc.value("kind", "");
    if (kind == "Pod") {
      pods.push_back(doc);
      continue;
    }
    const apiserver::ResourceType* type = nullptr;
    for (const apiserver::ResourceType* t :
         {&apiserver::ResourceSlices(), &apiserver::ResourceClaims(),
          &apiserver::ResourceClaimTemplates(), &apiserver::DeviceClasses()}) {
      if (t->kind == kind) type = t;
    }
    EXPECT_NE(type, nullptr) << name << ": kind " << kind;
    if (!type) continue;
    const std::string ns = type->namespaced ? doc["metadata"].value("namespace", "default") : "";
    apiserver::ApiOr<nlohmann::json> created = store.Create(*type, ns, doc);
    EXPECT_TRUE(created.ok()) << name << ": " << created.error->message;
  }
  return pods;
}

}  // namespace devmgr::dra::testutil

#endif  // DEVMGR_DRA_CLAIMS_TESTUTIL_H_
