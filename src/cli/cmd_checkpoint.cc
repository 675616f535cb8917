// `devmgr checkpoint inspect|verify|diff|repair|convert`: tools for people
// debugging a node's kubelet_internal_checkpoint, and (inspect, verify, diff,
// repair) the DRA manager's dra_manager_state (cmd_checkpoint_dra.cc). See
// docs/checkpoint-debugging.md and docs/checkpoint_format.md.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/file_store.h"
#include "checkpoint/inspect.h"
#include "cli/checkpoint_dra.h"
#include "cli/checkpoint_output.h"
#include "cli/commands.h"
#include "fmt/format.h"

namespace devmgr::cli {
namespace {

using checkpoint::Checkpoint;
using checkpoint::FormatVersion;
using checkpoint::VerifyResult;

// Larger inputs are refused rather than read (a real checkpoint is KBs).
constexpr size_t kMaxInputBytes = size_t{1} << 30;

const char* FormatName(FormatVersion f) { return f == FormatVersion::kV1 ? "v1" : "v2"; }

std::string DisplayName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

void Err(const std::string& cmd, const std::string& msg) {
  std::cerr << "devmgr checkpoint " << cmd << ": " << msg << "\n";
}

// Reads a whole file, or stdin for "-". Errors name the file.
absl::StatusOr<std::string> ReadInput(const std::string& path) {
  const std::string name = DisplayName(path);
  int fd = 0;
  if (path != "-") {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) return absl::NotFoundError(fmt::format("{}: no such file", name));
      return absl::FailedPreconditionError(
          fmt::format("{}: cannot open: {}", name, std::strerror(err)));
    }
  }
  struct stat st;
  std::string out;
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      if (fd != 0) ::close(fd);
      return absl::FailedPreconditionError(fmt::format(
          "{}: is a directory (the checkpoint is the file kubelet_internal_checkpoint inside it)",
          name));
    }
    if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) > kMaxInputBytes) {
      if (fd != 0) ::close(fd);
      return absl::FailedPreconditionError(
          fmt::format("{}: too large ({} bytes; limit {} bytes): not a kubelet checkpoint", name,
                      st.st_size, kMaxInputBytes));
    }
    if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (fd != 0) ::close(fd);
      return absl::FailedPreconditionError(
          fmt::format("{}: read error: {}", name, std::strerror(err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxInputBytes) {
      if (fd != 0) ::close(fd);
      return absl::FailedPreconditionError(fmt::format(
          "{}: too large (over {} bytes): not a kubelet checkpoint", name, kMaxInputBytes));
    }
  }
  if (fd != 0) ::close(fd);
  return out;
}

// Reads an input for the commands that need a parsed file. Prints the
// error and returns nullopt (exit code in *code) on failure.
std::optional<std::string> Read(const std::string& cmd, const std::string& path, int* code) {
  absl::StatusOr<std::string> bytes = ReadInput(path);
  if (!bytes.ok()) {
    Err(cmd, std::string(bytes.status().message()));
    *code = kExitUsage;
    return std::nullopt;
  }
  return std::move(*bytes);
}

// Decodes a device-manager checkpoint read by Read. Prints the error and
// returns nullopt (exit code in *code) on failure.
std::optional<VerifyResult> Load(const std::string& cmd, const std::string& path,
                                 const std::string& bytes, int* code) {
  if (bytes.empty()) {
    Err(cmd,
        fmt::format(
            "{}: empty file, not a checkpoint (a kubelet reading it fails with \"unexpected end of "
            "JSON input\" and starts with no devices allocated)",
            DisplayName(path)));
    *code = kExitUsage;
    return std::nullopt;
  }
  VerifyResult r = checkpoint::Verify(bytes);
  if (!r.parsed) {
    Err(cmd, fmt::format("{}: not a readable checkpoint: {}", DisplayName(path), r.error));
    *code = kExitUsage;
    return std::nullopt;
  }
  return r;
}

// Writes to stdout ("-" or empty path) or atomically to a file.
absl::Status WriteOutput(const std::string& path, const std::string& bytes) {
  if (path.empty() || path == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
        std::fflush(stdout) != 0) {
      return absl::InternalError("writing to stdout failed");
    }
    return absl::OkStatus();
  }
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(fmt::format("{}: is a directory", path));
  }
  return checkpoint::FileStore(dir, /*fsync=*/true).Write(name, bytes);
}

