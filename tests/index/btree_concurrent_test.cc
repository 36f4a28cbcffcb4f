// Concurrent inserts, removes, lookups and scans on one tree; run under TSan as well.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "index/btree.h"
#include "mem_node_store.h"
#include "util/random.h"

namespace braid::index {
namespace {

std::string key_of(std::uint64_t i, int len) {
  std::string k(static_cast<std::size_t>(len), 'x');
  for (int b = 0; b < 8 && b < len; ++b) k[b] = static_cast<char>(i >> (56 - 8 * b));
  return k;
}

// One whole scan, forward or reverse, leaf by leaf: `fn(key, value)` for every entry.
template <typename Fn>
void scan_whole(const BTree& t, bool rev, Fn&& fn) {
  LeafBatch b;
  std::string from;
  bool inf = rev;
  for (;;) {
    t.scan_leaf(from, inf, "", "", rev, &b);
    for (const auto& e : b.entries) fn(b.key(e), e.value);
    if (!b.has_next) return;
    from = b.next;
    inf = false;
  }
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
      scan_whole(t, rev, [&](std::string_view key, std::uint64_t) {
        const std::string k(key);
        if (!first) {
          ASSERT_TRUE(rev ? k < prev : prev < k);  // strictly ordered, no duplicates
        }
        prev = k;
        first = false;
      });
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

std::uint64_t id_of(std::string_view k) {
  std::uint64_t id = 0;
  for (int b = 0; b < 8; ++b) id = id << 8 | static_cast<unsigned char>(k[b]);
  return id;
}

// Two writers run queues (insert at the tail, remove at the head) through interleaved key
// spaces, so the leaves behind their heads empty and leave the tree, their parents merge, and
// the freed nodes come back for the tails' splits; a third removes and re-inserts at random.
// Sentinel keys, never removed, sit between: a lookup must always find each one and a scan
// must always see all of them, in order, whatever merge ran under it.
// Writers that insert and remove (merging leaves), readers that look up and scan, and with a
// store an evictor that sends random leaves to it, all at once. A last writer flips the
// sentinels' values (BTree::replace) and remembers each one's last: a replace that an eviction
// or a merge lost shows at the end.
void merges_race(BTree& t, MemNodeStore* store) {
  constexpr std::uint64_t kOps = 60000;
  constexpr std::uint64_t kWindow = 1500;
  constexpr std::uint64_t kSentinelEvery = 1024;  // in ids
  constexpr std::uint64_t kSentinels = (kOps * 4) / kSentinelEvery + 1;
  auto sentinel = [](std::uint64_t j) { return j * kSentinelEvery; };
  constexpr std::uint64_t kFlipped = std::uint64_t{1} << 40;  // above every id
  std::vector<std::uint64_t> flipped_last(kSentinels, 0);
  std::uint64_t ex;
  for (std::uint64_t j = 0; j < kSentinels; ++j) {
    ASSERT_TRUE(t.insert_if_absent(key_of(sentinel(j), 8), sentinel(j), &ex));
  }
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> scans{0};
  std::atomic<std::uint64_t> lookups{0};
  std::vector<std::thread> writers;
  for (std::uint64_t w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      std::uint64_t e;
      auto id = [w](std::uint64_t i) { return i * 4 + 1 + w; };
      for (std::uint64_t i = 0; i < kOps; ++i) {
        ASSERT_TRUE(t.insert_if_absent(key_of(id(i), 8), id(i), &e));
        if (i >= kWindow) {
          ASSERT_TRUE(t.remove(key_of(id(i - kWindow), 8), id(i - kWindow)));
        }
      }
    });
  }
  writers.emplace_back([&] {
    util::Rng rng(31);
    std::uint64_t e;
    for (std::uint64_t i = 0; i < kOps; ++i) {
      const std::uint64_t id = rng.uniform(kOps) * 4 + 3;
      if (!t.insert_if_absent(key_of(id, 8), id, &e)) {
        ASSERT_TRUE(t.remove(key_of(id, 8), id));
      }
    }
  });
  writers.emplace_back([&] {
    util::Rng rng(34);
    for (std::uint64_t i = 0; i < kOps; ++i) {
      const std::uint64_t j = rng.uniform(kSentinels);
      const std::uint64_t was = sentinel(j) | flipped_last[j];
      flipped_last[j] ^= kFlipped;
      ASSERT_TRUE(t.replace(key_of(sentinel(j), 8), was, sentinel(j) | flipped_last[j])) << j;
    }
  });
  std::vector<std::thread> readers;
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> released{0};
  if (store != nullptr) {
    readers.emplace_back([&] {
      util::Rng rng(33);
      std::string hand;
      while (!stop.load()) {
        // By key, and by the CLOCK hand.
        bool out = false;
        ASSERT_TRUE(t.evict_leaf(key_of(rng.uniform(kOps * 4), 8), &out).is_ok());
        if (out) evicted.fetch_add(1, std::memory_order_relaxed);
        std::size_t swept = 0;
        // Longer sweeps where inner nodes go: a subtree leaves only once all of it is out.
        ASSERT_TRUE(t.sweep_leaves(&hand, t.pages_inner() ? 64 : 4, &swept).is_ok());
        evicted.fetch_add(swept, std::memory_order_relaxed);
        // Frames given back to the system while stale readers may still hold them.
        if (rng.uniform(8) == 0) released.fetch_add(t.release_free_frames(4) != 0 ? 1 : 0);
      }
    });
  }
  readers.emplace_back([&] {
    util::Rng rng(32);
    while (!stop.load()) {
      const std::uint64_t s = sentinel(rng.uniform(kSentinels));
      std::uint64_t v = 0;
      ASSERT_TRUE(t.lookup(key_of(s, 8), &v)) << s;
      ASSERT_EQ(v & ~kFlipped, s);
      const std::uint64_t other = rng.uniform(kOps * 4);
      if (t.lookup(key_of(other, 8), &v)) {
        ASSERT_EQ(v & ~kFlipped, other);
      }
      lookups.fetch_add(1, std::memory_order_relaxed);
    }
  });
  readers.emplace_back([&] {
    while (!stop.load()) {
      const bool rev = scans.load() % 2 == 1;
      std::uint64_t seen = 0;
      std::uint64_t prev = 0;
      bool first = true;
      scan_whole(t, rev, [&](std::string_view key, std::uint64_t value) {
        const std::uint64_t id = id_of(key);
        ASSERT_EQ(value & ~kFlipped, id);
        if (!first) {
          ASSERT_TRUE(rev ? id < prev : prev < id);
        }
        prev = id;
        first = false;
        if (id % kSentinelEvery == 0) ++seen;
      });
      ASSERT_EQ(seen, kSentinels);
      scans.fetch_add(1);
    }
  });
  for (auto& th : writers) th.join();
  // With a store, the race is not over before the evictor and the readers have sent and
  // brought back leaves enough, however the threads were scheduled (bounded: 20 s).
  const auto inner_short = [&] {
    return t.pages_inner() && (t.inner_evictions() < 3 || t.inner_loads() < 3);
  };
  for (int waited = 0;
       store != nullptr &&
       (evicted.load() < 100 || t.loads() < 100 || released.load() == 0 || inner_short()) &&
       waited < 20'000;
       ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop.store(true);
  for (auto& th : readers) th.join();
  EXPECT_GT(scans.load(), 0u);
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_GT(t.merges(), 0u);
  EXPECT_GT(t.free_node_count() + t.node_count(), 0u);
  // The whole scan loads every leaf still out, so the check that follows sees every key.
  std::size_t seen = 0;
  EXPECT_TRUE(t.for_each([&](std::string_view, std::uint64_t) { ++seen; }));
  EXPECT_EQ(t.stored_leaves(), 0u);
  EXPECT_EQ(t.stored_inner_nodes(), 0u);  // loaded on the way to the leaves
  const std::size_t n = t.check_invariants();
  EXPECT_EQ(seen, n);
  EXPECT_GE(n, kSentinels + 2 * kWindow);
  for (std::uint64_t j = 0; j < kSentinels; ++j) {
    std::uint64_t v = 0;
    ASSERT_TRUE(t.lookup(key_of(sentinel(j), 8), &v));
    EXPECT_EQ(v, sentinel(j) | flipped_last[j]) << j;
  }
  if (store != nullptr) {
    EXPECT_GT(evicted.load(), 100u);
    EXPECT_GT(t.loads(), 100u);
    EXPECT_GT(released.load(), 0u);
    if (t.pages_inner()) {
      EXPECT_GE(t.inner_evictions(), 3u);
      EXPECT_GE(t.inner_loads(), 3u);
    }
    EXPECT_EQ(store->live(), 0u);  // every image was released once its leaf came back
    EXPECT_EQ(store->bad_releases(), 0u);
  }
}

TEST(BTreeConcurrent, MergesRaceLookupsInsertsAndScans) {
  BTree t;
  merges_race(t, nullptr);
}

TEST(BTreeConcurrent, EvictionsRaceLookupsInsertsScansAndMerges) {
  MemNodeStore store;
  BTree t;
  t.attach_store(&store, 1);
  merges_race(t, &store);
}

// The same with inner nodes going out too: descents load them level by level while the hand
// takes them, splits and merges change them, and stale readers hold their frames.
TEST(BTreeConcurrent, InnerEvictionsRaceLookupsInsertsScansAndMerges) {
  MemNodeStore store;
  BTree t;
  t.attach_store(&store, 1);
  t.set_pages_inner(true);
  merges_race(t, &store);
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
