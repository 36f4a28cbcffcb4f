// Every width of the head count (index/node_search.h) the CPU runs agrees with a plain count,
// whatever the build targets: on sorted and unsorted heads, at every count a node can hold,
// with heads on both sides of the sign bit, garbage past the count that must not be counted,
// and heads starting anywhere in a line, with garbage before them (a node's heads start 32
// bytes into its first line, after the header).
#include "index/node_search.h"
#include "index/btree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "util/random.h"

namespace braid::index {
namespace {

using CountFn = unsigned (*)(const std::uint64_t*, unsigned, std::uint64_t);

struct Variant {
  const char* name;
  CountFn fn;
  bool runs;
};

std::vector<Variant> variants() {
  std::vector<Variant> v{{"scalar", search::count_below_scalar, true},
                         {"build", search::count_below, true}};
#if BRAID_HAVE_X86_SEARCH
  v.push_back({"avx2", search::count_below_avx2, __builtin_cpu_supports("avx2") != 0});
#endif
  return v;
}

unsigned reference(const std::uint64_t* heads, unsigned count, std::uint64_t head) {
  return static_cast<unsigned>(
      std::count_if(heads, heads + count, [&](std::uint64_t h) { return h < head; }));
}

// Heads drawn from a few values around 0, 2^63 and 2^64 - 1, so equal heads, the sign bit and
// the extremes all occur.
std::uint64_t edge_value(util::Rng& rng) {
  static constexpr std::array<std::uint64_t, 7> kBase{0,
                                                      1,
                                                      (std::uint64_t{1} << 63) - 1,
                                                      std::uint64_t{1} << 63,
                                                      (std::uint64_t{1} << 63) + 1,
                                                      ~std::uint64_t{0} - 1,
                                                      ~std::uint64_t{0}};
  if (rng.uniform(3) == 0) return rng.next();
  return kBase[rng.uniform(kBase.size())];
}

TEST(NodeSearch, EveryVariantCountsAsAPlainLoopDoes) {
  util::Rng rng(20261124);
  std::size_t ran = 0;
  // A node's first lines: up to 7 words before the heads (the header, here garbage), the
  // heads, then whatever lies past them (garbage too).
  alignas(64) std::array<std::uint64_t, 7 + Node::kMaxSlots + 8> body{};
  for (int round = 0; round < 4000; ++round) {
    const unsigned count = static_cast<unsigned>(rng.uniform(Node::kMaxSlots + 1));
    const unsigned offset = static_cast<unsigned>(rng.uniform(8));
    for (auto& h : body) h = edge_value(rng);
    std::uint64_t* heads = body.data() + offset;
    if (rng.uniform(2) == 0) std::sort(heads, heads + count);
    const std::uint64_t key =
        rng.uniform(4) == 0 ? body[rng.uniform(body.size())] : edge_value(rng);
    const unsigned want = reference(heads, count, key);
    for (const Variant& v : variants()) {
      if (!v.runs) continue;
      ASSERT_EQ(v.fn(heads, count, key), want) << v.name << " round " << round << " count " << count
                                               << " offset " << offset << " key " << key;
      ++ran;
    }
  }
  EXPECT_GE(ran, 4000u * 2);
}

TEST(NodeSearch, LanesOutsideTheHeadsAreNeverCounted) {
  alignas(64) std::array<std::uint64_t, 8 + Node::kMaxSlots + 8> body{};
  body.fill(0);  // every word below any nonzero key: counted wherever a lane is not masked
  for (unsigned offset = 0; offset < 8; ++offset) {
    for (unsigned count = 0; count <= Node::kMaxSlots; ++count) {
      for (const Variant& v : variants()) {
        if (!v.runs) continue;
        const std::uint64_t* heads = body.data() + offset;
        EXPECT_EQ(v.fn(heads, count, 1), count) << v.name << " count " << count << " at " << offset;
        EXPECT_EQ(v.fn(heads, count, 0), 0u) << v.name << " count " << count << " at " << offset;
      }
    }
  }
}

}  // namespace
}  // namespace braid::index
