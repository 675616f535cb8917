// RunContainerOptions: what the device manager hands the container runtime
// for one container (the kubelet's DeviceRunContainerOptions), and the merge
// of the per-resource Allocate responses into it (podDevices.
// deviceRunContainerOptions in devicemanager pod_devices.go).
#ifndef DEVMGR_MANAGER_RUN_CONTAINER_OPTIONS_H_
#define DEVMGR_MANAGER_RUN_CONTAINER_OPTIONS_H_

#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::manager {

struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

// kubecontainer.Mount; `name` is the container path, SELinuxRelabel false.
struct MountOption {
  std::string name;
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  bool selinux_relabel = false;
  bool operator==(const MountOption&) const = default;
};

// kubecontainer.DeviceInfo.
struct DeviceOption {
  std::string path_on_host;
  std::string path_in_container;
  std::string permissions;
  bool operator==(const DeviceOption&) const = default;
};

struct Annotation {
  std::string name;
  std::string value;
  bool operator==(const Annotation&) const = default;
};

struct RunContainerOptions {
  std::vector<EnvVar> envs;
  std::vector<MountOption> mounts;
  std::vector<DeviceOption> devices;
  std::vector<Annotation> annotations;
  // Fully qualified CDI names, deduplicated, first occurrence order.
  std::vector<std::string> cdi_devices;
  bool operator==(const RunContainerOptions&) const = default;
};

// Merges the Allocate responses of one container's resources, in the order
// given (the kubelet iterates a Go map; devmgr passes resources sorted by
// name and map keys sorted, one valid instance of Go's random order):
// envs and annotations: first value of a key wins; devices and mounts:
// deduplicated by container path, first wins; conflicts are logged. CDI
// devices are deduplicated by name and only passed on when `cdi_enabled`.
// A null entry in `responses` is skipped (the kubelet would panic).
class RunContainerOptionsMerger {
 public:
  // `log_conflicts` false keeps status snapshots from repeating the
  // kubelet's conflict log lines.
  explicit RunContainerOptionsMerger(bool cdi_enabled, bool log_conflicts = true)
      : cdi_enabled_(cdi_enabled), log_(log_conflicts) {}
  void Add(const v1beta1::ContainerAllocateResponse& resp);
  RunContainerOptions Take() { return std::move(opts_); }

 private:
  bool cdi_enabled_;
  bool log_;
  RunContainerOptions opts_;
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_RUN_CONTAINER_OPTIONS_H_
