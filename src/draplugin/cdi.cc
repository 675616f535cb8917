#include "draplugin/cdi.h"

#include "common/fs.h"
#include "nlohmann/json.hpp"

namespace devmgr::draplugin {

std::string CdiSpecPath(const std::string& dir, const std::string& driver,
                        const std::string& claim_uid) {
  return dir + "/" + driver + "-" + claim_uid + ".json";
}

std::string CdiDeviceId(const std::string& kind, const std::string& name) {
  return kind + "=" + name;
}

std::string CdiDeviceName(const std::string& claim_uid, const std::string& device) {
  return claim_uid + "-" + device;
}

std::string CdiSpecJson(const std::string& kind, const std::vector<CdiDevice>& devices) {
  nlohmann::ordered_json spec = {{"cdiVersion", kCdiVersion}, {"kind", kind}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const CdiDevice& d : devices) {
    list.push_back({{"name", d.name}, {"containerEdits", {{"env", d.env}}}});
  }
  spec["devices"] = std::move(list);
  return spec.dump(2) + "\n";
}

absl::Status WriteCdiSpec(const std::string& path, const std::string& kind,
                          const std::vector<CdiDevice>& devices) {
  const std::string dir = path.substr(0, path.rfind('/'));
  absl::Status s = fs::MkdirAll(*fs::Default(), dir, 0755);
  if (!s.ok()) return s;
  fs::AtomicWriteOptions o;
  o.fsync = false;
  o.mode = 0644;
  return fs::WriteFileAtomically(*fs::Default(), path, CdiSpecJson(kind, devices), o);
}

absl::Status RemoveCdiSpec(const std::string& path) { return fs::Default()->Remove(path); }

}  // namespace devmgr::draplugin
