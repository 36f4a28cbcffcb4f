// Removed records give their memory back (src/engine/reclaim.cc): once a removal is seen by
// every snapshot its key leaves the index, its versions are freed and its OID is reused; an old
// snapshot keeps reading what it saw; a re-insert is a fresh record; SSN still sees the key's
// history. Counts, not timings.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "engine/test_util.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::begin;
using testing::read;
using testing::read_committed;

std::string key_of(std::uint64_t i) {
  Key k;
  k.u64(i);
  return std::string(k.view());
}

// Commits `n` transactions that touch nothing the test looks at: the clock moves and every
// transaction end gets its turn at reclamation.
void churn_clock(Database& db, Table& scratch, int n) {
  for (int i = 0; i < n; ++i) {
    Transaction tx = begin(db);
    ASSERT_TRUE(tx.put(scratch, "tick", std::to_string(i)).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
}

// Reclamation needs the horizon past the removal and, for the OID, one epoch more; both move
// with other threads' transactions too (a worker's tick), which a loaded machine delays.
// Commits until `done` holds, at most `max` of them; answers whether it held.
template <typename Pred>
bool churn_until(Database& db, Table& scratch, Pred done, int max = 20000) {
  for (int i = 0; i < max && !done(); ++i) churn_clock(db, scratch, 1);
  return done();
}

// A constant live set, keys inserted at the tail and removed at the head (a queue) or at
// random: versions, OIDs in use and pending tombstones return to the live set's level.
void constant_live_set(bool fifo, std::uint64_t seed) {
  SCOPED_TRACE(fifo ? "fifo" : "random");
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  constexpr std::uint64_t kLive = 2000;
  std::vector<std::uint64_t> live(kLive);
  {
    Transaction tx = begin(*db);
    for (std::uint64_t i = 0; i < kLive; ++i) {
      live[i] = i;
      ASSERT_TRUE(tx.insert(*t, key_of(i), "v").is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  const DatabaseStats start = db->stats();
  util::Rng rng(seed);
  std::uint64_t next = kLive;
  std::size_t cursor = 0;
  constexpr int kTxns = 40000;  // 80 000 keys written: 40 times the live set
  DatabaseStats early;          // after 4 times the live set: the churn's own level
  for (int n = 0; n < kTxns; ++n) {
    if (n == kTxns / 10) early = db->stats();
    Transaction tx = begin(*db);
    for (int j = 0; j < 2; ++j) {
      std::size_t slot;
      if (fifo) {
        slot = cursor;
        cursor = (cursor + 1) % kLive;
      } else {
        slot = rng.uniform(kLive);
      }
      Status s = tx.remove(*t, key_of(live[slot]));
      ASSERT_TRUE(s.is_ok()) << s.to_string() << " key " << live[slot];
      live[slot] = next++;
      ASSERT_TRUE(tx.insert(*t, key_of(live[slot]), "w").is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  const DatabaseStats st = db->stats();
  EXPECT_EQ(st.records_reclaimed + st.tombstones_pending, 2u * kTxns);
  EXPECT_LT(st.tombstones_pending, 600u);
  // Live versions: one per live record, plus limbo and pending tombstones.
  EXPECT_LT(st.live_versions, kLive + 1200) << "after " << next << " keys written";
  // OIDs: the table never holds more than the live set plus what waits for its epoch.
  EXPECT_LT(st.records, kLive + 600);
  EXPECT_GE(st.records, kLive);
  EXPECT_GT(st.oids_free + st.records, 0u);
  // Index nodes: merges keep the tree at the level the churn first brought it to (the load
  // filled its leaves; churned leaves hold between a quarter and all of a node).
  EXPECT_LE(st.index_nodes, early.index_nodes * 13 / 10);
  EXPECT_LE(st.index_nodes, start.index_nodes * 3);
  EXPECT_GT(st.index_nodes_free, 0u);
  std::printf(
      "%s: %llu keys written, live versions %llu (start %llu), records %llu, "
      "reclaimed %llu, pending %llu, oids free %llu, index nodes %llu (start %llu, early %llu, "
      "free %llu)\n",
      fifo ? "fifo" : "random", static_cast<unsigned long long>(next),
      static_cast<unsigned long long>(st.live_versions),
      static_cast<unsigned long long>(start.live_versions),
      static_cast<unsigned long long>(st.records),
      static_cast<unsigned long long>(st.records_reclaimed),
      static_cast<unsigned long long>(st.tombstones_pending),
      static_cast<unsigned long long>(st.oids_free),
      static_cast<unsigned long long>(st.index_nodes),
      static_cast<unsigned long long>(start.index_nodes),
      static_cast<unsigned long long>(early.index_nodes),
      static_cast<unsigned long long>(st.index_nodes_free));
  // Every live key reads back, every removed one is gone.
  Transaction tx = begin(*db);
  for (std::uint64_t i = 0; i < kLive; ++i) {
    EXPECT_EQ(read(tx, *t, key_of(live[i])), live[i] < kLive ? "v" : "w");
  }
  EXPECT_EQ(read(tx, *t, key_of(0)), live[0] == 0 ? "v" : "<none>");
  ASSERT_TRUE(tx.commit().is_ok());
}

TEST(Removal, ConstantLiveSetFifoStaysBounded) { constant_live_set(true, 1); }
TEST(Removal, ConstantLiveSetRandomStaysBounded) { constant_live_set(false, 2); }

// A table emptied by removals gives its versions' pages back to the system, and the next fill
// takes them again before fresh memory; every value reads back right after the round trip.
TEST(Removal, ATableEmptiedByRemovalsGivesItsVersionMemoryBack) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  Table* scratch = testing::make_table(*db, "scratch");
  // 16 MB of versions (4 KiB each): eight huge pages, of which a release may keep the first
  // and the last (shared with other versions, or carved only in part).
  constexpr std::uint64_t kRecords = 4000;
  const auto value_of = [](std::uint64_t i, char c) { return std::string(3000, c) + key_of(i); };
  const auto fill = [&](char c) {
    for (std::uint64_t i = 0; i < kRecords; i += 100) {
      Transaction tx = begin(*db);
      for (std::uint64_t k = i; k < i + 100; ++k)
        ASSERT_TRUE(tx.insert(*t, key_of(k), value_of(k, c)).is_ok());
      ASSERT_TRUE(tx.commit().is_ok());
    }
  };
  fill('a');
  const DatabaseStats full = db->stats();
  ASSERT_GT(full.version_heap_bytes, kRecords * 3000);
  EXPECT_EQ(full.version_bytes_released, 0u);
  for (std::uint64_t i = 0; i < kRecords; i += 100) {
    Transaction tx = begin(*db);
    for (std::uint64_t k = i; k < i + 100; ++k) ASSERT_TRUE(tx.remove(*t, key_of(k)).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  ASSERT_TRUE(churn_until(
      *db, *scratch, [&] { return db->stats().version_heap_bytes < full.version_heap_bytes / 2; }))
      << "version heap " << db->stats().version_heap_bytes << " of " << full.version_heap_bytes;
  const DatabaseStats empty = db->stats();
  EXPECT_GT(empty.version_bytes_released, full.version_heap_bytes / 2);
  fill('b');
  // Carved again from what went back: about the memory the first fill took (give or take what
  // the contexts' caches and the pages shared with the scratch table's versions hold).
  EXPECT_LE(db->stats().version_heap_bytes, full.version_heap_bytes + full.version_heap_bytes / 16);
  Transaction tx = begin(*db);
  for (std::uint64_t k = 0; k < kRecords; ++k) ASSERT_EQ(read(tx, *t, key_of(k)), value_of(k, 'b'));
  ASSERT_TRUE(tx.commit().is_ok());
}

TEST(Removal, AnOldSnapshotStillReadsTheRemovedRecord) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  Table* scratch = testing::make_table(*db, "scratch");
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k", "original").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  Transaction old = begin(*db);
  Result<std::string_view> view = old.get(*t, "k");
  ASSERT_TRUE(view.is_ok());
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.remove(*t, "k").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // The removal's transaction ends hold its tomb while `old` pins the horizon below it: try
  // hard to reclaim it (clock moves, horizon refreshes, full batches).
  churn_clock(*db, *scratch, 3000);
  EXPECT_EQ(db->stats().records_reclaimed, 0u);
  EXPECT_EQ(db->stats().tombstones_pending, 1u);
  // Through the same memory: ASan flags a freed version here.
  EXPECT_EQ(*view, "original");
  EXPECT_EQ(read(old, *t, "k"), "original");
  ASSERT_TRUE(old.commit().is_ok());
  EXPECT_TRUE(churn_until(*db, *scratch, [&] { return db->stats().records_reclaimed == 1; }));
  EXPECT_EQ(db->stats().tombstones_pending, 0u);
  EXPECT_EQ(read_committed(*db, *t, "k"), "<none>");
}

TEST(Removal, AReinsertAfterReclamationIsAFreshRecordAndReusesAnOid) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  Table* scratch = testing::make_table(*db, "scratch");
  for (int round = 0; round < 3; ++round) {
    {
      Transaction tx = begin(*db);
      ASSERT_TRUE(tx.insert(*t, "k", "v" + std::to_string(round)).is_ok());
      ASSERT_TRUE(tx.commit().is_ok());
    }
    EXPECT_EQ(read_committed(*db, *t, "k"), "v" + std::to_string(round));
    {
      Transaction tx = begin(*db);
      ASSERT_TRUE(tx.remove(*t, "k").is_ok());
      ASSERT_TRUE(tx.commit().is_ok());
    }
    // The removal's OID comes free (the scratch table's one record keeps its own).
    ASSERT_TRUE(churn_until(*db, *scratch, [&] { return db->stats().oids_free == 1; }));
    EXPECT_EQ(db->stats().records_reclaimed, static_cast<std::uint64_t>(round + 1));
    EXPECT_EQ(read_committed(*db, *t, "k"), "<none>");
  }
  // An update or a removal of the reclaimed key finds nothing; an insert makes it anew and
  // takes the freed OID.
  Transaction tx = begin(*db);
  EXPECT_EQ(tx.update(*t, "k", "x").code(), Code::kNotFound);
  tx.abort();
  tx = begin(*db);
  EXPECT_EQ(tx.remove(*t, "k").code(), Code::kNotFound);
  tx.abort();
  tx = begin(*db);
  ASSERT_TRUE(tx.insert(*t, "k", "again").is_ok());
  ASSERT_TRUE(tx.commit().is_ok());
  EXPECT_EQ(db->stats().oids_free, 0u);
  EXPECT_EQ(read_committed(*db, *t, "k"), "again");
}

TEST(Removal, AnAbortedInsertGivesItsOidBack) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  Table* scratch = testing::make_table(*db, "scratch");
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "a", "1").is_ok());
    tx.abort();
  }
  churn_clock(*db, *scratch, 50);
  EXPECT_EQ(db->stats().oids_free, 1u);
  EXPECT_EQ(db->stats().records, 1u);  // the scratch record
}

// A serializable transaction that read the key absent through its tombstone must learn of a
// re-insert even though reclamation gave the key a new OID: its leaf read refuses it.
TEST(Removal, SerializableReaderOfATombstoneSeesTheReinsert) {
  Options o;
  o.isolation = Isolation::kSerializable;
  auto db = testing::open_db(o);
  Table* t = testing::make_table(*db, "t");
  Table* scratch = testing::make_table(*db, "scratch");
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k", "v").is_ok());
    ASSERT_TRUE(tx.insert(*t, "other", "0").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  {
    // The removal's tomb waits in the queue of the context that committed it; the reader must
    // not sit in that context, or the queue would wait for the reader's end. Another thread
    // takes another context while this one holds the first.
    Transaction blocker = begin(*db);
    std::thread remover([&] {
      Transaction tx = begin(*db);
      ASSERT_TRUE(tx.remove(*t, "k").is_ok());
      ASSERT_TRUE(tx.commit().is_ok());
    });
    remover.join();
    ASSERT_TRUE(blocker.commit().is_ok());
  }
  Transaction reader = begin(*db);  // sees the tombstone
  EXPECT_EQ(read(reader, *t, "k"), "<none>");
  // Its pin is above the removal: the tomb may be reclaimed while it runs.
  ASSERT_TRUE(churn_until(*db, *scratch, [&] { return db->stats().records_reclaimed == 1; }));
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k", "back").is_ok());
    ASSERT_TRUE(tx.update(*t, "other", "1").is_ok());  // the reader's write below conflicts
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // rw: reader read k (absent) before the insert; the reader writes: it must not commit
  // unless serializable — here the insert changed the leaf it read, so it is refused.
  ASSERT_TRUE(reader.put(*t, "mark", "r").is_ok());
  EXPECT_EQ(reader.commit().code(), Code::kConflict);
  EXPECT_GE(db->stats().phantom_aborts, 1u);
}

}  // namespace
}  // namespace braid