// ---- inspect ----
struct InspectOptions {
  std::string file;
  std::string output = "table";
};

int RunInspect(const InspectOptions& o) {
  int code = kExitOk;
  std::optional<std::string> bytes = Read("inspect", o.file, &code);
  if (!bytes) return code;
  if (IsDraCheckpoint(o.file, *bytes)) return InspectDra(DisplayName(o.file), *bytes, o.output);
  std::optional<VerifyResult> r = Load("inspect", o.file, *bytes, &code);
  if (!r) return code;
  if (o.output == "table") {
    std::cout << InspectTable(DisplayName(o.file), *r);
  } else {
    const nlohmann::ordered_json j = InspectJson(DisplayName(o.file), *r);
    if (o.output == "json") {
      std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    } else {
      std::cout << ToYaml(j);
    }
  }
  std::cout.flush();
  return kExitOk;
}

// ---- verify ----
int RunVerify(const std::vector<std::string>& files) {
  int code = kExitOk;
  for (const std::string& file : files) {
    const std::string name = DisplayName(file);
    absl::StatusOr<std::string> bytes = ReadInput(file);
    if (!bytes.ok()) {
      std::string why(bytes.status().message());
      if (why.rfind(name + ": ", 0) == 0) why.erase(0, name.size() + 2);
      std::cout << fmt::format("{}: ERROR {}\n", name, why);
      code = kExitUsage;
      continue;
    }
    if (IsDraCheckpoint(file, *bytes)) {
      std::string line;
      if (!VerifyDraLine(name, *bytes, &line) && code == kExitOk) code = kExitFailed;
      std::cout << line;
      continue;
    }
    const VerifyResult r = checkpoint::VerifyOnly(*bytes);
    if (r.valid) {
      std::cout << fmt::format("{}: OK {} checksum {}\n", name, FormatName(r.format), r.stored);
      continue;
    }
    if (code == kExitOk) code = kExitFailed;
    if (!r.parsed) {
      std::cout << fmt::format("{}: CORRUPT v2 parse error: {}{}\n", name, r.error,
                               bytes->empty() ? " (empty file)" : "");
    } else {
      std::cout << fmt::format("{}: CORRUPT {} checksum mismatch: stored {}, computed {}\n", name,
                               FormatName(r.format), r.stored, r.computed);
    }
  }
  std::cout.flush();
  return code;
}

// ---- diff ----
struct DiffOptions {
  std::string a;
  std::string b;
};

int RunDiff(const DiffOptions& o) {
  int code = kExitOk;
  std::optional<std::string> bytes_a = Read("diff", o.a, &code);
  if (!bytes_a) return code;
  std::optional<std::string> bytes_b = Read("diff", o.b, &code);
  if (!bytes_b) return code;
  const bool dra_a = IsDraCheckpoint(o.a, *bytes_a);
  if (dra_a != IsDraCheckpoint(o.b, *bytes_b)) {
    Err("diff",
        fmt::format("{} is a {} and {} a {}: nothing to compare", DisplayName(o.a),
                    dra_a ? "dra_manager_state" : "device-manager checkpoint", DisplayName(o.b),
                    dra_a ? "device-manager checkpoint" : "dra_manager_state"));
    return kExitUsage;
  }
  if (dra_a) return DiffDra(DisplayName(o.a), *bytes_a, DisplayName(o.b), *bytes_b);
  std::optional<VerifyResult> a = Load("diff", o.a, *bytes_a, &code);
  if (!a) return code;
  std::optional<VerifyResult> b = Load("diff", o.b, *bytes_b, &code);
  if (!b) return code;
  std::vector<std::string> lines;
  if (a->valid != b->valid) {
    lines.push_back(fmt::format("~ checksum: {} -> {}", a->valid ? "valid" : "CORRUPT",
                                b->valid ? "valid" : "CORRUPT"));
  }
  for (std::string& l : checkpoint::Diff(a->checkpoint, b->checkpoint))
    lines.push_back(std::move(l));
  for (const std::string& l : lines) std::cout << l << "\n";
  std::cout.flush();
  return lines.empty() ? kExitOk : kExitFailed;
}

