// Secondary indexes: maintenance on every kind of write, snapshot visibility through the index,
// aborts, stale entries, the build at create_index (also after recovery), bad input, and the
// coroutine API in every execution mode against a seeded model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <braid/tx.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/exec_test_util.h"
#include "engine/table.h"
#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::group_of;
using testing::make_table;
using testing::open_db;

Index* make_index(Database& db, Table& t, std::string_view name = "by_group") {
  Result<Index*> r = db.create_index(t, name, group_of);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : nullptr;
}

// A fresh in-memory database with table "t" and its index "by_group".
struct IndexedDb {
  std::unique_ptr<Database> db;
  Table* t;
  Index* idx;
};
IndexedDb indexed_db() {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Index* idx = make_index(*db, *t);
  return {std::move(db), t, idx};
}

std::string group_key(std::string_view g) {
  Key k;
  k.str(g);
  return std::string(k.view());
}

// The primary keys the transaction sees under secondary key `g`, in index order.
std::vector<std::string> lookup(Transaction& tx, Index& idx, std::string_view g,
                                ScanOrder order = ScanOrder::kForward, std::size_t limit = 0) {
  std::vector<std::string> out;
  const std::string k = group_key(g);
  Status s = tx.lookup_index(
      idx, k, limit,
      [&](std::string_view pk, std::string_view) {
        out.emplace_back(pk);
        return true;
      },
      order);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

std::vector<std::string> committed_lookup(Database& db, Index& idx, std::string_view g) {
  Transaction tx = begin(db);
  auto r = lookup(tx, idx, g);
  tx.abort();
  return r;
}

using V = std::vector<std::string>;

TEST(SecondaryIndex, InsertUpdateRemoveAreMaintained) {
  auto [db, t, idx] = indexed_db();
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k1", "red:1").is_ok());
    ASSERT_TRUE(tx.insert(*t, "k2", "red:2").is_ok());
    ASSERT_TRUE(tx.insert(*t, "k3", "blue:3").is_ok());
    ASSERT_TRUE(tx.insert(*t, "k4", "nogroup").is_ok());
    EXPECT_EQ(lookup(tx, *idx, "red"), (V{"k1", "k2"}));  // own uncommitted writes
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(committed_lookup(*db, *idx, "red"), (V{"k1", "k2"}));
  EXPECT_EQ(committed_lookup(*db, *idx, "blue"), (V{"k3"}));
  EXPECT_EQ(committed_lookup(*db, *idx, "nogroup"), V{});
  {
    Transaction tx = begin(*db);
    EXPECT_EQ(lookup(tx, *idx, "red", ScanOrder::kReverse), (V{"k2", "k1"}));
    EXPECT_EQ(lookup(tx, *idx, "red", ScanOrder::kForward, 1), (V{"k1"}));
    ASSERT_TRUE(tx.update(*t, "k1", "blue:1").is_ok());  // key changes
    ASSERT_TRUE(tx.update(*t, "k2", "red:22").is_ok());  // key stays
    ASSERT_TRUE(tx.remove(*t, "k3").is_ok());
    ASSERT_TRUE(tx.put(*t, "k4", "green:4").is_ok());  // gains an entry
    EXPECT_EQ(lookup(tx, *idx, "red"), (V{"k2"}));
    EXPECT_EQ(lookup(tx, *idx, "blue"), (V{"k1"}));
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(committed_lookup(*db, *idx, "red"), (V{"k2"}));
  EXPECT_EQ(committed_lookup(*db, *idx, "blue"), (V{"k1"}));
  EXPECT_EQ(committed_lookup(*db, *idx, "green"), (V{"k4"}));
  // Back to an old key: the stale entry counts again.
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.update(*t, "k1", "red:back").is_ok());
    ASSERT_TRUE(tx.insert(*t, "k3", "red:reborn").is_ok());  // over a tombstone
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(committed_lookup(*db, *idx, "red"), (V{"k1", "k2", "k3"}));
  EXPECT_EQ(committed_lookup(*db, *idx, "blue"), V{});
}

TEST(SecondaryIndex, ValuesAndPrimaryKeysReachTheCallback) {
  auto [db, t, idx] = indexed_db();
  Transaction tx = begin(*db);
  ASSERT_TRUE(tx.insert(*t, "a", "g:payload-a").is_ok());
  std::map<std::string, std::string> seen;
  ASSERT_TRUE(tx.lookup_index(*idx, group_key("g"), 0, [&](std::string_view k, std::string_view v) {
                  seen.emplace(k, v);
                  return true;
                }).is_ok());
  EXPECT_EQ(seen, (std::map<std::string, std::string>{{"a", "g:payload-a"}}));
}

TEST(SecondaryIndex, SnapshotsReadTheirOwnVersionThroughTheIndex) {
  auto [db, t, idx] = indexed_db();
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k", "old:1").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  Transaction reader = begin(*db);  // snapshot before the change
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.update(*t, "k", "new:1").is_ok());
    Transaction other = begin(*db);  // does not see the uncommitted entry's record
    EXPECT_EQ(lookup(other, *idx, "new"), V{});
    EXPECT_EQ(lookup(other, *idx, "old"), (V{"k"}));
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(lookup(reader, *idx, "old"), (V{"k"}));
  EXPECT_EQ(lookup(reader, *idx, "new"), V{});
  EXPECT_EQ(committed_lookup(*db, *idx, "old"), V{});
  EXPECT_EQ(committed_lookup(*db, *idx, "new"), (V{"k"}));
}

