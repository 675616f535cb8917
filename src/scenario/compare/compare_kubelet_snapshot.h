// What `devmgr run --compare-kubelet` observes on each side, in one JSON
// shape, and how two observations are compared (compare_kubelet.h).
//
// A snapshot:
//   node:        {capacity: {res: n}, allocatable: {res: n}} (node status)
//   devices:     {res: {id: {numa: [nodes]}}} (healthy devices only, as
//                GetAllocatableDevices has them)
//   admission:   {uid: {admitted, reason, message, deleted}}
//   allocations: {uid: {container: {res: [ids]}}} (active pods)
//   options:     {uid: {container: runtime options | {failed: message}}}
//   calls:       {plugin: {received: [...], sent: [...]}}, each call
//                {kind, method, args, error, code}, this step's, in order
//                (a plugin logs what it sent once the answer is back, so
//                the two lists interleave by timing only)
//   checkpoint:  null | {entries: [...], registered: {res: [ids]}} | {unreadable}
//   affinity:    {uid: {container: [NUMA nodes]}}: the topology manager's
//                stored affinity of each container that holds devices
// Every list whose order is Go map order on the kubelet's side is sorted.
#ifndef DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_SNAPSHOT_H_
#define DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_SNAPSHOT_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "manager/run_container_options.h"
#include "nlohmann/json.hpp"
#include "scenario/report/result.h"

namespace devmgr::scenario::compare {

using Json = nlohmann::json;

// devmgr's merged runtime options, normalized.
Json OptionsJson(const manager::RunContainerOptions& o);
// The oracle's DeviceRunContainerOptions (Go field names), normalized.
Json OracleOptionsJson(const Json& go);
// A checkpoint file's content, normalized ("" bytes: no file).
Json CheckpointJson(const std::string& bytes, bool exists);
// Call-log records (the sample plugin's format), normalized.
Json CallsJson(const std::vector<nlohmann::json>& records);

// The pairing of the oracle's device IDs with devmgr's, per resource: a
// renaming under which the oracle's run is devmgr's. The kubelet picks
// devices from Go sets (map order), so any pick that differs from the
// oracle's only by devices the kubelet's code cannot tell apart is one the
// kubelet could have made; the signatures say what it can tell apart.
class DeviceMap {
 public:
  // Pairs the oracle's devices of `resource` with devmgr's by signature
  // (id -> what the kubelet's pick can tell apart): a pair of the previous
  // step stays while both devices still have one signature; the others
  // pair within groups of equal signature, the same ID with itself first,
  // then in sorted order. A group whose sizes differ pairs nothing (the
  // difference then shows).
  void Extend(const std::string& resource, const std::map<std::string, std::string>& o,
              const std::map<std::string, std::string>& d);
  // devmgr's device paired with the oracle's `id` of `resource`, or "".
  std::string Partner(const std::string& resource, const std::string& id) const;
  // `s` with every paired oracle ID (as a whole token) renamed to devmgr's.
  std::string Rename(const std::string& s) const;
  // Renames every string in `j` and sorts every array of strings.
  void RenameJson(Json* j) const;
  bool empty() const { return renames_.empty(); }
  // Every pair, resource -> oracle ID -> devmgr ID.
  const std::map<std::string, std::map<std::string, std::string>>& pairs() const { return o2d_; }

 private:
  void Rebuild();
  std::map<std::string, std::map<std::string, std::string>> o2d_;
  // oracle ID -> devmgr ID where they differ (an ID two resources pair
  // differently is left alone), longest first.
  std::vector<std::pair<std::string, std::string>> renames_;
};

// The kubelet's admission order: pods in the order they were admitted,
// each with its containers in the order it allocates them (init containers
// first); `reuses`: a non-restartable init container, whose devices the
// later containers of the pod take first.
struct PodOrder {
  std::string uid;
  std::vector<std::pair<std::string, bool>> containers;  // name, reuses
};

// The renamings of one run: `global` for whatever no container owns (RPC
// arguments, free devices), and one per container ("uid/name") for its own
// devices, runtime options and checkpoint entries, fixed at the step that
// allocated them.
struct Pairing {
  DeviceMap global;
  std::map<std::string, DeviceMap> containers;
  // The keys of `containers` in the order the kubelet allocated them (the
  // order of its Allocate calls).
  std::vector<std::string> allocation_order;
  // The renaming of a container's data.
  const DeviceMap& For(const std::string& uid, const std::string& name) const;
};

// Pairs the devices of both sides for one step, from `*_before` (the
// observations after the previous step; nullptr at the set-up) to the
// observations after it. Each container that got devices in the step is
// replayed in `order`, as the kubelet allocates them one by one, and at
// each the devices are paired by what the kubelet's pick can tell apart:
// a device another container holds keeps its partner; a free one is known
// only by filterByAffinity's class (a NUMA node inside the picking
// container's stored affinity, only others, none; each side its own
// devices against its own "affinity"); the pod's reusable devices (from its
// init containers) are all alike; and whether the container took it. Then
// the step's other changes (pods deleted, devices forgotten) pair devices by
// the pods holding them, free ones by NUMA nodes (the oracle's through their
// partners). `numa_blind` (the "none" policy): NUMA nodes play no part.
void PairStep(const Json* oracle_before, const Json& oracle, const Json* devmgr_before,
              const Json& devmgr, const std::vector<PodOrder>& order, bool numa_blind, Pairing* p);

// The oracle's snapshot renamed through `p`: allocations, runtime options
// and checkpoint entries per container, each Allocate call with the
// renaming of the container whose devices it asks for, the rest globally.
// Checkpoint entries whose devices' partners lie on other NUMA nodes are
// regrouped under devmgr's NUMA keys; `crossed_numa` (optional) tells
// whether any pair does (equally valid picks that spread devices over the
// NUMA nodes differently).
Json RenameOracle(const Pairing& p, const Json& oracle, const Json& devmgr, bool* crossed_numa);

// The "affinity" part of a snapshot: for each container `allocations`
// lists, `affinity(uid, name)` (NUMA nodes; null: none stored) when set.
Json HolderAffinities(const Json& allocations,
                      const std::function<Json(const std::string&, const std::string&)>& affinity);

// Each checkpoint entry's devices as one sorted list under "any" (for runs
// where NUMA nodes play no part in which devices the kubelet picks).
void FlattenCheckpointNuma(Json* snapshot);

// Every string of `j` that is a list of two or more of `ids` separated by
// commas (or spaces) gets its items sorted: a plugin that joins the device
// IDs of a request (e.g. into an env) follows the request's order, which is
// Go map order on the kubelet's side.
void SortIdLists(Json* j, const std::set<std::string>& ids);

// Every device ID the snapshot's device sets name.
std::set<std::string> DeviceIds(const Json& snapshot);

// Replaces `from` by `to` in every string of `j` (each side's device-plugin
// directory becomes one placeholder).
void ReplaceInStrings(Json* j, const std::string& from, const std::string& to);
inline constexpr char kPluginDirPlaceholder[] = "$DEVICE_PLUGIN_DIR";

// Sorts every array of strings (the devmgr side's normalization).
void SortStringArrays(Json* j);

// The differences between `kubelet` (expected) and `devmgr` (actual), by
// path ("node.capacity['example.com/gpu']").
std::vector<Failure> Diff(const Json& kubelet, const Json& devmgr, const Location& loc);

}  // namespace devmgr::scenario::compare

#endif  // DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_SNAPSHOT_H_
