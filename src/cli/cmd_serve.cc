// Placeholder: replaced by the real subcommand.
#include "cli/commands.h"

namespace devmgr::cli {
void AddServeCommand(CLI::App&, int*) {}
}  // namespace devmgr::cli
