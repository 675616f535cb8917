#include "pod/uid.h"

#include <cstdint>

#include "fmt/format.h"

namespace devmgr::pod {
namespace {

uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// Processes one 64-byte block (FIPS 180-4, section 6.1.2).
void Sha1Block(const unsigned char* block, uint32_t h[5]) {
  uint32_t w[80];
  for (int t = 0; t < 16; ++t) {
    w[t] = (uint32_t{block[4 * t]} << 24) | (uint32_t{block[4 * t + 1]} << 16) |
           (uint32_t{block[4 * t + 2]} << 8) | uint32_t{block[4 * t + 3]};
  }
  for (int t = 16; t < 80; ++t) {
    w[t] = Rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int t = 0; t < 80; ++t) {
    uint32_t f, k;
    if (t < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (t < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (t < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    uint32_t temp = Rotl(a, 5) + f + e + k + w[t];
    e = d;
    d = c;
    c = Rotl(b, 30);
    b = a;
    a = temp;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

}  // namespace

std::string Sha1(const std::string& data) {
  uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  std::string msg = data;
  const uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 7; i >= 0; --i) {
    msg.push_back(static_cast<char>((bit_len >> (8 * i)) & 0xff));
  }
  for (size_t off = 0; off < msg.size(); off += 64) {
    Sha1Block(reinterpret_cast<const unsigned char*>(msg.data() + off), h);
  }
  std::string out;
  for (uint32_t v : h) {
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  return out;
}

namespace {

// RFC 4122 version-5 UUID of `name` in the URL namespace.
std::string UrlUuid5(const std::string& name) {
  static const unsigned char kUrlNamespace[16] = {0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1,
                                                  0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
  std::string input(reinterpret_cast<const char*>(kUrlNamespace), 16);
  input += name;
  std::string hash = Sha1(input);
  unsigned char u[16];
  for (int i = 0; i < 16; ++i) u[i] = static_cast<unsigned char>(hash[i]);
  u[6] = static_cast<unsigned char>((u[6] & 0x0f) | 0x50);  // version 5
  u[8] = static_cast<unsigned char>((u[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out += fmt::format("{:02x}", u[i]);
  }
  return out;
}

}  // namespace

std::string DeterministicPodUid(const std::string& namespace_, const std::string& name) {
  return UrlUuid5("devmgr://pods/" + namespace_ + "/" + name);
}

std::string StaticPodUid(const std::string& namespace_, const std::string& name,
                         const std::string& source, const std::string& digest) {
  return UrlUuid5(fmt::format("devmgr://static-pods/{}/{}?source={}&sha1={}", namespace_, name,
                              source, digest));
}

std::string HexString(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace devmgr::pod
