// Operation semantics of the public API.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::make_table;
using testing::open_db;
using testing::read;
using testing::read_committed;

TEST(Api, CreateAndOpenTables) {
  auto db = open_db();
  Table* a = make_table(*db, "a");
  Result<Table*> again = db->open_table("a");
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, a);
  EXPECT_EQ(db->create_table("a").code(), Code::kDuplicate);
  EXPECT_EQ(db->open_table("missing").code(), Code::kNotFound);
}

// Prefaulted version memory is ordinary version memory: the database uses it and grows past it.
TEST(Api, PrefaultedVersionMemory) {
  Options o;
  o.max_version_bytes = std::uint64_t{64} << 20;
  o.prefault_version_bytes = std::uint64_t{4} << 20;
  auto db = open_db(o);
  Table* t = make_table(*db, "t");
  const std::string value(1000, 'v');  // ~6 MiB of versions: beyond the prefaulted 4 MiB
  for (int batch = 0; batch < 6; ++batch) {
    Transaction tx = begin(*db);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(tx.insert(*t, "k" + std::to_string(batch * 1000 + i), value).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(read_committed(*db, *t, "k0"), value);
  EXPECT_EQ(read_committed(*db, *t, "k5999"), value);
}

// Prefaulted index memory serves every table's and index's tree, which grow past it; memory
// the machine does not have is refused at open, naming the option.
TEST(Api, PrefaultedIndexMemory) {
  Options o;
  o.prefault_index_bytes = std::uint64_t{4} << 20;  // two chunks, 4,096 nodes
  auto db = open_db(o);
  Table* t = make_table(*db, "t");
  Table* u = make_table(*db, "u");
  auto idx = db->create_index(*t, "by_value", [](std::string_view, std::string_view v, Key* out) {
    out->append_bytes(v);
    return true;
  });
  ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
  // ~8,000 leaves in each primary tree: past the pool, so the trees also take chunks of their own.
  for (int batch = 0; batch < 20; ++batch) {
    Transaction tx = begin(*db);
    for (int i = 0; i < 8000; ++i) {
      const int k = batch * 8000 + i;
      char key[16];
      std::snprintf(key, sizeof key, "k%09d", k);
      ASSERT_TRUE(tx.insert(*t, key, std::to_string(k % 97)).is_ok());
      ASSERT_TRUE(tx.insert(*u, key, "u").is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  EXPECT_EQ(read_committed(*db, *t, "k000000000"), "0");
  EXPECT_EQ(read_committed(*db, *t, "k000159999"), std::to_string(159999 % 97));
  EXPECT_EQ(read_committed(*db, *u, "k000080000"), "u");
  Transaction tx = begin(*db);
  std::size_t seen = 0;
  ASSERT_TRUE(tx.lookup_index(**idx, "5", 0, [&](std::string_view, std::string_view v) {
                  EXPECT_EQ(v, "5");
                  ++seen;
                  return true;
                }).is_ok());
  EXPECT_EQ(seen, 160000u / 97 + 1);
  ASSERT_TRUE(tx.commit().is_ok());

  Options huge;
  huge.prefault_index_bytes = std::uint64_t{1} << 40;  // more than this machine has free
  auto refused = Database::open(huge);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), Code::kIOError);
  EXPECT_NE(refused.status().message().find("prefault_index_bytes"), std::string::npos)
      << refused.status().to_string();
}

TEST(Api, InsertUpdatePutRemoveSemantics) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  EXPECT_EQ(tx.update(*t, "k", "v").code(), Code::kNotFound);
  EXPECT_EQ(tx.remove(*t, "k").code(), Code::kNotFound);
  EXPECT_TRUE(tx.insert(*t, "k", "v1").is_ok());
  EXPECT_EQ(tx.insert(*t, "k", "v2").code(), Code::kDuplicate);
  EXPECT_EQ(read(tx, *t, "k"), "v1");  // own writes are visible
  EXPECT_TRUE(tx.update(*t, "k", "v2").is_ok());
  EXPECT_TRUE(tx.put(*t, "k", "v3").is_ok());
  EXPECT_TRUE(tx.put(*t, "other", "o").is_ok());
  EXPECT_EQ(read(tx, *t, "k"), "v3");
  ASSERT_TRUE(tx.commit().is_ok());

  EXPECT_EQ(read_committed(*db, *t, "k"), "v3");
  Transaction tx2 = begin(*db);
  EXPECT_TRUE(tx2.remove(*t, "k").is_ok());
  EXPECT_EQ(read(tx2, *t, "k"), "<none>");
  EXPECT_EQ(tx2.remove(*t, "k").code(), Code::kNotFound);
  EXPECT_TRUE(tx2.insert(*t, "k", "again").is_ok());  // insert over own tombstone
  EXPECT_TRUE(tx2.remove(*t, "k").is_ok());
  ASSERT_TRUE(tx2.commit().is_ok());
  EXPECT_EQ(read_committed(*db, *t, "k"), "<none>");

  Transaction tx3 = begin(*db);
  EXPECT_TRUE(tx3.insert(*t, "k", "reborn").is_ok());  // insert over a committed tombstone
  ASSERT_TRUE(tx3.commit().is_ok());
  EXPECT_EQ(read_committed(*db, *t, "k"), "reborn");
}

TEST(Api, GetCopiesAndViewsAndEmptyValues) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  ASSERT_TRUE(tx.put(*t, "empty", "").is_ok());
  std::string big(kMaxValueBytes, 'x');
  ASSERT_TRUE(tx.put(*t, "big", big).is_ok());
  ASSERT_TRUE(tx.commit().is_ok());
  Transaction r = begin(*db);
  std::string out = "junk";
  ASSERT_TRUE(r.get(*t, "empty", &out).is_ok());
  EXPECT_EQ(out, "");
  Result<std::string_view> v = r.get(*t, "big");
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(*v, big);
  EXPECT_EQ(r.get(*t, "nope", &out).code(), Code::kNotFound);
  ASSERT_TRUE(r.commit().is_ok());
}

TEST(Api, AbortDiscardsAndDestructorAborts) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.put(*t, "a", "1").is_ok());
    tx.abort();
    tx.abort();  // idempotent
    EXPECT_FALSE(tx.is_active());
  }
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.put(*t, "b", "1").is_ok());
  }  // destroyed while active: aborted
  EXPECT_EQ(read_committed(*db, *t, "a"), "<none>");
  EXPECT_EQ(read_committed(*db, *t, "b"), "<none>");
  // The aborted fresh inserts left no index entries behind.
  EXPECT_TRUE(engine::WorkerPool::settle(*db));
  EXPECT_EQ(t->index().check_invariants(), 0u);
  EXPECT_EQ(db->stats().open_transactions, 0u);
}