// ---- repair ----
struct RepairOptions {
  std::string file;
  std::string output;
  bool in_place = false;
  std::vector<std::string> drop_pods;
};

std::string BackupPath(const std::string& file) {
  struct stat st;
  std::string path = file + ".bak";
  for (int i = 1; ::lstat(path.c_str(), &st) == 0; ++i) path = fmt::format("{}.bak.{}", file, i);
  return path;
}

// What repair did, on stderr: each --drop-pod, and the checksum.
void ReportRepair(const std::string& name, const std::vector<std::string>& drop_pods,
                  const std::vector<size_t>& dropped, const VerifyResult& r, const Checkpoint& cp) {
  for (size_t i = 0; i < drop_pods.size(); ++i) {
    const std::string pod = checkpoint::Printable(drop_pods[i]);
    if (dropped[i] == 0) {
      std::cerr << fmt::format("warning: no entry of pod {} in {}\n", pod, name);
    } else {
      std::cerr << fmt::format("dropped {} entr{} of pod {}\n", dropped[i],
                               dropped[i] == 1 ? "y" : "ies", pod);
    }
  }
  if (r.valid && cp.checksum == r.stored) {
    std::cerr << fmt::format("{}: checksum {} was already valid ({})\n", name, cp.checksum,
                             FormatName(cp.format));
  } else {
    std::cerr << fmt::format("{}: checksum {} -> {} ({})\n", name, r.stored, cp.checksum,
                             FormatName(cp.format));
  }
}

// The repaired file (checksum recomputed, pods dropped); the report on
// stderr.
absl::StatusOr<std::string> RepairBytes(const RepairOptions& o, const std::string& name,
                                        const std::string& original) {
  if (IsDraCheckpoint(o.file, original)) {
    if (!o.drop_pods.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: --drop-pod is not supported for a dra_manager_state (dropping a claim would skip "
          "its NodeUnprepareResources)",
          name));
    }
    return RepairDra(name, original);
  }
  VerifyResult r = checkpoint::Verify(original);
  if (!r.parsed) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: not a readable checkpoint: {}; refusing to repair (fix the JSON by hand first)", name,
        r.error));
  }
  Checkpoint cp = std::move(r.checkpoint);
  const std::vector<size_t> dropped = checkpoint::DropPods(&cp, o.drop_pods);
  checkpoint::Rechecksum(&cp);
  ReportRepair(name, o.drop_pods, dropped, r, cp);
  return checkpoint::Encode(cp);
}

int RunRepair(const RepairOptions& o) {
  if (o.in_place && o.file == "-") {
    Err("repair", "--in-place needs a file, not stdin");
    return kExitUsage;
  }
  absl::StatusOr<std::string> original = ReadInput(o.file);
  if (!original.ok()) {
    Err("repair", std::string(original.status().message()));
    return kExitUsage;
  }
  const std::string name = DisplayName(o.file);
  if (original->empty()) {
    Err("repair",
        fmt::format(
            "{}: empty file; refusing to repair (there is nothing to recover: delete it and "
            "the kubelet starts with no devices allocated)",
            name));
    return kExitUsage;
  }
  absl::StatusOr<std::string> repaired = RepairBytes(o, name, *original);
  if (!repaired.ok()) {
    Err("repair", std::string(repaired.status().message()));
    return kExitUsage;
  }
  const std::string& bytes = *repaired;
  std::string out = o.output;
  if (o.in_place) {
    const std::string backup = BackupPath(o.file);
    absl::Status s = WriteOutput(backup, *original);
    if (!s.ok()) {
      Err("repair", fmt::format("cannot write backup {}: {}", backup, std::string(s.message())));
      return kExitUsage;
    }
    std::cerr << fmt::format("backup: {}\n", backup);
    out = o.file;
  }
  absl::Status s = WriteOutput(out, bytes);
  if (!s.ok()) {
    Err("repair", std::string(s.message()));
    return kExitUsage;
  }
  if (!out.empty() && out != "-") std::cerr << fmt::format("wrote {}\n", out);
  return kExitOk;
}

