#include "conformance/dra_runner.h"

#include <filesystem>
#include <memory>
#include <utility>

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
                                                 const std::vector<const DraCheckInfo*>&,
                                                 const std::vector<const DraCheckInfo*>&) override {
    DraSessionOptions so;
    so.dir = dir;
    so.timeouts = opts_.timeouts;
    so.profile = opts_.profile;
    auto s = std::make_unique<DriverSession>(&target_, std::move(so));
    if (absl::Status st = s->session.Begin(); !st.ok()) return st;
    return std::unique_ptr<Session>(std::move(s));
  }

  void RemoveTempDir(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

 private:
  struct DriverSession : Session {
    DriverSession(DraTarget* target, DraSessionOptions so) : session(target, std::move(so)) {}
    Outcome Run(const DraCheckInfo& c) override { return c.run(session); }
    void End() override { session.End(); }
    DraSession session;
  };

  DraTarget& target_;
  const DraRunOptions& opts_;
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
