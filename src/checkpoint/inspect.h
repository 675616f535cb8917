// Analysis of a decoded checkpoint for people debugging a node (the
// `devmgr checkpoint` tools): the AllocResp of each entry decoded, findings
// (double allocation, allocated devices not registered), a semantic diff,
// and the edits `repair` and `convert` make.
#ifndef DEVMGR_CHECKPOINT_INSPECT_H_
#define DEVMGR_CHECKPOINT_INSPECT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"

namespace devmgr::checkpoint {

// A v1beta1.ContainerAllocateResponse as plain data (maps sorted by key).
struct AllocRespView {
  struct Mount {
    std::string container_path;
    std::string host_path;
    bool read_only = false;
  };
  struct Device {
    std::string container_path;
    std::string host_path;
    std::string permissions;
  };
  size_t size = 0;  // serialized bytes
  bool ok = true;   // false: the bytes are not a ContainerAllocateResponse
  std::vector<std::pair<std::string, std::string>> envs;
  std::vector<Mount> mounts;
  std::vector<Device> devices;
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<std::string> cdi_devices;
};
AllocRespView DecodeAllocResp(const std::string& bytes);

// The V2 view of any checkpoint: V2 data as is, V1 data with every entry on
// NUMA node 0 (as ConvertV1ToV2; note the kubelet never recorded V1 NUMA).
CheckpointData DataAsV2(const Checkpoint& cp);

// Human-readable warnings, in a stable order:
//  - "double allocation: device <resource>/<id> is held by pod <a> container
//    <c> and pod <b> container <d>" (entries of two different pods);
//  - "device <resource>/<id> allocated to pod <p> container <c> is not in
//    RegisteredDevices" (also when the resource is not registered at all).
std::vector<std::string> Warnings(const CheckpointData& data);

// Removes every entry whose PodUID is in `pod_uids`. Returns the number of
// entries removed per UID (0 for UIDs that matched nothing). When entries
// were removed and none remain, the list becomes nil, as the kubelet writes
// it. Works on the V2 or V1 data according to cp->format; the stored
// checksum is NOT updated.
std::vector<size_t> DropPods(Checkpoint* cp, const std::vector<std::string>& pod_uids);

// Sets cp->checksum to the computed checksum under its format's rule.
void Rechecksum(Checkpoint* cp);

// V2 -> V1 (for `convert --to v1`): each entry's device lists concatenated
// in NUMA order (nil DeviceIDs stay nil), BootID dropped, V1 checksum set.
Checkpoint ConvertV2ToV1(const Checkpoint& v2);

// A semantic difference between two checkpoints, one line per change:
//   "+ entry pod=P container=C resource=R devices=[0:a,b 1:c]"
//   "- entry ..."
//   "~ entry pod=P container=C resource=R: device d moved NUMA 0 -> 1"
//   "~ entry ...: device d added (NUMA 1)" / "... removed (NUMA 0)"
//   "~ entry ...: AllocResp changed (N -> M bytes)"
//   "+ registered R: [a b]" / "- registered R" / "~ registered R: +x -y"
//   "~ format: v1 -> v2", "~ BootID: a -> b"
// Entries are matched by (pod, container, resource), in order of appearance.
std::vector<std::string> Diff(const Checkpoint& a, const Checkpoint& b);

// Shows a user string in a one-line report: as is when it is non-empty
// printable text without spaces, else Go-quoted.
std::string Printable(const std::string& s);

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_INSPECT_H_
