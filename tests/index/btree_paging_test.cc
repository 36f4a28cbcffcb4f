// The B+-tree with leaves on storage (BTree::attach_store): a seeded model of inserts, removes,
// lookups and scans with evictions everywhere answers as a map does, through an in-memory store
// and through node segments; a failed or damaged load fails only the operation that needed it
// and leaves the tree as it was; an eviction whose leaf changes while its image is written gives
// up; no image leaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "index/btree.h"
#include "index/node_image.h"
#include "mem_node_store.h"
#include "storage/file_table.h"
#include "storage/node_segment.h"
#include "storage/sim_fs.h"
#include "tree_util.h"
#include "util/random.h"

namespace braid::index {
namespace {

constexpr std::uint32_t kTree = 9;

std::string random_key(util::Rng* rng, std::size_t pool, std::size_t max_len) {
  const std::uint64_t id = rng->uniform(pool);
  // Lengths from 1 to max_len, fixed per id; the id's bytes first so keys differ early.
  util::Rng shape(id);
  std::string k(1 + shape.uniform(max_len), 'k');
  for (std::size_t b = 0; b < 8 && b < k.size(); ++b) k[b] = static_cast<char>(id >> (8 * (7 - b)));
  return k;
}

// A seeded model run: `ops` random operations on `t` (with `store` attached) beside a map, a
// third of them evictions: of a random key's leaf, or a few steps of the CLOCK hand.
// `model`: what the tree holds at the start. `bursts`: every 3,000 operations the hand also
// makes six whole passes, so that whole subtrees go out (pages_inner) before the operations
// after it bring parts of them back.
void run_model(BTree* t, std::uint64_t seed, std::size_t ops, std::size_t pool,
               std::map<std::string, std::uint64_t> model = {}, bool bursts = false) {
  util::Rng rng(seed);
  std::string hand;
  for (std::size_t i = 0; i < ops; ++i) {
    if (bursts && i % 3000 == 1500) {
      for (int pass = 0; pass < 6; ++pass) {
        std::string whole;
        std::size_t evicted = 0;
        ASSERT_TRUE(t->sweep_leaves(&whole, SIZE_MAX, &evicted).is_ok());
      }
    }
    const std::string k = random_key(&rng, pool, 24);
    switch (rng.uniform(7)) {
      case 0:
      case 1: {
        std::uint64_t existing = 0;
        const Outcome inserted = t->insert_if_absent(k, i, &existing);
        ASSERT_FALSE(inserted.failed()) << "op " << i;
        const auto [it, fresh] = model.emplace(k, i);
        ASSERT_EQ(static_cast<bool>(inserted), fresh) << "op " << i;
        if (!fresh) {
          ASSERT_EQ(existing, it->second);
        }
        break;
      }
      case 2: {
        const Outcome removed = t->remove(k, 0, /*any=*/true);
        ASSERT_FALSE(removed.failed()) << "op " << i;
        ASSERT_EQ(static_cast<bool>(removed), model.erase(k) == 1) << "op " << i;
        break;
      }
      case 3: {
        Lookup l(*t, k);
        l.run(false);
        ASSERT_FALSE(l.failed());
        const auto it = model.find(k);
        ASSERT_EQ(l.found(), it != model.end()) << "op " << i;
        if (l.found()) {
          ASSERT_EQ(l.value(), it->second);
        }
        break;
      }
      case 5: {
        // Half of them expect the present value; the rest a wrong one.
        const auto it = model.find(k);
        const bool right = it != model.end() && rng.uniform(2) == 0;
        const std::uint64_t expected = right ? it->second : i + 1;
        const Outcome replaced = t->replace(k, expected, i);
        ASSERT_FALSE(replaced.failed()) << "op " << i;
        ASSERT_EQ(static_cast<bool>(replaced), right) << "op " << i;
        if (right) it->second = i;
        break;
      }
      case 4: {
        bool evicted = false;
        ASSERT_TRUE(t->evict_leaf(k, &evicted).is_ok());
        break;
      }
      default: {
        std::size_t evicted = 0;
        ASSERT_TRUE(t->sweep_leaves(&hand, 1 + rng.uniform(4), &evicted).is_ok());
        break;
      }
    }
    if (i % 2000 == 1999) {
      t->check_invariants();
      // A range scan, either way, against the model's.
      std::string a = random_key(&rng, pool, 24);
      std::string b = random_key(&rng, pool, 24);
      if (b < a) std::swap(a, b);
      const bool rev = rng.uniform(2) == 0;
      std::vector<std::pair<std::string, std::uint64_t>> want(model.lower_bound(a),
                                                              model.lower_bound(b));
      if (rev) std::reverse(want.begin(), want.end());
      ASSERT_EQ(scan_all(*t, a, b, rev), want) << "op " << i;
    }
  }
  std::vector<std::pair<std::string, std::uint64_t>> all(model.begin(), model.end());
  ASSERT_EQ(scan_all(*t, "", "", false), all);
  t->check_invariants();
}

// Leaves of 1..40 entries of `model`, each written into `store` as the image a leaf holding
// them would have (encode_leaf_image; a group that does not fit one node is cut shorter).
std::vector<BTree::StoredLeaf> store_leaves(const std::map<std::string, std::uint64_t>& model,
                                            MemNodeStore* store, util::Rng* rng) {
  std::vector<BTree::StoredLeaf> leaves;
  auto it = model.begin();
  while (it != model.end()) {
    std::vector<std::string_view> keys;
    std::vector<std::uint64_t> values;
    const std::size_t want = 1 + rng->uniform(40);
    for (auto j = it; j != model.end() && keys.size() < want; ++j) {
      keys.push_back(j->first);
      values.push_back(j->second);
    }
    char* slot = nullptr;
    Result<std::uint64_t> address = store->add(&slot);
    EXPECT_TRUE(address.is_ok());
    while (!encode_leaf_image(keys, values, kTree, *address, slot)) {
      keys.pop_back();
      values.pop_back();
      EXPECT_FALSE(keys.empty());
    }
    leaves.push_back({it->first, *address});
    std::advance(it, static_cast<std::ptrdiff_t>(keys.size()));
  }
  EXPECT_TRUE(store->flush().is_ok());
  return leaves;
}

// A tree built over leaves already on storage (an open over a checkpoint's runs) answers as
// the map they hold, loads them on demand, and then takes every operation as any other tree:
// short keys and keys long enough that an inner node holds few.
TEST(BTreePaging, ATreeBuiltOverStoredLeavesAnswersAsTheirMap) {
  for (const std::size_t max_len : {std::size_t{24}, std::size_t{200}}) {
    for (const std::uint64_t seed : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << ", keys up to " << max_len);
      util::Rng rng(seed);
      std::map<std::string, std::uint64_t> model;
      for (std::uint64_t i = 0; i < 6000; ++i) model.emplace(random_key(&rng, 12'000, max_len), i);
      MemNodeStore store;
      const std::vector<BTree::StoredLeaf> leaves = store_leaves(model, &store, &rng);
      ASSERT_GT(leaves.size(), 100u);
      BTree t;
      t.attach_store(&store, kTree);
      ASSERT_TRUE(t.adopt_stored_leaves(leaves).is_ok());
      EXPECT_EQ(t.stored_leaves(), leaves.size());
      EXPECT_EQ(t.check_invariants(), 0u);  // every key is on storage
      EXPECT_GE(t.height(), max_len > 24 ? 4u : 3u);
      if (max_len == 24) {
        // Ends with a scan of the whole tree against the model.
        run_model(&t, seed + 10, 30'000, 12'000, model);
        EXPECT_GT(t.loads(), 100u);
        EXPECT_EQ(store.bad_releases(), 0u);
        EXPECT_EQ(store.live(), t.stored_leaves());
      } else {
        std::vector<std::pair<std::string, std::uint64_t>> all(model.begin(), model.end());
        ASSERT_EQ(scan_all(t, "", "", false), all);
        EXPECT_EQ(t.loads(), leaves.size());
        EXPECT_EQ(t.check_invariants(), model.size());
      }
    }
  }
}

// One leaf becomes the root at once (the root stays in memory); a read that fails leaves the
// tree empty and says why.
TEST(BTreePaging, ASingleStoredLeafIsReadAsTheRoot) {
  util::Rng rng(3);
  const std::map<std::string, std::uint64_t> model = {{"alpha", 1}, {"beta", 2}, {"gamma", 3}};
  MemNodeStore store;
  const std::vector<BTree::StoredLeaf> leaves = store_leaves(model, &store, &rng);
  ASSERT_EQ(leaves.size(), 1u);
  {
    BTree t;
    t.attach_store(&store, kTree);
    store.fail_reads(1);
    const Status s = t.adopt_stored_leaves(leaves);
    EXPECT_EQ(s.code(), Code::kIOError) << s.to_string();
    EXPECT_EQ(t.check_invariants(), 0u);
    EXPECT_TRUE(scan_all(t, "", "", false).empty());
  }
  {
    // Another tree's image is not taken for this one's.
    BTree t;
    t.attach_store(&store, kTree + 1);
    const Status s = t.adopt_stored_leaves(leaves);
    EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
    EXPECT_EQ(t.check_invariants(), 0u);
  }
  BTree t;
  t.attach_store(&store, kTree);
  ASSERT_TRUE(t.adopt_stored_leaves(leaves).is_ok());
  EXPECT_EQ(t.stored_leaves(), 0u);
  EXPECT_EQ(t.check_invariants(), 3u);
  std::uint64_t v = 0;
  EXPECT_TRUE(t.lookup("beta", &v));
  EXPECT_EQ(v, 2u);
  EXPECT_EQ(store.live(), 0u);  // the image went back to the store
}

TEST(BTreePaging, AModelWithEvictionsEverywhereAnswersAsAMap) {
  for (const std::uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    MemNodeStore store;
    BTree t;
    t.attach_store(&store, kTree);
    run_model(&t, seed, 60'000, 6'000);
    EXPECT_GT(t.evictions(), 1000u);
    EXPECT_GT(t.loads(), 1000u);
    EXPECT_GT(t.merges(), 0u);
    // Every image the tree names is in the store, and only those (the rest were released).
    EXPECT_EQ(store.live(), t.stored_leaves());
    EXPECT_EQ(store.bad_releases(), 0u);
    EXPECT_EQ(t.inner_evictions(), 0u);  // only leaves, unless asked (pages_inner)
  }
}

// The same with inner nodes going out too: the hand takes an inner node whose children are
// all out, and writes, merges and scans meet nodes on storage on every level.
TEST(BTreePaging, AModelWithInnerEvictionsAnswersAsAMap) {
  for (const std::uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    MemNodeStore store;
    BTree t;
    t.attach_store(&store, kTree);
    t.set_pages_inner(true);
    run_model(&t, seed, 60'000, 6'000, {}, /*bursts=*/true);
    EXPECT_GT(t.inner_evictions(), 20u);
    EXPECT_GT(t.inner_loads(), 20u);
    EXPECT_GT(t.merges(), 0u);
    EXPECT_EQ(store.live(), t.stored_leaves() + t.stored_inner_nodes());
    EXPECT_EQ(store.bad_releases(), 0u);
  }
}

// A NodeStore over node segments on the simulated disk: the engine's shape of it.
class SegmentStore final : public NodeStore {
 public:
  explicit SegmentStore(storage::SimFileSystem* fs)
      : files_(fs, true), writer_(fs, &files_, "/db", 64 * 1024) {}
  Result<std::uint64_t> add(char** slot) override { return writer_.add(slot); }
  Status flush() override { return writer_.flush(); }
  Status read(std::uint64_t address, char* out) override {
    std::unique_ptr<char, decltype(&std::free)> block(
        static_cast<char*>(std::aligned_alloc(4096, 4096)), &std::free);
    Result<const char*> img = storage::read_node_slot(&files_, address, block.get());
    if (!img.is_ok()) return img.status();
    std::memcpy(out, *img, kNodeImageBytes);
    return Status::ok();
  }
  Status read_many(std::span<const std::uint64_t> addresses, char* out) override {
    return storage::read_node_slots(&files_, addresses, out);
  }
  void release(std::uint64_t address) override { writer_.release(address); }
  storage::NodeSegmentWriter& writer() { return writer_; }

 private:
  storage::FileTable files_;
  storage::NodeSegmentWriter writer_;
};

TEST(BTreePaging, LeavesGoThroughNodeSegmentsAndComeBack) {
  storage::SimFileSystem fs(5);
  ASSERT_TRUE(fs.open_dir("/db", true).is_ok());
  SegmentStore store(&fs);
  BTree t;
  t.attach_store(&store, kTree);
  run_model(&t, 5, 30'000, 4'000);
  EXPECT_GT(t.evictions(), 500u);
  EXPECT_GT(t.loads(), 500u);
  EXPECT_GT(store.writer().segments().size(), 2u);
  // A read-through scan takes runs of images side by side with one read each.
  std::vector<std::string> all;
  EXPECT_TRUE(t.for_each([&](std::string_view k, std::uint64_t) { all.emplace_back(k); }));
  for (const std::string& k : all) {
    bool evicted = false;
    ASSERT_TRUE(t.evict_leaf(k, &evicted).is_ok());
  }
  const std::size_t stored = t.stored_leaves();
  ASSERT_GT(stored, 0u);
  LeafImages images;
  std::size_t seen = 0;
  std::string prev;
  for (std::string from;;) {
    LeafBatch b;
    ASSERT_TRUE(t.scan_leaf(from, false, "", "", false, &b, &images));
    for (std::size_t i = 0; i < b.entries.size(); ++i) {
      const std::string k(b.key(b.entries[i]));
      ASSERT_LT(prev, k);
      prev = k;
      ++seen;
    }
    if (!b.has_next) break;
    from = b.next;
  }
  EXPECT_EQ(t.stored_leaves(), stored);
  std::size_t keys = 0;
  EXPECT_TRUE(t.for_each([&](std::string_view, std::uint64_t) { ++keys; }));
  EXPECT_EQ(seen, keys);
  // Once every leaf is back, every segment but the one being written has gone.
  EXPECT_TRUE(t.for_each([](std::string_view, std::uint64_t) {}));
  EXPECT_EQ(t.stored_leaves(), 0u);
  ASSERT_TRUE(store.writer().reap().is_ok());
  EXPECT_EQ(store.writer().live_segments(), 1u);
  std::vector<std::string> names;
  ASSERT_TRUE(fs.list("/db", &names).is_ok());
  EXPECT_EQ(names.size(), 1u);
}

// A tree with a store, as each test below starts.
struct Paged {
  Paged() { t.attach_store(&store, kTree); }
  MemNodeStore store;
  BTree t;
};

// Keys "key100000"... to `n`, each mapped to its number.
void fill(BTree* t, std::size_t n, std::vector<std::string>* keys) {
  for (std::size_t i = 0; i < n; ++i) {
    std::string k = "key" + std::to_string(100000 + i);
    std::uint64_t ex = 0;
    ASSERT_TRUE(t->insert_if_absent(k, i, &ex));
    keys->push_back(std::move(k));
  }
}

// A tree of `n` keys with every leaf but the root on storage.
void fill_and_evict(BTree* t, std::size_t n, std::vector<std::string>* keys) {
  fill(t, n, keys);
  for (const std::string& k : *keys) {
    bool evicted = false;
    ASSERT_TRUE(t->evict_leaf(k, &evicted).is_ok());
  }
  ASSERT_GT(t->stored_leaves(), 10u);
}

// A paged tree of `n` keys, each key's leaf evicted (fill_and_evict).
struct Evicted : Paged {
  explicit Evicted(std::size_t n) { fill_and_evict(&t, n, &keys); }
  std::vector<std::string> keys;
};

// A lookup that does not load stops at a leaf on storage and waits for its driver (the
// coroutine modes read the image through the worker's ring): install() goes on to the answer,
// a damaged image or fail() fails the lookup, load_here() reads in place, and a leaf another
// loader installed meanwhile is found from the root.
TEST(BTreePaging, ALookupThatDoesNotLoadWaitsForItsDriver) {
  Evicted p(5'000);
  MemNodeStore& store = p.store;
  BTree& t = p.t;
  const std::vector<std::string>& keys = p.keys;
  // Steps a lookup of keys[i] to its end, answering each stop with `answer`.
  const auto drive = [&](std::size_t i, const std::function<void(Lookup&)>& answer) {
    auto l = std::make_unique<Lookup>(t, keys[i], NodeSearch::kCount, /*load=*/false);
    int stops = 0;
    while (l->step()) {
      if (!l->stored()) continue;
      ++stops;
      answer(*l);
      if (l->failed()) break;
    }
    return std::make_pair(std::move(l), stops);
  };
  const auto read_and_install = [&](Lookup& l) {
    alignas(64) char image[kNodeImageBytes];
    ASSERT_TRUE(store.read(l.stored_address(), image).is_ok());
    EXPECT_TRUE(l.install(image));
  };
  const std::size_t stored = t.stored_leaves();
  auto [l1, stops1] = drive(100, read_and_install);
  EXPECT_EQ(stops1, 1);
  ASSERT_FALSE(l1->failed());
  ASSERT_TRUE(l1->found());
  EXPECT_EQ(l1->value(), 100u);
  EXPECT_EQ(t.stored_leaves(), stored - 1);

  // The read failed: the lookup fails with it, and the leaf stays out.
  auto [l2, stops2] = drive(2'000, [](Lookup& l) { l.fail(Status::io_error("injected")); });
  EXPECT_EQ(stops2, 1);
  EXPECT_TRUE(l2->failed());
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  EXPECT_EQ(t.stored_leaves(), stored - 1);

  // A damaged image fails it with Corruption.
  auto [l3, stops3] = drive(2'000, [&](Lookup& l) {
    alignas(64) char image[kNodeImageBytes];
    ASSERT_TRUE(store.read(l.stored_address(), image).is_ok());
    image[600] ^= 0x5a;
    EXPECT_FALSE(l.install(image));
  });
  EXPECT_EQ(stops3, 1);
  EXPECT_TRUE(l3->failed());
  EXPECT_EQ(take_load_failure().code(), Code::kCorruption);
  EXPECT_EQ(t.stored_leaves(), stored - 1);

  // Read in place.
  auto [l4, stops4] = drive(2'000, [](Lookup& l) { EXPECT_TRUE(l.load_here()); });
  EXPECT_EQ(stops4, 1);
  ASSERT_TRUE(l4->found());
  EXPECT_EQ(l4->value(), 2'000u);

  // Another loader installs the leaf while this one reads: its install loses, and the lookup
  // finds the other's from the root.
  auto [l5, stops5] = drive(4'000, [&](Lookup& l) {
    alignas(64) char image[kNodeImageBytes];
    ASSERT_TRUE(store.read(l.stored_address(), image).is_ok());
    std::uint64_t v = 0;
    ASSERT_TRUE(t.lookup(keys[4'000], &v));  // loads it
    const std::uint64_t loads = t.loads();
    EXPECT_TRUE(l.install(image));
    EXPECT_EQ(t.loads(), loads);
  });
  EXPECT_EQ(stops5, 1);
  ASSERT_TRUE(l5->found());
  EXPECT_EQ(l5->value(), 4'000u);
  t.check_invariants();
}

TEST(BTreePaging, AFailedLoadFailsOnlyItsOperationAndChangesNothing) {
  Evicted p(5'000);
  MemNodeStore& store = p.store;
  BTree& t = p.t;
  const std::vector<std::string>& keys = p.keys;
  const std::size_t stored = t.stored_leaves();
  const std::string& k = keys[2'500];

  store.fail_reads(1);
  Lookup l(t, k);
  l.run(false);
  EXPECT_TRUE(l.failed());
  EXPECT_FALSE(l.found());
  Status s = take_load_failure();
  EXPECT_EQ(s.code(), Code::kIOError);
  EXPECT_NE(s.message().find("injected"), std::string::npos) << s.to_string();
  EXPECT_TRUE(take_load_failure().is_ok());  // taken
  EXPECT_EQ(t.stored_leaves(), stored);
  t.check_invariants();

  // Each kind of operation that needs the leaf.
  std::uint64_t ex = 1;
  store.fail_reads(1);
  EXPECT_FALSE(t.insert_if_absent(k + "x", 1, &ex));
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  store.fail_reads(1);
  EXPECT_FALSE(t.remove(k, 0, true));
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  store.fail_reads(1);
  LeafBatch b;
  EXPECT_FALSE(t.scan_leaf(k, false, "", "", false, &b));
  EXPECT_TRUE(b.entries.empty());
  EXPECT_FALSE(b.has_next);
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  EXPECT_EQ(t.stored_leaves(), stored);

  // A damaged image: Corruption, and the leaf stays where it was.
  const std::vector<std::uint64_t> addresses = store.addresses();
  for (const std::uint64_t a : addresses) ASSERT_TRUE(store.damage(a, 600));
  std::uint64_t v = 0;
  EXPECT_FALSE(t.lookup(k, &v));
  s = take_load_failure();
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.to_string();
  EXPECT_EQ(t.stored_leaves(), stored);
  for (const std::uint64_t a : addresses) ASSERT_TRUE(store.damage(a, 600));  // mended

  // Everything reads back once the store answers again.
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(t.lookup(keys[i], &v)) << keys[i];
    ASSERT_EQ(v, i);
  }
  EXPECT_TRUE(take_load_failure().is_ok());
  EXPECT_EQ(t.stored_leaves(), 0u);
  EXPECT_EQ(store.live(), 0u);
  t.check_invariants();
}

// A read-through scan (the checkpoint's) reads leaves on storage from their images without
// bringing them back, a parent's stored leaves with one request, in either direction and with
// leaves in memory between them; a failed read fails the scan and changes nothing.
TEST(BTreePaging, AReadThroughScanLeavesTheLeavesOnStorage) {
  Evicted p(5'000);
  MemNodeStore& store = p.store;
  BTree& t = p.t;
  const std::vector<std::string>& keys = p.keys;
  // Every 7th key's leaf back in memory.
  for (std::size_t i = 0; i < keys.size(); i += 7 * 40) {
    std::uint64_t v = 0;
    ASSERT_TRUE(t.lookup(keys[i], &v));
  }
  const std::size_t stored = t.stored_leaves();
  const std::uint64_t loads = t.loads();
  const std::uint64_t batches = store.batch_reads();
  ASSERT_GT(stored, 50u);
  auto scan = [&](bool reverse, LeafImages* images, std::vector<std::uint64_t>* values) {
    values->clear();
    std::string from;
    bool more = true;
    bool first = true;
    while (more) {
      LeafBatch b;
      if (!t.scan_leaf(from, reverse && first, "", "", reverse, &b, images)) return false;
      for (std::size_t i = 0; i < b.entries.size(); ++i) values->push_back(b.entries[i].value);
      more = b.has_next;
      from = b.next;
      first = false;
    }
    return true;
  };
  std::vector<std::uint64_t> got;
  LeafImages images;
  ASSERT_TRUE(scan(false, &images, &got));
  ASSERT_EQ(got.size(), keys.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i);
  EXPECT_EQ(t.stored_leaves(), stored);
  EXPECT_EQ(t.loads(), loads);
  // One request per run of stored leaves, not one per leaf: a run ends at a leaf in memory
  // (one in seven here) and at its parent's last child.
  EXPECT_LT((store.batch_reads() - batches) * 4, stored);

  LeafImages back;
  ASSERT_TRUE(scan(true, &back, &got));
  ASSERT_EQ(got.size(), keys.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], keys.size() - 1 - i);
  EXPECT_EQ(t.stored_leaves(), stored);

  LeafImages fresh;
  store.fail_reads(1);
  EXPECT_FALSE(scan(false, &fresh, &got));
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  EXPECT_EQ(t.stored_leaves(), stored);
  ASSERT_TRUE(scan(false, &fresh, &got));
  EXPECT_EQ(got.size(), keys.size());

  // Damaged images fail the scan with Corruption, never with rows from them, and leave the
  // leaves where they were.
  const std::vector<std::uint64_t> addresses = store.addresses();
  ASSERT_EQ(addresses.size(), stored);
  for (const std::uint64_t a : addresses) ASSERT_TRUE(store.damage(a, 600));
  LeafImages damaged;
  EXPECT_FALSE(scan(false, &damaged, &got));
  const Status s = take_load_failure();
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  EXPECT_EQ(t.stored_leaves(), stored);
  EXPECT_EQ(t.loads(), loads);
  for (const std::uint64_t a : addresses) ASSERT_TRUE(store.damage(a, 600));  // mended
  LeafImages mended;
  ASSERT_TRUE(scan(false, &mended, &got));
  ASSERT_EQ(got.size(), keys.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i);
  t.check_invariants();
}

// A frame given back reads 0 when it is reused: revive_above starts it unlocked and above the
// floor, whatever the floor's low bits say.
TEST(BTreePaging, ARevivedLockStartsAboveItsFloor) {
  for (const std::uint64_t floor :
       {std::uint64_t{0}, std::uint64_t{4}, std::uint64_t{7}, std::uint64_t{1000},
        std::uint64_t{1001}, std::uint64_t{1003}}) {
    OptLock l;
    l.revive_above(floor);
    const std::uint64_t v = l.read_version();
    EXPECT_GT(v, floor);
    EXPECT_FALSE(OptLock::is_locked(v)) << v;
    EXPECT_TRUE(l.try_upgrade(v));
    l.unlock();
    EXPECT_GT(l.read_version(), v);
  }
}

// The frames of evicted leaves go back to the system a page at a time (all of its frames
// free), all but the few kept; loads take the kept ones first, then the given-back ones, each
// at a version above every version a given-back frame had, so a reader or a hint that still
// holds one of its earlier lives never validates.
TEST(BTreePaging, FreeFramesGoBackToTheSystemAndComeBackAboveTheirVersions) {
  Evicted p(20'000);
  BTree& t = p.t;
  const std::vector<std::string>& keys = p.keys;
  const std::size_t free = t.free_node_count();
  ASSERT_GT(free, 200u);
  // A leaf read before the release, at its version then.
  const std::string& k = keys[10'000];
  LeafBatch before;
  const LeafRead held = [&] {
    ScanLeaf s(t, k, false, "", "", false, &before);
    while (s.step()) {
    }
    return s.leaf_read();
  }();
  bool evicted = false;
  ASSERT_TRUE(t.evict_leaf(k, &evicted).is_ok());
  ASSERT_TRUE(evicted);

  EXPECT_EQ(t.release_free_frames(free + 1), 0u);  // keeps more than there are
  const std::size_t bytes = t.release_free_frames(16);
  EXPECT_GT(bytes, 100u * kNodeBytes);
  EXPECT_EQ(bytes % 4096, 0u);
  EXPECT_EQ(t.released_frames() * kNodeBytes, bytes);
  EXPECT_GE(t.free_node_count() - t.released_frames(), 16u);
  EXPECT_EQ(t.free_node_count(), free);  // still free frames, counted as such

  // Every key reads back (the loads take kept and given-back frames), the held leaf's old
  // version never validates again, and the tree is whole.
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint64_t v = 0;
    ASSERT_TRUE(t.lookup(keys[i], &v)) << keys[i];
    ASSERT_EQ(v, i);
  }
  EXPECT_LT(t.released_frames() * kNodeBytes, bytes);
  EXPECT_FALSE(held.leaf->lock.validate(held.version));
  EXPECT_EQ(t.stored_leaves(), 0u);
  t.check_invariants();
}

TEST(BTreePaging, AnEvictionGivesUpWhenItsLeafChangesOrTheStoreFails) {
  Paged p;
  MemNodeStore& store = p.store;
  BTree& t = p.t;
  std::vector<std::string> keys;
  fill(&t, 3'000, &keys);
  // A writer changes the leaf while its image is being written: the image is stale, so the
  // leaf stays and the slot is given back.
  store.on_next_flush([&] {
    std::uint64_t ex = 0;
    ASSERT_TRUE(t.insert_if_absent(keys[1'500] + "a", 7, &ex));
  });
  bool evicted = true;
  ASSERT_TRUE(t.evict_leaf(keys[1'500], &evicted).is_ok());
  EXPECT_FALSE(evicted);
  EXPECT_EQ(store.live(), 0u);
  std::uint64_t v = 0;
  EXPECT_TRUE(t.lookup(keys[1'500] + "a", &v));
  // So does a replaced value: an image taken before it would bring the old value back.
  ASSERT_TRUE(t.lookup(keys[1'400], &v));
  store.on_next_flush([&] { ASSERT_TRUE(t.replace(keys[1'400], v, v + 1)); });
  ASSERT_TRUE(t.evict_leaf(keys[1'400], &evicted).is_ok());
  EXPECT_FALSE(evicted);
  EXPECT_EQ(store.live(), 0u);
  ASSERT_TRUE(t.evict_leaf(keys[1'400], &evicted).is_ok());
  ASSERT_TRUE(evicted);
  std::uint64_t after = 0;
  ASSERT_TRUE(t.lookup(keys[1'400], &after));
  EXPECT_EQ(after, v + 1);
  // A replace of a key whose leaf is on storage reads the leaf in.
  ASSERT_TRUE(t.evict_leaf(keys[1'400], &evicted).is_ok());
  ASSERT_TRUE(evicted);
  ASSERT_TRUE(t.replace(keys[1'400], v + 1, v + 2));
  ASSERT_TRUE(t.lookup(keys[1'400], &after));
  EXPECT_EQ(after, v + 2);
  ASSERT_EQ(t.stored_leaves(), 0u);
  EXPECT_EQ(store.live(), 0u);
  // The store fails: IOError, nothing evicted, nothing leaked.
  store.fail_adds(1);
  EXPECT_EQ(t.evict_leaf(keys[10], &evicted).code(), Code::kIOError);
  EXPECT_FALSE(evicted);
  store.fail_flushes(1);
  EXPECT_EQ(t.evict_leaf(keys[10], &evicted).code(), Code::kIOError);
  EXPECT_FALSE(evicted);
  EXPECT_EQ(store.live(), 0u);
  EXPECT_EQ(t.stored_leaves(), 0u);
  // And then it goes, once; a second eviction of the same range finds it out already.
  ASSERT_TRUE(t.evict_leaf(keys[10], &evicted).is_ok());
  EXPECT_TRUE(evicted);
  ASSERT_TRUE(t.evict_leaf(keys[10], &evicted).is_ok());
  EXPECT_FALSE(evicted);
  EXPECT_EQ(t.stored_leaves(), 1u);
  EXPECT_EQ(store.live(), 1u);
  t.check_invariants();
}

TEST(BTreePaging, TheHandSparesLeavesInUseAndEvictsTheRest) {
  Paged p;
  BTree& t = p.t;
  std::vector<std::string> keys;
  fill(&t, 20'000, &keys);
  const std::size_t leaves = t.level_sizes().back();
  ASSERT_GT(leaves, 200u);
  // A whole pass: every leaf is new (or was just written), so each is spared and unmarked.
  std::string hand;
  std::size_t evicted = 0;
  ASSERT_TRUE(t.sweep_leaves(&hand, leaves + 10, &evicted).is_ok());
  EXPECT_TRUE(hand.empty());  // it went round
  EXPECT_EQ(evicted, 0u);
  // The first tenth of the keys in use; the next pass takes every leaf not in use.
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 2'000; ++i) ASSERT_TRUE(t.lookup(keys[i], &v));
  ASSERT_TRUE(t.sweep_leaves(&hand, leaves + 10, &evicted).is_ok());
  EXPECT_TRUE(hand.empty());
  EXPECT_EQ(evicted, t.stored_leaves());
  EXPECT_GT(evicted, leaves * 8 / 10);
  EXPECT_LT(evicted, leaves * 95 / 100);
  // The keys in use are still in memory: reading them loads nothing.
  const std::uint64_t loads = t.loads();
  for (std::size_t i = 0; i < 2'000; ++i) ASSERT_TRUE(t.lookup(keys[i], &v));
  EXPECT_EQ(t.loads(), loads);
  // The rest read back from storage, each leaf once.
  for (std::size_t i = 2'000; i < keys.size(); ++i) {
    ASSERT_TRUE(t.lookup(keys[i], &v));
    ASSERT_EQ(v, i);
  }
  EXPECT_EQ(t.loads(), loads + evicted);
  EXPECT_EQ(t.stored_leaves(), 0u);
  // A pass in steps: the hand moves on between calls and ends where it started.
  std::size_t steps = 0;
  do {
    ASSERT_TRUE(t.sweep_leaves(&hand, 7, &evicted).is_ok());
    ++steps;
  } while (!hand.empty() && steps < leaves);
  EXPECT_TRUE(hand.empty());
  EXPECT_GE(steps * 7, t.level_sizes().back());
  t.check_invariants();
}

// clear() empties a tree with leaves on storage without reading them: their images go back
// to the store, every node to the free list, and the tree takes keys again.
TEST(BTreePaging, ClearGivesBackLeavesOnStorageWithoutReadingThem) {
  Paged p;
  BTree& t = p.t;
  std::vector<std::string> keys;
  fill_and_evict(&t, 4'000, &keys);
  ASSERT_GT(t.stored_leaves(), 10u);
  ASSERT_GT(p.store.live(), 10u);
  const std::uint64_t loads = t.loads();
  t.clear();
  EXPECT_EQ(t.loads(), loads);
  EXPECT_EQ(t.stored_leaves(), 0u);
  EXPECT_EQ(p.store.live(), 0u);
  EXPECT_EQ(t.check_invariants(), 0u);
  EXPECT_EQ(t.node_count(), 1u);  // the new, empty root
  std::uint64_t v = 0;
  EXPECT_FALSE(t.lookup(keys[0], &v));
  std::uint64_t ex = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(t.insert_if_absent(keys[i], i, &ex));
  EXPECT_EQ(t.check_invariants(), keys.size());
}

TEST(BTreePaging, TheRootStaysAndSizesCountLeavesOnStorage) {
  Paged p;
  BTree& t = p.t;
  std::uint64_t ex = 0;
  ASSERT_TRUE(t.insert_if_absent("a", 1, &ex));
  bool evicted = true;
  ASSERT_TRUE(t.evict_leaf("a", &evicted).is_ok());
  EXPECT_FALSE(evicted);  // a one-leaf tree's leaf is its root
  std::vector<std::string> keys;
  fill_and_evict(&t, 4'000, &keys);
  const std::vector<std::size_t> sizes = t.level_sizes();
  ASSERT_GE(sizes.size(), 2u);
  // Writing the tree bottom-up names the leaves on storage by their addresses as they are.
  std::size_t visited_leaves = 0;
  std::size_t named = 0;
  t.visit_bottom_up([&](const Node& n, std::span<const std::uint64_t> children) {
    if (n.level == 0) ++visited_leaves;
    for (const std::uint64_t c : children) named += is_address(c) ? 1 : 0;
    return std::uint64_t{64};  // a node, as far as the count goes: an even word
  });
  EXPECT_EQ(named, t.stored_leaves());
  EXPECT_EQ(visited_leaves + named, sizes.back());
}

// Keys enough for two levels of inner nodes below the root (a root over leaves' parents over
// leaves would take no inner node but the leaves' parents).
constexpr std::size_t kTall = 200'000;

// Passes of the hand over a tree nobody reads: every leaf goes out, then every inner node but
// the root, bottom-up, one level a pass or two.
void evict_everything(BTree* t) {
  std::string hand;
  std::size_t evicted = 0;
  for (int pass = 0; pass < 2 * static_cast<int>(kMaxLevels); ++pass) {
    do {
      ASSERT_TRUE(t->sweep_leaves(&hand, 64, &evicted).is_ok());
    } while (!hand.empty());
  }
}

// The root's children as its image would name them (visit_bottom_up's last call).
std::vector<std::uint64_t> root_children(const BTree& t) {
  std::vector<std::uint64_t> out;
  (void)t.visit_bottom_up([&](const Node&, std::span<const std::uint64_t> children) {
    out.assign(children.begin(), children.end());
    return std::uint64_t{64};
  });
  return out;
}

// A paged tree of kTall keys that pages inner nodes too, with every node out but the root
// (evict_everything); `levels`: its height before.
struct TallOut : Paged {
  TallOut() {
    t.set_pages_inner(true);
    fill(&t, kTall, &keys);
    levels = t.level_sizes().size();
    evict_everything(&t);
  }
  std::vector<std::string> keys;
  std::size_t levels = 0;
};

TEST(BTreePaging, InnerNodesGoOutBottomUpAndComeBackLevelByLevel) {
  Paged p;
  BTree& t = p.t;
  t.set_pages_inner(true);
  std::vector<std::string> keys;
  fill(&t, kTall, &keys);
  const std::vector<std::size_t> before = t.level_sizes();
  ASSERT_GE(before.size(), 4u);  // two levels of inner nodes below the root
  std::size_t inner = 0;
  for (std::size_t l = 1; l + 1 < before.size(); ++l) inner += before[l];
  evict_everything(&t);
  EXPECT_EQ(t.stored_leaves(), before.back());
  EXPECT_EQ(t.stored_inner_nodes(), inner);
  EXPECT_EQ(t.node_count(), 1u);  // the root alone stays
  EXPECT_EQ(t.level_sizes(), (std::vector<std::size_t>{1, before[1]}));
  for (const std::uint64_t c : root_children(t)) EXPECT_TRUE(is_address(c));
  EXPECT_EQ(p.store.live(), t.stored_leaves() + t.stored_inner_nodes());
  t.check_invariants();  // reads every inner node on storage and checks it as one in memory
  // One key: a load per level below the root.
  std::uint64_t v = 0;
  ASSERT_TRUE(t.lookup(keys[12'345], &v));
  EXPECT_EQ(v, 12'345u);
  EXPECT_EQ(t.inner_loads(), before.size() - 2);
  EXPECT_EQ(t.loads(), 1u);
  // Every key, each node read once.
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(t.lookup(keys[i], &v)) << i;
    ASSERT_EQ(v, i);
  }
  EXPECT_EQ(t.inner_loads(), inner);
  EXPECT_EQ(t.loads(), before.back());
  EXPECT_EQ(t.stored_inner_nodes(), 0u);
  EXPECT_EQ(t.level_sizes(), before);
  EXPECT_EQ(p.store.live(), 0u);
  EXPECT_EQ(p.store.bad_releases(), 0u);
  EXPECT_EQ(t.check_invariants(), keys.size());
}

// One pass of the hand in one call: what it takes is published at the end, so every node is
// looked at as the pass found the tree.
void one_pass(BTree* t) {
  std::string hand;
  std::size_t evicted = 0;
  ASSERT_TRUE(t->sweep_leaves(&hand, SIZE_MAX, &evicted).is_ok());
  ASSERT_TRUE(hand.empty());
}

// A node in use stays: the hand spares an inner node that a load went through since it last
// found the node's children all out, as it spares a leaf a descent reached.
TEST(BTreePaging, TheHandSparesAnInnerNodeALoadWentThrough) {
  TallOut p;
  BTree& t = p.t;
  const std::vector<std::string>& keys = p.keys;
  const std::size_t levels = p.levels;
  ASSERT_GE(levels, 4u);  // two inner levels below the root
  const std::size_t out = t.stored_inner_nodes();
  const std::size_t leaves = t.stored_leaves();
  std::uint64_t v = 0;
  ASSERT_TRUE(t.lookup(keys[0], &v));
  ASSERT_EQ(t.stored_inner_nodes(), out - (levels - 2));  // the path came back
  one_pass(&t);  // the leaf is spared: the lookup reached it
  EXPECT_EQ(t.stored_leaves(), leaves - 1);
  one_pass(&t);  // now it goes
  EXPECT_EQ(t.stored_leaves(), leaves);
  EXPECT_EQ(t.stored_inner_nodes(), out - (levels - 2));
  // Each inner node of the path: one pass spares it (the load below it marked it), the next
  // takes it, then its parent's turn.
  for (std::size_t level = 1; level + 1 < levels; ++level) {
    SCOPED_TRACE(testing::Message() << "level " << level);
    one_pass(&t);
    EXPECT_EQ(t.stored_inner_nodes(), out - (levels - 1 - level));
    one_pass(&t);
    EXPECT_EQ(t.stored_inner_nodes(), out - (levels - 2 - level));
  }
  EXPECT_EQ(t.stored_inner_nodes(), out);
  t.check_invariants();
}

// A failed or damaged read of an inner node fails only the operation that needed it, with
// IOError or Corruption naming the node; the tree is as it was, and the next try reads it.
TEST(BTreePaging, AFailedInnerLoadFailsOnlyItsOperation) {
  TallOut p;
  BTree& t = p.t;
  const std::vector<std::string>& keys = p.keys;
  const std::size_t out = t.stored_inner_nodes();
  ASSERT_GT(out, 2u);
  std::uint64_t v = 0;
  p.store.fail_reads(1);
  EXPECT_TRUE(t.lookup(keys[7], &v).failed());
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  std::uint64_t ex = 0;
  p.store.fail_reads(1);
  EXPECT_TRUE(t.insert_if_absent("key0", 1, &ex).failed());
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  EXPECT_EQ(t.stored_inner_nodes(), out);
  EXPECT_EQ(t.inner_loads(), 0u);
  // The check (which the engine runs as it closes, on a disk that may be failing) skips the
  // inner nodes it cannot read and checks the rest: here the root, whose children are all out.
  p.store.fail_reads(1 << 20);
  EXPECT_EQ(t.check_invariants(), 0u);
  p.store.fail_reads(0);
  EXPECT_EQ(t.check_invariants(), 0u);  // every node read and checked
  // A damaged image of a child of the root: Corruption, every time, for keys under it.
  const std::vector<std::uint64_t> children = root_children(t);
  ASSERT_TRUE(p.store.damage(children.front(), 200));
  EXPECT_TRUE(t.lookup(keys[0], &v).failed());
  const Status s = take_load_failure();
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  EXPECT_NE(s.message().find(std::to_string(children.front())), std::string::npos);
  EXPECT_TRUE(t.lookup(keys[0], &v).failed());
  (void)take_load_failure();
  // Keys under the other children read on.
  ASSERT_TRUE(t.lookup(keys.back(), &v));
  EXPECT_EQ(v, keys.size() - 1);
  EXPECT_EQ(p.store.bad_releases(), 0u);
}

// A lookup that does not load stops at each node on storage in turn, the inner ones too, and
// its driver's images take it down level by level.
TEST(BTreePaging, ALookupThatDoesNotLoadWaitsAtEveryLevel) {
  TallOut p;
  BTree& t = p.t;
  const std::size_t levels = p.levels;
  Lookup l(t, p.keys[40'000], NodeSearch::kCount, /*load=*/false);
  std::size_t installs = 0;
  alignas(64) char image[kNodeImageBytes];
  while (l.step()) {
    if (!l.stored()) continue;
    ASSERT_TRUE(p.store.read(l.stored_address(), image).is_ok());
    ASSERT_TRUE(l.install(image));
    ++installs;
  }
  ASSERT_TRUE(l.found());
  EXPECT_EQ(l.value(), 40'000u);
  EXPECT_EQ(installs, levels - 1);  // every level below the root
  EXPECT_EQ(t.driver_loads(), 1u);  // of the leaves' loads
  EXPECT_EQ(t.inner_loads(), levels - 2);
}

// clear() gives back every image below an inner node on storage (it reads inner images to
// name their children, and no leaf).
TEST(BTreePaging, ClearGivesBackEveryImageUnderInnerNodesOnStorage) {
  TallOut p;
  BTree& t = p.t;
  ASSERT_GT(t.stored_inner_nodes(), 2u);
  const std::uint64_t reads = p.store.reads();
  t.clear();
  EXPECT_LE(p.store.reads() - reads, 200u);  // inner nodes only
  EXPECT_EQ(t.stored_leaves(), 0u);
  EXPECT_EQ(t.stored_inner_nodes(), 0u);
  EXPECT_EQ(p.store.live(), 0u);
  EXPECT_EQ(p.store.bad_releases(), 0u);
  EXPECT_EQ(t.check_invariants(), 0u);
  EXPECT_EQ(t.node_count(), 1u);
}

// Morsel boundaries over a tree whose inner nodes are out: split_keys reads what is in memory
// and never follows an address (a word on storage read as a node would crash), so it cuts at
// the root's separators; once the path of a key is back, the levels that are whole in memory
// are read again.
TEST(BTreePaging, SplitKeysStopsAboveInnerNodesOnStorage) {
  TallOut p;
  BTree& t = p.t;
  ASSERT_GE(p.levels, 4u);
  const std::uint64_t reads = p.store.reads();
  const std::vector<std::string> cuts = t.split_keys("", "", 1000);
  EXPECT_EQ(p.store.reads(), reads);                    // nothing loaded
  EXPECT_EQ(cuts.size(), root_children(t).size() - 1);  // the root's separators
  EXPECT_TRUE(std::is_sorted(cuts.begin(), cuts.end()));
  // Every inner node back: the level below the root splits the range finer.
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < p.keys.size(); i += 20) ASSERT_TRUE(t.lookup(p.keys[i], &v));
  ASSERT_EQ(t.stored_inner_nodes(), 0u);
  EXPECT_GT(t.split_keys("", "", 1000).size(), cuts.size());
}

// A read-through scan (the checkpoint's) goes through inner nodes on storage without loading
// them: each image read once, fences as a descent through them in memory has, failures and
// damage answered, and leaves a carry accepts left unread.
TEST(BTreePaging, AReadThroughScanGoesThroughInnerNodesOnStorage) {
  TallOut p;
  BTree& t = p.t;
  MemNodeStore& store = p.store;
  const std::vector<std::string>& keys = p.keys;
  // A few paths back in memory: the scan meets nodes on storage at every level.
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < keys.size(); i += 23'456) ASSERT_TRUE(t.lookup(keys[i], &v));
  const std::size_t leaves = t.stored_leaves();
  const std::size_t inner = t.stored_inner_nodes();
  const std::uint64_t loads = t.loads() + t.inner_loads();
  ASSERT_GT(inner, 10u);
  // [begin, end) by key numbers, either way, through fresh images: the values in order.
  const auto scan = [&](std::size_t begin, std::size_t end, bool reverse, LeafImages* images,
                        std::vector<std::uint64_t>* values, std::size_t* carried_keys) {
    values->clear();
    const std::string b = begin == 0 ? std::string() : keys[begin];
    const std::string e = end == keys.size() ? std::string() : keys[end];
    std::string from = reverse ? e : b;
    bool first = true;
    for (;;) {
      LeafBatch batch;
      if (!t.scan_leaf(from, reverse && first && e.empty(), b, e, reverse, &batch, images)) {
        return false;
      }
      if (batch.carried != 0) {
        alignas(64) char image[kNodeImageBytes];
        Node leaf;
        EXPECT_TRUE(store.read(batch.carried, image).is_ok());
        EXPECT_EQ(decode_node_image(image, kTree, batch.carried, &leaf), nullptr);
        EXPECT_EQ(leaf.level, 0u);
        *carried_keys += leaf.count;
      }
      for (const auto& entry : batch.entries) values->push_back(entry.value);
      if (!batch.has_next) return true;
      from = batch.next;
      first = false;
    }
  };
  std::vector<std::uint64_t> got;
  std::size_t carried = 0;
  const std::uint64_t reads = store.reads();
  LeafImages whole;
  ASSERT_TRUE(scan(0, keys.size(), false, &whole, &got, &carried));
  ASSERT_EQ(got.size(), keys.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i);
  EXPECT_LE(store.reads() - reads, leaves + inner);  // every image once at most
  EXPECT_EQ(t.loads() + t.inner_loads(), loads);
  EXPECT_EQ(t.stored_leaves(), leaves);
  EXPECT_EQ(t.stored_inner_nodes(), inner);
  for (const auto& [b, e] : {std::pair<std::size_t, std::size_t>{1'234, 151'234},
                             {77'777, 77'790},
                             {0, 99'999},
                             {150'001, keys.size()}}) {
    for (const bool reverse : {false, true}) {
      SCOPED_TRACE(testing::Message() << b << ".." << e << (reverse ? " reverse" : ""));
      LeafImages images;
      ASSERT_TRUE(scan(b, e, reverse, &images, &got, &carried));
      ASSERT_EQ(got.size(), e - b);
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], reverse ? e - 1 - i : b + i);
    }
  }
  // Leaves a carry accepts (every third address) are answered unread, by their address.
  LeafImages carrying;
  carrying.carry_by([](void*, std::uint64_t a) { return (a >> 13) % 3 == 0; }, nullptr);
  carried = 0;
  ASSERT_TRUE(scan(0, keys.size(), false, &carrying, &got, &carried));
  EXPECT_GT(carried, 0u);
  EXPECT_EQ(got.size() + carried, keys.size());
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  // An inner image that cannot be read fails the scan with IOError; a damaged one with
  // Corruption naming it; mended, the scan reads on. Nothing was loaded.
  LeafImages failing;
  store.fail_reads(1);
  EXPECT_FALSE(scan(0, keys.size(), false, &failing, &got, &carried));
  EXPECT_EQ(take_load_failure().code(), Code::kIOError);
  std::uint64_t first = 0;  // an inner node's image
  for (const std::uint64_t a : store.addresses()) {
    alignas(64) char image[kNodeImageBytes];
    Node n;
    ASSERT_TRUE(store.read(a, image).is_ok());
    ASSERT_EQ(decode_node_image(image, kTree, a, &n), nullptr);
    if (n.level != 0) {
      first = a;
      break;
    }
  }
  ASSERT_NE(first, 0u);
  ASSERT_TRUE(store.damage(first, 300));
  LeafImages damaged;
  EXPECT_FALSE(scan(0, keys.size(), false, &damaged, &got, &carried));
  const Status s = take_load_failure();
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  EXPECT_NE(s.message().find(std::to_string(first)), std::string::npos);
  ASSERT_TRUE(store.damage(first, 300));  // mended
  LeafImages mended;
  ASSERT_TRUE(scan(0, keys.size(), false, &mended, &got, &carried));
  EXPECT_EQ(got.size(), keys.size());
  EXPECT_EQ(t.loads() + t.inner_loads(), loads);
  t.check_invariants();
}

}  // namespace
}  // namespace braid::index
