// ThreadSanitizer support for Debian's uninstrumented Abseil (linked into every executable of a
// DEVMGR_SANITIZE=thread build only; see docs/reliability.md).
//
// libabsl_synchronization.so is not built with -fsanitize=thread, so TSan cannot see the
// happens-before edges absl::Mutex, absl::CondVar and absl::Notification create and would report
// every ABSL_GUARDED_BY member as a race. This file interposes their exported entry points: each
// wrapper calls the real function (found with dlsym(RTLD_NEXT)) and tells TSan about the
// acquire/release on the object's address. The symbol names are those of Debian 12's
// libabsl 20220623 (inline namespace "debian3"); a missing one aborts with a clear message.
// A Condition passed to LockWhen*/Await* is wrapped so that its evaluation inside Abseil (with
// the mutex held) is ordered after the last release too.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);

namespace {
void* Real(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    std::fprintf(stderr, "tsan_absl_shim: %s not found in the Abseil library (%s)\n", name,
                 dlerror());
    std::abort();
  }
  return p;
}
using M = absl::Mutex;
using C = absl::Condition;
using D = absl::Duration;
using T = absl::Time;
}  // namespace

// Abseil's own deadlock detector (on in Debian's build) keeps a global lock graph guarded by a
// spinlock TSan cannot see, and costs time on every lock; the TSan build does without it (the
// ordinary builds keep it).
namespace {
const bool kNoAbslDeadlockDetection = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();
}  // namespace

#define REAL(name, type) static auto real = reinterpret_cast<type>(Real(#name))

// absl evaluates a Condition inside the real LockWhen/Await, with the mutex held but before the
// wrapper's acquire (and sometimes on the unlocking thread, on behalf of a waiter). So every
// Condition is wrapped: the wrapper acquires the mutex for TSan, evaluates the original and
// releases it again.
namespace {
struct Guarded {
  const C* cond;
  M* mu;
};
bool EvalAcquired(Guarded* g) {
  M* const mu = g->mu;
  __tsan_acquire(mu);
  const bool r = g->cond->Eval();
  // Released again: the evaluation (and its reads of this frame, which may be on the waiter's
  // stack while another thread evaluates it in Unlock) is ordered before whoever takes the mutex
  // next, as the real mutex orders it.
  __tsan_release(mu);
  return r;
}
}  // namespace
#define GUARD(c, m)  \
  Guarded g_{&c, m}; \
  const C wrapped_(&EvalAcquired, &g_)

