// A suspended transaction's resume site: which code it runs when the worker resumes it, as far
// as the scheduler needs to know (the `team` policy groups transactions by it; STEPS §4.1
// keeps a list per operation and per index, because an index fetch's code follows the tree's
// depth). Layout, high to low: [operation kind + 1 : 4][table or index : 16][suspension : 12].
// An operation sets kind and object when it begins (engine::Worker::note_op) and every
// suspension inside it adds one (runtime::Miss), so two transactions at equal sites are at the
// same suspension of the same operation on the same table: the code each runs next is the
// same up to data-dependent branches. Collisions of the 16-bit object hash, and the step
// counter's wrap past 4095 suspensions (a long scan), only cost grouping quality.
#pragma once

#include <cstdint>

namespace braid::sched {

// Launched and not yet run: every such transaction starts in its body's first code.
inline constexpr std::uint32_t kSiteStart = 0;

inline std::uint32_t op_site(std::uint32_t kind, const void* object) {
  const auto h = static_cast<std::uint32_t>(
      (static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(object)) *
       0x9E3779B97F4A7C15ull) >>
      48);
  return ((kind + 1) << 28) | (h << 12);
}

// The order teams run in within a round: by operation, then suspension, then object, so that
// teams at the same step of the same operation on different tables (the same descent code,
// say) run one after another as well.
constexpr std::uint32_t site_order(std::uint32_t site) {
  return (site & 0xF000'0000u) | ((site & 0xFFFu) << 16) | ((site >> 12) & 0xFFFFu);
}

}  // namespace braid::sched
