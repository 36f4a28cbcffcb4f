// The engine keeps each primary index entry's value hint on the record's newest version
// (DatabaseImpl::write_primary): an insert sets it, an update through the key's own lookup
// moves it on. Readers only prefetch by a hint, so a stale one changes no answer.
#include <gtest/gtest.h>

#include <braid/braid.h>

#include <string>

#include "engine/exec_test_util.h"
#include "engine/table.h"
#include "engine/worker_pool.h"
#include "index/btree.h"
#include "mvcc/version.h"

namespace braid::engine {
namespace {

struct Opened {
  DatabaseImpl* impl = nullptr;
  std::unique_ptr<Database> db;
  Table* t = nullptr;
};

// A tiny cache to size the trees against: every tree counts as outgrowing it, so plain gets
// prefetch by the hints (get_op) even here.
Opened open_one_table() {
  Opened o;
  Options options;
  options.l2_cache_bytes = 64 << 10;  // the least Options takes
  Result<std::unique_ptr<DatabaseImpl>> impl = DatabaseImpl::open(options);
  EXPECT_TRUE(impl.is_ok()) << impl.status().to_string();
  o.impl = impl->get();
  o.db = WorkerPool::wrap(std::move(impl).value());
  o.t = o.db->create_table("t").value();
  return o;
}

// The hint the leaf holds for `key`, and the one naming the record's newest version now.
struct Hints {
  std::uint32_t leaf = 0;
  std::uint32_t head = 0;
};
Hints hints_of(const Opened& o, const std::string& key) {
  Table& table = *o.impl->table_at(0);
  index::Lookup l(table.index(), key);
  l.run(false);
  EXPECT_TRUE(l.found()) << key;
  const std::uint64_t e = table.oids().entry(leaf_value::oid(l.value())).load();
  EXPECT_TRUE(mvcc::entry::is_hot(e));
  return {l.value_hint(), o.impl->txns().hint_of(mvcc::entry::hot(e))};
}

// kKeys records key(i) → "v<i>": enough leaves that the tree outgrows a 64 KiB cache.
constexpr int kKeys = 5000;
std::string key(int i) { return "k" + std::to_string(100000 + i); }
void load_keys(const Opened& o) {
  Result<Transaction> tx = o.db->begin();
  ASSERT_TRUE(tx.is_ok());
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(tx->insert(*o.t, key(i), "v" + std::to_string(i)).is_ok());
  }
  ASSERT_TRUE(tx->commit().is_ok());
}

TEST(ValueHint, NamesTheNewestVersionAfterInsertsAndUpdates) {
  Opened o = open_one_table();
  constexpr int kRecords = 3000;  // several leaves: splits carry the hints along
  {
    Result<Transaction> tx = o.db->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int i = 0; i < kRecords; ++i) {
      ASSERT_TRUE(tx->insert(*o.t, "key" + std::to_string(i * 7919 % kRecords), "v0").is_ok());
    }
    ASSERT_TRUE(tx->commit().is_ok());
  }
  for (int i = 0; i < kRecords; i += 97) {
    const Hints h = hints_of(o, "key" + std::to_string(i));
    EXPECT_NE(h.leaf, 0u) << i;
    EXPECT_EQ(h.leaf, h.head) << i;
  }
  for (int round = 1; round <= 3; ++round) {
    Result<Transaction> tx = o.db->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int i = 0; i < kRecords; i += 97) {
      ASSERT_TRUE(tx->update(*o.t, "key" + std::to_string(i), "v" + std::to_string(round)).is_ok());
    }
    ASSERT_TRUE(tx->commit().is_ok());
    for (int i = 0; i < kRecords; i += 97) {
      const Hints h = hints_of(o, "key" + std::to_string(i));
      EXPECT_EQ(h.leaf, h.head) << "key" << i << " after update " << round;
    }
  }
}

// A hint left stale (here: set by hand to another record's version) changes no answer.
TEST(ValueHint, AStaleHintChangesNoAnswer) {
  Opened o = open_one_table();
  ASSERT_NO_FATAL_FAILURE(load_keys(o));
  Table& table = *o.impl->table_at(0);
  ASSERT_TRUE(table.index().outgrew_cache());  // plain gets prefetch by the hints here
  const std::string k10 = key(10);             // the lookup keeps a view of it
  index::Lookup a(table.index(), k10);
  a.run(false);
  ASSERT_TRUE(a.found());
  const Hints other = hints_of(o, key(4000));
  table.index().set_value_hint(a.leaf_read(), a.leaf_slot(), other.head);
  ASSERT_EQ(hints_of(o, key(10)).leaf, other.head);
  Result<Transaction> tx = o.db->begin();
  ASSERT_TRUE(tx.is_ok());
  for (int i : {10, 4000}) {
    Result<std::string_view> got = tx->get(*o.t, key(i));
    ASSERT_TRUE(got.is_ok()) << i;
    EXPECT_EQ(*got, "v" + std::to_string(i));
  }
  ASSERT_TRUE(tx->commit().is_ok());
}

// The coroutine modes fetch the hinted version during the entry's suspension and skip the
// version's own suspension when the entry names it: the same gets with every hint made stale
// suspend exactly once more each.
TEST(ValueHint, AHeldHintSavesTheVersionsSuspension) {
  for (ExecMode mode : {ExecMode::kInterleaved, ExecMode::kNested}) {
    Opened o = open_one_table();
    ASSERT_NO_FATAL_FAILURE(load_keys(o));
    constexpr int kGets = 200;
    auto suspends_of_gets = [&]() {
      std::vector<testing::ListGenerator::Body> bodies;
      for (int g = 0; g < kGets; g += 10) {
        bodies.push_back([&, g](Tx& tx) -> Task<Status> {
          for (int i = g; i < g + 10; ++i) {
            const std::string k = key(i * 13);
            Result<std::string_view> r = co_await tx.get(*o.t, k);
            if (!r.is_ok() || *r != "v" + std::to_string(i * 13)) co_return Status::corruption(k);
          }
          co_return co_await tx.commit();
        });
      }
      testing::ListGenerator gen(std::move(bodies));
      TxnGenerator* gens[] = {&gen};
      ExecOptions exec;
      exec.mode = mode;
      exec.batch = 4;
      const std::uint64_t before = o.db->exec_stats().suspends;
      EXPECT_TRUE(o.db->run(gens, exec).is_ok());
      for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
      return o.db->exec_stats().suspends - before;
    };
    const std::uint64_t held = suspends_of_gets();
    // Every hint names another record's version now (the last key's).
    Table& table = *o.impl->table_at(0);
    const Hints last = hints_of(o, key(kKeys - 1));
    for (int i = 0; i < kGets; ++i) {
      const std::string k = key(i * 13);
      index::Lookup l(table.index(), k);
      l.run(false);
      ASSERT_TRUE(l.found());
      table.index().set_value_hint(l.leaf_read(), l.leaf_slot(), last.head);
    }
    const std::uint64_t stale = suspends_of_gets();
    EXPECT_EQ(stale, held + kGets) << to_string(mode);
  }
}

}  // namespace
}  // namespace braid::engine
