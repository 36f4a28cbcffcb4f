// B+-tree unit tests and a differential test against std::map.
#include "index/btree.h"

#include "index/chunk_pool.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tree_util.h"
#include "util/random.h"

namespace braid::index {
namespace {

std::string random_key(util::Rng& rng) {
  // A mix of short keys, long keys and keys sharing long prefixes (heads collide, suffixes
  // decide), all within the 255-byte limit.
  switch (rng.uniform(4)) {
    case 0: {
      std::string k(1 + rng.uniform(8), '\0');
      for (auto& c : k) c = static_cast<char>(rng.uniform(4));
      return k;
    }
    case 1: {
      std::string k(1 + rng.uniform(kMaxKey), '\0');
      for (auto& c : k) c = static_cast<char>(rng.next());
      return k;
    }
    case 2: {
      std::string k = "prefix--shared--";
      k.resize(k.size() + rng.uniform(6), 'z');
      k.push_back(static_cast<char>('a' + rng.uniform(26)));
      return k;
    }
    default: {
      std::string k(8, '\0');
      std::uint64_t v = rng.uniform(100000);
      for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(v >> (56 - 8 * i));
      return k;
    }
  }
}

// The same scan driven through the stepper with an explicit node search (BTree::scan_leaf uses
// the default).
std::vector<std::pair<std::string, std::uint64_t>> scan_stepped(const BTree& t,
                                                                std::string_view begin,
                                                                std::string_view end, bool reverse,
                                                                NodeSearch search) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  LeafBatch b;
  std::string from(reverse ? end : begin);
  bool inf = reverse && end.empty();
  for (;;) {
    {
      ScanLeaf leaf(t, from, inf, begin, end, reverse, &b, search);
      while (leaf.step()) {
      }
    }
    for (const auto& e : b.entries) out.emplace_back(std::string(b.key(e)), e.value);
    if (!b.has_next) return out;
    from = b.next;
    inf = false;
  }
}

// How a test drives a Lookup: step by step (the coroutine drivers), or in its own loop
// (Lookup::run, the plain drivers), with or without the node hints.
enum class Drive { kSteps, kRun, kRunHinted };

// A point lookup through the stepper with an explicit node search.
bool lookup_with(const BTree& t, std::string_view key, NodeSearch search, std::uint64_t* v,
                 Drive drive = Drive::kSteps) {
  Lookup l(t, key, search);
  if (drive == Drive::kSteps) {
    while (l.step()) {
    }
  } else {
    l.run(drive == Drive::kRunHinted);
  }
  if (l.found()) *v = l.value();
  return l.found();
}

std::vector<std::pair<std::string, std::uint64_t>> model_range(
    const std::map<std::string, std::uint64_t>& m, const std::string& begin, const std::string& end,
    bool reverse) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  auto lo = m.lower_bound(begin);
  auto hi = end.empty() ? m.end() : m.lower_bound(end);
  for (auto it = lo; it != hi && (end.empty() || it->first < end); ++it) out.push_back(*it);
  if (reverse) std::reverse(out.begin(), out.end());
  return out;
}

TEST(BTree, EmptyTree) {
  BTree t;
  std::uint64_t v;
  EXPECT_FALSE(t.lookup("a", &v));
  EXPECT_FALSE(t.remove("a", 0, true));
  EXPECT_TRUE(scan_all(t, "", "", false).empty());
  EXPECT_TRUE(scan_all(t, "", "", true).empty());
  EXPECT_EQ(t.check_invariants(), 0u);
}

TEST(BTree, InsertIfAbsentReportsExisting) {
  BTree t;
  std::uint64_t existing = 0;
  EXPECT_TRUE(t.insert_if_absent("k", 1, &existing));
  EXPECT_FALSE(t.insert_if_absent("k", 2, &existing));
  EXPECT_EQ(existing, 1u);
  std::uint64_t v;
  ASSERT_TRUE(t.lookup("k", &v));
  EXPECT_EQ(v, 1u);
  EXPECT_FALSE(t.remove("k", 2));  // wrong expected value
  EXPECT_TRUE(t.remove("k", 1));
  EXPECT_FALSE(t.lookup("k", &v));
}

TEST(BTree, AscendingLoadFillsNodesAndSplitsRoot) {
  BTree t;
  std::uint64_t ex;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    std::string k(8, '\0');
    for (int b = 0; b < 8; ++b)
      k[b] = static_cast<char>(static_cast<std::uint64_t>(i) >> (56 - 8 * b));
    ASSERT_TRUE(t.insert_if_absent(k, i, &ex));
  }
  EXPECT_EQ(t.check_invariants(), static_cast<std::size_t>(n));
  EXPECT_GE(t.height(), 3u);
  // Append splits keep leaves nearly full: 41 slots per leaf at most.
  EXPECT_LT(t.node_count(), static_cast<std::size_t>(n / 35));
}

