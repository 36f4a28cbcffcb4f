// Differential tests of the probe suite: on the same inputs every technique (gp, amac, coro) must
// answer exactly what naive answers, for every group size — 1, odd sizes, the maximum, and more
// coroutines than probes — and naive must answer what a reference container says. Several seeds;
// a failure names its seed, and BRAID_PROBE_SEED=N replays one.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/test_util.h"
#include "index/btree.h"
#include "probe/binsearch.h"
#include "probe/btree_probe.h"
#include "probe/bwtree.h"
#include "probe/hash_table.h"
#include "runtime/frame_allocator.h"
#include "util/random.h"

namespace braid::probe {
namespace {

const std::size_t kGroups[] = {1, 2, 3, 7, 8, 16, 31, 64};

std::vector<std::uint64_t> seeds() {
  if (const std::uint64_t s = testing::env_u64("BRAID_PROBE_SEED", 0); s != 0) return {s};
  return {1, 2, 3, 4};
}

// Runs `probe(tech, keys, out, group)` for every technique and group size and compares with the
// naive answers; also checks that no coroutine frame outlives its run.
template <typename Key, typename Probe>
void expect_all_agree(const std::vector<Key>& keys, const std::vector<std::uint64_t>& naive,
                      Probe&& probe, const std::string& what) {
  for (Technique tech : {Technique::kGp, Technique::kAmac, Technique::kCoro}) {
    for (std::size_t group : kGroups) {
      std::vector<std::uint64_t> out(keys.size(), 12345);
      const std::uint64_t frames_before = runtime::heap_frames_live();
      probe(tech, keys, out, group);
      EXPECT_EQ(runtime::heap_frames_live(), frames_before) << what;
      ASSERT_EQ(out, naive) << what << " technique " << technique_name(tech) << " group " << group;
    }
  }
}

// Probe inputs: mostly present keys (by index into `present`), some absent ones from `absent`.
template <typename Key, typename Absent>
std::vector<Key> make_probes(const std::vector<Key>& present, std::size_t n, util::Rng& rng,
                             Absent&& absent) {
  std::vector<Key> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (present.empty() || rng.uniform(5) == 0) {
      out.push_back(absent(rng));
    } else {
      out.push_back(present[rng.uniform(present.size())]);
    }
  }
  return out;
}

template <typename K>
void hash_case(std::size_t keys_n, std::size_t buckets, std::size_t probes_n, std::uint64_t seed) {
  const std::string what = "hash<" + std::to_string(sizeof(K)) + "> keys " +
                           std::to_string(keys_n) + " buckets " + std::to_string(buckets) +
                           " probes " + std::to_string(probes_n) + " seed " + std::to_string(seed);
  util::Rng rng(seed);
  HashTable<K> table;
  ASSERT_TRUE(table.init(buckets, keys_n).is_ok());
  std::unordered_map<K, K> ref;
  std::vector<K> present;
  while (present.size() < keys_n) {
    const K k = static_cast<K>(rng.next()) | 1;  // odd: present; even: absent
    if (!ref.emplace(k, static_cast<K>(rng.next())).second) continue;
    table.insert(k, ref[k]);
    present.push_back(k);
  }
  const std::vector<K> probes = make_probes(
      present, probes_n, rng, [](util::Rng& r) { return static_cast<K>(r.next() & ~K{1}); });
  std::vector<std::uint64_t> naive(probes.size());
  hash_probe<K>(table, Technique::kNaive, probes, naive, 1);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto it = ref.find(probes[i]);
    ASSERT_EQ(naive[i], it == ref.end() ? kNotFound : std::uint64_t{it->second}) << what;
  }
  expect_all_agree(
      probes, naive,
      [&](Technique t, const std::vector<K>& k, std::vector<std::uint64_t>& o, std::size_t g) {
        hash_probe<K>(table, t, k, o, g);
      },
      what);
}

TEST(ProbeDifferential, HashFourByteKeys) {
  for (std::uint64_t seed : seeds()) {
    hash_case<std::uint32_t>(5000, 100, 3000, seed);  // chains of ~50, as in the paper's regime
    hash_case<std::uint32_t>(300, 1, 200, seed);      // one long chain
    hash_case<std::uint32_t>(1000, 4096, 500, seed);  // mostly empty buckets
    hash_case<std::uint32_t>(0, 16, 50, seed);        // empty table
  }
}