TEST(Api, TransactionsMoveBetweenHandles) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction a = begin(*db);
  ASSERT_TRUE(a.put(*t, "k", "v").is_ok());
  Transaction b = std::move(a);
  EXPECT_FALSE(a.is_active());  // NOLINT: moved-from state is specified
  EXPECT_TRUE(b.is_active());
  ASSERT_TRUE(b.commit().is_ok());
  EXPECT_EQ(read_committed(*db, *t, "k"), "v");
}

std::vector<std::string> scan_keys(Transaction& tx, Table& t, std::string_view b,
                                   std::string_view e, std::size_t limit, ScanOrder order) {
  std::vector<std::string> keys;
  Status s = tx.scan(
      t, b, e, limit,
      [&](std::string_view k, std::string_view v) {
        EXPECT_EQ(v, "v" + std::string(k));
        keys.emplace_back(k);
        return true;
      },
      order);
  EXPECT_TRUE(s.is_ok());
  return keys;
}

TEST(Api, ScansAreOrderedBoundedAndSeeOwnWrites) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction w = begin(*db);
  for (int i = 0; i < 2000; i += 2) {
    Key k;
    k.u32(static_cast<std::uint32_t>(i));
    ASSERT_TRUE(w.insert(*t, k, "v" + std::string(k.view())).is_ok());
  }
  ASSERT_TRUE(w.commit().is_ok());

  Transaction tx = begin(*db);
  Key k10, k20, k1;
  k10.u32(10);
  k20.u32(20);
  k1.u32(11);
  auto fwd = scan_keys(tx, *t, k10, k20, 0, ScanOrder::kForward);
  ASSERT_EQ(fwd.size(), 5u);  // 10 12 14 16 18
  EXPECT_EQ(fwd.front(), std::string(k10.view()));
  auto rev = scan_keys(tx, *t, k10, k20, 0, ScanOrder::kReverse);
  ASSERT_EQ(rev.size(), 5u);
  EXPECT_EQ(rev.front(), fwd.back());
  EXPECT_EQ(scan_keys(tx, *t, "", "", 3, ScanOrder::kForward).size(), 3u);
  EXPECT_EQ(scan_keys(tx, *t, "", "", 0, ScanOrder::kReverse).size(), 1000u);
  EXPECT_TRUE(scan_keys(tx, *t, k20, k10, 0, ScanOrder::kForward).empty());  // empty range

  // Own writes: an insert, a removal.
  ASSERT_TRUE(tx.insert(*t, k1, "v" + std::string(k1.view())).is_ok());
  ASSERT_TRUE(tx.remove(*t, k10).is_ok());
  fwd = scan_keys(tx, *t, k10, k20, 0, ScanOrder::kForward);
  ASSERT_EQ(fwd.size(), 5u);  // 11 12 14 16 18
  EXPECT_EQ(fwd.front(), std::string(k1.view()));

  // Early stop.
  int seen = 0;
  ASSERT_TRUE(tx.scan(*t, "", "", 0, [&](std::string_view, std::string_view) {
                  return ++seen < 7;
                }).is_ok());
  EXPECT_EQ(seen, 7);
  tx.abort();
}

