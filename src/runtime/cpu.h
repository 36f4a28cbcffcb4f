// Thread placement and software prefetch.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::runtime {

// Pins the calling thread to the i-th CPU (modulo their number) of the process's affinity
// mask. Best effort: false when the kernel refuses.
bool pin_current_thread(std::uint32_t i);

// Where a prefetch brings its lines.
//   kL1  prefetcht0: for a use a few instructions later (the Prefetch mode's hints).
//   kL2  prefetcht1: for a use after a suspension. The transaction reads the lines only once the
//        other open transactions have run, so they need not sit in L1 meanwhile; and an L1
//        prefetch holds one of the core's few L1 miss buffers per line until its fill, which
//        caps the misses in flight: a node prefetch is 16 lines. The coroutine modes gain from
//        kL2; the Prefetch mode would lose, since its use follows at once and then waits on
//        the L2 fill.
enum class CacheLevel : std::uint8_t { kL1, kL2 };

// Prefetches `bytes` starting at `p`, one hint per 64-byte line. The lines are counted first
// and hinted four per loop step: a node is 16 lines, and a loop of one hint per step cost ~4
// instructions per line, ~230 per YCSB get over 10^6 records interleaved (scripts/profile-ops.sh).
template <CacheLevel kTo = CacheLevel::kL1>
inline void prefetch_lines(const void* p, std::size_t bytes) {
  constexpr int kLocality = kTo == CacheLevel::kL1 ? 3 : 2;
  if (bytes == 0) return;
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
  const std::uintptr_t last =
      (reinterpret_cast<std::uintptr_t>(p) + bytes - 1) & ~std::uintptr_t{63};
  std::size_t lines = ((last - first) >> 6) + 1;
  const char* c = reinterpret_cast<const char*>(first);
  for (; lines >= 4; lines -= 4, c += 256) {
    __builtin_prefetch(c, 0, kLocality);
    __builtin_prefetch(c + 64, 0, kLocality);
    __builtin_prefetch(c + 128, 0, kLocality);
    __builtin_prefetch(c + 192, 0, kLocality);
  }
  for (; lines > 0; --lines, c += 64) __builtin_prefetch(c, 0, kLocality);
}

}  // namespace braid::runtime
