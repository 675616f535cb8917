// Placeholder: replaced by the real subcommand.
#include "cli/commands.h"

namespace devmgr::cli {
void AddSamplePluginCommand(CLI::App&, int*) {}
}  // namespace devmgr::cli
