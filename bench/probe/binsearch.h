// Binary search over a sorted array of 4-byte integer keys (Killer Nanoseconds §3.2).
//
// The paper's hybrid, branching search: the loop tests for equality and exits early (the test
// is almost always false, so the branch predicts well). A lookup answers the key's index, or
// kNotFound. Every probe of the array is a likely miss until the remaining range fits in a cache
// line; from there (16 keys or fewer) the techniques stop prefetching and switching, because the
// lines they need arrived with the last prefetch or sit next to it.
#pragma once

#include <braid/task.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "probe/probe.h"
#include "runtime/cpu.h"
#include "runtime/interleave.h"
#include "util/assert.h"
#include "util/vmem.h"

namespace braid::probe {

class SortedArray {
 public:
  // Keys 1, 3, 5, ... (2i + 1 at index i): sequentially generated as in the paper, with the
  // even numbers in between as keys that are absent.
  Status init(std::size_t n) {
    BRAID_ASSERT(n > 0);
    BRAID_ASSERT(n <= (std::size_t{1} << 31));
    if (Status s = mem_.reserve(n * sizeof(std::uint32_t), true); !s.is_ok()) return s;
    if (Status s = mem_.ensure_committed(n * sizeof(std::uint32_t)); !s.is_ok()) return s;
    a_ = reinterpret_cast<std::uint32_t*>(mem_.base());
    for (std::size_t i = 0; i < n; ++i) a_[i] = static_cast<std::uint32_t>(2 * i + 1);
    n_ = n;
    return Status::ok();
  }
  const std::uint32_t* data() const { return a_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(std::uint32_t); }
  static std::uint32_t key_at(std::size_t i) { return static_cast<std::uint32_t>(2 * i + 1); }

 private:
  util::VirtualArena mem_;
  std::uint32_t* a_ = nullptr;
  std::size_t n_ = 0;
};

namespace binsearch_detail {

// Below this many remaining keys a lookup no longer prefetches or switches (one cache line).
inline constexpr std::size_t kLineKeys = 64 / sizeof(std::uint32_t);

// One search step state: the remaining range [lo, lo + len).
struct Range {
  std::size_t lo;
  std::size_t len;
};

// One comparison. True when finished; *result is then the answer.
inline bool step(const std::uint32_t* a, std::uint32_t key, Range& r, std::uint64_t* result) {
  const std::size_t half = r.len >> 1;
  const std::uint32_t v = a[r.lo + half];
  if (v == key) {
    *result = r.lo + half;
    return true;
  }
  if (v < key) {
    r.lo += half + 1;
    r.len -= half + 1;
  } else {
    r.len = half;
  }
  if (r.len == 0) {
    *result = kNotFound;
    return true;
  }
  return false;
}

// Runs the steps that need no prefetch (range within a line). True when finished.
inline bool finish_short(const std::uint32_t* a, std::uint32_t key, Range& r,
                         std::uint64_t* result) {
  while (r.len <= kLineKeys) {
    if (step(a, key, r, result)) return true;
  }
  return false;
}

inline const std::uint32_t* probe_addr(const std::uint32_t* a, const Range& r) {
  return a + r.lo + (r.len >> 1);
}

inline std::uint64_t naive_one(const std::uint32_t* a, std::size_t n, std::uint32_t key) {
  Range r{0, n};
  std::uint64_t result;
  while (!step(a, key, r, &result)) {
  }
  return result;
}

// Internal linkage, not inline: g++-12 emits an inline coroutine's frame table outside the
// COMDAT group of its actor, so two translation units that instantiate it fail to link
// ("defined in discarded section").
static Task<std::uint64_t> coro_one(const std::uint32_t* a, std::size_t n, std::uint32_t key) {
  Range r{0, n};
  std::uint64_t result;
  for (;;) {
    if (r.len > kLineKeys) {
      co_await runtime::Yield{probe_addr(a, r), sizeof(std::uint32_t)};
    }
    if (step(a, key, r, &result)) co_return result;
  }
}

}  // namespace binsearch_detail

// Searches keys[i] into out[i] (index or kNotFound) with technique `tech`, group 1..kMaxGroup.
inline void binsearch_probe(const SortedArray& arr, Technique tech,
                            std::span<const std::uint32_t> keys, std::span<std::uint64_t> out,
                            std::size_t group) {
  using namespace binsearch_detail;
  BRAID_ASSERT(keys.size() == out.size());
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= runtime::kMaxGroup);
  const std::uint32_t* a = arr.data();
  const std::size_t n = keys.size();
  switch (tech) {
    case Technique::kNaive:
      for (std::size_t i = 0; i < n; ++i) out[i] = naive_one(a, arr.size(), keys[i]);
      return;

    case Technique::kGp: {
      // Every search of a group has the same depth (±1), so the lockstep stages waste little:
      // binary search is GP's best case (the paper's Figure 10).
      Range r[runtime::kMaxGroup];
      bool done[runtime::kMaxGroup];
      for (std::size_t base = 0; base < n; base += group) {
        const std::size_t g = std::min(group, n - base);
        std::size_t left = g;
        for (std::size_t j = 0; j < g; ++j) {
          r[j] = Range{0, arr.size()};
          done[j] = false;
        }
        while (left != 0) {
          for (std::size_t j = 0; j < g; ++j) {
            if (!done[j]) runtime::prefetch_lines(probe_addr(a, r[j]), sizeof(std::uint32_t));
          }
          for (std::size_t j = 0; j < g; ++j) {
            if (done[j]) continue;
            std::uint64_t* res = &out[base + j];
            if (step(a, keys[base + j], r[j], res) || finish_short(a, keys[base + j], r[j], res)) {
              done[j] = true;
              --left;
            }
          }
        }
      }
      return;
    }

    case Technique::kAmac: {
      struct State {
        std::size_t input;
        Range r;
        bool busy;
      };
      State st[runtime::kMaxGroup];
      for (std::size_t j = 0; j < group; ++j) st[j].busy = false;
      std::size_t next = 0;
      std::size_t finished = 0;
      for (std::size_t j = 0; finished < n; j = j + 1 == group ? 0 : j + 1) {
        State& s = st[j];
        if (!s.busy) {
          if (next == n) continue;
          s.input = next++;
          s.r = Range{0, arr.size()};
          s.busy = true;
          if (finish_short(a, keys[s.input], s.r, &out[s.input])) {
            s.busy = false;
            ++finished;
          } else {
            runtime::prefetch_lines(probe_addr(a, s.r), sizeof(std::uint32_t));
          }
          continue;
        }
        std::uint64_t* res = &out[s.input];
        if (step(a, keys[s.input], s.r, res) || finish_short(a, keys[s.input], s.r, res)) {
          s.busy = false;
          ++finished;
        } else {
          runtime::prefetch_lines(probe_addr(a, s.r), sizeof(std::uint32_t));
        }
      }
      return;
    }

    case Technique::kCoro:
      runtime::interleave<std::uint64_t>(
          n, group, [&](std::size_t i) { return coro_one(a, arr.size(), keys[i]); },
          [&](std::size_t i, std::uint64_t v) { out[i] = v; });
      return;
  }
}

}  // namespace braid::probe