extern "C" {
// ---- Mutex: acquire after every way of taking it, release before every way of leaving it.
void _ZN4absl7debian35Mutex4LockEv(M* m) {
  REAL(_ZN4absl7debian35Mutex4LockEv, void (*)(M*));
  real(m);
  __tsan_acquire(m);
}
void _ZN4absl7debian35Mutex10ReaderLockEv(M* m) {
  REAL(_ZN4absl7debian35Mutex10ReaderLockEv, void (*)(M*));
  real(m);
  __tsan_acquire(m);
}
bool _ZN4absl7debian35Mutex7TryLockEv(M* m) {
  REAL(_ZN4absl7debian35Mutex7TryLockEv, bool (*)(M*));
  bool ok = real(m);
  if (ok) __tsan_acquire(m);
  return ok;
}
bool _ZN4absl7debian35Mutex13ReaderTryLockEv(M* m) {
  REAL(_ZN4absl7debian35Mutex13ReaderTryLockEv, bool (*)(M*));
  bool ok = real(m);
  if (ok) __tsan_acquire(m);
  return ok;
}
void _ZN4absl7debian35Mutex6UnlockEv(M* m) {
  REAL(_ZN4absl7debian35Mutex6UnlockEv, void (*)(M*));
  __tsan_release(m);
  real(m);
}
void _ZN4absl7debian35Mutex12ReaderUnlockEv(M* m) {
  REAL(_ZN4absl7debian35Mutex12ReaderUnlockEv, void (*)(M*));
  __tsan_release(m);
  real(m);
}
void _ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE(M* m, const C& c) {
  REAL(_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE, void (*)(M*, const C&));
  GUARD(c, m);
  real(m, wrapped_);
  __tsan_acquire(m);
}
void _ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE(M* m, const C& c) {
  REAL(_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE, void (*)(M*, const C&));
  GUARD(c, m);
  real(m, wrapped_);
  __tsan_acquire(m);
}
bool _ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE(M* m, const C& c,
                                                                                 D d) {
  REAL(_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE,
       bool (*)(M*, const C&, D));
  GUARD(c, m);
  bool r = real(m, wrapped_, d);
  __tsan_acquire(m);
  return r;
}
bool _ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE(M* m, const C& c,
                                                                              T t) {
  REAL(_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE,
       bool (*)(M*, const C&, T));
  GUARD(c, m);
  bool r = real(m, wrapped_, t);
  __tsan_acquire(m);
  return r;
}
bool _ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE(M* m,
                                                                                       const C& c,
                                                                                       D d) {
  REAL(_ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE,
       bool (*)(M*, const C&, D));
  GUARD(c, m);
  bool r = real(m, wrapped_, d);
  __tsan_acquire(m);
  return r;
}
bool _ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE(M* m,
                                                                                    const C& c,
                                                                                    T t) {
  REAL(_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE,
       bool (*)(M*, const C&, T));
  GUARD(c, m);
  bool r = real(m, wrapped_, t);
  __tsan_acquire(m);
  return r;
}
// Await*: the mutex is held on entry and on return, released in between.
void _ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE(M* m, const C& c) {
  REAL(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE, void (*)(M*, const C&));
  GUARD(c, m);
  __tsan_release(m);
  real(m, wrapped_);
  __tsan_acquire(m);
}
bool _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE(M* m, const C& c,
                                                                              D d) {
  REAL(_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE,
       bool (*)(M*, const C&, D));
  GUARD(c, m);
  __tsan_release(m);
  bool r = real(m, wrapped_, d);
  __tsan_acquire(m);
  return r;
}
bool _ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE(M* m, const C& c, T t) {
  REAL(_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE,
       bool (*)(M*, const C&, T));
  GUARD(c, m);
  __tsan_release(m);
  bool r = real(m, wrapped_, t);
  __tsan_acquire(m);
  return r;
}
// ---- CondVar: Wait* releases and re-takes the mutex.
void _ZN4absl7debian37CondVar4WaitEPNS0_5MutexE(absl::CondVar* cv, M* m) {
  REAL(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE, void (*)(absl::CondVar*, M*));
  __tsan_release(m);
  real(cv, m);
  __tsan_acquire(m);
}
bool _ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE(absl::CondVar* cv, M* m,
                                                                          D d) {
  REAL(_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE,
       bool (*)(absl::CondVar*, M*, D));
  __tsan_release(m);
  bool r = real(cv, m, d);
  __tsan_acquire(m);
  return r;
}
bool _ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE(absl::CondVar* cv, M* m,
                                                                       T t) {
  REAL(_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE,
       bool (*)(absl::CondVar*, M*, T));
  __tsan_release(m);
  bool r = real(cv, m, t);
  __tsan_acquire(m);
  return r;
}
// ---- Notification: Notify releases, a successful wait acquires.
void _ZN4absl7debian312Notification6NotifyEv(absl::Notification* n) {
  REAL(_ZN4absl7debian312Notification6NotifyEv, void (*)(absl::Notification*));
  __tsan_release(n);
  real(n);
}
void _ZNK4absl7debian312Notification19WaitForNotificationEv(const absl::Notification* n) {
  REAL(_ZNK4absl7debian312Notification19WaitForNotificationEv, void (*)(const absl::Notification*));
  real(n);
  __tsan_acquire(const_cast<absl::Notification*>(n));
}
bool _ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE(
    const absl::Notification* n, D d) {
  REAL(_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE,
       bool (*)(const absl::Notification*, D));
  bool r = real(n, d);
  if (r) __tsan_acquire(const_cast<absl::Notification*>(n));
  return r;
}
bool _ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE(
    const absl::Notification* n, T t) {
  REAL(_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE,
       bool (*)(const absl::Notification*, T));
  bool r = real(n, t);
  if (r) __tsan_acquire(const_cast<absl::Notification*>(n));
  return r;
}
}  // extern "C"
