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
std::string DeterministicPodUid(const std::string& namespace_,
                                const std::string& name);

// SHA-1 of `data` (20 bytes), exposed for tests.
std::string Sha1(const std::string& data);

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_UID_H_
