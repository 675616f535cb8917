#include "apiserver/protobuf_codec.h"

#include <memory>

#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"
#include "k8s/api/resource_v1.pb.h"
#include "k8s/apimachinery/meta_v1.pb.h"
#include "k8s/apimachinery/runtime.pb.h"

namespace devmgr::apiserver {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using nlohmann::json;

constexpr char kMagic[] = {'k', '8', 's', '\0'};

// metav1.Time's zero value (Go's year 1) as ProtoTime writes it.
constexpr int64_t kGoZeroTimeSeconds = -62135596800;

struct Converter {
  std::string error;  // the first problem, with the field's path

  json Convert(const Message& m, const std::string& path) {
    const auto* d = m.GetDescriptor();
    const Reflection* r = m.GetReflection();
    if (!r->GetUnknownFields(m).empty()) {
      const auto& unknown = r->GetUnknownFields(m);
      Fail(path + ": field number " + std::to_string(unknown.field(0).number()) + " of " +
           d->full_name() + " is not known to devmgr (kubernetes v1.37.2 types)");
    }
    const std::string& name = d->full_name();
    if (name == "k8s.io.apimachinery.pkg.api.resource.Quantity") {
      return r->GetString(m, d->FindFieldByName("string"));
    }
    if (name == "k8s.io.apimachinery.pkg.apis.meta.v1.Time") {
      const int64_t secs = r->GetInt64(m, d->FindFieldByName("seconds"));
      if (secs == kGoZeroTimeSeconds || !r->HasField(m, d->FindFieldByName("seconds")))
        return json();
      // metav1.Time marshals to JSON in seconds (RFC 3339, UTC).
      return absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", absl::FromUnixSeconds(secs),
                              absl::UTCTimeZone());
    }
    if (name == "k8s.io.apimachinery.pkg.runtime.RawExtension" ||
        name == "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") {
      const std::string raw = r->GetString(m, d->field(0));
      json parsed = json::parse(raw, nullptr, false);
      if (parsed.is_discarded()) Fail(path + ": raw bytes are not JSON");
      return parsed;
    }
    json out = json::object();
    std::vector<const FieldDescriptor*> fields;
    r->ListFields(m, &fields);
    for (const FieldDescriptor* f : fields) {
      const std::string child = path.empty() ? f->name() : path + "." + f->name();
      json value;
      if (f->is_map()) {
        value = json::object();
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          const Message& entry = r->GetRepeatedMessage(m, f, i);
          const auto* ed = entry.GetDescriptor();
          const std::string key = entry.GetReflection()->GetString(entry, ed->field(0));
          value[key] = Single(entry, ed->field(1), -1, child + "[" + key + "]");
        }
      } else if (f->is_repeated()) {
        value = json::array();
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          value.push_back(Single(m, f, i, child + "[" + std::to_string(i) + "]"));
        }
      } else {
        value = Single(m, f, -1, child);
      }
      if (!value.is_null()) out[f->name()] = std::move(value);
    }
    return out;
  }

  // One value of field `f` (element `i` of a repeated field, or -1).
  json Single(const Message& m, const FieldDescriptor* f, int i, const std::string& path) {
    const Reflection* r = m.GetReflection();
    const bool rep = i >= 0;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        return rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
      case FieldDescriptor::CPPTYPE_INT64:
        return rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f);
      case FieldDescriptor::CPPTYPE_INT32:
        return rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f);
      case FieldDescriptor::CPPTYPE_BOOL:
        return rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return Convert(rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), path);
      default:
        Fail(path + ": unexpected field type");
        return json();
    }
  }

  void Fail(const std::string& why) {
    if (error.empty()) error = why;
  }
};

}  // namespace

ApiOr<json> MessageToJson(const Message& message) {
  Converter c;
  json out = c.Convert(message, "");
  if (!c.error.empty()) return BadRequest("protobuf body: " + c.error);
  return out;
}

ApiOr<DecodedBody> DecodeProtobufBody(std::string_view body) {
  if (body.size() < sizeof(kMagic) ||
      body.compare(0, sizeof(kMagic), std::string_view(kMagic, sizeof(kMagic))) != 0) {
    return BadRequest("protobuf body: the 4-byte prefix \"k8s\\x00\" is missing");
  }
  body.remove_prefix(sizeof(kMagic));
  k8s::io::apimachinery::pkg::runtime::Unknown envelope;
  if (!envelope.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return BadRequest("protobuf body: the runtime.Unknown envelope does not parse");
  }
  if (!envelope.contentencoding().empty()) {
    return BadRequest("protobuf body: content encoding " + envelope.contentencoding() +
                      " is not supported");
  }
  DecodedBody out;
  out.api_version = envelope.typemeta().apiversion();
  out.kind = envelope.typemeta().kind();
  std::unique_ptr<Message> message;
  if (out.kind == "ResourceSlice" && out.api_version == "resource.k8s.io/v1") {
    message = std::make_unique<k8s::io::api::resource::v1::ResourceSlice>();
  } else if (out.kind == "DeleteOptions") {
    message = std::make_unique<k8s::io::apimachinery::pkg::apis::meta::v1::DeleteOptions>();
  } else {
    return BadRequest(
        "protobuf body: devmgr decodes ResourceSlice (resource.k8s.io/v1) and DeleteOptions, not " +
        (out.kind.empty() ? std::string("an object without a kind")
                          : out.kind + " (" + out.api_version + ")") +
        "; send JSON instead");
  }
  if (!message->ParseFromString(envelope.raw())) {
    return BadRequest("protobuf body: the " + out.kind + " message does not parse");
  }
  ApiOr<json> object = MessageToJson(*message);
  if (!object.ok()) return *object.error;
  out.object = std::move(object.value);
  out.object["apiVersion"] = out.api_version;
  out.object["kind"] = out.kind;
  return out;
}

std::string EncodeProtobufBody(const Message& message, const std::string& api_version,
                               const std::string& kind) {
  k8s::io::apimachinery::pkg::runtime::Unknown envelope;
  envelope.mutable_typemeta()->set_apiversion(api_version);
  envelope.mutable_typemeta()->set_kind(kind);
  envelope.set_raw(message.SerializeAsString());
  // client-go's serializer writes contentEncoding and contentType as empty
  // strings: present on the wire.
  envelope.set_contentencoding("");
  envelope.set_contenttype("");
  return std::string(kMagic, sizeof(kMagic)) + envelope.SerializeAsString();
}

}  // namespace devmgr::apiserver