TEST(ProbeDifferential, HashEightByteKeys) {
  for (std::uint64_t seed : seeds()) {
    hash_case<std::uint64_t>(5000, 100, 3000, seed);
    hash_case<std::uint64_t>(100, 7, 5, seed);  // more coroutines than probes
    hash_case<std::uint64_t>(100, 7, 0, seed);  // no probes at all
  }
}

void binsearch_case(std::size_t n, std::size_t probes_n, std::uint64_t seed) {
  const std::string what = "binsearch n " + std::to_string(n) + " probes " +
                           std::to_string(probes_n) + " seed " + std::to_string(seed);
  util::Rng rng(seed);
  SortedArray arr;
  ASSERT_TRUE(arr.init(n).is_ok());
  std::vector<std::uint32_t> probes;
  for (std::size_t i = 0; i < probes_n; ++i) {
    // Present keys, absent keys in between, and the edges (0, past the end).
    switch (rng.uniform(4)) {
      case 0:
        probes.push_back(static_cast<std::uint32_t>(rng.uniform(2 * n + 3)));
        break;
      case 1:
        probes.push_back(i % 2 == 0 ? 0 : static_cast<std::uint32_t>(2 * n + 1));
        break;
      default:
        probes.push_back(SortedArray::key_at(rng.uniform(n)));
    }
  }
  std::vector<std::uint64_t> naive(probes.size());
  binsearch_probe(arr, Technique::kNaive, probes, naive, 1);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const std::uint32_t k = probes[i];
    const std::uint64_t expect = (k % 2 == 1 && k / 2 < n) ? k / 2 : kNotFound;
    ASSERT_EQ(naive[i], expect) << what << " key " << k;
  }
  expect_all_agree(
      probes, naive,
      [&](Technique t, const std::vector<std::uint32_t>& k, std::vector<std::uint64_t>& o,
          std::size_t g) { binsearch_probe(arr, t, k, o, g); },
      what);
}

TEST(ProbeDifferential, BinarySearch) {
  for (std::uint64_t seed : seeds()) {
    for (std::size_t n : {1, 2, 16, 17, 1000, 100003}) binsearch_case(n, 2000, seed);
    binsearch_case(100003, 3, seed);  // more coroutines than probes
  }
}

void btree_case(std::size_t keys_n, std::size_t probes_n, std::uint64_t seed) {
  const std::string what = "btree keys " + std::to_string(keys_n) + " probes " +
                           std::to_string(probes_n) + " seed " + std::to_string(seed);
  util::Rng rng(seed);
  index::BTree tree;
  std::map<std::uint64_t, std::uint64_t> ref;  // key in memory order -> value
  std::vector<std::uint64_t> present;
  while (present.size() < keys_n) {
    const std::uint64_t k = rng.next() | 1;
    const std::uint64_t v = rng.uniform(std::uint64_t{1} << 40);
    std::uint64_t existing;
    if (!tree.insert_if_absent(btree_detail::key_view(k), v, &existing)) continue;
    ref[k] = v;
    present.push_back(k);
  }
  const std::vector<std::uint64_t> probes = make_probes(
      present, probes_n, rng, [](util::Rng& r) { return r.next() & ~std::uint64_t{1}; });
  std::vector<std::uint64_t> naive(probes.size());
  btree_probe(tree, Technique::kNaive, probes, naive, 1);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto it = ref.find(probes[i]);
    ASSERT_EQ(naive[i], it == ref.end() ? kNotFound : it->second) << what;
  }
  expect_all_agree(
      probes, naive,
      [&](Technique t, const std::vector<std::uint64_t>& k, std::vector<std::uint64_t>& o,
          std::size_t g) { btree_probe(tree, t, k, o, g); },
      what);
}

TEST(ProbeDifferential, BTree) {
  for (std::uint64_t seed : seeds()) {
    btree_case(20000, 3000, seed);  // three levels
    btree_case(10, 100, seed);      // root only
    btree_case(5000, 4, seed);      // more coroutines than probes
  }
}

