// Stale secondary-index entries leave their trees (src/engine/reclaim.cc, "Stale secondary
// entries"): after a removal or an update that changed the key, once no snapshot needs them;
// never while a snapshot or the newest version still derives them (A → B → A); and a table
// with secondary indexes reuses OIDs. Counts and exact entry sets, not timings.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/test_util.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::begin;
using testing::drain_reclamation;

std::string key_of(std::uint64_t i) {
  Key k;
  k.u64(i);
  return std::string(k.view());
}

// The secondary key is the value up to its first ':' (the rest varies between versions that
// keep the key).
bool colour_of(std::string_view, std::string_view v, Key* out) {
  const std::size_t end = v.find(':');
  out->append_bytes(v.substr(0, end));
  return true;
}

Index* colour_index(Database& db, Table& t) {
  Result<Index*> idx = db.create_index(t, "colour", colour_of);
  EXPECT_TRUE(idx.is_ok()) << idx.status().to_string();
  return *idx;
}

// Every entry of the index's tree, as secondary ‖ primary key.
std::set<std::string> entries_of(Index& idx) {
  std::set<std::string> out;
  idx.tree().for_each([&](std::string_view k, std::uint64_t) { out.emplace(k); });
  return out;
}

// An entry as text: its bytes in hex.
std::string printable(std::string_view e) {
  std::string out;
  char buf[4];
  for (const char c : e) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(c));
    out += buf;
  }
  return out;
}

// The entries the table's newest committed versions derive.
std::set<std::string> current_entries(Database& db, Table& t) {
  std::set<std::string> out;
  Transaction tx = begin(db);
  EXPECT_TRUE(tx.scan(t, "", "", 0, [&](std::string_view key, std::string_view value) {
                  Key c;
                  if (colour_of(key, value, &c) && c.size() != 0) {
                    out.emplace(std::string(c.view()) + std::string(key));
                  }
                  return true;
                }).is_ok());
  EXPECT_TRUE(tx.commit().is_ok());
  return out;
}

std::vector<std::string> keys_with(Transaction& tx, Index& idx, std::string_view colour) {
  std::vector<std::string> keys;
  EXPECT_TRUE(tx.lookup_index(idx, colour, 0, [&](std::string_view key, std::string_view) {
                  keys.emplace_back(key);
                  return true;
                }).is_ok());
  return keys;
}

