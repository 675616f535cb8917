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
  // Pairs the oracle's choice `o` with devmgr's `d` for `resource`:
  // already paired IDs must stay paired, the same ID on both sides pairs
  // with itself, the rest pair in sorted order within groups of equal NUMA
  // nodes (`numa`: id -> key). Nothing is paired where the counts differ
  // or a pairing would contradict an earlier one (the difference shows).
  void Extend(const std::string& resource, const std::vector<std::string>& o,
              const std::vector<std::string>& d, const std::map<std::string, std::string>& numa);
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

// Pairs every (pod, container, resource) present on both sides.
void ExtendFromAllocations(const Json& oracle, const Json& devmgr, DeviceMap* map);

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
