// Thread placement and software prefetch.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::runtime {

// Pins the calling thread to the i-th CPU (modulo their number) of the process's affinity
// mask. Best effort: false when the kernel refuses.
bool pin_current_thread(std::uint32_t i);

// Prefetches `bytes` starting at `p` into all cache levels, one hint per 64-byte line.
inline void prefetch_lines(const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  const char* end = c + bytes;
  for (c = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(c) & ~std::uintptr_t{63});
       c < end; c += 64) {
    __builtin_prefetch(c, 0, 3);
  }
}

}  // namespace braid::runtime
