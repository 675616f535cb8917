// FuzzScript: a fuzz input read as a script of operations: single bytes
// (choices) and length-prefixed chunks (payloads). Past the end every byte
// is 0 and every chunk empty, so any input is a whole script.
#ifndef DEVMGR_TESTS_FUZZ_FUZZ_SCRIPT_H_
#define DEVMGR_TESTS_FUZZ_FUZZ_SCRIPT_H_

#include <cstddef>
#include <cstdint>
#include <string>

class FuzzScript {
 public:
  FuzzScript(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool More() const { return n_ > 0; }
  uint8_t Byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  // A length-prefixed (one byte) chunk.
  std::string Chunk() {
    size_t len = Byte();
    if (len > n_) len = n_;
    std::string s(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    n_ -= len;
    return s;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

#endif  // DEVMGR_TESTS_FUZZ_FUZZ_SCRIPT_H_
