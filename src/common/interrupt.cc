#include "common/interrupt.h"

#include <signal.h>
#include <string.h>

#include <ctime>
#include <iostream>
#include <utility>

namespace devmgr {

InterruptFlag::InterruptFlag(std::string program, std::string message) {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  watcher_ = std::thread([this, sigs, program = std::move(program), message = std::move(message)] {
    while (!done_.load()) {
      timespec t{0, 100 * 1000 * 1000};
      const int sig = sigtimedwait(&sigs, nullptr, &t);
      if (sig > 0) {
        std::cerr << "\n" << program << ": " << strsignal(sig) << ": " << message << "\n";
        interrupted_ = true;
      }
    }
  });
}

InterruptFlag::~InterruptFlag() {
  done_ = true;
  watcher_.join();
}

}  // namespace devmgr
