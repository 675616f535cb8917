// Deterministic pod UIDs for manifests without metadata.uid.
#ifndef DEVMGR_POD_UID_H_
#define DEVMGR_POD_UID_H_

#include <string>

namespace devmgr::pod {

// A name-based (version 5, SHA-1) UUID of "devmgr://pods/<namespace>/<name>"
// in the RFC 4122 URL namespace (6ba7b811-9dad-11d1-80b4-00c04fd430c8),
// lowercase, e.g. DeterministicPodUid("default", "gpu-pod"). The same as
//   python3 -c 'import uuid; print(uuid.uuid5(uuid.NAMESPACE_URL,
//               "devmgr://pods/default/gpu-pod"))'
// Stable across runs, hosts and devmgr versions.
std::string DeterministicPodUid(const std::string& namespace_, const std::string& name);

// A static pod's UID when its manifest names none. Like the kubelet's (an
// MD5 hash of the pod object, node name and file path; not reproducible
// byte for byte), it changes whenever the pod in the file changes, so an
// edited manifest is a new pod: the old one is deleted and its devices
// freed, the new one admitted afresh. The same file content keeps the same
// UID across restarts. Version-5 UUID of
// "devmgr://static-pods/<namespace>/<name>?source=<path>&sha1=<digest>".
std::string StaticPodUid(const std::string& namespace_, const std::string& name,
                         const std::string& source, const std::string& digest);

// Lowercase hex of `bytes`.
std::string HexString(const std::string& bytes);

// SHA-1 of `data` (20 bytes), exposed for tests.
std::string Sha1(const std::string& data);

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_UID_H_
