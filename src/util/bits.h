// Small bit and memory helpers shared by the index and the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace braid::util {

inline constexpr std::size_t kCacheLine = 64;

// The first up-to-8 bytes of `p`, big-endian, zero-padded: comparing these heads as integers
// orders keys as memcmp does on their first 8 bytes.
inline std::uint64_t load_head(const char* p, std::size_t len) {
  std::uint64_t v = 0;
  if (len >= 8) {
    std::memcpy(&v, p, 8);
    return __builtin_bswap64(v);
  }
  std::memcpy(&v, p, len);
  return __builtin_bswap64(v);
}

// Issue a prefetch for every cache line of [p, p + bytes).
inline void prefetch_range(const void* p, std::size_t bytes) {
  auto a = reinterpret_cast<std::uintptr_t>(p) & ~(kCacheLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  for (; a < end; a += kCacheLine) __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace braid::util
