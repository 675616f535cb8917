// Reconciler: the kubelet's pluginmanager reconciler. One pass brings the
// actual state of the world toward the desired one: plugins whose socket is
// gone (or was re-created) are unregistered first, then every desired socket
// that is not registered gets a registration operation. The plugin manager
// runs a pass once per period (the kubelet's is 1 s).
#ifndef DEVMGR_PLUGINMANAGER_RECONCILER_H_
#define DEVMGR_PLUGINMANAGER_RECONCILER_H_

#include "pluginmanager/cache.h"
#include "pluginmanager/operation_executor.h"

namespace devmgr::pluginmanager {

// Reconcile is called from one thread at a time.
class Reconciler {
 public:
  // Every pointer must outlive the reconciler.
  Reconciler(const DesiredStateOfWorld* dsw, ActualStateOfWorld* asw, OperationExecutor* executor)
      : dsw_(dsw), asw_(asw), executor_(executor) {}

  void Reconcile();

 private:
  const DesiredStateOfWorld* const dsw_;
  ActualStateOfWorld* const asw_;
  OperationExecutor* const executor_;
};

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_RECONCILER_H_
