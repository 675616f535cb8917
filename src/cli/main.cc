// devmgr: wiring only. Subcommands come from the table in commands.h.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "cli/commands.h"
#include "common/spellcheck.h"

#ifndef DEVMGR_VERSION  // set by CMake from project(VERSION)
#define DEVMGR_VERSION "0.0.0"
#endif

namespace {

using AddFn = void (*)(CLI::App&, int*);
constexpr AddFn kCommands[] = {
    devmgr::cli::AddServeCommand,           devmgr::cli::AddSamplePluginCommand,
    devmgr::cli::AddCheckpointCommand,      devmgr::cli::AddPodResourcesCommand,
    devmgr::cli::AddConformanceCommand,     devmgr::cli::AddRunCommand,
    devmgr::cli::AddSampleDraDriverCommand,
};

}  // namespace

int main(int argc, char** argv) {
  // absl's lock-order (deadlock) detection costs about a tenth of the
  // instructions of an admission and aborts the process on a cycle it
  // suspects. The product runs without it, like the kubelet; the unit and
  // integration tests (which do not run main) keep it on, and
  // DEVMGR_MUTEX_DEADLOCK_DETECTION=1 turns it on here to debug.
  if (const char* d = std::getenv("DEVMGR_MUTEX_DEADLOCK_DETECTION"); d == nullptr || *d != '1') {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  CLI::App app{
      "devmgr: the kubelet's Device Manager without a cluster. Runs the kubelet side of the\n"
      "device plugin API v1beta1 against real plugins, and inspects and repairs\n"
      "kubelet_internal_checkpoint files.",
      "devmgr"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("devmgr ") + DEVMGR_VERSION);
  int exit_code = devmgr::cli::kExitOk;
  for (AddFn add : kCommands) add(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    // Suggest a subcommand for a misspelt first word.
    if (argc > 1 && argv[1][0] != '-') {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      const std::string guess = devmgr::SpellCheck(argv[1], names);
      bool known = false;
      for (const auto& n : names) known |= n == argv[1];
      if (!known) {
        msg = "unknown command '" + std::string(argv[1]) + "'";
        if (!guess.empty()) msg += " (did you mean '" + guess + "'?)";
      }
    }
    std::cerr << "devmgr: " << msg << "\nRun 'devmgr --help' for usage.\n";
    return devmgr::cli::kExitUsage;
  }
  return exit_code;
}
