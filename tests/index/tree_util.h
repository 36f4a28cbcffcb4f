// Helpers the B+-tree tests share.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <algorithm>
#include <memory>

#include "index/btree.h"
#include "util/random.h"

namespace braid::index {

// Every entry of [begin, end) (empty end: unbounded), leaf by leaf, either way. A leaf that
// cannot be loaded fails the test.
inline std::vector<std::pair<std::string, std::uint64_t>> scan_all(const BTree& t,
                                                                   std::string_view begin,
                                                                   std::string_view end,
                                                                   bool reverse) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  LeafBatch b;
  std::string from(reverse ? end : begin);
  bool inf = reverse && end.empty();
  for (;;) {
    EXPECT_TRUE(t.scan_leaf(from, inf, begin, end, reverse, &b)) << take_load_failure().to_string();
    for (const auto& e : b.entries) out.emplace_back(std::string(b.key(e)), e.value);
    if (!b.has_next) return out;
    from = b.next;
    inf = false;
  }
}

// Every entry of the tree, in order (leaves on storage are read back).
inline std::vector<std::pair<std::string, std::uint64_t>> entries_of(const BTree& t) {
  std::vector<std::pair<std::string, std::uint64_t>> v;
  EXPECT_TRUE(t.for_each(
      [&](std::string_view k, std::uint64_t value) { v.emplace_back(std::string(k), value); }));
  return v;
}

// A node's key `i`, read as plain memory (the node is a private copy).
inline std::string key_of(const Node& n, unsigned i) {
  const Tail& t = n.tails(n.count)[i];
  const std::uint64_t be = __builtin_bswap64(n.heads()[i]);
  std::string k(reinterpret_cast<const char*>(&be), std::min<std::size_t>(t.len, 8));
  if (t.len > 8) k.append(n.raw() + t.suffix_off, t.len - 8u);
  return k;
}

// A tree of `n` keys of lengths 1..`max_len` (seeded), their bytes `first` + [0, `letters`),
// values their insertion numbers.
inline std::unique_ptr<BTree> random_tree(std::uint64_t seed, std::size_t n, std::size_t max_len,
                                          char first, unsigned letters) {
  auto t = std::make_unique<BTree>();
  util::Rng rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    std::string k(1 + rng.uniform(max_len), '\0');
    for (char& c : k) c = static_cast<char>(first + rng.uniform(letters));
    std::uint64_t existing = 0;
    (void)t->insert_if_absent(k, i, &existing);
  }
  return t;
}

}  // namespace braid::index