// A database with a table `t`, a scratch table for drain_reclamation, and the colour index
// (built at once unless `index` is false).
struct Db {
  explicit Db(bool index = true, Options o = {})
      : db(testing::open_db(o)),
        t(testing::make_table(*db, "t")),
        scratch(testing::make_table(*db, "scratch")),
        idx(index ? colour_index(*db, *t) : nullptr) {}
  // Commits one write of `value` to `key` (an insert or an update).
  void put(std::string_view key, std::string_view value) {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.put(*t, key, value).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // The same from another thread, so in another application-thread context than one this
  // thread holds open.
  void put_elsewhere(std::string_view key, std::string_view value) {
    std::thread writer([&] { put(key, value); });
    writer.join();
  }
  void drain() { drain_reclamation(*db, *scratch, 200); }
  std::unique_ptr<Database> db;
  Table* t;
  Table* scratch;
  Index* idx;
};

// Removals: the records' entries leave the index and their OIDs are given back and reused.
TEST(StaleEntries, RemovedRecordsLeaveTheIndexAndTheirOidsAreReused) {
  Db d;
  Database* db = d.db.get();
  Table* t = d.t;
  Index* idx = d.idx;
  for (int i = 0; i < 50; ++i) {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, key_of(i), "colour" + std::to_string(i % 5) + ":x").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  for (int i = 0; i < 50; i += 2) {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.remove(*t, key_of(i)).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  d.drain();
  DatabaseStats st = db->stats();
  EXPECT_EQ(st.records_reclaimed, 25u);
  EXPECT_EQ(st.stale_entries_removed, 25u);
  EXPECT_EQ(st.stale_entries_pending, 0u);
  EXPECT_EQ(st.oids_free, 25u);
  EXPECT_EQ(entries_of(*idx), current_entries(*db, *t));
  EXPECT_EQ(entries_of(*idx).size(), 25u);
  // New records take the freed OIDs, with the same colours the old ones had: each entry names
  // its own record.
  for (int i = 100; i < 125; ++i) {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, key_of(i), "colour" + std::to_string(i % 5) + ":new").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(db->stats().oids_free, 0u);
  EXPECT_EQ(entries_of(*idx), current_entries(*db, *t));
  Transaction tx = begin(*db);
  for (int c = 0; c < 5; ++c) {
    const std::string colour = "colour" + std::to_string(c);
    std::size_t n = 0;
    ASSERT_TRUE(tx.lookup_index(*idx, colour, 0, [&](std::string_view key, std::string_view v) {
                    ++n;
                    Key got;
                    colour_of(key, v, &got);
                    EXPECT_EQ(got.view(), colour);
                    return true;
                  }).is_ok());
    EXPECT_EQ(n, 10u) << colour;
  }
  ASSERT_TRUE(tx.commit().is_ok());
}

// An old snapshot still finds the record by the key it saw; the entry goes after it ends.
TEST(StaleEntries, AnOldSnapshotKeepsItsEntryUntilItEnds) {
  Db d;
  d.put("k", "red:1");
  Transaction reader = begin(*d.db);
  d.put_elsewhere("k", "blue:2");
  for (int i = 0; i < 200; ++i) d.put_elsewhere("tick", ":");
  EXPECT_EQ(d.db->stats().stale_entries_pending, 1u);
  EXPECT_EQ(keys_with(reader, *d.idx, "red"), std::vector<std::string>{"k"});
  EXPECT_TRUE(keys_with(reader, *d.idx, "blue").empty());
  ASSERT_TRUE(reader.commit().is_ok());
  d.drain();
  EXPECT_EQ(d.db->stats().stale_entries_pending, 0u);
  EXPECT_EQ(d.db->stats().stale_entries_removed, 1u);
  // The ticks' value derives no key: no entry.
  EXPECT_EQ(entries_of(*d.idx), (std::set<std::string>{"bluek"}));
}

// A → B → A: the entry A is stale after the first update and current again after the second;
// its removal must be refused. Across transactions (with the first stale entry still queued)
// and within one.
TEST(StaleEntries, AKeyThatComesBackKeepsItsEntry) {
  Db d;
  d.put("k", "red:1");
  d.put("j", "red:1");
  {
    Transaction blocker = begin(*d.db);  // holds the horizon: both updates queue their entries
    d.put_elsewhere("k", "blue:2");
    d.put_elsewhere("k", "red:3");
    EXPECT_EQ(d.db->stats().stale_entries_pending, 2u);
    ASSERT_TRUE(blocker.commit().is_ok());
  }
  {
    Transaction tx = begin(*d.db);
    ASSERT_TRUE(tx.update(*d.t, "j", "green:2").is_ok());
    ASSERT_TRUE(tx.update(*d.t, "j", "red:3").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  d.drain();
  const DatabaseStats st = d.db->stats();
  EXPECT_EQ(st.stale_entries_pending, 0u);
  EXPECT_EQ(st.stale_entries_removed, 2u);  // k's blue and j's green; both reds refused
  EXPECT_EQ(entries_of(*d.idx), (std::set<std::string>{"redj", "redk"}));
  Transaction tx = begin(*d.db);
  EXPECT_EQ(keys_with(tx, *d.idx, "red"), (std::vector<std::string>{"j", "k"}));
  ASSERT_TRUE(tx.commit().is_ok());
}

// An abort queues nothing and leaves the entry it would have made stale.
TEST(StaleEntries, AnAbortLeavesTheEntries) {
  Db d;
  d.put("k", "red:1");
  {
    Transaction tx = begin(*d.db);
    ASSERT_TRUE(tx.update(*d.t, "k", "blue:2").is_ok());
    ASSERT_TRUE(tx.remove(*d.t, "k").is_ok());
    tx.abort();
  }
  EXPECT_EQ(d.db->stats().stale_entries_pending, 0u);
  d.drain();
  EXPECT_EQ(d.db->stats().stale_entries_removed, 0u);
  EXPECT_EQ(entries_of(*d.idx), (std::set<std::string>{"redk"}));
}

// A → B, then a writer takes the record back to A and aborts: while it is open its version
// derives A again, so A's removal waits for it (an uncommitted version decides nothing); once
// it aborted, A goes. Kept for the open writer, A outlived its abort: the writer had found A
// present and added nothing, so nothing queued A again (the random churn below met it about
// once in 40 runs).
TEST(StaleEntries, AnAbortedWriterThatTookTheKeyBackDoesNotKeepItsEntry) {
  Db d;
  d.put("k", "red:1");
  {
    // The stale red goes into another context than the writer's below, whose own end would
    // otherwise reclaim it after the abort.
    Transaction holder = begin(*d.db);
    d.put_elsewhere("k", "blue:2");
    ASSERT_TRUE(holder.commit().is_ok());
  }
  Transaction writer = begin(*d.db);
  ASSERT_TRUE(writer.update(*d.t, "k", "red:3").is_ok());
  d.drain();  // the horizon passes blue's commit; red waits for the writer
  EXPECT_EQ(d.db->stats().stale_entries_pending, 1u);
  EXPECT_EQ(entries_of(*d.idx), (std::set<std::string>{"bluek", "redk"}));
  writer.abort();
  d.drain();
  EXPECT_EQ(d.db->stats().stale_entries_pending, 0u);
  EXPECT_EQ(d.db->stats().stale_entries_removed, 1u);
  EXPECT_EQ(entries_of(*d.idx), (std::set<std::string>{"bluek"}));
}

// Entries older versions derived when the index was built are queued too.
TEST(StaleEntries, AnIndexBuiltOverOldVersionsQueuesTheirEntries) {
  Db d(/*index=*/false);
  d.put("k", "red:1");
  Transaction reader = begin(*d.db);  // keeps red:1 chained
  d.put_elsewhere("k", "blue:2");
  Index* idx = colour_index(*d.db, *d.t);
  EXPECT_EQ(entries_of(*idx), (std::set<std::string>{"bluek", "redk"}));
  EXPECT_EQ(d.db->stats().stale_entries_pending, 1u);
  EXPECT_EQ(keys_with(reader, *idx, "red"), std::vector<std::string>{"k"});
  ASSERT_TRUE(reader.commit().is_ok());
  d.drain();
  EXPECT_EQ(entries_of(*idx), (std::set<std::string>{"bluek"}));
}

// Random updates (key-changing or not), removals and re-inserts of a small key space, from
// two threads: after the churn the index holds exactly the entries the live records derive,
// and the OIDs in use stay near the live set. Seeded (BRAID_STALE_SEED).
TEST(StaleEntries, RandomChurnLeavesExactlyTheCurrentEntries) {
  const std::uint64_t seed = testing::env_u64("BRAID_STALE_SEED", 51);
  SCOPED_TRACE("BRAID_STALE_SEED=" + std::to_string(seed));
  Options o;
  o.workers = 1;
  Db d(true, o);
  Database* db = d.db.get();
  Table* t = d.t;
  Index* idx = d.idx;
  constexpr std::uint64_t kKeys = 300;
  constexpr int kTxnsPerThread = 4000;
  std::vector<std::thread> threads;
  for (int th = 0; th < 2; ++th) {
    threads.emplace_back([&, th] {
      util::Rng rng(seed * 2 + static_cast<std::uint64_t>(th));
      for (int n = 0; n < kTxnsPerThread; ++n) {
        Transaction tx = begin(*db);
        bool ok = true;
        for (int op = 0; op < 3 && ok; ++op) {
          const std::string key = key_of(rng.uniform(kKeys));
          const std::uint64_t what = rng.uniform(10);
          Status s;
          if (what < 3) {
            s = tx.remove(*t, key);
            if (s.code() == Code::kNotFound) s = Status::ok();
          } else {
            // Five colours, some values without a key (no entry).
            const std::uint64_t c = rng.uniform(6);
            const std::string v =
                (c == 5 ? std::string() : "c" + std::to_string(c)) + ":" + std::to_string(n);
            s = tx.put(*t, key, v);
          }
          ok = s.is_ok();
        }
        if (ok) {
          (void)tx.commit();  // conflicts abort: their staged entries go
        } else {
          tx.abort();
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  drain_reclamation(*db, *d.scratch, 300);
  const DatabaseStats st = db->stats();
  EXPECT_EQ(st.stale_entries_pending, 0u);
  EXPECT_GT(st.stale_entries_removed, std::uint64_t{kTxnsPerThread} / 2);
  EXPECT_GT(st.records_reclaimed, 0u);
  const std::set<std::string> have = entries_of(*idx);
  const std::set<std::string> want = current_entries(*db, *t);
  for (const std::string& e : have) {
    if (want.count(e) == 0) ADD_FAILURE() << "an entry no live record derives: " << printable(e);
  }
  for (const std::string& e : want) {
    if (have.count(e) == 0) ADD_FAILURE() << "a live record's entry is missing: " << printable(e);
  }
  std::printf("records %llu, oids free %llu, reclaimed %llu, stale removed %llu\n",
              static_cast<unsigned long long>(st.records),
              static_cast<unsigned long long>(st.oids_free),
              static_cast<unsigned long long>(st.records_reclaimed),
              static_cast<unsigned long long>(st.stale_entries_removed));
  // Reclaimed records' OIDs came back, and new records take them: how many the churn itself
  // reused depends on how far reclamation kept up with the two threads (none, in one run under
  // g++ in CI), so the reuse is asserted on inserts made now.
  ASSERT_GT(st.oids_free, 0u);
  const std::uint64_t fresh = std::min<std::uint64_t>(st.oids_free, 16);
  {
    Transaction tx = begin(*db);
    for (std::uint64_t i = 0; i < fresh; ++i) {
      ASSERT_TRUE(tx.insert(*t, "fresh" + std::to_string(i), "c1:fresh").is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(db->stats().oids_free, st.oids_free - fresh);
}

}  // namespace
}  // namespace braid