// Nodes small enough that a few keys make a deep tree: every level splits.
BwOptions tiny_bw(std::uint32_t max_chain) {
  BwOptions o;
  o.leaf_capacity = 4;
  o.inner_capacity = 3;
  o.max_chain = max_chain;
  return o;
}

// The Bw-tree: a bulk load, then inserts and removes that grow delta chains, consolidate them and
// split nodes at every level (tiny capacities make a few thousand keys a deep tree); after each
// phase naive answers what a std::map says and every technique what naive says.
void bwtree_case(const BwOptions& o, std::size_t load_n, std::size_t writes, std::uint64_t seed) {
  const std::string what = "bwtree leaf " + std::to_string(o.leaf_capacity) + " inner " +
                           std::to_string(o.inner_capacity) + " chain " +
                           std::to_string(o.max_chain) + " load " + std::to_string(load_n) +
                           " writes " + std::to_string(writes) + " seed " + std::to_string(seed);
  util::Rng rng(seed);
  BwTree tree;
  ASSERT_TRUE(tree.init(load_n + writes, o).is_ok()) << what;
  std::map<std::uint64_t, std::uint64_t> ref;
  while (ref.size() < load_n) ref.emplace(rng.next() | 1, rng.uniform(std::uint64_t{1} << 40));
  std::vector<std::uint64_t> keys, values;
  for (const auto& [k, v] : ref) {
    keys.push_back(k);
    values.push_back(v);
  }
  ASSERT_TRUE(tree.bulk_load(keys, values).is_ok()) << what;
  std::vector<std::uint64_t> present(keys);
  std::vector<std::uint64_t> gone;  // removed keys: absent behind a delete delta, or consolidated
  const auto check = [&](const std::string& phase) {
    const std::vector<std::uint64_t> probes = make_probes(present, 3000, rng, [&](util::Rng& r) {
      if (!gone.empty() && r.uniform(2) == 0) return gone[r.uniform(gone.size())];
      return r.next() & ~std::uint64_t{1};
    });
    std::vector<std::uint64_t> naive(probes.size());
    bwtree_probe(tree, Technique::kNaive, probes, naive, 1);
    for (std::size_t i = 0; i < probes.size(); ++i) {
      auto it = ref.find(probes[i]);
      ASSERT_EQ(naive[i], it == ref.end() ? kNotFound : it->second) << what << " " << phase;
    }
    expect_all_agree(
        probes, naive,
        [&](Technique t, const std::vector<std::uint64_t>& k, std::vector<std::uint64_t>& out,
            std::size_t g) { bwtree_probe(tree, t, k, out, g); },
        what + " " + phase);
  };
  check("after the load");
  // Writes: inserts of new keys (odd), removes of present ones, and refused duplicates.
  std::size_t inserted = 0, removed = 0;
  for (std::size_t w = 0; w < writes; ++w) {
    const std::uint64_t dice = rng.uniform(10);
    if (dice < 6 || present.empty()) {
      // A removed key comes back now and then: a fresh insert delta over its delete delta.
      const bool again = !gone.empty() && dice == 0;
      const std::uint64_t k = again ? gone[rng.uniform(gone.size())] : rng.next() | 1;
      const std::uint64_t v = rng.uniform(std::uint64_t{1} << 40);
      Result<bool> r = tree.insert(k, v);
      ASSERT_TRUE(r.is_ok()) << what;
      ASSERT_EQ(*r, ref.emplace(k, v).second) << what;
      if (*r) {
        present.push_back(k);
        ++inserted;
      }
    } else {
      const std::size_t at = rng.uniform(present.size());
      const std::uint64_t k = present[at];
      if (dice == 9) {  // a present key again: refused
        Result<bool> r = tree.insert(k, 7);
        ASSERT_TRUE(r.is_ok()) << what;
        ASSERT_FALSE(*r) << what;
        continue;
      }
      Result<bool> r = tree.remove(k);
      ASSERT_TRUE(r.is_ok()) << what;
      ASSERT_TRUE(*r) << what;
      ref.erase(k);
      gone.push_back(k);
      present[at] = present.back();
      present.pop_back();
      Result<bool> again = tree.remove(k);
      ASSERT_TRUE(again.is_ok()) << what;
      ASSERT_FALSE(*again) << what;
      ++removed;
    }
  }
  check("after the writes");
  const BwTree::Stats st = tree.stats();
  EXPECT_GT(inserted, 0u) << what;
  EXPECT_GT(removed, 0u) << what;
  // Chains stay bounded: a node is consolidated once it passes max_chain.
  EXPECT_LE(st.deltas, st.pids * o.max_chain) << what;
  if (writes > 20 * o.max_chain) {
    EXPECT_GT(st.deltas, 0u) << what << " pids " << st.pids;
  }
  EXPECT_EQ(st.leaves + st.inners, st.pids) << what;
}