// Morsel boundaries: split_keys cuts a range at separators into parts of similar size, every
// key strictly inside the range, sorted, at most the number asked for.
TEST(BTree, SplitKeysCutARangeIntoSimilarParts) {
  BTree t;
  std::uint64_t ex;
  const int n = 100000;
  const auto key = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "k%07d", i);
    return std::string(buf);
  };
  EXPECT_TRUE(t.split_keys("", "", 8).empty()) << "an empty tree is one leaf";
  util::Rng rng(7);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.uniform(i + 1)]);
  for (int i : order) ASSERT_TRUE(t.insert_if_absent(key(i), i, &ex));
  EXPECT_TRUE(t.split_keys("", "", 0).empty());
  struct Case {
    int lo, hi;  // hi == n: no upper bound
    std::size_t want;
  };
  for (const Case c : {Case{0, n, 15}, Case{0, n, 1}, Case{0, n, 300}, Case{20000, 60000, 7},
                       Case{50000, n, 31}, Case{100, 160, 4}}) {
    SCOPED_TRACE(std::to_string(c.lo) + ".." + std::to_string(c.hi) + " want " +
                 std::to_string(c.want));
    const std::string begin = c.lo == 0 ? std::string() : key(c.lo);
    const std::string end = c.hi == n ? std::string() : key(c.hi);
    const std::vector<std::string> cuts = t.split_keys(begin, end, c.want);
    ASSERT_LE(cuts.size(), c.want);
    for (std::size_t i = 0; i < cuts.size(); ++i) {
      ASSERT_GT(cuts[i], begin);
      if (!end.empty()) {
        ASSERT_LT(cuts[i], end);
      }
      if (i > 0) {
        ASSERT_LT(cuts[i - 1], cuts[i]);
      }
    }
    const int keys = c.hi - c.lo;
    if (keys < 41 * 4) continue;  // a few leaves: whatever separators there are
    // A wide range gets what it asked for (within a quarter, thinning rounds), and no part is
    // more than 3x the mean.
    ASSERT_GE(cuts.size() * 4, c.want * 3);
    std::vector<int> edges{c.lo};
    for (std::string k : cuts) {
      k.resize(8, '0');  // separators may be cut short: the keys below "k00123" number 12300
      edges.push_back(std::stoi(k.substr(1)));
    }
    edges.push_back(c.hi);
    const double mean = static_cast<double>(keys) / static_cast<double>(edges.size() - 1);
    for (std::size_t i = 1; i < edges.size(); ++i) {
      EXPECT_LE(edges[i] - edges[i - 1], 3 * mean) << "part " << i - 1;
    }
  }
}

// Trees take their node chunks from a shared pool (Options::prefault_index_bytes) while it
// lasts, and their own once it is spent; no chunk goes to two trees, and a tree frees only
// its own (ASan checks the free).
TEST(BTree, NodesComeFromTheSharedPoolFirst) {
  ChunkPool pool;
  ASSERT_TRUE(pool.init(2 * ChunkPool::kChunkBytes, false).is_ok());
  ASSERT_EQ(pool.chunks(), 2u);
  BTree a(util::l2_cache_bytes(), &pool);
  EXPECT_EQ(pool.taken(), 1u);  // the root's chunk
  {
    BTree b(util::l2_cache_bytes(), &pool);
    EXPECT_EQ(pool.taken(), 2u);
    // 2,048 nodes to a chunk, ~41 ascending keys to a leaf: 200,000 keys take a tree past its
    // first chunk, so both fall back to chunks of their own.
    std::uint64_t ex;
    const std::uint64_t n = 200000;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string k(8, '\0');
      for (int byte = 0; byte < 8; ++byte) k[byte] = static_cast<char>(i >> (56 - 8 * byte));
      ASSERT_TRUE(a.insert_if_absent(k, i, &ex));
      ASSERT_TRUE(b.insert_if_absent(k, n + i, &ex));
    }
    EXPECT_GT(a.node_count(), 2048u);
    EXPECT_GT(b.node_count(), 2048u);
    EXPECT_EQ(pool.taken(), 2u);
    EXPECT_EQ(pool.take(), nullptr);
    EXPECT_EQ(a.check_invariants(), n);
    EXPECT_EQ(b.check_invariants(), n);
    for (std::uint64_t i = 0; i < n; i += 997) {
      std::string k(8, '\0');
      for (int byte = 0; byte < 8; ++byte) k[byte] = static_cast<char>(i >> (56 - 8 * byte));
      std::uint64_t v = 0;
      ASSERT_TRUE(a.lookup(k, &v));
      EXPECT_EQ(v, i);
      ASSERT_TRUE(b.lookup(k, &v));
      EXPECT_EQ(v, n + i);
    }
  }
  EXPECT_EQ(a.check_invariants(), 200000u);  // b's end freed none of the pool's chunks
}

// The plain drivers prefetch a node only once the tree outgrew the cache it was given: not
// before its nodes take more than that, and from then on for good.
TEST(BTree, OutgrowsTheCacheOnceItsNodesExceedIt) {
  BTree t(4 * kNodeBytes);
  std::uint64_t ex;
  int i = 0;
  auto insert_next = [&] {
    std::string k(8, '\0');
    for (int b = 0; b < 8; ++b)
      k[b] = static_cast<char>(static_cast<std::uint64_t>(i) >> (56 - 8 * b));
    ASSERT_TRUE(t.insert_if_absent(k, static_cast<std::uint64_t>(i), &ex));
    ++i;
  };
  EXPECT_FALSE(t.outgrew_cache());
  while (t.node_count() < 4) {
    insert_next();
    ASSERT_FALSE(t.outgrew_cache()) << t.node_count() << " nodes";
  }
  while (t.node_count() < 5) insert_next();
  EXPECT_TRUE(t.outgrew_cache());
  Lookup l(t, std::string(8, '\0'));
  EXPECT_TRUE(l.outgrew_cache());
  for (int j = 0; j < 1000; ++j) insert_next();
  EXPECT_TRUE(t.outgrew_cache());
  EXPECT_EQ(t.check_invariants(), static_cast<std::size_t>(i));

  BTree big(0);  // no cache at all: even the root alone outgrew it
  EXPECT_TRUE(big.outgrew_cache());
}

