// Placeholder: replaced by the real subcommand.
#include "cli/commands.h"

namespace devmgr::cli {
void AddCheckpointCommand(CLI::App&, int*) {}
}  // namespace devmgr::cli
