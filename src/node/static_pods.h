// Static-pod reconciliation: what the kubelet's pod config does with the
// file source's updates, applied to a PodManager. A manifest that appears
// is admitted; one that disappears has its pods deleted; a changed file has
// the pods no longer in it deleted (an edited pod has a new UID) and the
// new ones admitted, while pods still in it unchanged are kept.
#ifndef DEVMGR_NODE_STATIC_PODS_H_
#define DEVMGR_NODE_STATIC_PODS_H_

#include <vector>

#include "node/pod_manager.h"
#include "pod/static_pod_dir.h"

namespace devmgr::node {

// Applies one scan's changes, in order. Errors (a manifest that does not
// parse, a pod that cannot be added) are logged, not returned: the kubelet
// keeps running and the other manifests' pods are still reconciled.
void ReconcileStaticPods(PodManager& pods, const std::vector<pod::ManifestChange>& changes);

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_STATIC_PODS_H_