TEST(Api, ConflictAbortsTheLoser) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction init = begin(*db);
  ASSERT_TRUE(init.put(*t, "x", "0").is_ok());
  ASSERT_TRUE(init.commit().is_ok());
  Transaction a = begin(*db);
  Transaction b = begin(*db);
  ASSERT_TRUE(a.update(*t, "x", "a").is_ok());
  EXPECT_EQ(b.update(*t, "x", "b").code(), Code::kConflict);
  EXPECT_FALSE(b.is_active());
  EXPECT_EQ(b.put(*t, "y", "1").code(), Code::kInvalidArgument);
  ASSERT_TRUE(a.commit().is_ok());
  EXPECT_EQ(read_committed(*db, *t, "x"), "a");
  EXPECT_EQ(db->stats().aborts, 1u);
}

TEST(Api, BusyWhenAllTransactionSlotsAreTaken) {
  Options o;
  o.workers = 1;
  o.external_transactions = 2;  // the workers' own slots are not available to begin()
  auto db = open_db(o);
  Transaction a = begin(*db);
  Transaction b = begin(*db);
  Result<Transaction> c = db->begin();
  EXPECT_EQ(c.code(), Code::kBusy);
  a.abort();
  EXPECT_TRUE(db->begin().is_ok());
}

TEST(Api, WriteSetLimitAnswersBusy) {
  Options o;
  o.max_txn_writes = 3;
  auto db = open_db(o);
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(tx.put(*t, std::to_string(i), "v").is_ok());
  EXPECT_EQ(tx.put(*t, "x", "v").code(), Code::kBusy);
  EXPECT_EQ(tx.commit().code(), Code::kBusy);  // the failed write failed the transaction
  Transaction check = begin(*db);
  EXPECT_EQ(check.get(*t, "0").code(), Code::kNotFound);  // all or nothing
}

TEST(Api, TableFullAnswersBusy) {
  Options o;
  o.max_records_per_table = 5;
  auto db = open_db(o);
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(tx.insert(*t, std::to_string(i), "v").is_ok());
  EXPECT_EQ(tx.insert(*t, "x", "v").code(), Code::kBusy);
  tx.abort();
}

std::string temp_dir() {
  char tmpl[] = "/tmp/braid-test-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d;
}

