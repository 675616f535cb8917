// Test helpers for the claim tests: YAML test data (tests/testdata/dra/) as
// the API's JSON, created in a Store by kind.
#ifndef DEVMGR_DRA_CLAIMS_TESTUTIL_H_
#define DEVMGR_DRA_CLAIMS_TESTUTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "common/source_dir_testutil.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pod/manifest_parser.h"

namespace devmgr::dra::testutil {

inline std::string TestDataPath(const std::string& name) {
  return devmgr::testutil::SourcePath("tests/testdata/dra/") + name;
}

// Every document of a test data file, as the API's JSON.
inline std::vector<nlohmann::json> LoadDocuments(const std::string& name) {
  std::ifstream in(TestDataPath(name));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<std::string>> docs = pod::YamlDocumentsAsJson(text.str(), name);
  EXPECT_TRUE(docs.ok()) << docs.status();
  std::vector<nlohmann::json> out;
  if (docs.ok()) {
    for (const std::string& doc : *docs) out.push_back(nlohmann::json::parse(doc));
  }
  return out;
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
