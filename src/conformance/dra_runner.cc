#include "conformance/dra_runner.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "apiserver/faults.h"
#include "dra/services.h"
#include "fmt/format.h"

namespace devmgr::conformance {
namespace {

const CatalogueSpec<DraCheckInfo> kSpec{
    DraCatalogue,
    "--focus matches no check of the DRA catalogue (it is matched against \"<id> <title> "
    "[tags]\"; see --dra --list)",
    R"(\(see (dra\.[a-z.-]+(, dra\.[a-z.-]+)*)\))",
};

// Runs DRA checks in DraSessions (a kubelet root, the API endpoint, the
// plugin manager with the DRAPlugin handler, the driver started).
class DraRunner : public CheckRunner<DraCheckInfo> {
 public:
  DraRunner(DraTarget& target, const DraRunOptions& opts) : target_(target), opts_(opts) {}

  std::string Describe() const override { return target_.Describe(); }

  absl::StatusOr<std::unique_ptr<Session>> Begin(const std::string& dir,
                                                 const std::vector<const DraCheckInfo*>& rows,
                                                 const std::vector<const DraCheckInfo*>&) override {
    DraSessionOptions so;
    so.dir = dir;
    so.timeouts = opts_.timeouts;
    so.profile = opts_.profile;
    so.api_faults = opts_.api_faults;
    auto s = std::make_unique<DriverSession>(this, &target_, std::move(so));
    s->shared = !rows.empty() && rows.front()->session == SessionUse::kShared;
    if (absl::Status st = s->session.Begin(); !st.ok()) return st;
    return std::unique_ptr<Session>(std::move(s));
  }

  // A check of its own session needs a registered driver with slices: when
  // the shared session showed either missing, it is not given one.
  std::string KnownUnmet(const DraCheckInfo&) override {
    if (registered_.has_value() && !*registered_) {
      return "the driver never registered (see dra.registration, dra.services)";
    }
    if (published_.has_value() && !*published_) {
      return "the driver published no complete ResourceSlice pool (see dra.slices)";
    }
    return "";
  }

  void RemoveTempDir(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

 private:
  struct DriverSession : Session {
    DriverSession(DraRunner* runner, DraTarget* target, DraSessionOptions so)
        : runner(runner), session(target, std::move(so)) {}
    Outcome Run(const DraCheckInfo& c) override { return c.run(session); }
    void End() override {
      if (shared) {
        runner->registered_ = !session.Driver().empty();
        if (*runner->registered_) runner->published_ = session.SlicesPublished();
      }
      session.End();
    }
    DraRunner* const runner;
    bool shared = false;
    DraSession session;
  };

  DraTarget& target_;
  const DraRunOptions& opts_;
  // What the shared session showed (unset before it ran, or when it did not
  // look).
  std::optional<bool> registered_;
  std::optional<bool> published_;
};

}  // namespace

absl::StatusOr<std::vector<const DraCheckInfo*>> SelectDraChecks(const std::string& focus,
                                                                 const std::string& skip) {
  return SelectRows(kSpec, focus, skip);
}

absl::StatusOr<RunReport> RunDraConformance(
    DraTarget& target, const DraRunOptions& opts,
    const std::function<void(const CheckResult&)>& progress) {
  if (opts.profile.minor < dra::kOldestDraMinor) {
    return absl::InvalidArgumentError(
        fmt::format("the DRA catalogue needs kubelet 1.{} or newer (got {})", dra::kOldestDraMinor,
                    opts.profile.name));
  }
  for (const std::string& spec : opts.api_faults) {
    if (absl::StatusOr<apiserver::Fault> f = apiserver::ParseFault(spec); !f.ok())
      return f.status();
  }
  DraRunner runner(target, opts);
  CoreOptions core{opts.focus,
                   opts.skip,
                   opts.dir,
                   "devmgr-dra-conformance",
                   "each session re-creates plugins_registry, plugins and cdi there",
                   opts.profile.name};
  return RunCatalogue(kSpec, runner, core, progress);
}

}  // namespace devmgr::conformance