TEST(SecondaryIndex, AbortTakesItsEntriesAway) {
  auto [db, t, idx] = indexed_db();
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k", "x:1").is_ok());
    ASSERT_TRUE(tx.insert(*t, "j", "y:1").is_ok());
    tx.abort();
  }
  // Scan the whole index: no entry is left, visible or not (a fresh OID must not meet one).
  Transaction tx = begin(*db);
  std::size_t entries = 0;
  ASSERT_TRUE(tx.scan_index(*idx, "", "", 0, [&](std::string_view, std::string_view) {
                  ++entries;
                  return true;
                }).is_ok());
  EXPECT_EQ(entries, 0u);
  ASSERT_TRUE(tx.insert(*t, "k", "x:2").is_ok());
  ASSERT_TRUE(tx.commit().is_ok());
  EXPECT_EQ(committed_lookup(*db, *idx, "x"), (V{"k"}));
  EXPECT_EQ(committed_lookup(*db, *idx, "y"), V{});
}

TEST(SecondaryIndex, ExactLookupIgnoresLongerKeysWithTheSamePrefix) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  // Raw (unterminated) secondary keys: "ab" is a prefix of "abc".
  Result<Index*> r = db->create_index(*t, "raw", [](std::string_view, std::string_view v, Key* k) {
    k->append_bytes(v);
    return true;
  });
  ASSERT_TRUE(r.is_ok());
  Transaction tx = begin(*db);
  ASSERT_TRUE(tx.insert(*t, "1", "ab").is_ok());
  ASSERT_TRUE(tx.insert(*t, "2", "abc").is_ok());
  std::vector<std::string> got;
  ASSERT_TRUE(tx.lookup_index(**r, "ab", 0, [&](std::string_view k, std::string_view) {
                  got.emplace_back(k);
                  return true;
                }).is_ok());
  EXPECT_EQ(got, (V{"1"}));
  got.clear();
  ASSERT_TRUE(tx.scan_index(**r, "ab", "ac", 0, [&](std::string_view k, std::string_view) {
                  got.emplace_back(k);
                  return true;
                }).is_ok());
  EXPECT_EQ(got, (V{"1", "2"}));
}

