// FUZZ_CHECK: a property a fuzz target asserts. A failure prints the condition and aborts, which
// libFuzzer reports as a crash (and saves the input) and the replay driver as a failed test.
#ifndef DEVMGR_TESTS_FUZZ_FUZZ_CHECK_H_
#define DEVMGR_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

#endif  // DEVMGR_TESTS_FUZZ_FUZZ_CHECK_H_