// Index node segments of an earlier open are garbage until the index persists
// (docs/internals/index-paging.md): an open removes them, and numbers files above them.
TEST(Api, AnOpenRemovesStrayNodeSegmentsAndNumbersItsFilesAboveThem) {
  const std::string parent = temp_dir();
  Options o;
  o.directory = parent + "/db";
  {
    auto db = open_db(o);
    Result<Table*> t = db->create_table("t");
    ASSERT_TRUE(t.is_ok());
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(**t, "k", "v").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  const std::string stray = o.directory + "/idx-0000000999";
  std::FILE* f = std::fopen(stray.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("not a node", f);
  std::fclose(f);
  {
    auto db = open_db(o);
    EXPECT_NE(::access(stray.c_str(), F_OK), 0);
    Result<Table*> t = db->open_table("t");
    ASSERT_TRUE(t.is_ok());
    Transaction tx = begin(*db);
    std::string v;
    ASSERT_TRUE(tx.get(**t, "k", &v).is_ok());
    EXPECT_EQ(v, "v");
    tx.abort();
  }
  // The new generation's log segments took numbers above the stray's.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(o.directory)) {
    names.push_back(e.path().filename().string());
  }
  std::uint64_t above = 0;
  for (const std::string& n : names) {
    if (n.rfind("log-", 0) != 0) continue;
    if (std::stoull(n.substr(n.rfind('-') + 1)) > 999) ++above;
  }
  EXPECT_GT(above, 0u);
  std::system(("rm -rf " + parent).c_str());
}

TEST(Api, DirectoryIsCreatedAndLockedAgainstASecondOpen) {
  const std::string parent = temp_dir();
  Options o;
  o.directory = parent + "/db";
  {
    auto db = open_db(o);
    EXPECT_EQ(::access((o.directory + "/LOCK").c_str(), F_OK), 0);
    Result<std::unique_ptr<Database>> second = Database::open(o);
    EXPECT_EQ(second.code(), Code::kBusy);
    EXPECT_NE(second.status().message().find("in use"), std::string_view::npos);
  }
  EXPECT_TRUE(Database::open(o).is_ok());  // the lock went with the first database
  std::system(("rm -rf " + parent).c_str());
}

TEST(Api, MissingOrInvalidDirectoriesAreClearErrors) {
  const std::string parent = temp_dir();
  Options o;
  o.directory = parent + "/absent";
  o.create_if_missing = false;
  Result<std::unique_ptr<Database>> r = Database::open(o);
  EXPECT_EQ(r.code(), Code::kIOError);
  EXPECT_NE(r.status().message().find("does not exist"), std::string_view::npos);

  o.create_if_missing = true;
  o.directory = parent + "/no/such/parent";
  EXPECT_EQ(Database::open(o).code(), Code::kIOError);

  const std::string file = parent + "/file";
  std::system(("touch " + file).c_str());
  o.directory = file;
  Result<std::unique_ptr<Database>> f = Database::open(o);
  EXPECT_EQ(f.code(), Code::kIOError);
  EXPECT_NE(f.status().message().find("not a directory"), std::string_view::npos);
  std::system(("rm -rf " + parent).c_str());
}

// DatabaseStats names what each share of the engine's memory holds: the version heap at least
// the live versions, the node frames at least the trees' nodes, the OID array an entry per
// record; each grows with the data.
TEST(Api, StatsReportEachShareOfMemory) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  const DatabaseStats empty = db->stats();
  constexpr int kRecords = 20000;
  for (int i = 0; i < kRecords; i += 500) {
    Transaction tx = begin(*db);
    for (int k = i; k < i + 500; ++k) {
      ASSERT_TRUE(tx.insert(*t, "key" + std::to_string(k), std::string(100, 'v')).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  const DatabaseStats s = db->stats();
  EXPECT_GE(s.version_heap_bytes, s.live_version_bytes);
  EXPECT_GE(s.live_version_bytes, std::uint64_t{kRecords} * 100);
  EXPECT_GE(s.index_frame_bytes, s.index_nodes * 1024);
  EXPECT_GT(s.index_frame_bytes, empty.index_frame_bytes);
  EXPECT_GE(s.oid_bytes, std::uint64_t{kRecords} * 8);
  EXPECT_GT(s.version_heap_bytes, empty.version_heap_bytes);
}

}  // namespace
}  // namespace braid