TEST(SecondaryIndex, BuildsFromExistingRecords) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  {
    Transaction tx = begin(*db);
    for (int i = 0; i < 2000; ++i) {
      ASSERT_TRUE(
          tx.insert(*t, "r" + std::to_string(100000 + i), "g" + std::to_string(i % 7) + ":x")
              .is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  Index* idx = make_index(*db, *t);
  for (int g = 0; g < 7; ++g) {
    const auto keys = committed_lookup(*db, *idx, "g" + std::to_string(g));
    EXPECT_EQ(keys.size(), static_cast<std::size_t>(2000 / 7 + (g < 2000 % 7 ? 1 : 0)));
    for (const std::string& k : keys) EXPECT_EQ((std::stoi(k.substr(1)) - 100000) % 7, g) << k;
  }
}

TEST(SecondaryIndex, RebuiltAfterRecovery) {
  char tmpl[] = "/tmp/braid-secidx-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Options o;
  o.directory = dir;
  {
    auto db = open_db(o);
    Table* t = make_table(*db, "t");
    Index* idx = make_index(*db, *t);
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "a", "one:1").is_ok());
    ASSERT_TRUE(tx.insert(*t, "b", "two:1").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
    Transaction tx2 = begin(*db);
    ASSERT_TRUE(tx2.update(*t, "b", "one:2").is_ok());
    ASSERT_TRUE(tx2.commit().is_ok());
    EXPECT_EQ(committed_lookup(*db, *idx, "one"), (V{"a", "b"}));
  }
  {
    auto db = open_db(o);
    Result<Table*> t = db->open_table("t");
    ASSERT_TRUE(t.is_ok());
    Index* idx = make_index(*db, **t);
    EXPECT_EQ(committed_lookup(*db, *idx, "one"), (V{"a", "b"}));
    EXPECT_EQ(committed_lookup(*db, *idx, "two"), V{});
  }
  std::filesystem::remove_all(dir);
}

// After an open under a budget the records are cold (entries into the checkpoint's parts): the
// build reads them in file order, many to a read, and the index answers as one built from
// memory. A part damaged under the build fails it with Corruption and leaves no index.
TEST(SecondaryIndex, RebuiltFromEvictedRecordsAfterAnOpen) {
  char tmpl[] = "/tmp/braid-secidx-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Options o;
  o.directory = dir;
  constexpr int kRecords = 6000;
  constexpr int kGroups = 7;
  std::map<std::string, V> expect;
  {
    auto db = open_db(o);
    Table* t = make_table(*db, "t");
    for (int i = 0; i < kRecords; i += 100) {
      Transaction tx = begin(*db);
      for (int k = i; k < i + 100; ++k) {
        char key[16];
        std::snprintf(key, sizeof key, "k%05d", k);
        const std::string g = "g" + std::to_string(k % kGroups);
        ASSERT_TRUE(tx.insert(*t, key, g + ":" + std::string(40, 'x')).is_ok());
        expect[g].push_back(key);
      }
      ASSERT_TRUE(tx.commit().is_ok());
    }
    ASSERT_TRUE(db->checkpoint().is_ok());
  }
  Options cold = o;
  cold.memory_budget_bytes = 1;
  cold.page_index_leaves = true;
  {
    auto db = open_db(cold);
    Table* t = *db->open_table("t");
    Index* idx = make_index(*db, *t);
    ASSERT_NE(idx, nullptr);
    const DatabaseStats st = db->stats();
    EXPECT_GE(st.cold_reads, static_cast<std::uint64_t>(kRecords));
    EXPECT_LT(st.cold_read_ios * 20, st.cold_reads) << "records were read one at a time";
    EXPECT_GE(st.cold_read_bytes, std::uint64_t{kRecords} * 40);
    for (const auto& [g, keys] : expect) EXPECT_EQ(committed_lookup(*db, *idx, g), keys) << g;
  }
  {
    // Damage every checkpoint part in its middle once the open has read it: the records there
    // no longer verify when the build reads them.
    auto opened = Database::open(cold);
    ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
    Table* t = *(*opened)->open_table("t");
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
      if (f.path().filename().string().rfind("ckpt-", 0) != 0) continue;
      std::FILE* fp = std::fopen(f.path().c_str(), "r+b");
      ASSERT_NE(fp, nullptr);
      const long mid = static_cast<long>(std::filesystem::file_size(f.path()) / 2);
      for (long at = mid; at < mid + 4096; at += 97) {
        std::fseek(fp, at, SEEK_SET);
        const int c = std::fgetc(fp);
        std::fseek(fp, at, SEEK_SET);
        std::fputc(c ^ 0x5a, fp);
      }
      std::fclose(fp);
    }
    Result<Index*> r = (*opened)->create_index(*t, "by_group", group_of);
    EXPECT_EQ(r.code(), Code::kCorruption) << r.status().to_string();
    EXPECT_EQ((*opened)->create_index(*t, "by_group", group_of).code(), Code::kCorruption)
        << "the failed build left an index behind";
  }
  std::filesystem::remove_all(dir);
}

