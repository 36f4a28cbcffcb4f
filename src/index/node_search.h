// Counting the heads below a key's head over a node's contiguous head array (btree.h,
// "Layout"), in every width this CPU family offers. The tree calls count_below(), which picks
// the widest the build targets (-march); the other variants are compiled for their own target
// regardless, so tests can hold each one the CPU runs against the scalar loop.
//
// The heads are read racily (a writer may hold the node): every variant counts only lanes
// below `count`, so whatever a torn or unsorted read yields stays in [0, count], and the
// caller's version check discards it. The vector loads are plain loads, each lane an aligned
// 8-byte word; they run up to 7 heads past `count`, which stays inside the node (below).
#pragma once

#include <cstdint>
#include <limits>

#include "index/btree.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define BRAID_HAVE_X86_SEARCH 1
#else
#define BRAID_HAVE_X86_SEARCH 0
#endif

namespace braid::index::search {

static_assert(Node::kHeader + (Node::kMaxSlots + 7) * sizeof(std::uint64_t) <= kNodeBytes,
              "a vector load past the last head stays inside the node");

// One racy load, compare and add-with-carry per head: independent loads, so a cold node's
// lines miss in parallel.
BRAID_OPTIMISTIC inline unsigned count_below_scalar(const std::uint64_t* heads, unsigned count,
                                                    std::uint64_t head) {
  unsigned below = 0;
  for (unsigned i = 0; i < count; ++i) {
    below += racy(heads[i]) < head ? 1u : 0u;
  }
  return below;
}

#if BRAID_HAVE_X86_SEARCH
// Four heads to a compare. AVX2 compares signed: flipping both sides' top bit orders them as
// unsigned.
__attribute__((target("avx2"))) BRAID_OPTIMISTIC inline unsigned count_below_avx2(
    const std::uint64_t* heads, unsigned count, std::uint64_t head) {
  const __m256i bias = _mm256_set1_epi64x(std::numeric_limits<long long>::min());
  const __m256i key = _mm256_xor_si256(_mm256_set1_epi64x(static_cast<long long>(head)), bias);
  unsigned below = 0;
  for (unsigned i = 0; i < count; i += 4) {
    const unsigned left = count - i;
    const unsigned live = left >= 4 ? 0xfu : (1u << left) - 1;
    const __m256i h =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(heads + i)), bias);
    const int lt = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(key, h)));
    below += static_cast<unsigned>(__builtin_popcount(static_cast<unsigned>(lt) & live));
  }
  return below;
}

// Eight heads to a compare, unsigned, the lanes past `count` masked off.
__attribute__((target("avx512f"))) BRAID_OPTIMISTIC inline unsigned count_below_avx512(
    const std::uint64_t* heads, unsigned count, std::uint64_t head) {
  const __m512i key = _mm512_set1_epi64(static_cast<long long>(head));
  unsigned below = 0;
  for (unsigned i = 0; i < count; i += 8) {
    const unsigned left = count - i;
    const __mmask8 live =
        left >= 8 ? static_cast<__mmask8>(0xff) : static_cast<__mmask8>((1u << left) - 1);
    const __m512i h = _mm512_loadu_si512(heads + i);
    below += static_cast<unsigned>(__builtin_popcount(_mm512_mask_cmplt_epu64_mask(live, h, key)));
  }
  return below;
}
#endif

// The variant the build targets.
BRAID_OPTIMISTIC inline unsigned count_below(const std::uint64_t* heads, unsigned count,
                                             std::uint64_t head) {
#if BRAID_HAVE_X86_SEARCH && defined(__AVX512F__)
  return count_below_avx512(heads, count, head);
#elif BRAID_HAVE_X86_SEARCH && defined(__AVX2__)
  return count_below_avx2(heads, count, head);
#else
  return count_below_scalar(heads, count, head);
#endif
}

}  // namespace braid::index::search