// A level counts as resident while its nodes fit in a quarter of the cache the tree was given;
// the counts behind it are checked against the reachable nodes by check_invariants.
TEST(BTree, ResidentLevelsAreTheOnesThatFitAQuarterOfTheCache) {
  BTree t(16 * kNodeBytes);  // resident: at most 4 nodes on a level
  std::uint64_t ex;
  std::uint64_t i = 0;
  auto insert_next = [&] {
    std::string k(8, '\0');
    for (int b = 0; b < 8; ++b) k[b] = static_cast<char>(i >> (56 - 8 * b));
    ASSERT_TRUE(t.insert_if_absent(k, i, &ex));
    ++i;
  };
  EXPECT_TRUE(t.resident_level(0));
  EXPECT_TRUE(t.resident_level(~0u));  // the root before the descent knows its level
  while (t.height() < 3) insert_next();
  const std::vector<std::size_t> sizes = t.level_sizes();  // root first
  ASSERT_EQ(sizes.size(), 3u);
  ASSERT_GT(sizes[2], 4u);
  for (std::size_t l = 0; l < sizes.size(); ++l) {
    const std::uint32_t level = static_cast<std::uint32_t>(sizes.size() - 1 - l);
    EXPECT_EQ(t.resident_level(level), sizes[l] <= 4) << "level " << level;
  }
  EXPECT_FALSE(t.resident_level(0));
  EXPECT_TRUE(t.resident_level(2));
  EXPECT_EQ(t.check_invariants(), i);

  // A lookup's steps name their node's level: the inner one below the root, then the leaf.
  Lookup l(t, std::string(8, '\0'));
  std::vector<bool> resident;
  while (l.step()) resident.push_back(l.next_resident());
  EXPECT_EQ(resident, (std::vector<bool>{sizes[1] <= 4, false}));
  EXPECT_TRUE(l.found());
}

// What a coroutine driver's hints (Lookup::next_lines) named over a run of lookups: how many
// hints there were, how many named lines rather than the whole node, and for the leaves,
// whether the tail the search landed on lay in the lines named.
struct LineHints {
  std::size_t hints = 0;
  std::size_t predicted = 0;
  std::size_t leaf_predicted = 0;
  std::size_t leaf_hits = 0;
};

std::string be_key(std::uint64_t v) {
  std::string k(8, '\0');
  for (int b = 0; b < 8; ++b) k[b] = static_cast<char>(v >> (56 - 8 * b));
  return k;
}

// One lookup of a present 8-byte key, hinted as the coroutine drivers hint it.
void lookup_hinted(const BTree& t, const std::string& key, LineHints* h) {
  Lookup l(t, key);
  const Node* hinted = nullptr;
  NodeLines lines{};
  while (l.step()) {
    lines = l.hints_lines() ? l.next_lines() : kWholeNode;
    hinted = l.next();
    ++h->hints;
    if (lines.tail_end != 0) ++h->predicted;
  }
  l.note_leaf();
  ASSERT_TRUE(l.found());
  const Node* leaf = l.leaf_read().leaf;
  if (hinted != leaf || lines.tail_end == 0) return;
  ++h->leaf_predicted;
  const unsigned count = leaf->count;
  // Heads hold whole 8-byte keys: the key's slot is the one whose head equals its head.
  const std::uint64_t head = util::load_head(key.data(), key.size());
  unsigned idx = 0;
  while (idx < count && leaf->heads()[idx] != head) ++idx;
  ASSERT_LT(idx, count);
  const std::size_t off = Node::kHeader + count * sizeof(std::uint64_t) + idx * sizeof(Tail);
  EXPECT_GE(lines.head_end, Node::kHeader + count * sizeof(std::uint64_t));  // every head
  if (off >= (lines.tail_begin & ~std::size_t{63}) && off + sizeof(Tail) <= lines.tail_end) {
    ++h->leaf_hits;
  }
}

// Lookups of `n` random keys among records 0..records-1 (key_of(i) is record i's key).
template <typename KeyOf>
LineHints hinted_lookups(const BTree& t, std::uint64_t records, std::size_t n, util::Rng& rng,
                         KeyOf key_of) {
  LineHints h;
  for (std::size_t i = 0; i < n; ++i) lookup_hinted(t, key_of(rng.uniform(records)), &h);
  return h;
}

// Evenly spread keys (YCSB's ordered 8-byte keys): the parent's separators and the mean leaf
// fill place the key's tail, and the hints name about half of a full leaf's lines.
// The trees below count their levels as larger than the last-level cache from 64 nodes on.
constexpr std::size_t kSmallLlc = 64 * kNodeBytes;