// ---- convert ----
struct ConvertOptions {
  std::string file;
  std::string to;
  std::string output;
  bool force = false;
};

int RunConvert(const ConvertOptions& o) {
  int code = kExitOk;
  std::optional<std::string> bytes = Read("convert", o.file, &code);
  if (!bytes) return code;
  const std::string name = DisplayName(o.file);
  if (IsDraCheckpoint(o.file, *bytes)) {
    Err("convert", fmt::format("{}: a dra_manager_state has one format; convert is for the "
                               "device manager's checkpoint (v1/v2)",
                               name));
    return kExitUsage;
  }
  std::optional<VerifyResult> r = Load("convert", o.file, *bytes, &code);
  if (!r) return code;
  if (!r->valid && !o.force) {
    Err("convert",
        fmt::format("{}: checksum mismatch (stored {}, computed {}); converting would hide the "
                    "corruption: run `devmgr checkpoint repair` first, or pass --force",
                    name, r->stored, r->computed));
    return kExitFailed;
  }
  const Checkpoint& in = r->checkpoint;
  Checkpoint out;
  if (o.to == "v2") {
    out = in.format == FormatVersion::kV2 ? checkpoint::MakeV2(in.data)
                                          : checkpoint::ConvertV1ToV2(in);
    if (in.format == FormatVersion::kV2) out.boot_id = in.boot_id;
    if (in.format == FormatVersion::kV1)
      std::cerr << "note: V1 records no NUMA node; every device is put on NUMA node 0, as kubelet "
                   "1.30 does\n";
  } else {
    out = in.format == FormatVersion::kV1 ? in : checkpoint::ConvertV2ToV1(in);
    checkpoint::Rechecksum(&out);
    if (in.format == FormatVersion::kV2) {
      std::cerr << "note: V1 has no NUMA nodes (device lists are concatenated) and no BootID; only "
                   "kubelets "
                   "<= 1.19 write it and only <= 1.30 read it\n";
    }
  }
  if (in.format == out.format)
    std::cerr << fmt::format("note: {} is already {}; re-encoded\n", name, o.to);
  absl::Status s = WriteOutput(o.output, checkpoint::Encode(out));
  if (!s.ok()) {
    Err("convert", std::string(s.message()));
    return kExitUsage;
  }
  return kExitOk;
}

constexpr char kExitCodesFooter[] =
    "\nExit codes: 0 ok; 1 a file is corrupt (or, for diff, the files differ); 2 usage error, "
    "unreadable "
    "or unparseable input, I/O error.\nEvery FILE may be '-' for stdin.";

}  // namespace

