// Counting the heads below a key's head over a node's contiguous head array (btree.h,
// "Layout"). The tree calls count_below(), which picks AVX2 where the build targets it
// (-march; not AVX-512, below), else the scalar loop; the AVX2 variant is compiled for its own
// target regardless, so tests can hold it against the scalar loop on every CPU that runs it.
//
// The heads are read racily (a writer may hold the node): every variant counts only lanes
// below `count`, so whatever a torn or unsorted read yields stays in [0, count], and the
// caller's version check discards it. The vector loads are plain loads, each lane an aligned
// 8-byte word; they run up to 3 heads past `count`, which stays inside the node (below).
#pragma once

#include <cstdint>
#include <limits>

#include "index/racy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define BRAID_HAVE_X86_SEARCH 1
#else
#define BRAID_HAVE_X86_SEARCH 0
#endif

namespace braid::index::search {

// Heads a vector variant may load past `count` (the tree keeps that much room after its head
// array: btree.cc asserts it).
inline constexpr unsigned kOverread = 3;

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
// -1 in each of the four lanes whose head (from `heads`) is below the key. AVX2 compares
// signed: flipping both sides' top bit (`bias`; `key` comes flipped) orders them as unsigned.
__attribute__((target("avx2"))) BRAID_OPTIMISTIC inline __m256i below4(const std::uint64_t* heads,
                                                                       __m256i key, __m256i bias) {
  const __m256i h =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(heads)), bias);
  return _mm256_cmpgt_epi64(key, h);
}

// Four heads to a compare. Each full vector's compare is subtracted into lane counters, so a
// vector costs its load-and-flip, compare and subtract; two sets of counters, one per
// alternate vector, halve the chain of subtractions the sum waits for. Only the last partial
// vector is masked, and the lanes are summed once at the end. That beats a popcount of each
// compare's mask, whose extraction sits on the chain every compare waits for.
__attribute__((target("avx2"))) BRAID_OPTIMISTIC inline unsigned count_below_avx2(
    const std::uint64_t* heads, unsigned count, std::uint64_t head) {
  const __m256i bias = _mm256_set1_epi64x(std::numeric_limits<long long>::min());
  const __m256i key = _mm256_xor_si256(_mm256_set1_epi64x(static_cast<long long>(head)), bias);
  __m256i even = _mm256_setzero_si256();
  __m256i odd = _mm256_setzero_si256();
  unsigned i = 0;
  for (; i + 8 <= count; i += 8) {
    even = _mm256_sub_epi64(even, below4(heads + i, key, bias));
    odd = _mm256_sub_epi64(odd, below4(heads + i + 4, key, bias));
  }
  if (i + 4 <= count) {
    even = _mm256_sub_epi64(even, below4(heads + i, key, bias));
    i += 4;
  }
  unsigned rest = 0;
  if (i < count) {
    const int lt = _mm256_movemask_pd(_mm256_castsi256_pd(below4(heads + i, key, bias)));
    rest = static_cast<unsigned>(
        __builtin_popcount(static_cast<unsigned>(lt) & ((1u << (count - i)) - 1)));
  }
  const __m256i below = _mm256_add_epi64(even, odd);
  const __m128i half =
      _mm_add_epi64(_mm256_castsi256_si128(below), _mm256_extracti128_si256(below, 1));
  return rest + static_cast<unsigned>(_mm_cvtsi128_si64(half) + _mm_extract_epi64(half, 1));
}
#endif

// The variant the build targets. Not AVX-512, where the CPU has it: eight heads to a compare
// were barely faster in cache, and runs with it fell far below the AVX2 count in spells of
// frequent interrupts; the one form that held ran no faster than AVX2 (docs/results.md).
BRAID_OPTIMISTIC inline unsigned count_below(const std::uint64_t* heads, unsigned count,
                                             std::uint64_t head) {
#if BRAID_HAVE_X86_SEARCH && defined(__AVX2__)
  return count_below_avx2(heads, count, head);
#else
  return count_below_scalar(heads, count, head);
#endif
}

}  // namespace braid::index::search
