// Turns SIGINT/SIGTERM into a flag that long runs poll (`devmgr run`): the
// constructor blocks both signals in the calling thread, so every thread
// started afterwards inherits the mask, and a watcher thread takes them with
// sigtimedwait, says so on stderr and sets the flag. The destructor stops the
// watcher (the signals stay blocked).
#ifndef DEVMGR_COMMON_INTERRUPT_H_
#define DEVMGR_COMMON_INTERRUPT_H_

#include <atomic>
#include <string>
#include <thread>

namespace devmgr {

class InterruptFlag {
 public:
  // `message` follows "\n<program>: <signal name>: " on stderr.
  InterruptFlag(std::string program, std::string message);
  ~InterruptFlag();
  InterruptFlag(const InterruptFlag&) = delete;
  InterruptFlag& operator=(const InterruptFlag&) = delete;

  const std::atomic<bool>* flag() const { return &interrupted_; }
  bool interrupted() const { return interrupted_.load(); }

 private:
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace devmgr

#endif  // DEVMGR_COMMON_INTERRUPT_H_