TEST(BTree, HintsNameTheInterpolatedLinesOfEvenlySpreadKeys) {
  BTree t(util::l2_cache_bytes(), nullptr, kSmallLlc);
  constexpr std::uint64_t kRecords = 200'000;
  std::uint64_t ex;
  for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_TRUE(t.insert_if_absent(be_key(i), i, &ex));
  std::thread([&] {  // a thread of its own: what next_lines learned is per thread
    util::Rng rng(7);
    const LineHints warm = hinted_lookups(t, kRecords, 2000, rng, be_key);
    EXPECT_GT(warm.hints, 0u);
    const LineHints h = hinted_lookups(t, kRecords, 20'000, rng, be_key);
    // Three hinted levels; a child at either end of its parent has one separator and is hinted
    // whole, and so are two of the root's three children.
    EXPECT_GT(h.predicted, h.hints * 2 / 3);
    EXPECT_GT(h.leaf_predicted, 20'000u * 9 / 10);
    EXPECT_GE(h.leaf_hits, h.leaf_predicted * 99 / 100);
  })
      .join();
}

// Keys hashed over the key space leave leaves unevenly filled and keys unevenly placed: the
// predictions miss too often to pay, and a thread that learned on evenly spread keys goes
// back to whole nodes, then to lines again when the keys are even once more.
TEST(BTree, HintsFallBackToWholeNodesWhenPredictionsMiss) {
  BTree even(util::l2_cache_bytes(), nullptr, kSmallLlc);
  BTree hashed(util::l2_cache_bytes(), nullptr, kSmallLlc);
  constexpr std::uint64_t kRecords = 200'000;
  auto hashed_key = [](std::uint64_t i) { return be_key(util::mix64(i)); };
  std::uint64_t ex;
  for (std::uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_TRUE(even.insert_if_absent(be_key(i), i, &ex));
    ASSERT_TRUE(hashed.insert_if_absent(hashed_key(i), i, &ex));
  }
  std::thread([&] {
    util::Rng rng(11);
    (void)hinted_lookups(even, kRecords, 2000, rng, be_key);
    const LineHints before = hinted_lookups(even, kRecords, 5000, rng, be_key);
    EXPECT_GT(before.predicted, before.hints * 2 / 3);
    // Unchecked, the predictions would miss about half the leaves' tails.
    (void)hinted_lookups(hashed, kRecords, 5000, rng, hashed_key);
    const LineHints h = hinted_lookups(hashed, kRecords, 20'000, rng, hashed_key);
    EXPECT_LT(h.predicted, h.hints / 10);
    (void)hinted_lookups(even, kRecords, 5000, rng, be_key);
    const LineHints after = hinted_lookups(even, kRecords, 5000, rng, be_key);
    EXPECT_GT(after.predicted, after.hints * 2 / 3);
  }).join();
}

// Lookups of records 0..records-1 from a thread of its own (what next_lines learned is per
// thread), each hint naming the whole node.
void expect_whole_node_hints(const BTree& t, std::uint64_t records, std::uint64_t seed) {
  std::thread([&] {
    util::Rng rng(seed);
    const LineHints h = hinted_lookups(t, records, 5000, rng, be_key);
    EXPECT_GT(h.hints, 0u);
    EXPECT_EQ(h.predicted, 0u);
  }).join();
}

// While the leaves fit the last-level cache, nodes are hinted whole: their lines come from L3.
TEST(BTree, HintsNameWholeNodesWhileTheLeavesFitTheLastLevelCache) {
  BTree t(util::l2_cache_bytes(), nullptr, std::size_t{1} << 30);
  constexpr std::uint64_t kRecords = 50'000;
  std::uint64_t ex;
  for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_TRUE(t.insert_if_absent(be_key(i), i, &ex));
  expect_whole_node_hints(t, kRecords, 5);
}

// Keys longer than a head keep suffixes at the node's end, and ties on heads read tails the
// interpolation cannot place: every hint names the whole node.
TEST(BTree, HintsNameWholeNodesOnceAKeyOutgrowsItsHead) {
  BTree t(util::l2_cache_bytes(), nullptr, kSmallLlc);
  constexpr std::uint64_t kRecords = 50'000;
  std::uint64_t ex;
  for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_TRUE(t.insert_if_absent(be_key(i), i, &ex));
  ASSERT_TRUE(t.insert_if_absent(be_key(kRecords) + "suffix", kRecords, &ex));
  expect_whole_node_hints(t, kRecords, 3);
}

// An insert handed the leaf of an earlier lookup (BTree::insert_if_absent's `at`) goes there
// only while that leaf is unchanged: after the leaf split, the key's place may be in its new
// sibling, and the insert must find it from the root.
// Value hints (BTree::set_value_hint) travel with their entries through the inserts, splits
// and removals that move the entries around, and a lookup returns the one its entry holds.
TEST(BTree, ValueHintsTravelWithTheirEntries) {
  BTree t;
  constexpr std::uint32_t kKeys = 6000;
  util::Rng rng(23);
  std::vector<std::uint32_t> order(kKeys);
  for (std::uint32_t i = 0; i < kKeys; ++i) order[i] = i;
  for (std::uint32_t i = kKeys - 1; i > 0; --i) std::swap(order[i], order[rng.uniform(i + 1)]);
  auto key = [](std::uint32_t i) { return "key-" + std::to_string(1000000 + i); };
  for (const std::uint32_t i : order) {
    std::uint64_t existing;
    ASSERT_TRUE(t.insert_if_absent(key(i), i, &existing, nullptr, nullptr, i + 1));
  }
  for (std::uint32_t i = 0; i < kKeys; i += 3) ASSERT_TRUE(t.remove(key(i), i));
  for (std::uint32_t i = 0; i < kKeys; ++i) {
    const std::string k = key(i);  // the lookup keeps a view of it
    Lookup l(t, k);
    l.run(false);
    ASSERT_EQ(l.found(), i % 3 != 0) << i;
    if (!l.found()) continue;
    EXPECT_EQ(l.value(), i);
    EXPECT_EQ(l.value_hint(), i + 1) << i;
  }
}

// set_value_hint writes only through the leaf as the lookup saw it, and leaves that leaf's
// version as it was (optimistic readers and SSN's leaf checks see no change).
TEST(BTree, SetValueHintKeepsTheLeafVersionAndNeedsTheLeafUnchanged) {
  BTree t;
  std::uint64_t existing;
  for (std::uint64_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(t.insert_if_absent("k" + std::to_string(i * 2), i, &existing));
  }
  Lookup l(t, "k4");
  l.run(false);
  ASSERT_TRUE(l.found());
  EXPECT_EQ(l.value_hint(), 0u);
  const LeafRead at = l.leaf_read();
  t.set_value_hint(at, l.leaf_slot(), 77);
  EXPECT_EQ(at.leaf->lock.read_version(), at.version);
  Lookup again(t, "k4");
  again.run(false);
  EXPECT_EQ(again.value_hint(), 77u);
  // An insert into the leaf moves its slots and bumps its version: the old read is stale.
  ASSERT_TRUE(t.insert_if_absent("k3", 99, &existing));
  t.set_value_hint(at, l.leaf_slot(), 55);
  for (const char* k : {"k2", "k3", "k4"}) {
    Lookup x(t, k);
    x.run(false);
    ASSERT_TRUE(x.found()) << k;
    EXPECT_EQ(x.value_hint(), std::string(k) == "k4" ? 77u : 0u) << k;
  }
}

TEST(BTree, ReplaceSetsOnlyTheExpectedValueAndMovesTheLeafVersionWhenItDoes) {
  BTree t;
  std::uint64_t existing;
  for (std::uint64_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(t.insert_if_absent("k" + std::to_string(i * 2), i, &existing));
  }
  Lookup l(t, "k40");
  l.run(false);
  ASSERT_TRUE(l.found());
  ASSERT_EQ(l.value(), 20u);
  const LeafRead at = l.leaf_read();
  // A miss (wrong value, absent key) leaves the leaf as it was.
  EXPECT_FALSE(t.replace("k40", 21, 5));
  EXPECT_FALSE(t.replace("k41", 0, 5));
  EXPECT_EQ(at.leaf->lock.read_version(), at.version);
  EXPECT_TRUE(t.replace("k40", 20, 1'000));
  EXPECT_NE(at.leaf->lock.read_version(), at.version);
  EXPECT_FALSE(at.leaf->lock.validate(at.version));
  std::uint64_t v = 0;
  ASSERT_TRUE(t.lookup("k40", &v));
  EXPECT_EQ(v, 1'000u);
  // The neighbours and the key set are untouched.
  ASSERT_TRUE(t.lookup("k38", &v));
  EXPECT_EQ(v, 19u);
  ASSERT_TRUE(t.lookup("k42", &v));
  EXPECT_EQ(v, 21u);
  EXPECT_EQ(t.check_invariants(), 200u);
}

TEST(BTree, AnInsertFromAStaleLeafFindsTheRightOne) {
  BTree t;
  std::uint64_t ex;
  auto key = [](int i) {
    char b[16];
    std::snprintf(b, sizeof b, "k%08d", i);
    return std::string(b);
  };
  auto leaf_of = [&t](const std::string& k) {
    Lookup l(t, k);
    l.run(false);
    return l.leaf_read();
  };
  std::size_t n = 0;
  for (int i = 0; i <= 300; i += 10, ++n) ASSERT_TRUE(t.insert_if_absent(key(i), i, &ex));
  const LeafRead stale = leaf_of(key(295));
  // Keys below 295 into the same leaf until it splits and 295's range is the right half's.
  bool moved = false;
  for (int i = 1; i < 290 && !moved; ++i) {
    if (i % 10 == 0) continue;
    ASSERT_TRUE(t.insert_if_absent(key(i), i, &ex));
    ++n;
    moved = leaf_of(key(295)).leaf != stale.leaf;
  }
  ASSERT_TRUE(moved);
  LeafChange change;
  ASSERT_TRUE(t.insert_if_absent(key(295), 295, &ex, &change, &stale));
  ++n;
  EXPECT_NE(change.leaf, stale.leaf);
  EXPECT_EQ(t.check_invariants(), n);
  std::uint64_t v = 0;
  ASSERT_TRUE(t.lookup(key(295), &v));
  EXPECT_EQ(v, 295u);
  // A fresh leaf read: the insert goes straight there, and a present key is answered there.
  const LeafRead fresh = leaf_of(key(296));
  ASSERT_TRUE(t.insert_if_absent(key(296), 296, &ex, &change, &fresh));
  ++n;
  EXPECT_EQ(change.leaf, fresh.leaf);
  EXPECT_EQ(change.before, fresh.version);
  const LeafRead now = leaf_of(key(296));
  EXPECT_FALSE(t.insert_if_absent(key(296), 99, &ex, nullptr, &now));
  EXPECT_EQ(ex, 296u);
  EXPECT_EQ(t.check_invariants(), n);
}

// Keys rising within ranges that share leaves (TPC-C's order lines rise per district): a split
// inside such a run cuts at its end, so the left half fills instead of staying half full.
// Random inserts still split evenly (the differential test checks their contents).
TEST(BTree, AscendingRunsInsideALeafFillTheirLeaves) {
  for (const bool interleaved : {false, true}) {
    BTree t;
    std::uint64_t ex;
    constexpr std::uint32_t kRanges = 10;
    constexpr std::uint32_t kPerRange = 2000;
    auto key = [](std::uint32_t range, std::uint32_t seq) {
      std::string k(6, '\0');
      k[0] = static_cast<char>(range);
      for (int b = 0; b < 4; ++b) k[1 + b] = static_cast<char>(seq >> (24 - 8 * b));
      k[5] = 'x';
      return k;
    };
    std::size_t n = 0;
    for (std::uint32_t r = 0; r < kRanges; ++r, ++n) {
      ASSERT_TRUE(t.insert_if_absent(key(r, 0), n, &ex));
    }
    for (std::uint32_t s = 1; s <= kPerRange; ++s) {
      for (std::uint32_t r = 0; r < kRanges; ++r, ++n) {
        // Interleaved: one range at a time per leaf still, but every range every round.
        const std::uint32_t range = interleaved ? r : (r + s) % kRanges;
        ASSERT_TRUE(t.insert_if_absent(key(range, s), n, &ex));
      }
    }
    ASSERT_EQ(t.check_invariants(), n);
    const std::vector<std::size_t> sizes = t.level_sizes();
    const double fill = static_cast<double>(n) / static_cast<double>(sizes.back()) /
                        static_cast<double>(Node::kMaxSlots);
    // An even split at every one of these inserts leaves the leaves about half full.
    EXPECT_GT(fill, 0.85) << "leaves " << sizes.back() << " for " << n << " keys";
  }
}

TEST(BTree, MaximalKeysStillSplit) {
  BTree t;
  std::uint64_t ex;
  util::Rng rng(3);
  std::map<std::string, std::uint64_t> model;
  for (int i = 0; i < 3000; ++i) {
    std::string k(kMaxKey, '\0');
    for (auto& c : k) c = static_cast<char>('a' + rng.uniform(3));
    if (t.insert_if_absent(k, i, &ex)) model.emplace(k, i);
  }
  EXPECT_EQ(t.check_invariants(), model.size());
  EXPECT_EQ(scan_all(t, "", "", false), model_range(model, "", "", false));
}

// (seed, cache bytes): a tree given the cache of 0 bytes outgrew it from the start, so its
// inserts descend with whole-node prefetches and counted heads; one given 1 GiB never does, and
// bisects them (BTree::insert_if_absent).
class BTreeDiff : public ::testing::TestWithParam<std::tuple<std::uint64_t, std::size_t>> {};

std::string u64_key(std::uint64_t i, std::size_t len = 8) {
  std::string k(len, 'k');
  for (int b = 0; b < 8; ++b) k[b] = static_cast<char>(i >> (56 - 8 * b));
  return k;
}

// A queue: insert at the tail, remove at the head, a constant number of keys live. Without
// merges every leaf the head passes stays behind empty.
TEST(BTreeUnderflow, AFifoKeepsABoundedTree) {
  for (std::size_t len : {std::size_t{8}, std::size_t{40}}) {
    BTree t;
    constexpr std::uint64_t kLive = 5000;
    std::uint64_t ex;
    for (std::uint64_t i = 0; i < kLive; ++i)
      ASSERT_TRUE(t.insert_if_absent(u64_key(i, len), i, &ex));
    const std::size_t start = t.node_count();
    std::size_t most = 0;
    for (std::uint64_t i = kLive; i < 30 * kLive; ++i) {
      ASSERT_TRUE(t.insert_if_absent(u64_key(i, len), i, &ex));
      ASSERT_TRUE(t.remove(u64_key(i - kLive, len), i - kLive));
      most = std::max(most, t.node_count());
    }
    EXPECT_EQ(t.check_invariants(), kLive);
    EXPECT_LE(most, start * 13 / 10) << "key length " << len;
    // The nodes that left came back for the tail's splits: what was ever allocated stays near
    // the live tree.
    EXPECT_LE(t.node_count() + t.free_node_count(), start * 14 / 10) << "key length " << len;
    const auto all = scan_all(t, "", "", false);
    ASSERT_EQ(all.size(), kLive);
    EXPECT_EQ(all.front().second, 29 * kLive);
    EXPECT_EQ(all.back().second, 30 * kLive - 1);
  }
}

// Random removals thin the leaves out: underfull ones merge, so the tree shrinks with its keys.
TEST(BTreeUnderflow, SparseLeavesMergeAndTheTreeShrinks) {
  util::Rng rng(7);
  BTree t;
  std::vector<std::uint64_t> ids(40000);
  for (std::uint64_t i = 0; i < ids.size(); ++i) ids[i] = i * 2654435761u % (1u << 31);
  std::uint64_t ex;
  for (std::uint64_t id : ids) ASSERT_TRUE(t.insert_if_absent(u64_key(id), id, &ex));
  const std::size_t before = t.node_count();
  for (std::size_t i = ids.size() - 1; i > 0; --i) std::swap(ids[i], ids[rng.uniform(i + 1)]);
  const std::size_t keep = ids.size() / 20;
  for (std::size_t i = keep; i < ids.size(); ++i) ASSERT_TRUE(t.remove(u64_key(ids[i]), ids[i]));
  EXPECT_EQ(t.check_invariants(), keep);
  // 2 000 keys fill about 50 leaves at a quarter; without merges most of the ~1 400 stay.
  EXPECT_LE(t.node_count(), before / 8);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::uint64_t v = 0;
    ASSERT_EQ(static_cast<bool>(t.lookup(u64_key(ids[i]), &v)), i < keep);
    if (i < keep) {
      ASSERT_EQ(v, ids[i]);
    }
  }
}

// A leaf a lookup read, then merged away or reused for another range: its version never comes
// back, so neither the insert hint nor the value hint acts on the node's new life.
TEST(BTreeUnderflow, AVersionReadBeforeAMergeNeverValidatesAgain) {
  BTree t;
  std::uint64_t ex;
  for (std::uint64_t i = 0; i < 2000; ++i) ASSERT_TRUE(t.insert_if_absent(u64_key(i), i, &ex));
  Lookup l(t, u64_key(100));
  l.run(false);
  ASSERT_TRUE(l.found());
  const LeafRead at = l.leaf_read();
  const unsigned slot = l.leaf_slot();
  for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(t.remove(u64_key(i), i));
  EXPECT_GT(t.free_node_count(), 0u);
  // Splits far away take the freed nodes again.
  for (std::uint64_t i = 1u << 20; i < (1u << 20) + 3000; ++i) {
    ASSERT_TRUE(t.insert_if_absent(u64_key(i), i, &ex));
  }
  EXPECT_NE(at.leaf->lock.read_version(), at.version);
  // The stale hint must not land key 100 in whatever the node is now.
  ASSERT_TRUE(t.insert_if_absent(u64_key(100), 100, &ex, nullptr, &at));
  t.set_value_hint(at, slot, 77);
  EXPECT_EQ(t.check_invariants(), 1000u + 3000u + 1u);
  std::uint64_t v = 0;
  ASSERT_TRUE(t.lookup(u64_key(100), &v));
  EXPECT_EQ(v, 100u);
  Lookup again(t, u64_key(100));
  again.run(false);
  EXPECT_EQ(again.value_hint(), 0u);
}

// SSN's phantom check (mvcc/ssn.h) records a leaf a scan read at its version and needs every
// later insert into the range it read to change that version. Removals elsewhere merge the
// leaf with its neighbours (it keeps their keys, or gives its own away and retires) or unlink
// a neighbour (it only widens); whichever happened, an insert into the range must show.
TEST(BTreeUnderflow, AnInsertIntoARangeAScanReadShowsThroughMerges) {
  util::Rng rng(11);
  int touched = 0;
  int untouched = 0;
  for (int trial = 0; trial < 150; ++trial) {
    BTree t;
    constexpr std::uint64_t kKeys = 1500;
    std::uint64_t ex;
    for (std::uint64_t i = 0; i < kKeys; ++i) ASSERT_TRUE(t.insert_if_absent(u64_key(i), i, &ex));
    const std::string from = u64_key(rng.uniform(kKeys));
    LeafBatch b;
    ScanLeaf scan(t, from, false, "", "", false, &b);
    while (scan.step()) {
    }
    const LeafRead at = scan.leaf_read();
    if (!b.has_next) continue;
    const std::string hi = b.next;
    // Remove keys outside [from, hi): a share that varies by trial, in random order.
    const std::uint64_t share = 50 + rng.uniform(50);
    for (std::uint64_t i = 0; i < kKeys; ++i) {
      const std::uint64_t id = (i * 7919) % kKeys;
      const std::string k = u64_key(id);
      if (k >= from && k < hi) continue;
      if (rng.uniform(100) < share) {
        ASSERT_TRUE(t.remove(k, id));
      }
    }
    (at.leaf->lock.read_version() != at.version ? touched : untouched) += 1;
    const std::string fresh = from + std::string(1, '\0');  // sorts after from, before hi
    ASSERT_LT(fresh, hi);
    ASSERT_TRUE(t.insert_if_absent(fresh, 1, &ex));
    ASSERT_NE(at.leaf->lock.read_version(), at.version) << "trial " << trial;
    t.check_invariants();
  }
  // Both cases ran: merges that changed the leaf read, and ones that left it as it was.
  EXPECT_GT(touched, 0);
  EXPECT_GT(untouched, 0);
}

// Long keys: inner merges pull separators of up to 255 bytes down; every merge must fit.
TEST(BTreeUnderflow, MaximalKeysMergeAndSplitAgain) {
  BTree t;
  std::uint64_t ex;
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    std::string k(i % 3 == 0 ? kMaxKey : 9 + i % 60, 'q');
    for (int b = 0; b < 8; ++b) k[b] = static_cast<char>((i * 7919) >> (56 - 8 * b));
    keys.push_back(k);
    ASSERT_TRUE(t.insert_if_absent(k, i, &ex));
  }
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < keys.size(); ++i) {
      if (i % 4 != static_cast<std::uint64_t>(round)) {
        ASSERT_TRUE(t.remove(keys[i], i));
      }
    }
    ASSERT_EQ(t.check_invariants(), keys.size() / 4);
    for (std::uint64_t i = 0; i < keys.size(); ++i) {
      if (i % 4 != static_cast<std::uint64_t>(round)) {
        ASSERT_TRUE(t.insert_if_absent(keys[i], i, &ex));
      }
    }
    ASSERT_EQ(t.check_invariants(), keys.size());
  }
  EXPECT_GT(t.merges(), 0u);
}

TEST_P(BTreeDiff, MatchesStdMap) {
  util::Rng rng(std::get<0>(GetParam()));
  BTree t(std::get<1>(GetParam()));
  ASSERT_EQ(t.outgrew_cache(), std::get<1>(GetParam()) == 0);
  std::map<std::string, std::uint64_t> model;
  std::vector<std::string> known;
  const int ops = 60000;
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t op = rng.uniform(100);
    std::string key = (!known.empty() && rng.uniform(2) == 0) ? known[rng.uniform(known.size())]
                                                              : random_key(rng);
    if (op < 45) {
      // Two thirds of inserts start at the leaf a lookup of the key ended on, as the engine's
      // writes do; half of those after an insert next to the key (removed again, so that the
      // model's size, and the scans' cost, stay as they were) has changed or split that leaf.
      const std::uint64_t from = rng.uniform(3);
      LeafRead at{};
      if (from != 0) {
        Lookup l(t, key);
        l.run(false);
        at = l.leaf_read();
        ASSERT_NE(at.leaf, nullptr);
      }
      if (from == 2 && key.size() < kMaxKey) {
        const std::string next = key + static_cast<char>('0' + rng.uniform(10));
        std::uint64_t nex = 0;
        if (t.insert_if_absent(next, ops + i, &nex)) {
          ASSERT_FALSE(model.contains(next));
          ASSERT_TRUE(t.remove(next, ops + i));
        }
      }
      std::uint64_t ex = 0;
      const bool inserted =
          static_cast<bool>(t.insert_if_absent(key, i, &ex, nullptr, from != 0 ? &at : nullptr));
      auto [it, fresh] = model.emplace(key, i);
      ASSERT_EQ(inserted, fresh) << "op " << i;
      if (!fresh) {
        ASSERT_EQ(ex, it->second);
      }
      if (fresh) known.push_back(key);
    } else if (op < 70) {
      const bool removed = static_cast<bool>(t.remove(key, 0, true));
      ASSERT_EQ(removed, model.erase(key) == 1) << "op " << i;
    } else if (op < 90) {
      // Both node searches, on keys whose heads collide (short keys that differ in length
      // only, long keys with a shared prefix) as well as on distinct heads.
      auto it = model.find(key);
      std::uint64_t v = 0;
      const bool found = static_cast<bool>(t.lookup(key, &v));
      ASSERT_EQ(found, it != model.end()) << "op " << i;
      if (found) {
        ASSERT_EQ(v, it->second);
      }
      for (NodeSearch search : {NodeSearch::kCount, NodeSearch::kBisect}) {
        for (Drive drive : {Drive::kSteps, Drive::kRun, Drive::kRunHinted}) {
          std::uint64_t w = 0;
          ASSERT_EQ(lookup_with(t, key, search, &w, drive), found) << "op " << i;
          if (found) {
            ASSERT_EQ(w, it->second);
          }
        }
      }
    } else {
      // Mostly short ranges (up to a few leaves, ending on a live key or just past one), now
      // and then an open end: leaf boundaries and links are met as often as with random ends,
      // without every scan walking a third of the tree.
      std::string a = rng.uniform(8) == 0 ? std::string() : random_key(rng);
      std::string b;
      if (rng.uniform(16) != 0) {
        auto it = model.lower_bound(a);
        for (std::uint64_t w = rng.uniform(300); w > 0 && it != model.end(); --w) ++it;
        if (it != model.end()) b = it->first + (rng.uniform(2) == 0 ? "" : "!");
      }
      const bool rev = rng.uniform(2) == 0;
      const auto expected = model_range(model, a, b, rev);
      ASSERT_EQ(scan_all(t, a, b, rev), expected) << "op " << i;
      ASSERT_EQ(scan_stepped(t, a, b, rev, NodeSearch::kBisect), expected) << "op " << i;
    }
    if (i % 10000 == 0) {
      ASSERT_EQ(t.check_invariants(), model.size());
    }
  }
  ASSERT_EQ(t.check_invariants(), model.size());
  EXPECT_EQ(scan_all(t, "", "", false), model_range(model, "", "", false));
  EXPECT_EQ(scan_all(t, "", "", true), model_range(model, "", "", true));
  // Remove everything: the nodes leave the tree for its free list, the tree stays valid and
  // empty, and the insert of the same keys again takes its nodes from that list.
  const std::size_t full = t.node_count() + t.free_node_count();
  for (const auto& [k, v] : model) ASSERT_TRUE(t.remove(k, v));
  EXPECT_EQ(t.check_invariants(), 0u);
  EXPECT_LE(t.node_count(), t.height());  // at most one empty chain down to a leaf
  EXPECT_GT(t.merges(), 0u);
  EXPECT_TRUE(scan_all(t, "", "", false).empty());
  EXPECT_TRUE(scan_all(t, "", "", true).empty());
  std::uint64_t ex;
  for (const auto& [k, v] : model) ASSERT_TRUE(t.insert_if_absent(k, v, &ex));
  EXPECT_EQ(t.check_invariants(), model.size());
  EXPECT_LE(t.node_count() + t.free_node_count(), full + full / 2);
  EXPECT_EQ(t.outgrew_cache(), std::get<1>(GetParam()) == 0);
}

constexpr std::size_t kNoCache = 0;
constexpr std::size_t kHugeCache = std::size_t{1} << 30;
INSTANTIATE_TEST_SUITE_P(Seeds, BTreeDiff,
                         ::testing::Values(std::tuple{1, kHugeCache}, std::tuple{2, kHugeCache},
                                           std::tuple{3, kHugeCache}, std::tuple{42, kHugeCache},
                                           std::tuple{1, kNoCache}, std::tuple{2, kNoCache}));

}  // namespace
}  // namespace braid::index
