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
// Every list whose order is Go map order on the kubelet's side is sorted.
#ifndef DEVMGR_SCENARIO_COMPARE_KUBELET_SNAPSHOT_H_
#define DEVMGR_SCENARIO_COMPARE_KUBELET_SNAPSHOT_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "manager/run_container_options.h"
#include "nlohmann/json.hpp"
#include "scenario/result.h"

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

// The pairing of the oracle's device IDs with devmgr's, per resource, for
// the devices the kubelet picks in Go map order.
class DeviceMap {
 public:
  // Pairs the oracle's devices of `resource` with devmgr's by signature
  // (id -> what holds it and, where it matters, its NUMA nodes): devices
  // already paired stay so; the others pair within groups of equal
  // signature, the same ID with itself first, then in sorted order. A group
  // whose sizes differ pairs nothing (the difference then shows).
  void Extend(const std::string& resource, const std::map<std::string, std::string>& o,
              const std::map<std::string, std::string>& d);
  // `s` with every paired oracle ID (as a whole token) renamed to devmgr's.
  std::string Rename(const std::string& s) const;
  // Renames every string in `j` and sorts every array of strings.
  void RenameJson(Json* j) const;
  bool empty() const { return renames_.empty(); }

 private:
  void Rebuild();
  std::map<std::string, std::map<std::string, std::string>> o2d_, d2o_;
  // oracle ID -> devmgr ID where they differ (an ID two resources pair
  // differently is left alone), longest first.
  std::vector<std::pair<std::string, std::string>> renames_;
};

// Pairs the devices the two sides' active containers hold, by the set of
// (pod, container) holding each and, unless `numa_blind`, its NUMA nodes.
void ExtendFromAllocations(const Json& oracle, const Json& devmgr, bool numa_blind, DeviceMap* map);

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

#endif  // DEVMGR_SCENARIO_COMPARE_KUBELET_SNAPSHOT_H_