TEST(ProbeDifferential, BwTree) {
  const BwOptions tiny = tiny_bw(2);
  BwOptions paper;  // 1 KiB nodes, chains of up to 8
  for (std::uint64_t seed : seeds()) {
    bwtree_case(tiny, 50, 3000, seed);      // splits on every level, the root's included
    bwtree_case(tiny, 0, 500, seed);        // from an empty leaf
    bwtree_case(paper, 20000, 8000, seed);  // three levels, chains on the leaves
    bwtree_case(paper, 10, 100, seed);      // root only
  }
}

TEST(ProbeDifferential, BwTreeGrowsByInsertsAlone) {
  BwTree tree;
  ASSERT_TRUE(tree.init(2000, tiny_bw(1)).is_ok());
  ASSERT_TRUE(tree.bulk_load({}, {}).is_ok());
  EXPECT_EQ(tree.height(), 1u);
  for (std::uint64_t k = 1; k <= 1000; ++k) {
    Result<bool> r = tree.insert(k * 3, k);
    ASSERT_TRUE(r.is_ok());
    ASSERT_TRUE(*r);
  }
  // 1,000 keys in leaves of at most 4 and inner nodes of at most 3: at least 7 levels.
  EXPECT_GE(tree.height(), 7u);
  for (std::uint64_t k = 0; k <= 3003; ++k) {
    ASSERT_EQ(tree.lookup(k), k % 3 == 0 && k >= 3 && k <= 3000 ? k / 3 : kNotFound) << k;
  }
}

TEST(ProbeDifferential, BwTreeRefusesBadInput) {
  BwTree tree;
  BwOptions bad;
  bad.max_chain = 0;
  EXPECT_EQ(tree.init(10, bad).code(), Code::kInvalidArgument);
  bad = BwOptions{};
  bad.leaf_capacity = 1;
  EXPECT_EQ(tree.init(10, bad).code(), Code::kInvalidArgument);
  bad = BwOptions{};
  bad.load_fill = 0;
  EXPECT_EQ(tree.init(10, bad).code(), Code::kInvalidArgument);
  ASSERT_TRUE(tree.init(10, BwOptions{}).is_ok());
  const std::vector<std::uint64_t> keys = {5, 3}, values = {1, 2};
  EXPECT_EQ(tree.bulk_load(keys, values).code(), Code::kInvalidArgument);
}

// A lookup that read the root's id before the root split finds its key through the old root's
// side link: the old root is now the left half, with a high key naming the right half. The
// lookup is stepped by hand around the split, so the race the concurrent test can only hope to
// hit happens every time.
TEST(ProbeDifferential, BwTreeLookupFromBeforeASplitFollowsTheSideLink) {
  BwTree tree;
  ASSERT_TRUE(tree.init(100, tiny_bw(1)).is_ok());
  const std::vector<std::uint64_t> keys = {10, 20, 30}, values = {1, 2, 3};
  ASSERT_TRUE(tree.bulk_load(keys, values).is_ok());
  ASSERT_EQ(tree.height(), 1u);
  const std::uint32_t old_root = tree.root();
  BwLookup stale(tree, 50);  // holds the old root's id, has read nothing yet
  BwLookup stale_low(tree, 10);
  for (std::uint64_t k : {40, 50, 60}) {
    Result<bool> r = tree.insert(k, k / 10);
    ASSERT_TRUE(r.is_ok());
    ASSERT_TRUE(*r);
  }
  ASSERT_GT(tree.height(), 1u);  // the leaf split and a new root sits above it
  ASSERT_NE(tree.root(), old_root);
  bool crossed = false;
  while (stale.step()) {
    if (stale.at() == BwLookup::At::kEntry && tree.pid_of(stale.next()) != old_root) crossed = true;
  }
  EXPECT_TRUE(crossed);  // it left the old root by the side link: nothing else leads out of a leaf
  EXPECT_EQ(stale.answer(), 5u);
  while (stale_low.step()) {
  }
  EXPECT_EQ(stale_low.answer(), 1u);
}

