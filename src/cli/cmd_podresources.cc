// devmgr podresources: a small PodResources v1 client (list, allocatable,
// get NS/NAME) for devmgr's socket or a real kubelet's.
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "podresources/client.h"
#include "podresources/json.h"

namespace devmgr::cli {
namespace {

struct PodResourcesOptions {
  std::string socket = podresources::kDefaultKubeletSocket;
  std::string output = "table";
  double timeout_seconds = 10;
  std::string pod;  // NS/NAME or NAME (namespace "default")
};

template <typename Resp>
int Print(const absl::StatusOr<Resp>& r, const PodResourcesOptions& o) {
  if (!r.ok()) {
    std::cerr << "devmgr podresources: " << r.status().message() << "\n";
    const auto code = r.status().code();
    return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded
               ? kExitEnvironment
               : kExitFailed;
  }
  if (o.output == "json") {
    std::cout << podresources::ToJson(*r).dump(2) << "\n";
  } else {
    std::cout << podresources::ToTable(*r);
  }
  return kExitOk;
}

void AddCommonFlags(CLI::App* sub, const std::shared_ptr<PodResourcesOptions>& o) {
  sub->add_option("--socket", o->socket,
                  "PodResources socket: devmgr serve's --pod-resources-socket, or a kubelet's")
      ->capture_default_str();
  sub->add_option("-o,--output", o->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--timeout", o->timeout_seconds, "Seconds to wait for an answer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

}  // namespace

void AddPodResourcesCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<PodResourcesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "podresources",
      "Query a PodResources v1 API socket (devmgr serve --pod-resources-socket, or a real\n"
      "kubelet's /var/lib/kubelet/pod-resources/kubelet.sock): which devices each pod's\n"
      "containers hold, and which devices are allocatable.");
  cmd->require_subcommand(1);
  auto client = [o] {
    return std::make_unique<podresources::Client>(
        o->socket, absl::Milliseconds(static_cast<int64_t>(o->timeout_seconds * 1000)));
  };

  CLI::App* list = cmd->add_subcommand("list", "List: every pod's containers and their devices");
  AddCommonFlags(list, o);
  list->callback([o, exit_code, client] { *exit_code = Print(client()->List(), *o); });

  CLI::App* alloc = cmd->add_subcommand(
      "allocatable", "GetAllocatableResources: the healthy devices of every resource");
  AddCommonFlags(alloc, o);
  alloc->callback(
      [o, exit_code, client] { *exit_code = Print(client()->GetAllocatableResources(), *o); });

  CLI::App* get = cmd->add_subcommand(
      "get", "Get: one pod (needs the KubeletPodResourcesGet gate on the server)");
  get->add_option("pod", o->pod, "NAMESPACE/NAME, or NAME in namespace default")->required();
  AddCommonFlags(get, o);
  get->callback([o, exit_code, client] {
    std::string ns = "default";
    std::string name = o->pod;
    if (const size_t slash = o->pod.find('/'); slash != std::string::npos) {
      ns = o->pod.substr(0, slash);
      name = o->pod.substr(slash + 1);
    }
    *exit_code = Print(client()->Get(ns, name), *o);
  });
}

}  // namespace devmgr::cli
