#include "plugin/response_template.h"

#include <vector>

#include "common/spellcheck.h"

namespace devmgr::plugin {
namespace {

const std::vector<std::string>& FieldNames(bool per_device) {
  static const std::vector<std::string> kContainer = {"DeviceIDs", "DeviceCount", "ResourceName"};
  static const std::vector<std::string> kDevice = {"DeviceIDs", "DeviceCount", "ResourceName",
                                                   "DeviceID", "DeviceIndex"};
  return per_device ? kDevice : kContainer;
}

// Trims spaces so that "{{ .DeviceIDs }}" works as in Go templates.
std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(' ');
  return s.substr(b, e - b + 1);
}

}  // namespace

absl::Status CheckTemplate(const std::string& text, bool per_device) {
  size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string::npos) {
    const size_t end = text.find("}}", pos + 2);
    if (end == std::string::npos) {
      return absl::InvalidArgumentError("unterminated template action '{{' (missing '}}')");
    }
    const std::string action = Trim(text.substr(pos + 2, end - pos - 2));
    const std::vector<std::string>& names = FieldNames(per_device);
    bool known = false;
    if (!action.empty() && action[0] == '.') {
      for (const std::string& n : names) known |= action.substr(1) == n;
    }
    if (!known) {
      std::string msg = "unknown template field {{" + action + "}}";
      const std::string field = !action.empty() && action[0] == '.' ? action.substr(1) : action;
      std::string guess = SpellCheck(field, names);
      if (guess.empty() && !per_device) {
        guess = SpellCheck(field, FieldNames(true));
        if (!guess.empty()) {
          return absl::InvalidArgumentError(msg + " ({{." + guess +
                                            "}} is only available in allocate.per_device)");
        }
      }
      if (!guess.empty()) msg += " (did you mean {{." + guess + "}}?)";
      return absl::InvalidArgumentError(msg);
    }
    pos = end + 2;
  }
  return absl::OkStatus();
}

std::string ExpandTemplate(const std::string& text, const TemplateVars& vars) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find("{{", pos);
    const size_t close = open == std::string::npos ? open : text.find("}}", open + 2);
    if (close == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    out.append(text, pos, open - pos);
    const std::string action = Trim(text.substr(open + 2, close - open - 2));
    if (action == ".DeviceIDs") {
      out += vars.device_ids;
    } else if (action == ".DeviceCount") {
      out += std::to_string(vars.device_count);
    } else if (action == ".ResourceName") {
      out += vars.resource_name;
    } else if (action == ".DeviceID") {
      out += vars.device_id;
    } else if (action == ".DeviceIndex") {
      out += std::to_string(vars.device_index);
    } else {
      out.append(text, open, close + 2 - open);
    }
    pos = close + 2;
  }
}

}  // namespace devmgr::plugin
