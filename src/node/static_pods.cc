#include "node/static_pods.h"

#include <set>
#include <string>

#include "common/logging.h"

namespace devmgr::node {
namespace {

using Kind = pod::ManifestChange::Kind;

std::string Ref(const pod::Pod& p) { return p.namespace_ + "/" + p.name; }

// A removed file: every pod it held goes.
void DeleteRemoved(PodManager& pods, const pod::ManifestChange& c) {
  for (const pod::Pod& p : c.pods) {
    DM_INFO("Static pod manifest removed; deleting pod", {"path", c.path}, {"pod", Ref(p)});
    (void)pods.DeletePod(p.uid);
  }
}

// A changed file: pods from it no longer in it are deleted; returns the UIDs
// of those still in it, which are kept as they are.
std::set<std::string> DeleteReplaced(PodManager& pods, const pod::ManifestChange& c) {
  std::set<std::string> now;
  for (const pod::Pod& p : c.pods) now.insert(p.uid);
  std::set<std::string> unchanged;
  for (const PodRecord& r : pods.Pods()) {
    if (r.pod.source != c.path || r.deleted) continue;
    if (now.count(r.pod.uid) != 0) {
      unchanged.insert(r.pod.uid);
      continue;
    }
    DM_INFO("Static pod changed; deleting the old pod", {"path", c.path}, {"pod", Ref(r.pod)},
            {"uid", r.pod.uid});
    (void)pods.DeletePod(r.pod.uid);
  }
  return unchanged;
}

}  // namespace

void ReconcileStaticPods(PodManager& pods, const std::vector<pod::ManifestChange>& changes) {
  for (const pod::ManifestChange& c : changes) {
    if (c.kind == Kind::kRemoved) {
      DeleteRemoved(pods, c);
      continue;
    }
    const std::set<std::string> unchanged =
        c.kind == Kind::kChanged ? DeleteReplaced(pods, c) : std::set<std::string>{};
    if (!c.error.ok()) {
      DM_ERROR(std::string(c.error.message()), "Could not process manifest file", {"path", c.path});
      continue;
    }
    for (const pod::Pod& p : c.pods) {
      if (unchanged.count(p.uid) != 0) continue;
      DM_INFO("Admitting static pod", {"pod", Ref(p)}, {"uid", p.uid}, {"path", c.path});
      if (auto rec = pods.AddPod(p); !rec.ok()) {
        DM_ERROR(std::string(rec.status().message()), "Could not add static pod", {"path", c.path});
      }
    }
  }
}

}  // namespace devmgr::node
