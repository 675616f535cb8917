// Session: one check's world. A fresh emulated kubelet on a wiped
// directory, the plugin (re)started by the tester when it can, and helpers
// the checks share: the plugin's socket, a deadline-bound client, the
// kubelet's ListAndWatch stream and the device list it delivered.
#ifndef DEVMGR_CONFORMANCE_SESSION_H_
#define DEVMGR_CONFORMANCE_SESSION_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "conformance/probe.h"
#include "conformance/target.h"
#include "conformance/test_kubelet.h"
#include "kubelet/profile.h"

namespace devmgr::metrics {
class KubeletMetrics;
}  // namespace devmgr::metrics

namespace devmgr::conformance {

// Every wait the tester does is bounded by one of these. Where the kubelet
// has a deadline, the default is the kubelet's; where it has none, a MUST
// window is the upstream node e2e's wait and `prompt_within` the SHOULD
// (docs/conformance.md, "Time windows", gives the source of each).
struct Timeouts {
  // Deadline of each RPC the tester makes (the tester's own bound: the
  // kubelet sets none on Allocate and GetPreferredAllocation).
  absl::Duration rpc = absl::Seconds(10);
  // registration.timely: Register within this long after the plugin starts
  // (node e2e: 30 s for the resource after the plugin pod runs).
  absl::Duration register_within = absl::Seconds(30);
  // The dial-back inside Register (the kubelet's 10 s).
  absl::Duration serve_wait = absl::Seconds(10);
  // law.first-list: the first list within this long of the stream opening
  // (node e2e: the same 30 s).
  absl::Duration first_list_within = absl::Seconds(30);
  // Observation window of allocate.list-unchanged: how long the tester
  // watches for a list change after its Allocate calls, not a kubelet
  // deadline.
  absl::Duration observe = absl::Seconds(3);
  // The law.* window: every list the stream delivers within this long of its
  // first list is judged (and the stream must stay open through it). Long
  // enough to see a re-send period of up to 10 s, the longest real plugins
  // use and the kubelet's nodeStatusUpdateFrequency, with 2 s to spare.
  absl::Duration list_window = absl::Seconds(12);
  // prestart.timely (the kubelet's KubeletPreStartContainerRPCTimeoutInSecs).
  absl::Duration prestart = absl::Seconds(30);
  // restart.*: re-registration after a kubelet or plugin restart (node
  // e2e: 30 s for the resource after a kubelet restart).
  absl::Duration reregister_within = absl::Seconds(30);
  // The SHOULD companions of the three windows above (registration.prompt,
  // law.first-list-prompt, restart.kubelet-prompt): the kubelet's default
  // nodeStatusUpdateFrequency, so the resource misses at most one node
  // status update.
  absl::Duration prompt_within = absl::Seconds(10);
  // restart.plugin: how long a plugin may take to exit after SIGTERM.
  absl::Duration stop_grace = absl::Seconds(30);  // a pod's default grace period
  // latency.rpcs: p99 budget per RPC, and samples per RPC.
  absl::Duration latency_budget = absl::Seconds(1);
  int latency_samples = 20;
};

struct SessionOptions {
  std::string dir;  // absolute device-plugin directory
  Timeouts timeouts;
  Profile profile = DefaultProfile();
  // When set, the session's kubelet counts the Register RPCs it receives and
  // every Allocate made through Client() is observed with its wall-clock
  // duration, under AllocateResourceName(). Not owned. nullptr = none.
  metrics::KubeletMetrics* metrics = nullptr;
};

// Not thread-safe: driven by one check at a time.
class Session {
 public:
  Session(Target* target, SessionOptions opts);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts the kubelet and the plugin, then waits (bounded) for the
  // plugin's registration and its socket; with expect_registration false
  // (an earlier session saw none), a serving socket ends the wait too.
  // Returns an error only for environment problems (the directory or the
  // command cannot be used).
  absl::Status Begin(bool expect_registration = true);
  // Stops the plugin (when the tester started it) and the kubelet.
  void End();

  Target& target() { return *target_; }
  const Timeouts& t() const { return opts_.timeouts; }
  const Profile& profile() const { return opts_.profile; }
  const std::string& dir() const { return opts_.dir; }
  TestKubelet* kubelet() { return kubelet_.get(); }
  MonoTime plugin_started_at() const { return plugin_started_at_; }