TEST(SecondaryIndex, BadInput) {
  auto [db, t, idx] = indexed_db();
  EXPECT_EQ(db->create_index(*t, "by_group", group_of).code(), Code::kDuplicate);
  EXPECT_EQ(db->create_index(*t, "", group_of).code(), Code::kInvalidArgument);
  EXPECT_EQ(db->create_index(*t, "none", nullptr).code(), Code::kInvalidArgument);
  for (std::size_t i = 1; i < kMaxIndexesPerTable; ++i) {
    ASSERT_TRUE(db->create_index(*t, "i" + std::to_string(i), group_of).is_ok());
  }
  EXPECT_EQ(db->create_index(*t, "one-too-many", group_of).code(), Code::kBusy);

  // Secondary key plus primary key over the limit: refused before anything changes.
  Transaction tx = begin(*db);
  const std::string long_group(200, 'g');
  const std::string long_key(100, 'k');
  EXPECT_EQ(tx.insert(*t, long_key, long_group + ":v").code(), Code::kInvalidArgument);
  EXPECT_EQ(testing::read(tx, *t, long_key), "<none>");
  EXPECT_TRUE(tx.is_active());
  EXPECT_EQ(
      tx.lookup_index(*idx, "", 0, [](std::string_view, std::string_view) { return true; }).code(),
      Code::kInvalidArgument);
  tx.abort();
  EXPECT_EQ(
      tx.lookup_index(*idx, "x", 0, [](std::string_view, std::string_view) { return true; }).code(),
      Code::kInvalidArgument);  // not active
}

