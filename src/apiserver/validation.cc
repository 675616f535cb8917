#include "apiserver/validation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "absl/base/attributes.h"
#include "absl/synchronization/mutex.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;

// Limits of pkg/apis/resource (types.go) and apimachinery's validation.
constexpr int kDNS1123LabelMaxLength = 63;
constexpr int kDNS1123SubdomainMaxLength = 253;
constexpr int kDriverNameMaxLength = 63;
constexpr int kPoolNameMaxLength = 253;
constexpr int kResourceSliceMaxDevices = 128;
constexpr int kResourceSliceMaxDevicesWithAdvancedFeatures = 64;
constexpr int kResourceSliceMaxCounterSets = 8;
constexpr int kMaxAttributesAndCapacitiesPerDevice = 32;
constexpr int kMaxAttributeValuesPerDevice = 48;
constexpr int kDeviceMaxDomainLength = 63;
constexpr int kDeviceMaxIdLength = 32;
constexpr int kDeviceAttributeMaxValueLength = 64;

constexpr char kLabelFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kLabelMsg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr char kSubdomainMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr char kCIdentifierFmt[] = "[A-Za-z_][A-Za-z0-9_]*";
constexpr char kCIdentifierMsg[] =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'";
const char* const kNodeSelectionFields =
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";

std::string SubdomainFmt() { return std::string(kLabelFmt) + "(\\." + kLabelFmt + ")*"; }

// validation.RegexError.
std::string RegexError(const std::string& msg, const std::string& fmt,
                       std::initializer_list<const char*> examples) {
  std::string out = msg + " (e.g. ";
  bool first = true;
  for (const char* e : examples) {
    if (!first) out += " or ";
    first = false;
    out += "'" + std::string(e) + "', ";
  }
  return out + "regex used for validation is '" + fmt + "')";
}

std::string MaxLenError(int n) {
  return "must be no more than " + std::to_string(n) + " characters";
}

// `pattern` compiled once per process: compiling a std::regex costs far more than matching
// one (each bracket expression builds a 256-entry table), and these checks run for every claim
// of every pod the DRA manager prepares (ParsePodClaims). Compiling on every call took a quarter
// of the dra_replies fuzz target's time (docs/reliability.md, "Fuzzing").
const std::regex& Compiled(const std::string& pattern) {
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  static auto* const cache = new std::map<std::string, std::unique_ptr<const std::regex>>;
  absl::MutexLock l(&mu);
  std::unique_ptr<const std::regex>& re = (*cache)[pattern];
  if (re == nullptr) re = std::make_unique<const std::regex>(pattern);
  return *re;  // never erased: the reference stays valid; matching a const regex is thread-safe
}

