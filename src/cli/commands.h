// The subcommand table: each subcommand lives in its own cmd_<name>.cc and
// registers itself on the root CLI11 app through one Add...Command function.
#ifndef DEVMGR_CLI_COMMANDS_H_
#define DEVMGR_CLI_COMMANDS_H_

#include "CLI/CLI.hpp"

namespace devmgr::cli {

// Fixed, documented exit codes (README "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // a check/scenario failed, a file is corrupt
inline constexpr int kExitUsage = 2;        // bad flags, bad input files
inline constexpr int kExitEnvironment = 3;  // sockets, permissions, missing tools

// Each adds one subcommand to `app`. When the subcommand runs, its exit code
// is stored in *exit_code.
void AddServeCommand(CLI::App& app, int* exit_code);
void AddSamplePluginCommand(CLI::App& app, int* exit_code);
void AddSampleDraDriverCommand(CLI::App& app, int* exit_code);
void AddCheckpointCommand(CLI::App& app, int* exit_code);
void AddPodResourcesCommand(CLI::App& app, int* exit_code);
void AddConformanceCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);
// `checkpoint doctor`, added under the checkpoint subcommand.
void AddCheckpointDoctorCommand(CLI::App& checkpoint, int* exit_code);

}  // namespace devmgr::cli

#endif  // DEVMGR_CLI_COMMANDS_H_
