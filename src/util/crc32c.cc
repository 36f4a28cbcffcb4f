#include "util/crc32c.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace braid::util {

namespace {

constexpr std::uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> kTable = make_table();

std::uint32_t extend_table(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// The crc32 instruction has a latency of 3 cycles and a throughput of one per cycle, so a single
// chain of them runs at a third of what the unit can do. An input of kMinSplit bytes or more
// runs three chains over three adjacent stretches of one stride and joins them (Intel, "Fast
// CRC Computation for iSCSI Polynomial Using CRC32 Instruction", 2011).
//
// The join rests on linearity: the register after X then Y is shift(reg after X, |Y|) xor
// crc(0, Y), where shift(s, n) = s * x^(8n) mod P. In the instruction's bit-reflected order, a
// carry-less product of two 32-bit registers is their polynomial product times x, and crc32 of
// a 64-bit word w from 0 is w * x^32 mod P; so shift(s, n) = crc32(0, clmul(s, K)) with
// K = x^(8n - 33) mod P, which is the register after n - 8 zero bytes from the value 1 (the
// polynomial x^31). One constant per stride length, made at start by the instruction itself.
constexpr std::size_t kStride = 1024;  // the longest: checkpoint chunks and log blocks
constexpr std::size_t kMinSplit = 96;  // below it one chain costs less than a join (measured)

// g_shift_by[i] shifts a register by 8 * i bytes (i = 1 .. 2 * kStride / 8). Filled by choose().
std::uint64_t g_shift_by[2 * kStride / 8 + 1];

__attribute__((target("sse4.2"))) std::uint64_t shift_constant(std::size_t bytes) {
  std::uint64_t c = 1;
  for (std::size_t i = 8; i < bytes; i += 8) c = __builtin_ia32_crc32di(c, 0);
  return c;
}

__attribute__((target("sse4.2"), always_inline)) inline std::uint64_t word(const unsigned char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

__attribute__((target("sse4.2,pclmul"), always_inline)) inline std::uint64_t clmul(
    std::uint64_t a, std::uint64_t k) {
  const __m128i x = _mm_cvtsi64_si128(static_cast<long long>(a));
  const __m128i y = _mm_cvtsi64_si128(static_cast<long long>(k));
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_clmulepi64_si128(x, y, 0x00)));
}

// Three chains over [p, p + 3 * stride) from register c; `k1`/`k2` shift by one and two strides.
__attribute__((target("sse4.2,pclmul"), always_inline)) inline std::uint64_t three_chains(
    std::uint64_t c, const unsigned char* p, std::size_t stride, std::uint64_t k1,
    std::uint64_t k2) {
  std::uint64_t a = c;
  std::uint64_t b = 0;
  std::uint64_t d = 0;
  for (std::size_t i = 0; i < stride; i += 8) {
    a = __builtin_ia32_crc32di(a, word(p + i));
    b = __builtin_ia32_crc32di(b, word(p + stride + i));
    d = __builtin_ia32_crc32di(d, word(p + 2 * stride + i));
  }
  return __builtin_ia32_crc32di(0, clmul(a, k2) ^ clmul(b, k1)) ^ d;
}

__attribute__((target("sse4.2,pclmul"))) std::uint32_t extend_sse42(std::uint32_t crc,
                                                                    const unsigned char* p,
                                                                    std::size_t n) {
  std::uint64_t c = crc;
  constexpr std::size_t kWords = kStride / 8;
  while (n >= 3 * kStride) {
    c = three_chains(c, p, kStride, g_shift_by[kWords], g_shift_by[2 * kWords]);
    p += 3 * kStride;
    n -= 3 * kStride;
  }
  if (n >= kMinSplit) {
    // One split of what is left: the largest stride (whole words) that three of fit.
    const std::size_t words = std::min(n / 24, kWords);
    c = three_chains(c, p, 8 * words, g_shift_by[words], g_shift_by[2 * words]);
    p += 24 * words;
    n -= 24 * words;
  }
  while (n >= 8) {
    c = __builtin_ia32_crc32di(c, word(p));
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  if (n >= 4) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    c32 = __builtin_ia32_crc32si(c32, w);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    std::uint16_t w;
    std::memcpy(&w, p, 2);
    c32 = __builtin_ia32_crc32hi(c32, w);
    p += 2;
    n -= 2;
  }
  if (n != 0) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}
#endif

using ExtendFn = std::uint32_t (*)(std::uint32_t, const unsigned char*, std::size_t);

ExtendFn choose() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul")) {
    for (std::size_t i = 1; i < std::size(g_shift_by); ++i) g_shift_by[i] = shift_constant(8 * i);
    return extend_sse42;
  }
#endif
  return extend_table;
}

const ExtendFn kExtend = choose();

}  // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t n) {
  return ~kExtend(~crc, static_cast<const unsigned char*>(data), n);
}

std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t n) {
  return ~extend_table(~crc, static_cast<const unsigned char*>(data), n);
}

bool crc32c_hardware() {
#if defined(__x86_64__)
  return kExtend == extend_sse42;
#else
  return false;
#endif
}

}  // namespace braid::util
