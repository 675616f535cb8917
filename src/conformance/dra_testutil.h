// Test helper: the reference DRA driver (src/draplugin) as a DraTarget run in
// process, started for each session with the session's directories, node
// and kubeconfig.
#ifndef DEVMGR_CONFORMANCE_DRA_TESTUTIL_H_
#define DEVMGR_CONFORMANCE_DRA_TESTUTIL_H_

#include <memory>
#include <string>
#include <utility>

#include "conformance/dra_target.h"
#include "draplugin/config.h"
#include "draplugin/sample_dra_driver.h"

namespace devmgr::conformance::testutil {

class InProcessDraDriver final : public DraTarget {
 public:
  explicit InProcessDraDriver(draplugin::Config config) : config_(std::move(config)) {}
  ~InProcessDraDriver() override { Stop(absl::ZeroDuration()); }
  std::string Describe() const override { return "in-process sample DRA driver"; }
  absl::Status Start(const DraEnv& env) override {
    Stop(absl::ZeroDuration());
    draplugin::DriverOptions o;
    o.registry_dir = env.registry_dir;
    o.plugin_dir = env.plugins_dir;
    o.cdi_dir = env.cdi_dir;
    o.node_name = env.node_name;
    o.kubeconfig = env.kubeconfig;
    driver_ = std::make_unique<draplugin::SampleDraDriver>(config_, o);
    return driver_->Start();
  }
  bool Stop(absl::Duration) override {
    if (driver_) {
      driver_->Stop();
      driver_.reset();
    }
    return true;
  }

 private:
  const draplugin::Config config_;
  std::unique_ptr<draplugin::SampleDraDriver> driver_;
};

}  // namespace devmgr::conformance::testutil

#endif  // DEVMGR_CONFORMANCE_DRA_TESTUTIL_H_
