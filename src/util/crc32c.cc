#include "util/crc32c.h"

#include <array>
#include <cstring>

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
// chain of them runs at a third of what the unit can do. Long inputs run three chains over three
// adjacent stretches of kStride bytes and join them (Intel, "Fast CRC Computation for iSCSI
// Polynomial Using CRC32 Instruction", 2011). The join rests on linearity: the register after
// X then Y is shift(reg after X, |Y|) xor crc(0, Y), where shift(s, n) is the register after n
// zero bytes from s; for a fixed n, shift is linear in s, so four byte-indexed tables give it.
// The tables are built once at start from the 32 unit vectors, by the instruction itself.
struct Shift {
  std::uint32_t t[4][256];
  std::uint32_t operator()(std::uint32_t s) const {
    return t[0][s & 0xff] ^ t[1][(s >> 8) & 0xff] ^ t[2][(s >> 16) & 0xff] ^ t[3][s >> 24];
  }
};

__attribute__((target("sse4.2"))) Shift make_shift(std::size_t bytes) {
  // Both strides are whole words, so the zero bytes go in 8 at a time.
  std::uint32_t unit[32];
  for (int j = 0; j < 32; ++j) {
    std::uint64_t c = std::uint64_t{1} << j;
    for (std::size_t i = 0; i < bytes; i += 8) c = __builtin_ia32_crc32di(c, 0);
    unit[j] = static_cast<std::uint32_t>(c);
  }
  Shift s{};
  for (int k = 0; k < 4; ++k) {
    for (std::uint32_t v = 0; v < 256; ++v) {
      std::uint32_t x = 0;
      for (int b = 0; b < 8; ++b) {
        if ((v >> b & 1) != 0) x ^= unit[8 * k + b];
      }
      s.t[k][v] = x;
    }
  }
  return s;
}

// A long stride for checkpoint chunks and log blocks, a short one for what is left of them.
// Below 3 short strides (384 bytes: a record) one chain costs less than a join.
constexpr std::size_t kLongStride = 1024;
constexpr std::size_t kShortStride = 128;
// Filled by choose() before the instruction's path is chosen (built by the instruction itself).
Shift g_shift_long;
Shift g_shift_short;

__attribute__((target("sse4.2"), always_inline)) inline std::uint64_t word(const unsigned char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

template <std::size_t kStride>
__attribute__((target("sse4.2"))) std::uint64_t three_chains(std::uint64_t c, const Shift& shift,
                                                             const unsigned char*& p,
                                                             std::size_t& n) {
  static_assert(kStride % 8 == 0);
  while (n >= 3 * kStride) {
    std::uint64_t a = c;
    std::uint64_t b = 0;
    std::uint64_t d = 0;
    for (std::size_t i = 0; i < kStride; i += 8) {
      a = __builtin_ia32_crc32di(a, word(p + i));
      b = __builtin_ia32_crc32di(b, word(p + kStride + i));
      d = __builtin_ia32_crc32di(d, word(p + 2 * kStride + i));
    }
    c = shift(shift(static_cast<std::uint32_t>(a)) ^ static_cast<std::uint32_t>(b)) ^
        static_cast<std::uint32_t>(d);
    p += 3 * kStride;
    n -= 3 * kStride;
  }
  return c;
}

__attribute__((target("sse4.2"))) std::uint32_t extend_sse42(std::uint32_t crc,
                                                             const unsigned char* p,
                                                             std::size_t n) {
  std::uint64_t c = crc;
  c = three_chains<kLongStride>(c, g_shift_long, p, n);
  c = three_chains<kShortStride>(c, g_shift_short, p, n);
  while (n >= 8) {
    c = __builtin_ia32_crc32di(c, word(p));
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
#endif

using ExtendFn = std::uint32_t (*)(std::uint32_t, const unsigned char*, std::size_t);

ExtendFn choose() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    g_shift_long = make_shift(kLongStride);
    g_shift_short = make_shift(kShortStride);
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