// Readers look up while the one writer inserts, consolidates and splits: every key loaded
// before and every key whose insert finished before the lookup began is found with its value.
// Under TSan this also checks that records are published before their references.
TEST(ProbeDifferential, BwTreeReadersRunBesideTheWriter) {
  const std::uint64_t seed = seeds()[0];
  BwOptions o;
  o.leaf_capacity = 8;
  o.inner_capacity = 4;
  o.max_chain = 3;
  constexpr std::uint64_t kLoad = 2000, kInserts = 20000;
  BwTree tree;
  ASSERT_TRUE(tree.init(kLoad + kInserts, o).is_ok());
  const auto key = [](std::uint64_t i) { return util::mix64(i); };
  std::vector<std::uint64_t> keys, values;
  {
    std::map<std::uint64_t, std::uint64_t> m;
    for (std::uint64_t i = 0; i < kLoad; ++i) m.emplace(key(i), i);
    for (const auto& [k, v] : m) {
      keys.push_back(k);
      values.push_back(v);
    }
  }
  ASSERT_EQ(keys.size(), kLoad);
  ASSERT_TRUE(tree.bulk_load(keys, values).is_ok());
  std::atomic<std::uint64_t> done{kLoad};  // keys 0..done-1 are in
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      util::Rng rng(seed * 31 + static_cast<std::uint64_t>(t));
      std::vector<std::uint64_t> probes(64), out(64), expect(64);
      while (done.load(std::memory_order_acquire) < kLoad + kInserts) {
        const std::uint64_t upto = done.load(std::memory_order_acquire);
        for (std::size_t j = 0; j < probes.size(); ++j) {
          const std::uint64_t i = rng.uniform(upto);
          probes[j] = key(i);
          expect[j] = i;
        }
        bwtree_probe(tree, t == 0 ? Technique::kCoro : Technique::kAmac, probes, out, 8);
        for (std::size_t j = 0; j < probes.size(); ++j) wrong += out[j] != expect[j];
      }
    });
  }
  for (std::uint64_t i = kLoad; i < kLoad + kInserts; ++i) {
    Result<bool> r = tree.insert(key(i), i);
    ASSERT_TRUE(r.is_ok());
    ASSERT_TRUE(*r);
    done.store(i + 1, std::memory_order_release);
  }
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GT(tree.height(), 3u);
}

// Coroutine frames come from the thread's allocator when one is current, and all return to it.
TEST(ProbeDifferential, CoroFramesFromTheThreadAllocator) {
  runtime::FrameAllocator alloc(std::size_t{8} << 20, false);
  runtime::FrameAllocator::set_current(&alloc);
  HashTable<std::uint32_t> table;
  ASSERT_TRUE(table.init(10, 100).is_ok());
  for (std::uint32_t k = 1; k <= 100; ++k) table.insert(k, k * 3);
  std::vector<std::uint32_t> probes;
  for (std::uint32_t k = 0; k < 500; ++k) probes.push_back(k % 130);
  std::vector<std::uint64_t> out(probes.size());
  hash_probe<std::uint32_t>(table, Technique::kCoro, probes, out, 16);
  runtime::FrameAllocator::set_current(nullptr);
  EXPECT_EQ(alloc.counters().allocated, probes.size());
  EXPECT_EQ(alloc.live(), 0u);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const std::uint32_t k = probes[i];
    EXPECT_EQ(out[i], k >= 1 && k <= 100 ? std::uint64_t{k} * 3 : kNotFound);
  }
}

}  // namespace
}  // namespace braid::probe