void AddCheckpointCommand(CLI::App& app, int* exit_code) {
  CLI::App* cp = app.add_subcommand(
      "checkpoint",
      "Inspect, verify, diff, repair and convert the kubelet's device-manager checkpoint "
      "(/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint) without a kubelet. "
      "inspect, verify, diff and repair also read the DRA manager's checkpoint "
      "(/var/lib/kubelet/dra_manager_state), recognised by its name or by its shape (a JSON "
      "string as Data; CRC32 checksum).");
  cp->require_subcommand(1);
  cp->footer(kExitCodesFooter);

  auto inspect = std::make_shared<InspectOptions>();
  CLI::App* ins =
      cp->add_subcommand("inspect",
                         "Show what a checkpoint says: format (v1/v2), BootID, checksum state, "
                         "every pod/container/resource "
                         "with its devices per NUMA node and its decoded AllocResp (envs, mounts, "
                         "device specs, annotations, "
                         "CDI devices), the registered devices, and warnings (a device held by two "
                         "pods; an allocated device "
                         "missing from RegisteredDevices). Works on corrupt files too.");
  ins->add_option("FILE", inspect->file, "checkpoint file, or - for stdin")->required();
  ins->add_option("-o,--output", inspect->output, "output format: table (default), json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  ins->footer(kExitCodesFooter);
  ins->callback([inspect, exit_code] { *exit_code = RunInspect(*inspect); });

  auto verify = std::make_shared<std::vector<std::string>>();
  CLI::App* ver = cp->add_subcommand(
      "verify",
      "Check each file's checksum exactly as the kubelet does (FNV-1a over the go-spew text; V2, "
      "with V1 "
      "as the fallback of 1.20-1.30 kubelets). One line per file: 'FILE: OK <format> checksum N', "
      "'FILE: CORRUPT <format> checksum mismatch: stored N, computed M', 'FILE: CORRUPT v2 parse "
      "error: "
      "<Go's JSON error> (offset N)' or 'FILE: ERROR <why>'. Exit 0 when all are OK, 1 when any is "
      "corrupt, "
      "2 when a file cannot be read.");
  ver->add_option("FILE", *verify, "checkpoint files, or - for stdin")->required();
  ver->footer(std::string(kExitCodesFooter) +
              "\nA dra_manager_state gets 'FILE: OK dra checksum N', 'FILE: CORRUPT dra checksum "
              "mismatch: stored N, computed M', 'FILE: CORRUPT dra parse error: ...' or 'FILE: "
              "CORRUPT dra Data error: ...' (Data is not the JSON of the claim state).");
  ver->callback([verify, exit_code] { *exit_code = RunVerify(*verify); });

  auto diff = std::make_shared<DiffOptions>();
  CLI::App* dif = cp->add_subcommand("diff",
                                     "Semantic difference between two checkpoints: entries "
                                     "added/removed (+/-), devices added, removed "
                                     "or moved between NUMA nodes, AllocResp changes, registered "
                                     "devices changed, entry order, format, "
                                     "BootID and checksum validity. Entries match by (pod, "
                                     "container, resource). Exit 0 when equal, 1 "
                                     "when they differ.");
  dif->add_option("A", diff->a, "old checkpoint (or -)")->required();
  dif->add_option("B", diff->b, "new checkpoint (or -)")->required();
  dif->footer(kExitCodesFooter);
  dif->callback([diff, exit_code] { *exit_code = RunDiff(*diff); });

  auto repair = std::make_shared<RepairOptions>();
  CLI::App* rep = cp->add_subcommand(
      "repair",
      "Recompute the checksum of a checkpoint (after a human edit, or to accept a corrupt one), "
      "optionally dropping every entry of given pods first (--drop-pod, repeatable): the surgical "
      "alternative to deleting the file. The file is re-encoded exactly as the kubelet writes it. "
      "Writes "
      "to stdout, to -o OUT, or over FILE with --in-place (the original is kept as FILE.bak, or "
      "FILE.bak.N if that exists). Refuses input that is not parseable JSON of the checkpoint "
      "shape. "
      "Stop the kubelet before repairing its live checkpoint.");
  rep->add_option("FILE", repair->file, "checkpoint file, or - for stdin")->required();
  CLI::Option* out_opt =
      rep->add_option("-o,--output", repair->output, "write the repaired file here");
  CLI::Option* in_place =
      rep->add_flag("--in-place", repair->in_place, "rewrite FILE (after a backup)");
  out_opt->excludes(in_place);
  rep->add_option("--drop-pod", repair->drop_pods,
                  "remove the entries of this pod UID (repeatable)")
      ->take_last()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  rep->footer(kExitCodesFooter);
  rep->callback([repair, exit_code] { *exit_code = RunRepair(*repair); });

  auto convert = std::make_shared<ConvertOptions>();
  CLI::App* con = cp->add_subcommand("convert",
                                     "Convert between the V2 format (kubelet 1.20+) and the V1 "
                                     "format (kubelet <= 1.19). V1 -> V2 puts "
                                     "every device on NUMA node 0, as kubelet 1.30's migration "
                                     "does; V2 -> V1 concatenates the per-NUMA "
                                     "lists. The checksum is recomputed for the target format. "
                                     "Refuses a corrupt input unless --force.");
  con->add_option("FILE", convert->file, "checkpoint file, or - for stdin")->required();
  con->add_option("--to", convert->to, "target format: v2 or v1")
      ->required()
      ->check(CLI::IsMember({"v2", "v1"}));
  con->add_option("-o,--output", convert->output, "write here instead of stdout");
  con->add_flag("--force", convert->force, "convert even when the input checksum is wrong");
  con->footer(kExitCodesFooter);
  con->callback([convert, exit_code] { *exit_code = RunConvert(*convert); });

  AddCheckpointDoctorCommand(*cp, exit_code);
}

}  // namespace devmgr::cli
