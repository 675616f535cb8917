// Rendering of `devmgr checkpoint inspect` (table, JSON, YAML).
#ifndef DEVMGR_CLI_CHECKPOINT_OUTPUT_H_
#define DEVMGR_CLI_CHECKPOINT_OUTPUT_H_

#include <string>

#include "checkpoint/checkpoint.h"
#include "nlohmann/json.hpp"

namespace devmgr::cli {

// REQUIRES: r.parsed.
std::string InspectTable(const std::string& file, const checkpoint::VerifyResult& r);
nlohmann::ordered_json InspectJson(const std::string& file, const checkpoint::VerifyResult& r);

// A YAML document for a JSON value (block style; strings double-quoted).
std::string ToYaml(const nlohmann::ordered_json& j);

}  // namespace devmgr::cli

#endif  // DEVMGR_CLI_CHECKPOINT_OUTPUT_H_
