// Fuzz target: RegisterRequest as the Registration service receives it (raw protobuf bytes, the
// 1.34+ UTF-8 check, then RegistrationServer::Register: version and resource-name validation,
// the endpoint joined with the plugin directory and dialled back). Nothing listens in the fuzz
// directory, so an accepted request ends in a failed dial. Properties: no crash; a refusal is an
// Unknown error with a message, as the kubelet's plain Go error would be.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/logging.h"
#include "fuzz_check.h"
#include "fuzz_temp_dir.h"
#include "kubelet/profile.h"
#include "transport/go_path.h"
#include "transport/registration_server.h"
#include "transport/utf8_fields.h"

namespace tr = devmgr::transport;

namespace {

class NullHandler final : public devmgr::manager::ClientHandler {
 public:
  absl::Status PluginConnected(const std::string&,
                               std::shared_ptr<devmgr::manager::PluginClient>) override {
    return absl::OkStatus();
  }
  void PluginDisconnected(const std::string&, devmgr::manager::PluginClient*) override {}
  void PluginListAndWatchReceiver(const std::string&, devmgr::manager::PluginClient*,
                                  const v1beta1::ListAndWatchResponse&) override {}
};

tr::RegistrationServer* Server(bool utf8_profile) {
  static NullHandler handler;
  static tr::RegistrationServer* servers[2] = {nullptr, nullptr};
  tr::RegistrationServer*& s = servers[utf8_profile ? 1 : 0];
  if (s == nullptr) {
    devmgr::log::SetConsoleOutput(false);
    tr::RegistrationServerOptions o;
    o.plugin_dir = FuzzTempDir("devmgr-fuzz-register");
    o.profile = *devmgr::ProfileForVersion(utf8_profile ? "1.34+" : "1.33");
    o.dial_timeout = absl::Milliseconds(1);
    s = tr::RegistrationServer::Create(o, &handler)->release();
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool utf8 = data[0] & 1;
  v1beta1::RegisterRequest req;
  if (!req.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;  // grpc refuses it
  if (utf8 && tr::FirstInvalidUtf8Field(req).has_value()) return 0;         // ditto on 1.34+
  // An endpoint reaching outside the directory would be dialled wherever it points (as the
  // kubelet does); the fuzzer must not talk to the machine's real sockets, so it only joins it.
  const std::string& ep = req.endpoint();
  if (!ep.empty() && (ep[0] == '/' || ep.find("..") != std::string::npos)) {
    const std::string joined = tr::GoPathJoin({"/fuzz/dir", ep});
    FUZZ_CHECK(!joined.empty() && joined[0] == '/', "join gave %s", joined.c_str());
    return 0;
  }
  const absl::Status s = Server(utf8)->Register(req);
  if (!s.ok()) {
    FUZZ_CHECK(s.code() == absl::StatusCode::kUnknown, "code %d", static_cast<int>(s.code()));
    FUZZ_CHECK(!s.message().empty(), "empty error");
  }
  return 0;
}
