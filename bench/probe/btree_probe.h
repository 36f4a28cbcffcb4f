// Read-only descents of BraidDB's own B+-tree (Killer Nanoseconds §4.1, on our tree instead of
// Masstree). Every technique drives the same stepper the engine uses (index::Lookup: one node
// per step, restarts included), so the tree code under test is exactly the engine's; only the
// driving around it differs. A step's next node is prefetched whole (all 16 lines), as the
// engine's interleaved path does, and a prefetched node is bisected, one read cold (naive) is
// searched by counting, by the engine's rule (index::NodeSearch).
#pragma once

#include <braid/task.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "index/btree.h"
#include "probe/drive.h"
#include "probe/probe.h"
#include "runtime/cpu.h"
#include "runtime/interleave.h"
#include "util/assert.h"

namespace braid::probe {

namespace btree_detail {

// keys hold 8-byte keys in memory order (big-endian numbers sort as their bytes).
inline std::string_view key_view(const std::uint64_t& k) {
  return {reinterpret_cast<const char*>(&k), sizeof k};
}

inline std::uint64_t answer(const index::Lookup& l) { return l.found() ? l.value() : kNotFound; }

// Internal linkage, not inline: the g++-12 link failure binsearch.h's coro_one explains.
static Task<std::uint64_t> coro_one(const index::BTree& tree, std::string_view key) {
  index::Lookup l(tree, key, index::NodeSearch::kBisect);
  while (l.step()) {
    co_await runtime::Yield{l.next(), index::kNodeBytes};
  }
  co_return answer(l);
}

}  // namespace btree_detail

inline void btree_probe(const index::BTree& tree, Technique tech,
                        std::span<const std::uint64_t> keys, std::span<std::uint64_t> out,
                        std::size_t group) {
  using namespace btree_detail;
  BRAID_ASSERT(keys.size() == out.size());
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= runtime::kMaxGroup);
  const std::size_t n = keys.size();
  switch (tech) {
    case Technique::kNaive:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t v;
        out[i] = tree.lookup(key_view(keys[i]), &v) ? v : kNotFound;
      }
      return;

    case Technique::kGp:
    case Technique::kAmac: {
      // The stepper is already the state machine AMAC needs; GP runs the levels in lockstep,
      // and uniform depth makes this GP's good case too.
      const auto start = [&](std::optional<index::Lookup>& l, std::size_t i) {
        l.emplace(tree, key_view(keys[i]), index::NodeSearch::kBisect);
      };
      const auto prefetch = [](const index::Lookup& l) {
        runtime::prefetch_lines(l.next(), index::kNodeBytes);
      };
      const auto done = [](const index::Lookup& l) { return answer(l); };
      if (tech == Technique::kGp) {
        drive_gp<index::Lookup>(n, group, start, prefetch, done, out);
      } else {
        drive_amac<index::Lookup>(n, group, start, prefetch, done, out);
      }
      return;
    }

    case Technique::kCoro:
      runtime::interleave<std::uint64_t>(
          n, group, [&](std::size_t i) { return coro_one(tree, key_view(keys[i])); },
          [&](std::size_t i, std::uint64_t v) { out[i] = v; });
      return;
  }
}

}  // namespace braid::probe
