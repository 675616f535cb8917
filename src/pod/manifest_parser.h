// Reading Kubernetes Pod manifests (YAML or JSON; YAML is a superset).
//
// What is read: apiVersion (must be "v1"), kind (must be "Pod"; a "PodList"
// is accepted by ParsePodManifests, as the kubelet's file source does),
// metadata.name (required), metadata.namespace (default "default"),
// metadata.uid (default DeterministicPodUid(namespace, name); static pods
// replace that with StaticPodUid, see static_pod_dir.h),
// spec.initContainers[] and spec.containers[] (name, resources.limits,
// resources.requests, restartPolicy), status.phase. Every other field is
// ignored, as the kubelet's non-strict decoder ignores unknown fields.
//
// Errors (InvalidArgument, NotFound for a missing file) have the form
//   <file>:<line>:<col>: <message>
// with 1-based line and column. Resource problems reproduce the API server's
// validation text and name the container and resource, e.g.
//   gpu.yaml:12:25: Pod "gpu" is invalid: spec.containers[0].resources.requests:
//   Invalid value: "1": must be equal to nvidia.com/gpu limit of 2
//   (container "cuda", resource "nvidia.com/gpu")
// (one line). Only the first problem is reported.
//
// The whole module's only yaml-cpp user is manifest_parser.cc.
#ifndef DEVMGR_POD_MANIFEST_PARSER_H_
#define DEVMGR_POD_MANIFEST_PARSER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pod/pod.h"

namespace devmgr::pod {

// Parses a file holding exactly one Pod (empty YAML documents are skipped;
// a second document or a non-Pod kind is an error). `filename` is used in
// errors and stored in Pod::source.
absl::StatusOr<Pod> ParsePodManifest(const std::string& text, const std::string& filename);

// Parses every document of a multi-document YAML file; each must be a Pod or
// a PodList (kind "PodList" or "List" with Pod items). Empty documents are
// skipped. Any error fails the whole file. A file with no documents yields
// an empty vector.
absl::StatusOr<std::vector<Pod>> ParsePodManifests(const std::string& text,
                                                   const std::string& filename);

// Reads and parses `path` (ParsePodManifest / ParsePodManifests). NotFound
// when it does not exist; other read failures are InvalidArgument
// "<path>: <strerror>".
absl::StatusOr<Pod> LoadPodManifest(const std::string& path);
absl::StatusOr<std::vector<Pod>> LoadPodManifests(const std::string& path);

// Every non-empty document of a YAML stream as the API's JSON text (YAML 1.2
// core schema, as the API's YAML decoder reads it: plain scalars that read as
// integers, booleans or null become those; quoted scalars stay strings).
// Syntax errors are `<filename>:<line>:<col>: <message>`.
absl::StatusOr<std::vector<std::string>> YamlDocumentsAsJson(const std::string& text,
                                                             const std::string& filename);

// Reads a whole file. NotFound when missing; `<path>: <strerror>` otherwise.
absl::StatusOr<std::string> ReadManifestFile(const std::string& path);

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_MANIFEST_PARSER_H_