bool FullMatch(const std::string& value, const std::string& pattern) {
  return std::regex_match(value, Compiled(pattern));
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string Str(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Child(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

int64_t Int(const json& object, const char* key) {
  const json& v = Child(object, key);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// validateMap's key in a path: keys past `max` characters (at least 16)
// are shortened in the middle.
std::string TruncatedKey(const std::string& key, size_t max) {
  max = std::max<size_t>(max, 16);
  if (key.size() <= max) return key;
  const size_t remaining = max - 3;
  return key.substr(0, (remaining + 1) / 2) + "..." + key.substr(key.size() - remaining / 2);
}

void InvalidEach(FieldErrors& errs, const std::string& path, const std::string& value,
                 const std::vector<std::string>& msgs) {
  for (const std::string& m : msgs) errs.push_back(Invalid(path, BadValue(value), m));
}

// corevalidation.ValidateCSIDriverName, which DRA driver names reuse.
FieldErrors ValidateDriverName(const std::string& name, const std::string& path) {
  FieldErrors errs;
  if (name.empty()) return {Required(path, "")};
  if (name.size() > static_cast<size_t>(kDriverNameMaxLength)) {
    errs.push_back(TooLong(path, kDriverNameMaxLength));
  }
  InvalidEach(errs, path, name, IsDNS1123Subdomain(Lower(name)));
  return errs;
}

FieldErrors ValidatePoolName(const std::string& name, const std::string& path) {
  if (name.empty()) return {Required(path, "")};
  FieldErrors errs;
  if (name.size() > static_cast<size_t>(kPoolNameMaxLength)) {
    errs.push_back(TooLong(path, kPoolNameMaxLength));
  }
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    const std::string part = name.substr(start, slash == std::string::npos ? slash : slash - start);
    InvalidEach(errs, path, part, IsDNS1123Subdomain(part));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return errs;
}

FieldErrors ValidateCIdentifierAt(const std::string& id, const std::string& path) {
  FieldErrors errs;
  if (id.size() > static_cast<size_t>(kDeviceMaxIdLength)) {
    errs.push_back(TooLong(path, kDeviceMaxIdLength));
  }
  InvalidEach(errs, path, id, IsCIdentifier(id));
  return errs;
}

// validateQualifiedName: "<C identifier>" or "<driver-like domain>/<C
// identifier>"; errors are reported on the map's path, not the key's.
FieldErrors ValidateQualifiedName(const std::string& name, const std::string& path) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return ValidateCIdentifierAt(name, path);
  if (name.find('/', slash + 1) != std::string::npos) return {};  // upstream accepts a/b/c (a TODO)
  FieldErrors errs;
  const std::string domain = name.substr(0, slash);
  const std::string id = name.substr(slash + 1);
  if (domain.empty()) {
    errs.push_back(Invalid(path, BadValue(""), "the domain must not be empty"));
  } else {
    Append(errs, ValidateDriverName(domain, path));
  }
  if (id.empty()) {
    errs.push_back(Invalid(path, BadValue(""), "the name must not be empty"));
  } else {
    Append(errs, ValidateCIdentifierAt(id, path));
  }
  return errs;
}

bool IsList(const json& attr, const char* key) { return Child(attr, key).is_array(); }

bool HasListAttribute(const json& attr) {
  return IsList(attr, "bools") || IsList(attr, "ints") || IsList(attr, "strings") ||
         IsList(attr, "versions");
}

// A DeviceAttribute as encoding/json renders the Go struct (fields in
// declaration order), for "exactly one value" errors.
std::string AttributeJson(const json& attr) {
  std::string out = "{";
  for (const char* k :
       {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"}) {
    auto it = attr.find(k);
    if (it == attr.end()) continue;
    if (out.size() > 1) out += ",";
    out += json(k).dump() + ":" + it->dump();
  }
  return out + "}";
}

bool IsSemver(const std::string& v) {
  static const std::string num = "(0|[1-9][0-9]*)";
  static const std::string pre = "(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)";
  static const std::string build = "[0-9a-zA-Z-]+";
  static const std::regex re(num + "\\." + num + "\\." + num + "(-" + pre + "(\\." + pre + ")*)?" +
                             "(\\+" + build + "(\\." + build + ")*)?");
  return std::regex_match(v, re);
}

void ValidateAttributeString(FieldErrors& errs, const std::string& value, const std::string& path) {
  if (value.size() > static_cast<size_t>(kDeviceAttributeMaxValueLength)) {
    errs.push_back(TooLong(path, kDeviceAttributeMaxValueLength));
  }
}

void ValidateAttributeVersion(FieldErrors& errs, const std::string& value,
                              const std::string& path) {
  if (!IsSemver(value)) {
    errs.push_back(
        Invalid(path, BadValue(value), "must be a string compatible with semver.org spec 2.0.0"));
  }
  ValidateAttributeString(errs, value, path);
}

FieldErrors ValidateDeviceAttribute(const json& attr, const std::string& path) {
  FieldErrors errs;
  int fields = 0;
  for (const char* k : {"bool", "int"}) fields += attr.contains(k) ? 1 : 0;
  if (attr.contains("string")) {
    ++fields;
    ValidateAttributeString(errs, Str(attr, "string"), path + ".string");
  }
  if (attr.contains("version")) {
    ++fields;
    ValidateAttributeVersion(errs, Str(attr, "version"), path + ".version");
  }
  for (const char* k : {"bools", "ints", "strings", "versions"}) {
    if (!IsList(attr, k)) continue;
    ++fields;
    const json& list = attr[k];
    if (list.empty())
      errs.push_back(Invalid(path + "." + k, "[]", "must not be empty if specified"));
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) continue;
      const std::string item = list[i].get<std::string>();
      if (std::string(k) == "strings")
        ValidateAttributeString(errs, item, Index(path + "." + k, i));
      if (std::string(k) == "versions")
        ValidateAttributeVersion(errs, item, Index(path + "." + k, i));
    }
  }
  if (fields == 0)
    errs.push_back(Invalid(path, BadValue(""), "exactly one value must be specified"));
  if (fields > 1)
    errs.push_back(Invalid(path, AttributeJson(attr), "exactly one value must be specified"));
  return errs;
}

size_t AttributeValueCount(const json& attrs) {
  size_t n = 0;
  for (const auto& [key, attr] : attrs.items()) {
    size_t lists = 0;
    for (const char* k : {"bools", "ints", "strings", "versions"}) {
      if (IsList(attr, k)) lists += attr[k].size();
    }
    n += lists == 0 ? 1 : lists;
  }
  return n;
}

FieldErrors ValidateDevice(const json& device, const std::string& path, bool per_device_nodes) {
  FieldErrors errs;
  const std::string name = Str(device, "name");
  InvalidEach(errs, path + ".name", name, IsDNS1123Label(name));
  const json& attrs = Child(device, "attributes");
  const json& capacity = Child(device, "capacity");
  const size_t entries =
      (attrs.is_object() ? attrs.size() : 0) + (capacity.is_object() ? capacity.size() : 0);
  if (entries > static_cast<size_t>(kMaxAttributesAndCapacitiesPerDevice)) {
    errs.push_back(Invalid(path, BadValue(static_cast<int64_t>(entries)),
                           "the total number of attributes and capacities must not exceed " +
                               std::to_string(kMaxAttributesAndCapacitiesPerDevice)));
  }
  if (attrs.is_object()) {
    const size_t values = AttributeValueCount(attrs);
    if (values > static_cast<size_t>(kMaxAttributeValuesPerDevice)) {
      errs.push_back(Invalid(path, BadValue(static_cast<int64_t>(values)),
                             "the total number of attribute values must not exceed " +
                                 std::to_string(kMaxAttributeValuesPerDevice)));
    }
    // Go visits the map in random order; devmgr in key order.
    for (const auto& [key, attr] : attrs.items()) {
      Append(errs, ValidateQualifiedName(key, path + ".attributes"));
      const size_t max_key = kDeviceMaxDomainLength + 1 + kDeviceMaxIdLength;
      Append(errs, ValidateDeviceAttribute(
                       attr, path + ".attributes[" + TruncatedKey(key, max_key) + "]"));
    }
  }
  if (capacity.is_object()) {
    for (const auto& [key, unused] : capacity.items()) {
      Append(errs, ValidateQualifiedName(key, path + ".capacity"));
    }
  }
  const bool has_node_fields =
      device.contains("nodeName") || device.contains("nodeSelector") || device.contains("allNodes");
  if (!per_device_nodes && has_node_fields) {
    errs.push_back(Invalid(path, "null",
                           "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                           "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
  }
  return errs;
}

bool AnyDevice(const json& devices, bool (*pred)(const json&)) {
  return devices.is_array() && std::any_of(devices.begin(), devices.end(), pred);
}

FieldErrors ValidateDevices(const json& spec) {
  const json& devices = Child(spec, "devices");
  if (!devices.is_array()) return {};
  // Taints, counter consumption and list attributes lower the limit.
  const bool advanced =
      AnyDevice(devices, [](const json& d) { return !Child(d, "taints").empty(); }) ||
      AnyDevice(devices, [](const json& d) { return !Child(d, "consumesCounters").empty(); }) ||
      AnyDevice(devices, [](const json& d) {
        const json& attrs = Child(d, "attributes");
        return attrs.is_object() && std::any_of(attrs.begin(), attrs.end(),
                                                [](const json& a) { return HasListAttribute(a); });
      });
  const int max =
      advanced ? kResourceSliceMaxDevicesWithAdvancedFeatures : kResourceSliceMaxDevices;
  if (devices.size() > static_cast<size_t>(max)) {
    return {TooMany("spec.devices", static_cast<int64_t>(devices.size()), max)};
  }
  FieldErrors errs;
  const bool per_device = Child(spec, "perDeviceNodeSelection") == json(true);
  for (size_t i = 0; i < devices.size(); ++i) {
    Append(errs, ValidateDevice(devices[i], Index("spec.devices", i), per_device));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string name = Str(devices[i], "name");
    if (!seen.insert(name).second)
      errs.push_back(Duplicate(Index("spec.devices", i), BadValue(name)));
  }
  return errs;
}

FieldErrors ValidateSharedCounters(const json& spec) {
  const json& sets = Child(spec, "sharedCounters");
  if (!sets.is_array()) return {};
  if (sets.size() > static_cast<size_t>(kResourceSliceMaxCounterSets)) {
    return {TooMany("spec.sharedCounters", static_cast<int64_t>(sets.size()),
                    kResourceSliceMaxCounterSets)};
  }
  FieldErrors errs;
  std::set<std::string> seen;
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::string name = Str(sets[i], "name");
    const std::string path = Index("spec.sharedCounters", i);
    if (name.empty()) {
      errs.push_back(Required(path + ".name", ""));
    } else {
      InvalidEach(errs, path + ".name", name, IsDNS1123Label(name));
    }
    if (!seen.insert(name).second) errs.push_back(Duplicate(path, BadValue(name)));
  }
  return errs;
}

FieldErrors ValidateNodeSelection(const json& spec) {
  FieldErrors errs;
  std::vector<std::string> set;
  if (spec.contains("nodeName")) {
    const std::string node = Str(spec, "nodeName");
    if (!node.empty()) {
      set.push_back("`nodeName`");
      InvalidEach(errs, "spec.nodeName", node, IsDNS1123Subdomain(node));
    } else {
      errs.push_back(Invalid("spec.nodeName", BadValue(""),
                             "must be either unset or set to a non-empty string"));
    }
  }
  if (spec.contains("nodeSelector")) {
    set.push_back("`nodeSelector`");
    const json& terms = Child(Child(spec, "nodeSelector"), "nodeSelectorTerms");
    if (!terms.is_array() || terms.size() != 1) {
      errs.push_back(Invalid("spec.nodeSelector.nodeSelectorTerms",
                             terms.is_null() ? "null" : terms.dump(),
                             "must have exactly one node selector term"));
    }
  }
  for (const char* k : {"allNodes", "perDeviceNodeSelection"}) {
    if (!spec.contains(k)) continue;
    if (Child(spec, k) == json(true)) {
      set.push_back(std::string("`") + k + "`");
    } else {
      errs.push_back(Invalid(std::string("spec.") + k, BadValueBool(false),
                             "must be either unset or set to true"));
    }
  }
  if (set.empty()) errs.push_back(Required("spec", kNodeSelectionFields));
  if (set.size() > 1) {
    std::string joined;
    for (const std::string& s : set) joined += (joined.empty() ? "" : ", ") + s;
    errs.push_back(Invalid("spec", BadValue("{" + joined + "}"),
                           std::string(kNodeSelectionFields) + ", but multiple fields are set"));
  }
  return errs;
}

FieldErrors ValidateImmutable(const json& spec, const json& old_spec) {
  FieldErrors errs;
  const json& pool = Child(spec, "pool");
  const json& old_pool = Child(old_spec, "pool");
  if (Child(pool, "name") != Child(old_pool, "name")) {
    errs.push_back(Invalid("spec.pool.name", BadValue(Str(pool, "name")), "field is immutable"));
  }
  if (Child(spec, "driver") != Child(old_spec, "driver")) {
    errs.push_back(Invalid("spec.driver", BadValue(Str(spec, "driver")), "field is immutable"));
  }
  if (Child(spec, "nodeName") != Child(old_spec, "nodeName")) {
    const json& n = Child(spec, "nodeName");
    errs.push_back(Invalid("spec.nodeName", n.is_string() ? BadValue(n.get<std::string>()) : "null",
                           "field is immutable"));
  }
  return errs;
}

}  // namespace

std::vector<std::string> IsDNS1123Subdomain(const std::string& value) {
  std::vector<std::string> msgs;
  if (value.size() > static_cast<size_t>(kDNS1123SubdomainMaxLength)) {
    msgs.push_back(MaxLenError(kDNS1123SubdomainMaxLength));
  }
  if (!FullMatch(value, SubdomainFmt())) {
    msgs.push_back(RegexError(kSubdomainMsg, SubdomainFmt(), {"example.com"}));
  }
  return msgs;
}

std::vector<std::string> IsDNS1123Label(const std::string& value) {
  std::vector<std::string> msgs;
  if (value.size() > static_cast<size_t>(kDNS1123LabelMaxLength)) {
    msgs.push_back(MaxLenError(kDNS1123LabelMaxLength));
  }
  if (!FullMatch(value, kLabelFmt)) {
    // A valid subdomain that is no label can only have dots in it.
    msgs.push_back(FullMatch(value, SubdomainFmt())
                       ? "must not contain dots"
                       : RegexError(kLabelMsg, kLabelFmt, {"my-name", "123-abc"}));
  }
  return msgs;
}

std::vector<std::string> IsCIdentifier(const std::string& value) {
  if (FullMatch(value, kCIdentifierFmt)) return {};
  return {RegexError(kCIdentifierMsg, kCIdentifierFmt, {"my_name", "MY_NAME", "MyName"})};
}

FieldErrors ValidateObjectMeta(const json& object) {
  FieldErrors errs;
  const json& meta = Child(object, "metadata");
  const std::string generate_name = Str(meta, "generateName");
  if (!generate_name.empty()) {
    // NameIsDNSSubdomain(prefix=true) masks a trailing dash first, in its
    // own way (the last two characters become "a").
    std::string masked = generate_name;
    if (masked.size() > 1 && masked.back() == '-')
      masked = masked.substr(0, masked.size() - 2) + "a";
    InvalidEach(errs, "metadata.generateName", generate_name, IsDNS1123Subdomain(masked));
  }
  const std::string name = Str(meta, "name");
  if (name.empty()) {
    errs.push_back(Required("metadata.name", "name or generateName is required"));
  } else {
    InvalidEach(errs, "metadata.name", name, IsDNS1123Subdomain(name));
  }
  return errs;
}

FieldErrors ValidateResourceSlice(const json& slice, const json* old) {
  FieldErrors errs = ValidateObjectMeta(slice);
  const json& spec = Child(slice, "spec");
  Append(errs, ValidateDriverName(Str(spec, "driver"), "spec.driver"));
  const json& pool = Child(spec, "pool");
  Append(errs, ValidatePoolName(Str(pool, "name"), "spec.pool.name"));
  if (Int(pool, "resourceSliceCount") <= 0) {
    errs.push_back(Invalid("spec.pool.resourceSliceCount",
                           BadValue(Int(pool, "resourceSliceCount")), "must be greater than zero"));
  }
  if (Int(pool, "generation") < 0) {
    errs.push_back(Invalid("spec.pool.generation", BadValue(Int(pool, "generation")),
                           "must be greater than or equal to zero"));
  }
  if (old) Append(errs, ValidateImmutable(spec, Child(*old, "spec")));
  Append(errs, ValidateNodeSelection(spec));
  if (spec.contains("sharedCounters") && spec.contains("devices")) {
    errs.push_back(
        Invalid("spec", BadValue(""), "only one of `sharedCounters` or `devices` is allowed"));
  }
  Append(errs, ValidateDevices(spec));
  Append(errs, ValidateSharedCounters(spec));
  return errs;
}

}  // namespace devmgr::apiserver
