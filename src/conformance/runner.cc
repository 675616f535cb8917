#include "conformance/runner.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "conformance/test_kubelet.h"

namespace devmgr::conformance {
namespace {

const CatalogueSpec<CheckInfo> kSpec{
    Catalogue,
    "--focus matches no check (it is matched against \"<id> <title> [tags]\", e.g. "
    "\"registration.version Register sends version ...\"; see --list)",
    R"(\(see ([a-z]+\.[a-z-]+)\))",
};

std::string UnmetNeedOf(const CheckInfo& c, const Target& t) {
  if ((c.needs & kNeedRegistration) && !t.Registers()) {
    return "needs a plugin that registers with the tester (not --socket)";
  }
  if ((c.needs & kNeedStartedByTester) && !t.StartedByTester()) {
    return "needs a plugin the tester starts itself (--plugin)";
  }
  return "";
}

// Runs device-plugin checks in Sessions (a fresh test kubelet each, the
// plugin restarted when the tester owns it), and keeps what the shared
// session showed: whether the plugin registered, listed devices and served
// during its first Register.
class DevicePluginRunner : public CheckRunner<CheckInfo> {
 public:
  DevicePluginRunner(Target& target, const RunOptions& opts) : target_(target), opts_(opts) {}

  // The dial-back inside Register once the plugin is known to serve late.
  static constexpr absl::Duration kKnownLateServeWait = absl::Seconds(1);

  std::string Describe() const override { return target_.Describe(); }

  absl::StatusOr<std::unique_ptr<Session>> Begin(
      const std::string& dir, const std::vector<const CheckInfo*>& checks,
      const std::vector<const CheckInfo*>& later) override {
    bool expect_registration = seen_registration_;
    for (const CheckInfo* c : checks) expect_registration |= (c->needs & kNeedRegistration) != 0;
    bool learn_list = false;
    for (const CheckInfo* c : later) learn_list |= (c->needs & kNeedDeviceList) != 0;
    Timeouts t = opts_.timeouts;
    // Once a session showed that the plugin does not serve while Register is
    // pending (registration.serves-first has its verdict), later sessions
    // connect late after a short dial-back instead of the kubelet's full 10 s
    // at every registration: a failing plugin gets its report sooner and no
    // verdict changes (restart.* time the Register calls, not the dial-back).
    if (served_first_.has_value() && !*served_first_) {
      t.serve_wait = std::min(t.serve_wait, kKnownLateServeWait);
    }
    auto s = std::make_unique<PluginSession>(
        *this, SessionOptions{dir, t, opts_.profile, opts_.metrics},
        checks.size() > 1 || checks.front()->session == SessionUse::kShared, learn_list);
    if (absl::Status st = s->session.Begin(expect_registration); !st.ok()) return st;
    if (target_.Registers()) seen_registration_ = s->session.FirstRegistration().has_value();
    return std::unique_ptr<Session>(std::move(s));
  }

  std::string UnmetNeed(const CheckInfo& c) override { return UnmetNeedOf(c, target_); }

  // The same skip the check would give after starting a session.
  std::string KnownUnmet(const CheckInfo& c) override {
    if ((c.needs & kNeedRegistration) && registered_.has_value() && !*registered_) {
      return "the plugin never registered (see registration.timely)";
    }
    if ((c.needs & kNeedDeviceList) && listed_.has_value() && !*listed_) {
      return "the plugin sent no device list (see law.first-list)";
    }
    return "";
  }

  // For a plugin that registers with the tester: registration.timely when
  // the plugin never came up (its socket not found, never registered).
  std::vector<std::string> ImpliedPrerequisites(const std::string& message) override {
    if (target_.Registers() &&
        (message.find("the plugin's socket was not found") != std::string::npos ||
         message.find("the plugin never registered") != std::string::npos)) {
      return {"registration.timely"};
    }
    return {};
  }

  // Only what the kubelet and the plugin may have left (sockets, files).
  void RemoveTempDir(const std::string& dir) override {
    WipeDirectory(dir).IgnoreError();
    ::rmdir(dir.c_str());
  }

 private:
  // A Session; when it is the shared one (`learns`), what it showed is kept
  // at End.
  struct PluginSession : Session {
    PluginSession(DevicePluginRunner& r, SessionOptions so, bool learns, bool learn_list)
        : runner(r), session(&r.target_, std::move(so)), learns(learns), learn_list(learn_list) {}
    Outcome Run(const CheckInfo& c) override { return c.run(session); }
    void End() override {
      if (learns) runner.Learn(session, learn_list);
      session.End();
    }
    DevicePluginRunner& runner;
    conformance::Session session;
    const bool learns;
    const bool learn_list;
  };

  void Learn(conformance::Session& s, bool learn_list) {
    registered_ = !target_.Registers() || s.FirstRegistration().has_value();
    if (auto r = s.FirstRegistration()) served_first_ = r->served_during_register;
    if (learn_list && *registered_) listed_ = s.DeviceList() != nullptr;
  }

  Target& target_;
  const RunOptions& opts_;
  bool seen_registration_ = true;  // until a session shows otherwise
  // What the last shared session showed (unset before one ran).
  std::optional<bool> registered_;
  std::optional<bool> listed_;
  // Whether the plugin served during its first Register (unset before).
  std::optional<bool> served_first_;
};

}  // namespace

absl::StatusOr<std::vector<const CheckInfo*>> SelectChecks(const std::string& focus,
                                                           const std::string& skip) {
  return SelectRows(kSpec, focus, skip);
}

absl::StatusOr<RunReport> RunConformance(Target& target, const RunOptions& opts,
                                         const std::function<void(const CheckResult&)>& progress) {
  DevicePluginRunner runner(target, opts);
  CoreOptions core{opts.focus,
                   opts.skip,
                   opts.dir,
                   "devmgr-conformance",
                   "each session wipes it and serves kubelet.sock there",
                   opts.profile.name};
  return RunCatalogue(kSpec, runner, core, progress);
}

}  // namespace devmgr::conformance