// A secondary index past the cache: the plain modes then fetch its entries' records as a group
// before reading them (engine/access_ops.inc, scan_op), and its inserts descend with whole-node
// prefetches (index::BTree::insert_if_absent). Reads through it must still match the table,
// stale entries (records moved to another group) skipped, in primary-key order.
TEST(SecondaryIndex, AnIndexPastTheCacheReadsAsOneInCache) {
  Options o;
  o.l2_cache_bytes = 64 << 10;  // the least Options takes
  auto db = open_db(o);
  Table* t = make_table(*db, "t");
  Index* idx = make_index(*db, *t);
  constexpr int kRecords = 6000;
  constexpr int kGroups = 7;
  std::map<std::string, std::string> model;  // primary key → group
  auto pk = [](int i) { return "k" + std::to_string(100000 + i); };
  {
    Transaction tx = begin(*db);
    for (int i = 0; i < kRecords; ++i) {
      const std::string g = "g" + std::to_string(i % kGroups);
      ASSERT_TRUE(tx.insert(*t, pk(i), g + ":" + std::string(40, 'x')).is_ok());
      model[pk(i)] = g;
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  ASSERT_TRUE(idx->tree().outgrew_cache()) << idx->tree().node_count() << " nodes";
  std::mt19937_64 rng(testing::env_u64("BRAID_SEED", 5));
  {
    Transaction tx = begin(*db);
    for (int n = 0; n < 1500; ++n) {
      const std::string k = pk(static_cast<int>(rng() % kRecords));
      if (rng() % 4 == 0) {
        Status s = tx.remove(*t, k);
        ASSERT_TRUE(s.is_ok() || s.code() == Code::kNotFound) << s.to_string();
        model.erase(k);
      } else {
        const std::string g = "g" + std::to_string(rng() % kGroups);
        ASSERT_TRUE(tx.put(*t, k, g + ":moved").is_ok());
        model[k] = g;
      }
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  std::map<std::string, V> want;
  for (const auto& [k, g] : model) want[g].push_back(k);
  for (int g = 0; g < kGroups; ++g) {
    const std::string name = "g" + std::to_string(g);
    EXPECT_EQ(committed_lookup(*db, *idx, name), want[name]) << name;
  }
}

// The coroutine API in every mode: a seeded random workload of puts (some moving records
// between groups) and removes, four transactions interleaved per worker. Inside each
// transaction, after its writes, every group read through the index must equal the groups
// derived from a scan of the table under the same snapshot (own writes included); at the end,
// the same holds for the committed state.
class SecondaryModes : public ::testing::TestWithParam<testing::ExecCase> {};

std::map<std::string, std::set<std::string>> groups_from_scan(
    const std::map<std::string, std::string>& rows) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [k, v] : rows) {
    const std::size_t colon = v.find(':');
    if (colon != std::string::npos) out[v.substr(0, colon)].insert(k);
  }
  return out;
}

TEST_P(SecondaryModes, IndexReadsMatchTheTableUnderEverySnapshot) {
  const std::uint64_t seed = testing::env_u64("BRAID_SEED", 11);
  auto [db, t, idx] = indexed_db();
  std::mt19937_64 rng(seed);
  std::vector<testing::ListGenerator::Body> bodies;
  std::size_t mismatches = 0;
  std::size_t checks = 0;
  for (int n = 0; n < 200; ++n) {
    std::vector<std::pair<std::string, std::string>> ops;  // key → new group ("" removes)
    for (int j = 0; j < 4; ++j) {
      const std::string k = "k" + std::to_string(rng() % 400);
      ops.emplace_back(k, rng() % 10 == 0 ? "" : "g" + std::to_string(rng() % 5));
    }
    const bool abort = rng() % 8 == 0;
    bodies.push_back([&, ops, abort](Tx& tx) -> Task<Status> {
      for (const auto& [k, g] : ops) {
        Status s = g.empty() ? co_await tx.remove(*t, k) : co_await tx.put(*t, k, g + ":v");
        if (s.code() == Code::kConflict) co_return s;
        EXPECT_TRUE(s.is_ok() || (g.empty() && s.code() == Code::kNotFound)) << s.to_string();
      }
      std::map<std::string, std::string> rows;
      Status scanned = co_await tx.scan(*t, "", "", 0, [&](std::string_view k, std::string_view v) {
        rows.emplace(k, v);
        return true;
      });
      EXPECT_TRUE(scanned.is_ok());
      auto want = groups_from_scan(rows);
      for (int g = 0; g < 5; ++g) {
        const std::string name = "g" + std::to_string(g);
        const std::string sk = group_key(name);
        std::set<std::string> got;
        Status s = co_await tx.lookup_index(*idx, sk, 0, [&](std::string_view k, std::string_view) {
          got.emplace(k);
          return true;
        });
        EXPECT_TRUE(s.is_ok());
        ++checks;
        if (got != want[name]) ++mismatches;
      }
      if (abort) co_return Status::invalid_argument("test abort");
      co_return Status::ok();
    });
  }
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  ASSERT_TRUE(db->run(gens, testing::exec_of(GetParam(), 4, seed)).is_ok());
  EXPECT_GT(checks, 300u);  // conflicts end some transactions before their checks
  EXPECT_EQ(mismatches, 0u) << "seed " << seed;
  Transaction tx = begin(*db);
  std::map<std::string, std::string> rows;
  ASSERT_TRUE(tx.scan(*t, "", "", 0, [&](std::string_view k, std::string_view v) {
                  rows.emplace(k, v);
                  return true;
                }).is_ok());
  auto want = groups_from_scan(rows);
  for (int g = 0; g < 5; ++g) {
    const std::string name = "g" + std::to_string(g);
    const auto got = lookup(tx, *idx, name);
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), want[name]);
  }
}

INSTANTIATE_TEST_SUITE_P(All, SecondaryModes, ::testing::ValuesIn(testing::all_cases()),
                         testing::case_name);

}  // namespace
}  // namespace braid
