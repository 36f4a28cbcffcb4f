// Helpers the B+-tree tests share.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/btree.h"

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

}  // namespace braid::index
