// `devmgr checkpoint doctor`: the read-only checkpoint watch behind the
// deploy/checkpoint-doctor DaemonSet. Wiring only; the logic is in
// src/doctor/checkpoint_doctor.*.
#include <signal.h>
#include <time.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/logging.h"
#include "doctor/checkpoint_doctor.h"
#include "metrics/http_server.h"

namespace devmgr::cli {
namespace {

struct DoctorOptions {
  std::string file = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint";
  double interval_seconds = 60;
  bool once = false;
  std::string metrics_address;
  int verbosity = 0;
  std::string logging_format = "text";
};

int ExitCodeFor(doctor::State s) {
  switch (s) {
    case doctor::State::kOk:
    case doctor::State::kAbsent:
      return kExitOk;
    case doctor::State::kCorrupt:
      return kExitFailed;
    case doctor::State::kUnreadable:
      return kExitUsage;
  }
  return kExitUsage;
}

void LogVerdict(const doctor::CheckpointDoctor& d, const doctor::Verdict& v) {
  const std::string state = doctor::StateName(v.state);
  if (v.state == doctor::State::kOk || v.state == doctor::State::kAbsent) {
    DM_INFO("Checkpoint verified", {"path", d.path()}, {"state", state}, {"result", v.summary});
  } else {
    DM_ERROR(v.summary, "Checkpoint verification failed", {"path", d.path()}, {"state", state});
  }
}

int RunDoctor(const DoctorOptions& o) {
  log::Init(o.verbosity, o.logging_format == "json" ? log::Format::kJson : log::Format::kText);
  doctor::CheckpointDoctor d(o.file);
  if (o.once) {
    const doctor::Verdict v = d.RunOnce(absl::Now());
    std::cout << o.file << ": " << v.summary << "\n";
    LogVerdict(d, v);
    return ExitCodeFor(v.state);
  }

  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  std::unique_ptr<metrics::HttpServer> http;
  if (!o.metrics_address.empty()) {
    http = std::make_unique<metrics::HttpServer>([&d] { return d.RenderMetrics(); });
    http->SetReadiness([&d](std::string* why) { return d.Ready(why); });
    absl::StatusOr<std::string> bound = http->Start(o.metrics_address);
    if (!bound.ok()) {
      std::cerr << "devmgr checkpoint doctor: --metrics-address: " << bound.status().message()
                << "\n";
      return kExitEnvironment;
    }
    DM_INFO("Serving checkpoint verdicts", {"address", *bound},
            {"endpoints", "/metrics /readyz /healthz"});
  }
  timespec every{};
  every.tv_sec = static_cast<time_t>(o.interval_seconds);
  every.tv_nsec = static_cast<long>((o.interval_seconds - std::floor(o.interval_seconds)) * 1e9);
  for (;;) {
    LogVerdict(d, d.RunOnce(absl::Now()));
    const int sig = sigtimedwait(&sigs, nullptr, &every);
    if (sig > 0) {
      DM_INFO("Received signal; shutting down", {"signal", strsignal(sig)});
      break;
    }
  }
  if (http) http->Stop();
  return kExitOk;
}

}  // namespace

void AddCheckpointDoctorCommand(CLI::App& checkpoint, int* exit_code) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* doc =
      checkpoint.add_subcommand("doctor",
                                "Watch a node's checkpoint without ever writing it: verify FILE "
                                "every --interval seconds as the "
                                "kubelet would, log one line per verification (state ok, absent, "
                                "corrupt or unreadable), and, with "
                                "--metrics-address, serve /metrics (devmgr_checkpoint_state, "
                                "devmgr_checkpoint_verifications_total, "
                                "...), /readyz (200 while ok or absent, 503 while corrupt or "
                                "unreadable) and /healthz. The file is "
                                "only ever opened read-only, so the directory can be mounted "
                                "read-only. --once verifies one time "
                                "and exits 0 ok/absent, 1 corrupt, 2 unreadable.");
  doc->add_option("FILE", o->file, "the checkpoint to watch")->capture_default_str();
  doc->add_option("--interval", o->interval_seconds, "seconds between verifications")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  doc->add_flag("--once", o->once, "verify once, print the verdict and exit with its code");
  doc->add_option(
      "--metrics-address", o->metrics_address,
      "HOST:PORT to serve /metrics, /readyz and /healthz on (e.g. 0.0.0.0:10266 in a pod); "
      "off when empty");
  doc->add_option("-v,--v", o->verbosity, "Log verbosity (klog -v)")->capture_default_str();
  doc->add_option("--logging-format", o->logging_format, "text (klog) or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  doc->footer(
      "\nExit codes: with --once, 0 ok or absent, 1 corrupt, 2 unreadable. Otherwise 0 when "
      "stopped "
      "by SIGTERM or SIGINT, 3 when --metrics-address cannot be served.");
  doc->callback([o, exit_code] { *exit_code = RunDoctor(*o); });
}

}  // namespace devmgr::cli
