// Small bit and memory helpers shared by the index and the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <sched.h>

// A condition with no pattern to learn (a bisection's direction): asks for a conditional move
// rather than a branch. Clang honours it; GCC makes such selects branch-free by itself.
#if defined(__clang__)
#define BRAID_UNPREDICTABLE(c) __builtin_unpredictable(c)
#else
#define BRAID_UNPREDICTABLE(c) (c)
#endif

namespace braid::util {

// The first up-to-8 bytes of `p`, big-endian, zero-padded: comparing these heads as integers
// orders keys as memcmp does on their first 8 bytes.
inline std::uint64_t load_head(const char* p, std::size_t len) {
  std::uint64_t v = 0;
  if (len >= 8) {
    std::memcpy(&v, p, 8);  // constant size: one load, the common case on every comparison
  } else {
    std::memcpy(&v, p, len);
  }
  return __builtin_bswap64(v);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waiting for another thread that is certain to make progress within a few instructions (an
// owner publishing its commit timestamp, or unlinking its aborted versions): spin briefly, then
// yield, because that thread may have been descheduled for a whole time slice, and with more
// runnable threads than cores only yielding lets it run.
// Spins after which backoff() yields the core: past them a wait is long enough to watch
// (util/stall.h), a clock read beside each sched_yield.
inline constexpr std::uint32_t kYieldingSpins = 64;

inline void backoff(std::uint32_t round) {
  if (round < kYieldingSpins) {
    cpu_relax();
  } else {
    ::sched_yield();
  }
}

}  // namespace braid::util