  // The first registration seen in this session (after Begin), if any.
  std::optional<RegistrationRecord> FirstRegistration() const;
  // The plugin's socket: the registered endpoint, else the socket found in
  // the directory, or --socket. "" when none could be found.
  std::string SocketPath();
  // A client to SocketPath() (nullptr when there is none). With
  // SessionOptions::metrics, its Allocate calls are observed there.
  ProbeClient* Client();
  // The resource_name label of the Allocate durations: the resource of the
  // newest registration in this session, else the target's --resource, else
  // "" (--socket: nothing registers). Safe to call from the threads of a
  // check while the session itself is not changed.
  std::string AllocateResourceName() const;
  // The kubelet's stream (--socket: a stream the tester opened in Begin).
  StreamRecorder* KubeletStream();
  // Options as the kubelet got them during registration; nullopt when that
  // call failed or never happened.
  std::optional<v1beta1::DevicePluginOptions> Options();
  // True when the kubelet's stream delivered a list within
  // first_list_within of its opening. Waited for once per kubelet, so that
  // the checks sharing a session do not each wait for a list that never
  // comes.
  bool KubeletListArrived();
  // The stream the device lists are read from: the kubelet's when it
  // delivered a list, else a stream of the tester's own (kept open for the
  // list window). nullptr when neither delivered a list.
  StreamRecorder* ListStream();
  // The first device list of ListStream(). nullptr when the plugin sends
  // none.
  const v1beta1::ListAndWatchResponse* DeviceList();
  // Every message of ListStream() that arrived within t().list_window of
  // its first list, in order. Waits (once) until the window has passed or
  // the stream ended. Empty when there is no list.
  std::vector<std::shared_ptr<const StreamRecorder::Message>> WindowLists();
  // When the list window ends (the first list's time + list_window); only
  // meaningful when ListStream() is set.
  MonoTime ListWindowEnd();
  // The devices a kubelet of the session's profile holds as allocatable
  // after this list, which the tester's requests use with their IDs exactly
  // as listed (control bytes and, under 1.30-1.33, invalid UTF-8 included):
  // every ID sent with health "Healthy", once, those that are not printable
  // first, then in byte order. None when a kubelet
  // would not hold the list at all (over its 4 MiB receive limit; under
  // 1.34+, an ID that is not valid UTF-8): KubeletHoldsNoneWhy() says why.
  std::vector<std::string> UsableIds();
  std::string KubeletHoldsNoneWhy();
  // Devices reported "Unhealthy" (unique, printable IDs), sorted.
  std::vector<std::string> UnhealthyIds();

  // Restarts the kubelet: stop, wipe the directory, serve kubelet.sock anew.
  absl::Status RestartKubelet();
  // Stops the plugin (SIGTERM, then kill after the grace period). True when
  // it stopped in time.
  bool StopPlugin();
  absl::Status StartPlugin();

  // Evidence lines about the plugin (its last output lines).
  std::vector<std::string> PluginOutput(size_t n = 10) const;
  // Why no Register came: "the plugin exited with code N before it
  // registered" when the plugin the tester started has exited non-zero (the
  // session stops waiting then), else "no Register call within <window>".
  std::string NoRegistrationReason() const;
  // Why `stream` (nullptr: none was opened) holds no device list: "the
  // plugin exited with code N before it sent a device list" when the plugin
  // the tester started has exited, "the stream ended before the first device
  // list (ERR)" when the stream ended, else "no device list within
  // <window>".
  std::string NoListReason(const StreamRecorder* stream) const;

 private:
  TestKubeletOptions KubeletOptions() const;
  // True when the plugin the tester started has exited with a non-zero
  // code (one that exits 0 may have left a daemon serving).
  bool PluginFailed() const;

  Target* const target_;
  const SessionOptions opts_;
  std::unique_ptr<TestKubelet> kubelet_;
  MonoTime plugin_started_at_;
  std::string socket_path_;
  std::unique_ptr<ProbeClient> client_;
  std::unique_ptr<StreamRecorder> own_stream_;  // --socket mode
  std::unique_ptr<StreamRecorder> fallback_stream_;
  StreamRecorder* list_stream_ = nullptr;  // the kubelet's or fallback_stream_
  std::shared_ptr<const StreamRecorder::Message> first_list_;
  bool device_list_done_ = false;
  bool window_waited_ = false;
  std::optional<bool> kubelet_list_arrived_;
  std::optional<v1beta1::DevicePluginOptions> socket_options_;
  bool plugin_running_ = false;
  bool expect_registration_ = true;
};

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_SESSION_H_
