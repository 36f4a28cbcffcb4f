// Concurrent inserts, removes, lookups and scans on one tree; run under TSan as well.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "index/btree.h"
#include "util/random.h"

namespace braid::index {
namespace {

std::string key_of(std::uint64_t i, int len) {
  std::string k(static_cast<std::size_t>(len), 'x');
  for (int b = 0; b < 8 && b < len; ++b) k[b] = static_cast<char>(i >> (56 - 8 * b));
  return k;
}

TEST(BTreeConcurrent, DisjointWritersAndScanningReaders) {
  BTree t;
  constexpr int kWriters = 2;
  constexpr std::uint64_t kPerWriter = 20000;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> scan_rounds{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      util::Rng rng(100 + w);
      std::uint64_t ex;
      // Interleaved key spaces (i * kWriters + w) so writers share leaves; long keys on one
      // writer so suffix comparisons race with splits.
      const int len = w == 0 ? 8 : 40;
      for (std::uint64_t i = 0; i < kPerWriter; ++i) {
        const std::uint64_t id = rng.uniform(1u << 30) * kWriters + w;
        ASSERT_TRUE(t.insert_if_absent(key_of(id, len), id, &ex) || ex == id);
        std::uint64_t v;
        ASSERT_TRUE(t.lookup(key_of(id, len), &v));
        ASSERT_EQ(v, id);
        if (i % 3 == 0) {
          ASSERT_TRUE(t.remove(key_of(id, len), id));
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) {
      const bool rev = scan_rounds.load() % 2 == 1;
      std::string prev;
      bool first = true;
      LeafBatch b;
      std::string from;
      bool inf = rev;
      for (;;) {
        t.scan_leaf(from, inf, "", "", rev, &b);
        for (const auto& e : b.entries) {
          const std::string k(b.key(e));
          if (!first) {
            ASSERT_TRUE(rev ? k < prev : prev < k);  // strictly ordered, no duplicates
          }
          prev = k;
          first = false;
        }
        if (!b.has_next) break;
        from = b.next;
        inf = false;
      }
      scan_rounds.fetch_add(1);
    }
  });
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  stop.store(true);
  threads.back().join();
  EXPECT_GT(scan_rounds.load(), 0u);
  const std::size_t n = t.check_invariants();
  EXPECT_GT(n, 0u);
  std::size_t seen = 0;
  t.for_each([&](std::string_view, std::uint64_t) { ++seen; });
  EXPECT_EQ(seen, n);
}

TEST(BTreeConcurrent, RacingInsertsOfTheSameKeysHaveOneWinner) {
  BTree t;
  constexpr int kThreads = 3;
  constexpr std::uint64_t kKeys = 5000;
  std::atomic<std::uint64_t> wins{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      std::uint64_t ex;
      for (std::uint64_t i = 0; i < kKeys; ++i) {
        if (t.insert_if_absent(key_of(i * 7919 % kKeys, 12), w, &ex)) wins.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wins.load(), kKeys);
  EXPECT_EQ(t.check_invariants(), kKeys);
}

}  // namespace
}  // namespace braid::index
