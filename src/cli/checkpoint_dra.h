// `devmgr checkpoint inspect|verify|diff|repair` for the DRA manager's
// dra_manager_state (src/dra/checkpoint.h). cmd_checkpoint.cc reads the
// input and hands a DRA file to these; the kubelet release whose struct
// layout is used to read Data is the newest (1.37), which reads every
// release's file.
#ifndef DEVMGR_CLI_CHECKPOINT_DRA_H_
#define DEVMGR_CLI_CHECKPOINT_DRA_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace devmgr::cli {

// True for a dra_manager_state: a file of that name, or any input (stdin
// too) whose top-level "Data" is a JSON string.
bool IsDraCheckpoint(const std::string& path, std::string_view bytes);

// Prints the inspect report of `bytes` (output: table, json or yaml) and
// returns the exit code (kExitUsage, with the error on stderr, when the
// file is not readable JSON of the checkpoint's shape).
int InspectDra(const std::string& name, const std::string& bytes, const std::string& output);

// The verify line of one file (with "\n"); false when it is corrupt:
//   "NAME: OK dra checksum N"
//   "NAME: CORRUPT dra checksum mismatch: stored N, computed M"
//   "NAME: CORRUPT dra parse error: <Go's JSON error> (offset N)"
//   "NAME: CORRUPT dra Data error: <Go's JSON error> (offset N)"
bool VerifyDraLine(const std::string& name, const std::string& bytes, std::string* line);

// Prints the semantic diff of two files (dra::Diff, plus checksum
// validity); returns kExitOk when equal, kExitFailed when they differ,
// kExitUsage when one is unreadable.
int DiffDra(const std::string& name_a, const std::string& a, const std::string& name_b,
            const std::string& b);

// The file with its checksum recomputed: Data is kept byte for byte and the
// outer JSON re-encoded as the kubelet writes it. Reports the checksum
// change on stderr. Fails (for the caller to print) when the outer JSON is
// not readable.
absl::StatusOr<std::string> RepairDra(const std::string& name, const std::string& bytes);

}  // namespace devmgr::cli

#endif  // DEVMGR_CLI_CHECKPOINT_DRA_H_
