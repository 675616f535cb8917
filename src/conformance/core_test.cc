// The conformance core over a catalogue of a third kind: a toy row type and
// a runner without a plugin, as a new catalogue would supply them.
#include "conformance/core.h"

#include <unistd.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::conformance {
namespace {

struct ToyCheck {
  std::string id;
  std::string title;
  Level level = Level::kMust;
  std::vector<std::string> tags;
  std::optional<CompanionInfo> companion;
  SessionUse session = SessionUse::kShared;
  int shared_rank = 0;
  std::function<Outcome()> run;
};

ToyCheck Row(std::string id, std::string title, SessionUse session, int rank,
             std::function<Outcome()> run) {
  ToyCheck c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.session = session;
  c.shared_rank = rank;
  c.run = std::move(run);
  return c;
}

const std::vector<ToyCheck>& ToyRows() {
  static const auto* const rows = [] {
    auto* v = new std::vector<ToyCheck>{
        Row("toy.needs-base", "Needs the base", SessionUse::kShared, 0,
            [] { return Outcome::Skip("no base (see toy.base)"); }),
        Row("toy.base", "The base", SessionUse::kShared, -1,
            [] { return Outcome::Pass("base up"); }),
        Row("toy.timed", "Timed", SessionUse::kShared, 0,
            [] { return Outcome::Pass("took 2 s").Companion(Outcome::Fail("over 1 s")); }),
        Row("toy.own", "Restarts", SessionUse::kOwn, 0, [] { return Outcome::Pass(); }),
    };
    (*v)[1].tags = {"[Slow]"};
    (*v)[2].companion = CompanionInfo{"toy.timed-tight", "Tight window"};
    (*v)[3].level = Level::kShould;
    return v;
  }();
  return *rows;
}

const CatalogueSpec<ToyCheck> kToySpec{ToyRows, "--focus matches no toy check",
                                       R"(\(see (toy\.[a-z-]+(, toy\.[a-z-]+)*)\))"};

class ToyRunner : public CheckRunner<ToyCheck> {
 public:
  struct ToySession : Session {
    explicit ToySession(std::vector<std::string>* ran) : ran(ran) {}
    Outcome Run(const ToyCheck& c) override {
      ran->push_back(c.id);
      return c.run();
    }
    void End() override {}
    std::vector<std::string>* ran;
  };

  std::string Describe() const override { return "toy"; }
  absl::StatusOr<std::unique_ptr<Session>> Begin(const std::string& dir,
                                                 const std::vector<const ToyCheck*>&,
                                                 const std::vector<const ToyCheck*>&) override {
    dirs.push_back(dir);
    return std::unique_ptr<Session>(std::make_unique<ToySession>(&ran));
  }
  void RemoveTempDir(const std::string& dir) override { ::rmdir(dir.c_str()); }

  std::vector<std::string> dirs;
  std::vector<std::string> ran;  // in run order
};

std::vector<std::string> Ids(const RunReport& r) {
  std::vector<std::string> out;
  for (const CheckResult& c : r.results) out.push_back(c.id);
  return out;
}

absl::StatusOr<RunReport> RunToys(ToyRunner& runner, const std::string& focus,
                                  const std::string& skip = "") {
  CoreOptions o{focus, skip, "", "devmgr-core-test", "toys play there", "1.35"};
  return RunCatalogue(kToySpec, runner, o, nullptr);
}

TEST(CoreTest, SelectsByIdTitleTagsAndCompanionLine) {
  auto tagged = SelectRows(kToySpec, "Slow", "");
  ASSERT_TRUE(tagged.ok());
  ASSERT_EQ(tagged->size(), 1u);
  EXPECT_EQ((*tagged)[0]->id, "toy.base");
  auto companion = SelectRows(kToySpec, "Tight window", "");
  ASSERT_TRUE(companion.ok());
  ASSERT_EQ(companion->size(), 1u);
  EXPECT_EQ((*companion)[0]->id, "toy.timed");
  EXPECT_EQ(SelectRows(kToySpec, "nothing", "").status().message(), "--focus matches no toy check");
  EXPECT_THAT(std::string(SelectRows(kToySpec, "", "(").status().message()),
              testing::StartsWith("--skip: invalid regular expression ("));
}

TEST(CoreTest, RunsTheSharedSessionByRankThenOwnSessionsInCatalogueOrder) {
  ToyRunner runner;
  absl::StatusOr<RunReport> r = RunToys(runner, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(runner.ran,
              testing::ElementsAre("toy.base", "toy.needs-base", "toy.timed", "toy.own"));
  EXPECT_EQ(r->sessions, 2);
  EXPECT_EQ(r->target, "toy");
  EXPECT_EQ(r->kubelet_version, "1.35");
  EXPECT_THAT(Ids(*r), testing::ElementsAre("toy.needs-base", "toy.base", "toy.timed",
                                            "toy.timed-tight", "toy.own"));
  EXPECT_EQ(r->results[3].outcome.message, "over 1 s");
  EXPECT_EQ(r->results[3].level, Level::kShould);
  EXPECT_TRUE(r->MustPassed());  // the failure is a SHOULD companion's
  EXPECT_EQ(r->Count(Status::kFail), 1);
  // The temporary directory is gone.
  ASSERT_EQ(runner.dirs.size(), 2u);
  EXPECT_NE(::access(runner.dirs[0].c_str(), F_OK), 0);
}

TEST(CoreTest, RunsAPrerequisiteASkipPointsAtUnlessSkipped) {
  ToyRunner runner;
  absl::StatusOr<RunReport> r = RunToys(runner, "^toy\\.needs-base ");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Ids(*r), testing::ElementsAre("toy.needs-base", "toy.base"));
  EXPECT_EQ(r->results[1].outcome.message,
            "(not selected; run because toy.needs-base depends on it) base up");
  ToyRunner skipped;
  r = RunToys(skipped, "^toy\\.needs-base ", "toy\\.base ");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Ids(*r), testing::ElementsAre("toy.needs-base"));
}

}  // namespace
}  // namespace devmgr::conformance
