// The cold store (engine/cold_store.h): a database several times its memory budget evicts, and
// every execution mode, scheduler and the application-thread API read evicted records back —
// the same values, verified — through the simulated disk. Seeded; deterministic values.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/exec_test_util.h"
#include "engine/record_check.h"
#include "engine/table.h"
#include "engine/test_util.h"
#include "storage/durability_util.h"
#include "storage/log_format.h"
#include "storage/recovery.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::ExecCase;

constexpr int kRecords = 6000;
constexpr std::size_t kValueBytes = 600;  // 6000 x ~640 B of versions: ~3.7x the 1 MiB budget

std::string key_of(int i) { return "key" + std::to_string(i); }
std::string value_of(int i, int round) {
  std::string v = "v" + std::to_string(i) + "r" + std::to_string(round) + ":";
  while (v.size() < kValueBytes) v += static_cast<char>('a' + (i + v.size()) % 26);
  return v;
}

Options budget_options() {
  Options o = test::wl_options(0);
  o.workers = 1;
  o.slots_per_worker = 8;
  o.memory_budget_bytes = 1u << 20;
  o.page_index_leaves = true;
  o.durability.log_buffer_bytes = 256 << 10;  // a 50-put transaction's record fits
  o.durability.log_segment_bytes = 1 << 20;
  o.durability.checkpoint_log_bytes = 0;  // checkpoints when a test asks
  return o;
}

// Loads every record through application-thread transactions of 50 puts each.
void load(Database& db, Table* t, int round) {
  for (int i = 0; i < kRecords; i += 50) {
    Result<Transaction> tx = db.begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 50; ++k)
      ASSERT_TRUE(tx->put(*t, key_of(k), value_of(k, round)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
  }
}

class ColdStoreModes : public ::testing::TestWithParam<ExecCase> {};

TEST_P(ColdStoreModes, EvictedRecordsReadBackInEveryMode) {
  auto fs = std::make_shared<storage::SimFileSystem>(7);
  auto db = test::open_sim(budget_options(), fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Result<Table*> t = (*db)->create_table("t");
  ASSERT_TRUE(t.is_ok());
  load(**db, *t, 0);
  const DatabaseStats after_load = (*db)->stats();
  // Application threads evicted as they committed: the versions are within the budget's
  // reach (a sweep's batch above it at most), and most records are cold.
  EXPECT_GT(after_load.evictions, std::uint64_t{kRecords} / 2);
  EXPECT_LT(after_load.live_version_bytes, std::uint64_t{2} << 20);

  // Every record read through transactions in the mode under test, then written (a cold
  // update reads first), then read again.
  for (int round = 0; round < 2; ++round) {
    std::vector<testing::ListGenerator::Body> bodies;
    std::vector<int> mismatches(1, 0);
    for (int i = 0; i < kRecords; i += 10) {
      bodies.push_back([&, i, round](Tx& tx) -> Task<Status> {
        for (int k = i; k < i + 10; ++k) {
          Result<std::string_view> r = co_await tx.get(**t, key_of(k));
          if (!r.is_ok()) co_return r.status();
          if (*r != value_of(k, round)) ++mismatches[0];
          if (k % 3 == 0) {
            Status s = co_await tx.put(**t, key_of(k), value_of(k, round + 1));
            if (!s.is_ok()) co_return s;
          }
        }
        co_return Status::ok();
      });
    }
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE((*db)->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    EXPECT_EQ(mismatches[0], 0);
    for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
    // The next round expects round+1 values everywhere: bring the rest up to date.
    for (int i = 0; i < kRecords; i += 50) {
      Result<Transaction> tx = (*db)->begin();
      ASSERT_TRUE(tx.is_ok());
      for (int k = i; k < i + 50; ++k) {
        if (k % 3 == 0) continue;
        ASSERT_TRUE(tx->put(**t, key_of(k), value_of(k, round + 1)).is_ok());
      }
      ASSERT_TRUE(tx->commit().is_ok());
    }
  }
  const DatabaseStats s = (*db)->stats();
  EXPECT_GT(s.cold_reads, after_load.cold_reads);
  EXPECT_EQ(s.cold_read_errors, 0u);

  // And through the blocking API (synchronous reads), after a reopen that recovered them.
  db->reset();
  auto again = test::open_sim(budget_options(), fs);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  Result<Table*> t2 = (*again)->open_table("t");
  ASSERT_TRUE(t2.is_ok());
  for (int i = 0; i < kRecords; i += 500) {
    Result<Transaction> tx = (*again)->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 500; ++k) {
      Result<std::string_view> r = tx->get(**t2, key_of(k));
      ASSERT_TRUE(r.is_ok()) << k << ": " << r.status().to_string();
      ASSERT_EQ(*r, value_of(k, 2)) << k;
    }
    ASSERT_TRUE(tx->commit().is_ok());
  }
}

// Scans over a mostly cold table (6000 records of 600 B under a 1 MiB budget), forward and
// reverse, with limits and with callbacks that stop early, in every mode and scheduler: exactly
// the records and the order the model gives, and the records read stay readable afterwards.
// The coroutine modes read ahead (the default depth); the sequential ones, and the scan that
// reads one at a time (AScanIssuesItsColdReadsAheadTogether), take the one-read path.
struct ScanCase {
  std::string begin, end;
  std::size_t limit;
  bool reverse;
  std::size_t stop_after;  // the callback answers false at this row (0: never)
};

std::vector<std::string> model_scan(const std::map<std::string, std::string>& m,
                                    const ScanCase& c) {
  std::vector<std::string> out;
  auto lo = m.lower_bound(c.begin);
  auto hi = c.end.empty() ? m.end() : m.lower_bound(c.end);
  for (auto it = lo; it != hi; ++it) out.push_back(it->first + "=" + it->second);
  if (c.reverse) std::reverse(out.begin(), out.end());
  std::size_t keep = out.size();
  if (c.limit != 0) keep = std::min(keep, c.limit);
  if (c.stop_after != 0) keep = std::min(keep, c.stop_after);
  out.resize(keep);
  return out;
}

TEST_P(ColdStoreModes, ScansReadColdRecordsAheadAndKeepKeyOrder) {
  std::map<std::string, std::string> model;
  for (int k = 0; k < kRecords; ++k) model[key_of(k)] = value_of(k, 0);
  util::Rng rng(29);
  std::vector<ScanCase> cases;
  for (int i = 0; i < 24; ++i) {
    ScanCase c;
    c.begin = key_of(static_cast<int>(rng.uniform(kRecords)));
    c.end = rng.uniform(6) == 0 ? std::string() : key_of(static_cast<int>(rng.uniform(kRecords)));
    if (!c.end.empty() && c.end < c.begin) std::swap(c.begin, c.end);
    c.limit = rng.uniform(3) == 0 ? 1 + rng.uniform(40) : 0;
    c.reverse = rng.uniform(2) == 0;
    c.stop_after = rng.uniform(4) == 0 ? 1 + rng.uniform(30) : 0;
    cases.push_back(c);
  }
  // A table that does not cache reads is scanned from the scans' own extents in the coroutine
  // modes. Its records lie in the log in numeric order, the keys sort as strings ("key1",
  // "key10", "key100", "key1000", "key1001", ...): stretches in file order between jumps
  // back and forth, which exercise the plan's runs, their reads ahead, straddling records and
  // records that lie in a run the scan has passed (read the usual way).
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "caching table" : "uncached table");
    auto fs = std::make_shared<storage::SimFileSystem>(23);
    auto db = test::open_sim(budget_options(), fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Result<Table*> t = (*db)->create_table("t");
    ASSERT_TRUE(t.is_ok());
    load(**db, *t, 0);
    ASSERT_TRUE((*db)->set_cache_reads(**t, cache).is_ok());
    const std::uint64_t reads_before = (*db)->stats().cold_reads;
    std::vector<std::vector<std::string>> got(cases.size());
    std::vector<testing::ListGenerator::Body> bodies;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      bodies.push_back([&, i](Tx& tx) -> Task<Status> {
        const ScanCase& c = cases[i];
        got[i].clear();  // a retried body starts over
        Status s = co_await tx.scan(
            **t, c.begin, c.end, c.limit,
            [&](std::string_view k, std::string_view v) {
              got[i].push_back(std::string(k) + "=" + std::string(v));
              return c.stop_after == 0 || got[i].size() < c.stop_after;
            },
            c.reverse ? ScanOrder::kReverse : ScanOrder::kForward);
        co_return s;
      });
    }
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE((*db)->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const std::vector<std::string> want = model_scan(model, cases[i]);
      ASSERT_EQ(got[i].size(), want.size()) << "scan " << i;
      for (std::size_t r = 0; r < want.size(); ++r) {
        ASSERT_EQ(got[i][r], want[r]) << "scan " << i << " row " << r;
      }
    }
    EXPECT_GT((*db)->stats().cold_reads, reads_before);
    EXPECT_EQ((*db)->stats().cold_read_errors, 0u);
    // Every record still reads right (a read issued ahead and drained at an early stop
    // installed its record, or left it cold; never a wrong one).
    for (int i = 0; i < kRecords; i += 500) {
      Result<Transaction> tx = (*db)->begin();
      ASSERT_TRUE(tx.is_ok());
      for (int k = i; k < i + 500; ++k) {
        Result<std::string_view> r = tx->get(**t, key_of(k));
        ASSERT_TRUE(r.is_ok()) << k << ": " << r.status().to_string();
        ASSERT_EQ(*r, value_of(k, 0)) << k;
      }
      ASSERT_TRUE(tx->commit().is_ok());
    }
  }
}

// One scan over the cold table, alone on its worker: with reads issued ahead they reach the
// kernel together, neighbours as one extent, so many records come with each read; one at a
// time, each record is a read and a submission of its own, awaited before the next.
// Where the index pages, the budget counts the OID arrays by the 4 KiB page and cold records
// hold no OID, so an array asks for no huge pages: one would hold 2 MiB for each table's first
// OIDs (and for each stretch whose OIDs went back) where the budget counts a few pages.
TEST(ColdStore, OidArraysAskForNoHugePagesWhereTheIndexPages) {
  auto fs = std::make_shared<storage::SimFileSystem>(11);
  Options o = budget_options();
  o.huge_pages = true;
  auto db = test::open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  for (const char* name : {"a", "b"}) {
    Result<Table*> t = (*db)->create_table(name);
    ASSERT_TRUE(t.is_ok());
    Result<Transaction> tx = (*db)->begin();
    ASSERT_TRUE(tx.is_ok());
    ASSERT_TRUE(tx->put(**t, key_of(1), value_of(1, 0)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
    ASSERT_GT((*t)->oids().allocated(), 0u);  // the array committed its first pages
    EXPECT_FALSE((*t)->oids().huge_pages()) << name;
  }
}

TEST(ColdStore, AScanIssuesItsColdReadsAheadTogether) {
  for (std::uint32_t ahead : {32u, 16u, 0u}) {
    SCOPED_TRACE("scan_read_ahead " + std::to_string(ahead));
    Options o = budget_options();
    o.scan_read_ahead = ahead;
    auto db = test::open_sim(o, std::make_shared<storage::SimFileSystem>(31));
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Result<Table*> t = (*db)->create_table("t");
    ASSERT_TRUE(t.is_ok());
    load(**db, *t, 0);
    std::size_t rows = 0;
    std::vector<testing::ListGenerator::Body> bodies;
    bodies.push_back([&](Tx& tx) -> Task<Status> {
      rows = 0;
      co_return co_await tx.scan(**t, "", "", 0, [&](std::string_view, std::string_view) {
        ++rows;
        return true;
      });
    });
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ExecOptions e = testing::exec_of(ExecCase{ExecMode::kInterleaved, SchedulerPolicy::kBatch}, 1);
    e.read_batch = 8;
    const ExecStats before = (*db)->exec_stats();
    const DatabaseStats sbefore = (*db)->stats();
    ASSERT_TRUE((*db)->run(gens, e).is_ok());
    ASSERT_EQ(gen.outcomes.size(), 1u);
    EXPECT_EQ(gen.outcomes[0], Code::kOk);
    EXPECT_EQ(rows, static_cast<std::size_t>(kRecords));
    const ExecStats after = (*db)->exec_stats();
    const DatabaseStats safter = (*db)->stats();
    const std::uint64_t issued = after.cold_reads_issued - before.cold_reads_issued;
    const std::uint64_t submissions = after.cold_read_submissions - before.cold_read_submissions;
    const std::uint64_t records = safter.cold_reads - sbefore.cold_reads;
    const std::uint64_t ios = safter.cold_read_ios - sbefore.cold_read_ios;
    EXPECT_GT(records, std::uint64_t{kRecords} / 2);  // most records were cold
    EXPECT_EQ(issued, ios);                           // every read went through the ring
    if (ahead != 0) {
      // A refill's records lie near each other (the load wrote them in numeric order, the
      // scan meets them in string order: key1, key10, key100, ...), so one extent carries
      // several, more the longer the window. How many varies with when the sweeps ran during
      // the load (about 4 at 32 ahead, 3.5 at 16): the bound leaves that room.
      EXPECT_GE(records, (ahead / 16 + 1) * ios) << records << " records in " << ios << " reads";
    } else {
      EXPECT_EQ(records, ios);
      EXPECT_EQ(issued, submissions);
    }
  }
}

// A loaded database seen from inside (white-box tests look at entries).
struct Loaded {
  engine::DatabaseImpl* impl = nullptr;
  std::unique_ptr<Database> db;
  Table* t = nullptr;
  // The first key whose record the sweeps turned cold (the hand starts at OID 0), or -1.
  // `by_oid`: only a record its leaf names by OID (one named by its address takes a fresh OID
  // and a version in memory when a scan meets it, and is then no longer cold).
  int first_cold(std::uint64_t* entry, bool by_oid = false) const {
    for (int k = 0; k < kRecords; ++k) {
      std::uint64_t value = 0;
      if (!impl->table_at(0)->index().lookup(key_of(k), &value)) return -1;
      if (by_oid && !leaf_value::names_oid(value)) continue;
      // A record the leaves' hand demoted is named by its address: that is its cold word.
      *entry = impl->table_at(0)->entry_named(value);
      if (mvcc::entry::is_cold(*entry)) return k;
    }
    return -1;
  }
  // Keeps the leaves' hand from demoting the table's records from here on. A test that picks
  // a record by how it is named (an OID, an address) and then runs transactions over it would
  // otherwise race the hand, whose passes follow the worker's rounds and so the machine's load:
  // a read whose record was demoted while in flight is retried, not failed (the entry moved).
  void hold_demotions() const { impl->table_at(0)->hold_demotion(); }
};

// `cache`: whether the table caches the records it reads (Database::set_cache_reads);
// `page`: whether index leaves go to storage too (Options::page_index_leaves).
// Opens the database on `fs` into *out (closing the one it held first) and its table "t",
// created or opened.
void open_table_t(std::shared_ptr<storage::SimFileSystem> fs, const Options& o, bool create,
                  Loaded* out) {
  out->db.reset();
  Result<std::unique_ptr<engine::DatabaseImpl>> impl = engine::DatabaseImpl::open(o, fs);
  ASSERT_TRUE(impl.is_ok()) << impl.status().to_string();
  out->impl = impl->get();
  out->db = engine::WorkerPool::wrap(std::move(impl).value());
  Result<Table*> t = create ? out->db->create_table("t") : out->db->open_table("t");
  ASSERT_TRUE(t.is_ok());
  out->t = *t;
}

// Opens table "t" on `fs` under options `o` and loads every record (round 0) into *out.
void open_loaded(std::shared_ptr<storage::SimFileSystem> fs, const Options& o, Loaded* out) {
  open_table_t(fs, o, true, out);
  load(*out->db, out->t, 0);
}

void open_loaded(std::shared_ptr<storage::SimFileSystem> fs, Loaded* out, bool cache = true,
                 bool page = true) {
  Options o = budget_options();
  o.page_index_leaves = page;
  open_loaded(fs, o, out);
  ASSERT_TRUE(out->db->set_cache_reads(*out->t, cache).is_ok());
}

// Gets every `every`-th record on a worker (interleaved, pipeline), whose sweeps move the
// hands; with `check`, each value must be the load's.
void get_on_a_worker(Loaded& l, int every, bool check) {
  std::vector<testing::ListGenerator::Body> bodies;
  for (int k = 0; k < kRecords; k += every) {
    bodies.push_back([&l, k, check](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*l.t, key_of(k));
      if (!r.is_ok()) co_return r.status();
      if (check && *r != value_of(k, 0))
        co_return Status::corruption("record " + std::to_string(k));
      co_return co_await tx.commit();
    });
  }
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  const ExecOptions e = testing::exec_of({ExecMode::kInterleaved, SchedulerPolicy::kPipeline}, 8);
  ASSERT_TRUE(l.db->run(gens, e).is_ok());
  for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
}

// A budget bounds the index too unless the application keeps it whole: the option is on by
// default, and only a budget makes it act.
// Inner nodes go too unless asked to stay (Options::page_index_inner).
TEST(ColdStore, ABudgetPagesTheIndexByDefault) {
  enum class Paging { kDefault, kLeavesOnly, kNone };
  for (const Paging paging : {Paging::kDefault, Paging::kLeavesOnly, Paging::kNone}) {
    SCOPED_TRACE(static_cast<int>(paging));
    auto fs = std::make_shared<storage::SimFileSystem>(13);
    Options o = budget_options();
    o.memory_budget_bytes = 1;  // everything that may leave memory leaves it
    o.page_index_leaves = Options{}.page_index_leaves;
    o.page_index_inner = Options{}.page_index_inner;
    if (paging == Paging::kNone) o.page_index_leaves = false;
    if (paging == Paging::kLeavesOnly) o.page_index_inner = false;
    Loaded l;
    open_loaded(fs, o, &l);
    get_on_a_worker(l, 1, true);  // every record read back
    const DatabaseStats s = l.db->stats();
    if (paging == Paging::kNone) {
      EXPECT_EQ(s.index_leaf_evictions, 0u);
      EXPECT_EQ(s.index_leaves_stored, 0u);
    } else {
      EXPECT_GT(s.index_leaf_evictions, 0u);
      EXPECT_GT(s.records_demoted, 0u);
    }
    if (paging == Paging::kDefault) {
      EXPECT_GT(s.index_inner_evictions, 0u);
      EXPECT_GT(s.index_inner_loads, 0u);  // the reads brought them back
    } else {
      EXPECT_EQ(s.index_inner_evictions, 0u);
      EXPECT_EQ(s.index_inner_nodes_stored, 0u);
    }
  }
}

// Records whose leaves name them by their cold address instead of an OID (index-paging.md,
// decision 4): the leaves' hand demoted some during the load, and the test demotes every other
// cold record by hand as the hand does (the address into the leaf, the OID given back), so that
// every cold record is named by address. A checkpoint moves them into its
// parts, the check reads them through their leaves; scans, gets and writes in every mode, and the
// blocking API, give each such record a fresh OID first and then read it as any cold record; an
// insert of its key is a duplicate, a removal removes it.
TEST_P(ColdStoreModes, RecordsNamedByTheirAddressTakeAnOidFirst) {
  auto fs = std::make_shared<storage::SimFileSystem>(23);
  Loaded l;
  open_loaded(fs, &l);
  Table& t = *l.impl->table_at(0);
  std::vector<bool> by_address(kRecords, false);
  std::vector<std::uint64_t> address_of(kRecords, 0);
  std::atomic<int> mismatches_scan{0};
  int demoted = 0;
  for (int k = 0; k < kRecords; ++k) {
    std::uint64_t named = 0;
    ASSERT_TRUE(t.index().lookup(key_of(k), &named));
    std::uint64_t e = named;  // demoted by the leaves' hand during the load already
    if (leaf_value::names_oid(named)) {
      const std::uint64_t oid = leaf_value::oid(named);
      e = t.oids().entry(oid).load();
      if (!mvcc::entry::is_cold(e)) continue;
      ASSERT_TRUE(t.index().replace(key_of(k), named, e));
      t.oids().entry(oid).store(mvcc::entry::kEmpty);
      t.oids().release(oid);
      t.note_named_by_address(1);
    }
    by_address[k] = true;
    address_of[k] = e;
    ++demoted;
  }
  ASSERT_GT(demoted, kRecords / 2);
  l.hold_demotions();  // the records the scans name by OID stay so
  EXPECT_EQ(testing::settled_records(*l.db, kRecords), std::uint64_t{kRecords});
  EXPECT_EQ(l.db->stats().records_named_by_address, static_cast<std::uint64_t>(demoted));
  // A checkpoint copies them out of the log segments (no checkpoint holds records yet) into
  // its parts and moves their leaves' values there, their only name: the segments go.
  ASSERT_TRUE(l.db->checkpoint().is_ok());
  int moved = 0;
  for (int k = 0; k < kRecords; ++k) {
    if (!by_address[k]) continue;
    std::uint64_t named = 0;
    ASSERT_TRUE(t.index().lookup(key_of(k), &named));
    ASSERT_FALSE(leaf_value::names_oid(named)) << k;
    if (named != address_of[k]) ++moved;
  }
  EXPECT_EQ(moved, demoted);
  // The check reads them through their leaves, each once, as the evicted ones.
  engine::RecordCheckCounts counts;
  ASSERT_TRUE(engine::check_records(*l.impl, t, {}, &counts, [](std::uint64_t) {}).is_ok());
  EXPECT_EQ(counts.records, std::uint64_t{kRecords});
  EXPECT_GE(counts.cold, static_cast<std::uint64_t>(demoted));
  // Scans in the mode under test, forward and reverse, through leaves that name records by
  // address: each row its key's value, in key order, and the leaves name OIDs afterwards.
  {
    const std::vector<int> starts = {1000, 2000, 3000, 4000, 5000};
    std::vector<std::vector<std::string>> got(2 * starts.size());
    std::vector<testing::ListGenerator::Body> scans;
    for (std::size_t i = 0; i < got.size(); ++i) {
      scans.push_back([&, i](Tx& tx) -> Task<Status> {
        got[i].clear();  // a retried body starts over
        const bool reverse = i % 2 == 1;
        // Bounds as locals: g++-12 mishandles a temporary a conditional makes inside co_await.
        const std::string lo = reverse ? std::string() : key_of(starts[i / 2]);
        const std::string hi = reverse ? key_of(starts[i / 2]) : std::string();
        co_return co_await tx.scan(
            *l.t, lo, hi, 40,
            [&, i](std::string_view k, std::string_view v) {
              const int n = std::stoi(std::string(k.substr(3)));
              if (v != value_of(n, 0)) ++mismatches_scan;
              got[i].push_back(std::string(k));
              return true;
            },
            reverse ? ScanOrder::kReverse : ScanOrder::kForward);
      });
    }
    testing::ListGenerator gen(std::move(scans));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
    EXPECT_EQ(mismatches_scan, 0);
    int scanned_by_address = 0;
    std::vector<std::string> keys;
    for (int k = 0; k < kRecords; ++k) keys.push_back(key_of(k));
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto at = std::lower_bound(keys.begin(), keys.end(), key_of(starts[i / 2]));
      std::vector<std::string> want;
      if (i % 2 == 0) {
        want.assign(at, at + std::min<std::ptrdiff_t>(40, keys.end() - at));
      } else {
        const auto rat = std::make_reverse_iterator(at);
        want.assign(rat, rat + std::min<std::ptrdiff_t>(40, at - keys.begin()));
      }
      EXPECT_EQ(got[i], want) << i;
      for (const std::string& k : got[i]) {
        scanned_by_address += by_address[std::stoi(k.substr(3))] ? 1 : 0;
        std::uint64_t named = 0;
        ASSERT_TRUE(t.index().lookup(k, &named));
        EXPECT_TRUE(leaf_value::names_oid(named)) << k;
      }
    }
    EXPECT_GT(scanned_by_address, 100);
  }
  // Through transactions in the mode under test: a get of every second key, a put of every
  // third, an insert of every fifth (a duplicate, aborting its transaction: alone in it).
  std::vector<testing::ListGenerator::Body> bodies;
  std::vector<int> mismatches(1, 0);
  for (int k = 0; k < kRecords; k += 2) {
    bodies.push_back([&, k](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*l.t, key_of(k));
      if (!r.is_ok()) co_return r.status();
      if (*r != value_of(k, 0)) ++mismatches[0];
      if (k % 3 == 0) co_return co_await tx.put(*l.t, key_of(k), value_of(k, 1));
      co_return Status::ok();
    });
  }
  std::vector<int> inserted;
  for (int k = 1; k < kRecords; k += 10) {
    inserted.push_back(k);
    bodies.push_back([&, k](Tx& tx) -> Task<Status> {
      co_return co_await tx.insert(*l.t, key_of(k), value_of(k, 9));
    });
  }
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  ASSERT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
  EXPECT_EQ(mismatches[0], 0);
  // Outcomes arrive in the order transactions finish.
  const std::size_t reads = (kRecords + 1) / 2;
  ASSERT_EQ(gen.outcomes.size(), reads + inserted.size());
  EXPECT_EQ(std::count(gen.outcomes.begin(), gen.outcomes.end(), Code::kOk),
            static_cast<std::ptrdiff_t>(reads));
  EXPECT_EQ(std::count(gen.outcomes.begin(), gen.outcomes.end(), Code::kDuplicate),
            static_cast<std::ptrdiff_t>(inserted.size()));
  // The records read took OIDs (the ones given back first, FIFO), and those evicted again gave
  // them back once the leaves' hand passed (demotion): the count of records holds either way.
  EXPECT_EQ(testing::settled_records(*l.db, kRecords), std::uint64_t{kRecords});
  const DatabaseStats after_run = l.db->stats();
  EXPECT_LE(after_run.records_named_by_address, std::uint64_t{kRecords});
  // The blocking API: a removal of a record named by its address, then every key read.
  int removed = -1;
  for (int k = 3; k < kRecords && removed < 0; k += 2) {
    if (by_address[k]) removed = k;
  }
  ASSERT_GE(removed, 0);
  {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    ASSERT_TRUE(tx->remove(*l.t, key_of(removed)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
  }
  for (int i = 0; i < kRecords; i += 500) {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 500; ++k) {
      Result<std::string_view> r = tx->get(*l.t, key_of(k));
      if (k == removed) {
        EXPECT_EQ(r.status().code(), Code::kNotFound);
        continue;
      }
      ASSERT_TRUE(r.is_ok()) << k << ": " << r.status().to_string();
      EXPECT_EQ(*r, value_of(k, k % 2 == 0 && k % 3 == 0 ? 1 : 0)) << k;
    }
    ASSERT_TRUE(tx->commit().is_ok());
  }
}

// An open under a budget names every record it recovers by its cold address (index-paging.md,
// decision 4): no OID is allocated, and the records count all the same. Transactions in the
// mode under test read, update, remove and scan through those leaves; the next open replays
// their log over leaves that name addresses; a secondary index created after it gives every
// record an OID first, since its entries name OIDs.
TEST_P(ColdStoreModes, AnOpenUnderABudgetNamesRecordsByAddress) {
  auto fs = std::make_shared<storage::SimFileSystem>(29);
  Loaded l;
  open_loaded(fs, &l);
  ASSERT_TRUE(l.db->checkpoint().is_ok());
  // Half the records rewritten after the checkpoint: the next open meets their keys twice,
  // in the checkpoint and in the log tail.
  for (int i = 0; i < kRecords; i += 100) {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 50; ++k) ASSERT_TRUE(tx->put(*l.t, key_of(k), value_of(k, 1)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
  }
  auto round_of = [](int k) { return k % 100 < 50 ? 1 : 0; };
  open_table_t(fs, budget_options(), false, &l);
  {
    const DatabaseStats s = l.db->stats();
    EXPECT_EQ(s.records, std::uint64_t{kRecords});
    EXPECT_EQ(s.records_named_by_address, std::uint64_t{kRecords});
    EXPECT_EQ(l.t->oids().allocated(), 0u);
  }
  // Gets of every second key, updates of every sixth, removals of every tenth from key 1,
  // and scans of 40 rows from five keys.
  std::vector<testing::ListGenerator::Body> bodies;
  std::vector<int> mismatches(1, 0);
  for (int k = 0; k < kRecords; k += 2) {
    bodies.push_back([&, k](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*l.t, key_of(k));
      if (!r.is_ok()) co_return r.status();
      if (*r != value_of(k, round_of(k))) ++mismatches[0];
      if (k % 6 == 0) co_return co_await tx.put(*l.t, key_of(k), value_of(k, 2));
      co_return Status::ok();
    });
  }
  int removed = 0;
  for (int k = 1; k < kRecords; k += 10, ++removed) {
    bodies.push_back(
        [&, k](Tx& tx) -> Task<Status> { co_return co_await tx.remove(*l.t, key_of(k)); });
  }
  std::vector<int> scanned(5, 0);
  for (int i = 0; i < 5; ++i) {
    bodies.push_back([&, i](Tx& tx) -> Task<Status> {
      scanned[i] = 0;  // a retried body starts over
      const std::string from = key_of(1000 * (i + 1) + 3);
      co_return co_await tx.scan(*l.t, from, {}, 40,
                                 [&, i](std::string_view k, std::string_view v) {
                                   const int n = std::stoi(std::string(k.substr(3)));
                                   // A removal may run first; an update leaves round 0 or 2.
                                   if (v != value_of(n, round_of(n)) && v != value_of(n, 2)) {
                                     ++mismatches[0];
                                   }
                                   ++scanned[i];
                                   return true;
                                 });
    });
  }
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  ASSERT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
  EXPECT_EQ(mismatches[0], 0);
  for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
  for (int n : scanned) EXPECT_EQ(n, 40);
  const std::uint64_t live = kRecords - removed;
  {
    EXPECT_EQ(testing::settled_records(*l.db, live), live);
    const DatabaseStats s = l.db->stats();
    // The records the transactions reached took OIDs, and gave them back if they went cold
    // again while the leaves' hand passed (demotion); the rest are still named by address.
    EXPECT_GT(s.records_named_by_address, live / 3);
    EXPECT_LE(s.records_named_by_address, live);
  }
  auto want = [&](int k) { return k % 6 == 0 ? value_of(k, 2) : value_of(k, round_of(k)); };
  auto check_all = [&] {
    for (int i = 0; i < kRecords; i += 500) {
      Result<Transaction> tx = l.db->begin();
      ASSERT_TRUE(tx.is_ok());
      for (int k = i; k < i + 500; ++k) {
        Result<std::string_view> r = tx->get(*l.t, key_of(k));
        if (k % 10 == 1) {
          EXPECT_EQ(r.status().code(), Code::kNotFound) << k;
          continue;
        }
        ASSERT_TRUE(r.is_ok()) << k << ": " << r.status().to_string();
        EXPECT_EQ(*r, want(k)) << k;
      }
      ASSERT_TRUE(tx->commit().is_ok());
    }
  };
  // The log since the checkpoint replays puts and removals over leaves that name addresses.
  open_table_t(fs, budget_options(), false, &l);
  {
    const DatabaseStats s = l.db->stats();
    EXPECT_EQ(s.records, live);
    EXPECT_EQ(s.records_named_by_address, live);
    engine::RecordCheckCounts counts;
    ASSERT_TRUE(engine::check_records(*l.impl, *l.t, {}, &counts, [](std::uint64_t) {}).is_ok());
    EXPECT_EQ(counts.records, live);
    EXPECT_EQ(counts.cold, live);
  }
  check_all();
  // A secondary index: every record takes an OID, and the index finds each by its value's
  // head ("v<k>r<round>").
  Result<Index*> by_head =
      l.db->create_index(*l.t, "head", [](std::string_view, std::string_view v, Key* out) {
        out->append_bytes(v.substr(0, v.find(':')));
        return true;
      });
  ASSERT_TRUE(by_head.is_ok()) << by_head.status().to_string();
  EXPECT_EQ(l.db->stats().records_named_by_address, 0u);
  EXPECT_EQ(testing::settled_records(*l.db, live), live);
  for (int k = 0; k < kRecords; k += 7) {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    const std::string w = want(k);
    int found = 0;
    ASSERT_TRUE(tx->lookup_index(**by_head, w.substr(0, w.find(':')), 0,
                                 [&](std::string_view key, std::string_view v) {
                                   EXPECT_EQ(key, key_of(k));
                                   EXPECT_EQ(v, w);
                                   ++found;
                                   return true;
                                 })
                    .is_ok());
    EXPECT_EQ(found, k % 10 == 1 ? 0 : 1) << k;
    ASSERT_TRUE(tx->commit().is_ok());
  }
  check_all();
}

// An EIO on a cold read, in every mode (the ring's read or the synchronous one), fails the
// transaction that met it with IOError — not a crash, not a halt, not a wrong value — and the
// record reads once the disk answers again; a disk that fails every read fails every cold
// transaction the same way while the records in memory still serve.
TEST_P(ColdStoreModes, ReadErrorFailsOnlyTheTransactionThatMetIt) {
  auto fs = std::make_shared<storage::SimFileSystem>(19);
  Loaded l;
  open_loaded(fs, &l);
  l.hold_demotions();
  std::uint64_t e = 0;
  const int k = l.first_cold(&e);
  ASSERT_GE(k, 0);
  auto get_one = [&](int key) {
    std::vector<testing::ListGenerator::Body> bodies;
    std::string got;
    bodies.push_back([&, key](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*l.t, key_of(key));
      if (!r.is_ok()) co_return r.status();
      got = std::string(*r);
      co_return co_await tx.commit();
    });
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    EXPECT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    EXPECT_EQ(gen.outcomes.size(), 1u);
    return std::make_pair(gen.outcomes.empty() ? Code::kOk : gen.outcomes[0], got);
  };
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  EXPECT_EQ(get_one(k).first, Code::kIOError);
  EXPECT_EQ(fs->faults_fired(), 1u);
  EXPECT_EQ(l.db->stats().cold_read_errors, 1u);
  const auto again = get_one(k);
  EXPECT_EQ(again.first, Code::kOk);
  EXPECT_EQ(again.second, value_of(k, 0));

  // Every read fails: cold records answer IOError, while what is in memory still serves and
  // writes commit (the log is not a read).
  std::uint64_t e2 = 0;
  const int k2 = l.first_cold(&e2);
  ASSERT_GE(k2, 0);
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, true);
  EXPECT_EQ(get_one(k2).first, Code::kIOError);
  {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    ASSERT_TRUE(tx->insert(*l.t, "fresh", "value").is_ok());
    Result<std::string_view> r = tx->get(*l.t, "fresh");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(*r, "value");
    ASSERT_TRUE(tx->commit().is_ok());
  }
  EXPECT_FALSE(l.db->durability_stats().halted);
  fs->inject(storage::SimFileSystem::Fault::kNone, 0, false);
  const auto healed = get_one(k2);
  EXPECT_EQ(healed.first, Code::kOk);
  EXPECT_EQ(healed.second, value_of(k2, 0));
}

// One transaction at a time on the workers, in mode `mode`, on key `k` of a loaded table: a get
// (its value into `got`), a put of round 1's value, and a whole scan (its rows into `rows`).
// Each answers the transaction's outcome.
struct OneAtATime {
  Loaded& l;
  int k;
  ExecCase mode;
  std::string got;
  std::size_t rows = 0;

  Code run(testing::ListGenerator::Body body) {
    std::vector<testing::ListGenerator::Body> bodies;
    bodies.push_back(std::move(body));
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    EXPECT_TRUE(l.db->run(gens, testing::exec_of(mode, 8)).is_ok());
    EXPECT_EQ(gen.outcomes.size(), 1u);
    return gen.outcomes.empty() ? Code::kOk : gen.outcomes[0];
  }
  Code get() {
    return run([this](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*l.t, key_of(k));
      if (!r.is_ok()) co_return r.status();
      got = std::string(*r);
      co_return co_await tx.commit();
    });
  }
  Code put() {
    return run([this](Tx& tx) -> Task<Status> {
      if (Status s = co_await tx.put(*l.t, key_of(k), value_of(k, 1)); !s.is_ok()) co_return s;
      co_return co_await tx.commit();
    });
  }
  Code scan() {
    return run([this](Tx& tx) -> Task<Status> {
      rows = 0;
      co_return co_await tx.scan(*l.t, "", "", 0, [this](std::string_view, std::string_view) {
        ++rows;
        return true;
      });
    });
  }
};

// Under a budget, index leaves go to storage too (docs/internals/index.md, "Leaves on
// storage"). A leaf that cannot be read back fails the operation that needed it, with IOError
// (the read failed) or Corruption (the image does not verify), in every mode: never a wrong
// "not found", never a crash. The engine runs on, and the leaf reads once the disk answers.
TEST_P(ColdStoreModes, AFailedLeafLoadFailsOnlyTheOperationThatNeededIt) {
  auto fs = std::make_shared<storage::SimFileSystem>(23);
  Loaded l;
  open_loaded(fs, &l);
  index::BTree& tree = l.t->index();
  ASSERT_TRUE(tree.pages());
  const int k = kRecords / 2;
  auto evict = [&] {
    bool evicted = false;
    ASSERT_TRUE(tree.evict_leaf(key_of(k), &evicted).is_ok());
    ASSERT_TRUE(evicted || tree.stored_leaves() > 0);  // or a sweep took it already
  };
  OneAtATime op{l, k, GetParam()};

  // A get, then a write: the leaf's read is the first read after the fault is set.
  evict();
  const std::uint64_t loads = tree.loads();
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  EXPECT_EQ(op.get(), Code::kIOError);
  EXPECT_EQ(fs->faults_fired(), 1u);
  EXPECT_EQ(op.get(), Code::kOk);
  EXPECT_EQ(op.got, value_of(k, 0));
  EXPECT_GT(tree.loads(), loads);
  evict();
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  EXPECT_EQ(op.put(), Code::kIOError);
  EXPECT_EQ(op.put(), Code::kOk);
  EXPECT_EQ(op.get(), Code::kOk);
  EXPECT_EQ(op.got, value_of(k, 1));

  // A damaged image: the scan that meets it answers Corruption, and reads every row once the
  // image is whole again.
  evict();
  testing::LeafImageDamage damage;
  ASSERT_TRUE(damage.damage(*fs, tree));
  EXPECT_EQ(op.scan(), Code::kCorruption);
  EXPECT_LT(op.rows, static_cast<std::size_t>(kRecords));
  damage.restore();
  EXPECT_EQ(op.scan(), Code::kOk);
  EXPECT_EQ(op.rows, static_cast<std::size_t>(kRecords));
  EXPECT_FALSE(l.db->durability_stats().halted);
}

// The same for inner nodes on storage (Options::page_index_inner, the default): with every node
// but the root out, an operation's first read is an inner node's image. A read that fails
// fails that operation only (IOError), a damaged image fails the scan that meets it
// (Corruption), and each reads on once the disk answers, in every mode.
TEST_P(ColdStoreModes, AFailedInnerNodeLoadFailsOnlyTheOperationThatNeededIt) {
  auto fs = std::make_shared<storage::SimFileSystem>(37);
  Loaded l;
  open_loaded(fs, &l);
  index::BTree& tree = l.t->index();
  ASSERT_TRUE(tree.pages_inner());
  const int k = kRecords / 3;
  // The hand's passes from this thread (the workers are idle between runs): leaves first, then
  // the inner nodes above them, until only the root is in memory.
  auto evict_all = [&] {
    for (int pass = 0; pass < 8; ++pass) {
      std::string hand;
      do {
        std::size_t n = 0;
        ASSERT_TRUE(tree.sweep_leaves(&hand, 64, &n).is_ok());
      } while (!hand.empty());
    }
    ASSERT_GT(tree.stored_inner_nodes(), 0u);
    ASSERT_EQ(tree.node_count(), 1u);
  };
  OneAtATime op{l, k, GetParam()};

  evict_all();
  std::uint64_t inner = tree.inner_loads();
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  EXPECT_EQ(op.get(), Code::kIOError);
  EXPECT_EQ(fs->faults_fired(), 1u);
  EXPECT_EQ(tree.inner_loads(), inner);  // the failed read was the inner node's
  EXPECT_EQ(op.get(), Code::kOk);
  EXPECT_EQ(op.got, value_of(k, 0));
  EXPECT_GT(tree.inner_loads(), inner);
  evict_all();
  inner = tree.inner_loads();
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  EXPECT_EQ(op.put(), Code::kIOError);
  EXPECT_EQ(tree.inner_loads(), inner);
  EXPECT_EQ(op.put(), Code::kOk);
  EXPECT_EQ(op.get(), Code::kOk);
  EXPECT_EQ(op.got, value_of(k, 1));

  // The root's first child, an inner node on storage, damaged.
  evict_all();
  testing::LeafImageDamage damage;
  ASSERT_TRUE(damage.damage(*fs, tree));
  EXPECT_EQ(op.scan(), Code::kCorruption);
  EXPECT_EQ(op.rows, 0u);  // the first leaf is under it
  damage.restore();
  EXPECT_EQ(op.scan(), Code::kOk);
  EXPECT_EQ(op.rows, static_cast<std::size_t>(kRecords));
  EXPECT_FALSE(l.db->durability_stats().halted);
}

// A disk that refuses the leaves' images (ENOSPC on every node-segment write): the leaves stay
// in memory, DatabaseStats counts the failed sweeps, every read still answers its value, and
// the hand evicts leaves again once the disk has room.
TEST_P(ColdStoreModes, AFullDiskKeepsLeavesInMemoryAndSaysSo) {
  auto fs = std::make_shared<storage::SimFileSystem>(29);
  Loaded l;
  open_loaded(fs, &l);
  index::BTree& tree = l.t->index();
  ASSERT_TRUE(tree.pages());
  auto read_all = [&](int from) {
    std::vector<testing::ListGenerator::Body> bodies;
    std::size_t wrong = 0;
    for (int i = 0; i < kRecords; i += 50) {
      bodies.push_back([&, i](Tx& tx) -> Task<Status> {
        for (int k = i; k < i + 50 && k < kRecords; ++k) {
          const int key = (k + from) % kRecords;
          Result<std::string_view> r = co_await tx.get(*l.t, key_of(key));
          if (!r.is_ok()) co_return r.status();
          if (*r != value_of(key, 0)) ++wrong;
        }
        co_return co_await tx.commit();
      });
    }
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    EXPECT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    for (const Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
    EXPECT_EQ(wrong, 0u);
  };
  const DatabaseStats before = l.db->stats();
  EXPECT_EQ(before.index_leaf_write_errors, 0u);
  fs->fault_only("/idx-");  // the log keeps writing
  fs->inject(storage::SimFileSystem::Fault::kEnospc, 1, true);
  read_all(0);
  read_all(kRecords / 3);
  const DatabaseStats full = l.db->stats();
  EXPECT_GT(fs->faults_fired(), 0u);
  EXPECT_GT(full.index_leaf_write_errors, 0u);
  EXPECT_EQ(full.index_leaf_evictions, before.index_leaf_evictions);
  EXPECT_FALSE(l.db->durability_stats().halted);

  fs->inject(storage::SimFileSystem::Fault::kNone, 0, false);
  read_all(kRecords / 2);
  const DatabaseStats healed = l.db->stats();
  EXPECT_GT(healed.index_leaf_evictions, full.index_leaf_evictions);
  EXPECT_EQ(healed.index_leaf_write_errors, full.index_leaf_write_errors);
}

// Scans meet leaves on storage as gets do: in the coroutine modes on a worker with a ring, the
// scan suspends on the leaf's read (DatabaseStats::index_leaf_loads_async counts them) while
// the worker runs other transactions; the plain modes read it in place. Either way every row
// comes back, in order, forward and reverse, from a table that caches reads (loads) and from
// one that does not (the scan's own extents, whose plan walks the leaves ahead of the scan),
// and from one reopened over its checkpoint's runs (each leaf read as its run's blocks, its
// image made from the records: index-paging.md, decision 6).
TEST_P(ColdStoreModes, ScansReadLeavesOnStorageThroughTheRingInCoroutineModes) {
  const ExecMode mode = GetParam().mode;
  for (const int variant : {0, 1, 2}) {
    const bool cache = variant != 1;
    SCOPED_TRACE(variant == 0   ? "caching table"
                 : variant == 1 ? "uncached table"
                                : "table reopened over its runs");
    auto fs = std::make_shared<storage::SimFileSystem>(41);
    Loaded l;
    open_loaded(fs, &l, cache);
    if (variant == 2) {
      ASSERT_TRUE(l.db->checkpoint().is_ok());
      open_table_t(fs, budget_options(), false, &l);
    }
    index::BTree& tree = l.t->index();
    ASSERT_TRUE(tree.pages());
    for (int k = 0; k < kRecords && variant != 2; ++k) {
      bool evicted = false;
      ASSERT_TRUE(tree.evict_leaf(key_of(k), &evicted).is_ok());
    }
    ASSERT_GT(tree.stored_leaves(), 20u);
    std::map<std::string, std::string> want;
    for (int k = 0; k < kRecords; ++k) want[key_of(k)] = value_of(k, 0);
    const DatabaseStats before = l.db->stats();
    const ExecStats exec_before = l.db->exec_stats();

    // Four scans at once (two forward, two reverse), each checking every row against `want`.
    std::vector<testing::ListGenerator::Body> bodies;
    std::vector<std::size_t> rows(4, 0);
    std::vector<int> wrong(4, 0);
    for (int s = 0; s < 4; ++s) {
      bodies.push_back([&, s](Tx& tx) -> Task<Status> {
        const ScanOrder order = s % 2 == 0 ? ScanOrder::kForward : ScanOrder::kReverse;
        auto it = want.begin();
        auto rit = want.rbegin();
        co_return co_await tx.scan(
            *l.t, "", "", 0,
            [&, s, order](std::string_view k, std::string_view v) {
              const auto& [wk, wv] = order == ScanOrder::kForward ? *it++ : *rit++;
              if (k != wk || v != wv) ++wrong[s];
              return ++rows[s] < want.size();
            },
            order);
      });
    }
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    for (Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
    for (int s = 0; s < 4; ++s) {
      EXPECT_EQ(rows[s], want.size()) << "scan " << s;
      EXPECT_EQ(wrong[s], 0) << "scan " << s;
    }
    const DatabaseStats after = l.db->stats();
    const std::uint64_t loads = after.index_leaf_loads - before.index_leaf_loads;
    const std::uint64_t async = after.index_leaf_loads_async - before.index_leaf_loads_async;
    EXPECT_GE(loads, 20u);
    // Every load ends in a visit of the leaf it brought in (the leaves' hit ratio's base).
    const std::uint64_t visits =
        l.db->exec_stats().index_leaf_visits - exec_before.index_leaf_visits;
    EXPECT_GE(visits, loads);
    if (mode == ExecMode::kNested || mode == ExecMode::kInterleaved) {
      // A read in place happens only when every extent buffer is in use.
      EXPECT_GE(async * 2, loads) << async << " of " << loads << " loads async";
    } else if (mode != ExecMode::kAuto) {
      EXPECT_EQ(async, 0u);
    }
  }
}

// The leaves' hit ratio counts only where leaves page: the workers count the leaves their
// operations reach in a tree that pages (ExecStats::index_leaf_visits; inner nodes below the
// root in index_inner_visits), and nothing in one that does not, so a database without paging
// pays nothing for the count.
TEST(ColdStore, LeafVisitsAreCountedOnlyWhereLeavesPage) {
  for (const bool page : {false, true}) {
    SCOPED_TRACE(page ? "leaves page" : "leaves stay");
    Loaded l;
    open_loaded(std::make_shared<storage::SimFileSystem>(43), &l, true, page);
    const ExecStats before = l.db->exec_stats();
    get_on_a_worker(l, 60, false);
    const std::uint64_t gets = (kRecords + 59) / 60;
    const ExecStats after = l.db->exec_stats();
    const std::uint64_t visits = after.index_leaf_visits - before.index_leaf_visits;
    // And the inner nodes below the root: the tree of 6,000 keys has a level of them.
    const std::uint64_t inner = after.index_inner_visits - before.index_inner_visits;
    if (page) {
      EXPECT_GE(visits, gets);
      EXPECT_GE(inner, gets);
    } else {
      EXPECT_EQ(visits, 0u);
      EXPECT_EQ(inner, 0u);
    }
  }
}

// One budget: where the index pages, the budget counts the index's shares beside the versions
// (every tree's frames, secondary ones included, and the OID array's pages), so the leaves
// and versions make room for them; where it does not, it counts versions only.
TEST(ColdStore, TheBudgetCountsEveryShareWhereTheIndexPages) {
  DatabaseStats with[2];  // leaves stay, leaves page
  for (const bool page : {false, true}) {
    SCOPED_TRACE(page ? "leaves page" : "leaves stay");
    Options o = budget_options();
    o.page_index_leaves = page;
    o.memory_budget_bytes = std::uint64_t{1} << 30;  // nothing goes out: every share stays
    Loaded l;
    open_table_t(std::make_shared<storage::SimFileSystem>(47), o, true, &l);
    load(*l.db, l.t, 0);
    const DatabaseStats primary = l.db->stats();
    Result<Index*> by_head =
        l.db->create_index(*l.t, "head", [](std::string_view, std::string_view v, Key* out) {
          out->append_bytes(v.substr(0, v.find(':')));
          return true;
        });
    ASSERT_TRUE(by_head.is_ok()) << by_head.status().to_string();
    with[page] = l.db->stats();
    EXPECT_EQ(with[page].evictions, 0u);
    EXPECT_GT(with[page].oid_bytes, 0u);
    // The secondary tree's frames are in the index's share.
    EXPECT_GT(with[page].index_frame_bytes, primary.index_frame_bytes);
    // Versions are counted either way (less those retired, which go whatever eviction does).
    EXPECT_GT(with[page].memory_budget_counted_bytes, 0u);
    EXPECT_LE(with[page].memory_budget_counted_bytes,
              with[page].live_version_bytes +
                  (page ? with[page].index_frame_bytes + with[page].oid_bytes : 0));
  }
  // The same records and versions both ways: what paging adds is exactly the index's shares.
  EXPECT_EQ(with[0].live_version_bytes, with[1].live_version_bytes);
  EXPECT_EQ(with[1].memory_budget_counted_bytes,
            with[0].memory_budget_counted_bytes + with[1].index_frame_bytes + with[1].oid_bytes);
}

// A read that fails while a scan has others in flight ahead of it: the scan answers IOError
// (never a short or wrong result), the reads still ahead are collected before it returns, and
// the same scan reads everything once the disk answers again. Both ways a scan reads cold
// records: loads (a table that caches reads) and, in the coroutine modes, the scan's own
// extents (one that does not).
TEST_P(ColdStoreModes, AReadErrorFailsTheScanAndItsReadsAheadEnd) {
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "caching table" : "uncached table");
    auto fs = std::make_shared<storage::SimFileSystem>(37);
    Loaded l;
    open_loaded(fs, &l, cache);
    l.hold_demotions();
    auto scan_all = [&]() {
      std::vector<testing::ListGenerator::Body> bodies;
      std::size_t rows = 0;
      bodies.push_back([&](Tx& tx) -> Task<Status> {
        rows = 0;
        co_return co_await tx.scan(*l.t, "", "", 0, [&](std::string_view k, std::string_view v) {
          ++rows;
          return v.size() == kValueBytes && !k.empty();
        });
      });
      testing::ListGenerator gen(std::move(bodies));
      TxnGenerator* gens[] = {&gen};
      EXPECT_TRUE(l.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
      EXPECT_EQ(gen.outcomes.size(), 1u);
      return std::make_pair(gen.outcomes.empty() ? Code::kOk : gen.outcomes[0], rows);
    };
    // The fifth read fails (the second for extents: a scan of this table takes a few).
    fs->inject(storage::SimFileSystem::Fault::kReadEio, cache ? 5 : 2, false);
    const auto failed = scan_all();
    EXPECT_EQ(failed.first, Code::kIOError);
    EXPECT_LT(failed.second, static_cast<std::size_t>(kRecords));
    EXPECT_EQ(fs->faults_fired(), 1u);
    EXPECT_EQ(l.db->stats().cold_read_errors, 1u);
    EXPECT_FALSE(l.db->durability_stats().halted);
    const auto healed = scan_all();
    EXPECT_EQ(healed.first, Code::kOk);
    EXPECT_EQ(healed.second, static_cast<std::size_t>(kRecords));
  }
}

// `n` transactions that each get key `k` of `t` and count in *right the answers that are its
// first value.
std::vector<testing::ListGenerator::Body> gets_of(Table* t, int k, int n, int* right) {
  std::vector<testing::ListGenerator::Body> bodies;
  for (int i = 0; i < n; ++i) {
    bodies.push_back([t, k, right](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*t, key_of(k));
      if (!r.is_ok()) co_return r.status();
      if (*r == value_of(k, 0)) ++*right;
      co_return Status::ok();
    });
  }
  return bodies;
}

// Umbra's de-duplicated loads: transactions that miss on the same cold record while its read is
// in flight wait for that read; one I/O serves them all.
// Demotion (index-paging.md, decision 4): records read back into memory take OIDs, and once
// they are evicted again the leaves' hand names them by address and gives the OIDs back, so
// the OID array holds records in memory and those on their way out, not every record ever
// read. Three rounds of gets over every key, each value right; after them most records are
// named by address again, and the count of records holds.
TEST(ColdStore, RecordsReadBackGiveTheirOidsBackOnceColdAgain) {
  Loaded l;
  open_loaded(std::make_shared<storage::SimFileSystem>(43), &l);
  const DatabaseStats before = l.db->stats();
  int wrong = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<testing::ListGenerator::Body> bodies;
    for (int k = 0; k < kRecords; k += 20) {
      bodies.push_back([&, k](Tx& tx) -> Task<Status> {
        for (int i = k; i < k + 20; ++i) {
          Result<std::string_view> r = co_await tx.get(*l.t, key_of(i));
          if (!r.is_ok()) co_return r.status();
          if (*r != value_of(i, 0)) ++wrong;
        }
        co_return co_await tx.commit();
      });
    }
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    const ExecCase c{ExecMode::kInterleaved, SchedulerPolicy::kBatch};
    ASSERT_TRUE(l.db->run(gens, testing::exec_of(c, 8)).is_ok());
    for (Code code : gen.outcomes) EXPECT_EQ(code, Code::kOk);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(testing::settled_records(*l.db, kRecords), std::uint64_t{kRecords});
  const DatabaseStats after = l.db->stats();
  EXPECT_GT(after.records_demoted - before.records_demoted, std::uint64_t{kRecords});
  EXPECT_GT(after.records_named_by_address, std::uint64_t{kRecords} / 3);
  engine::RecordCheckCounts counts;
  ASSERT_TRUE(engine::check_records(*l.impl, *l.impl->table_at(0), {}, &counts, [](std::uint64_t) {
              }).is_ok());
  EXPECT_EQ(counts.records, std::uint64_t{kRecords});
}

// Holders of an OID that was demoted after they took it (the entry reads moved) look the key
// up again: a write after a read (it reuses the read's OID) and a scan whose copy of the leaf
// names it, each with the record's right value; a serializable transaction whose read's OID
// moved does not certify. The test demotes as the leaves' hand does (the entry from its cold
// address to moved, the address into the leaf) at the point a race would, and gives the OID
// back once no transaction holds it. The table does not cache reads, so a record read is cold
// again at once.
TEST(ColdStore, HoldersOfADemotedOidLookTheKeyUpAgain) {
  Loaded l;
  open_loaded(std::make_shared<storage::SimFileSystem>(47), &l, /*cache=*/false);
  l.hold_demotions();  // only the test demotes from here on
  Table& t = *l.impl->table_at(0);
  auto cold_oid_of = [&](int k) -> std::uint64_t {
    std::uint64_t named = 0;
    if (!t.index().lookup(key_of(k), &named) || !leaf_value::names_oid(named)) return 0;
    const std::uint64_t oid = leaf_value::oid(named);
    return mvcc::entry::is_cold(t.oids().entry(oid).load()) ? oid : 0;
  };
  auto demote = [&](int k, std::uint64_t oid) {
    std::atomic<std::uint64_t>& entry = t.oids().entry(oid);
    std::uint64_t e = entry.load();
    ASSERT_TRUE(mvcc::entry::is_cold(e));
    ASSERT_TRUE(entry.compare_exchange_strong(e, mvcc::entry::kMoved));
    ASSERT_TRUE(t.index().replace(key_of(k), leaf_value::of_oid(oid), e));
    t.note_named_by_address(1);
  };
  std::vector<int> cold;  // records on storage named by OIDs (the hand demoted the others)
  for (int k = 0; k < kRecords; ++k) {
    if (cold_oid_of(k) != 0) cold.push_back(k);
  }
  ASSERT_GE(cold.size(), 20u);
  // keys[1] begins the scan: a cold record named by an OID follows it in its leaf (*batch,
  // from the key on), one the other parts leave alone.
  std::vector<int> keys = {cold.front(), -1, cold.back()};
  auto later_in_leaf = [&](int first, index::LeafBatch* batch, std::uint64_t* oid) {
    batch->clear();
    if (!t.index().scan_leaf(key_of(first), false, {}, {}, false, batch)) return -1;
    for (std::size_t i = 1; i < batch->entries.size(); ++i) {
      const int k = std::stoi(std::string(batch->key(batch->entries[i]).substr(3)));
      if (k == keys[0] || k == keys[2]) continue;
      if ((*oid = cold_oid_of(k)) != 0) return k;
    }
    return -1;
  };
  for (std::size_t i = 1; i + 1 < cold.size() && keys[1] < 0; ++i) {
    index::LeafBatch batch;
    std::uint64_t oid = 0;
    if (later_in_leaf(cold[i], &batch, &oid) >= 0) keys[1] = cold[i];
  }
  ASSERT_GE(keys[1], 0);

  // A write after a read of the same key: the read's OID moved in between.
  {
    const int k = keys[0];
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    Result<std::string_view> r = tx->get(*l.t, key_of(k));
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, value_of(k, 0));
    const std::uint64_t oid = cold_oid_of(k);
    ASSERT_NE(oid, 0u);  // read back and dropped: cold again, still under its OID
    demote(k, oid);
    ASSERT_TRUE(tx->put(*l.t, key_of(k), value_of(k, 5)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
    t.oids().release(oid);  // no transaction holds it now
  }
  // A scan whose leaf copy names an OID that moves while the scan is at an earlier row.
  {
    index::LeafBatch batch;
    std::uint64_t oid = 0;
    const int later = later_in_leaf(keys[1], &batch, &oid);
    ASSERT_GE(later, 0) << "no cold record named by an OID after the first in its leaf";
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    int rows = 0, wrong = 0;
    bool demoted = false;
    ASSERT_TRUE(tx->scan(*l.t, key_of(keys[1]), {}, batch.entries.size(),
                         [&](std::string_view k, std::string_view v) {
                           if (!demoted) {
                             demote(later, oid);
                             demoted = true;
                           }
                           const int n = std::stoi(std::string(k.substr(3)));
                           if (v != value_of(n, n == keys[0] ? 5 : 0)) ++wrong;
                           ++rows;
                           return true;
                         })
                    .is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
    EXPECT_EQ(rows, static_cast<int>(batch.entries.size()));
    EXPECT_EQ(wrong, 0);
    t.oids().release(oid);
  }
  // A serializable read whose OID moved before the commit: SSN refuses to certify it.
  {
    const int k = keys[2];
    Result<Transaction> tx = l.db->begin(TxnOptions::with(Isolation::kSerializable));
    ASSERT_TRUE(tx.is_ok());
    Result<std::string_view> r = tx->get(*l.t, key_of(k));
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, value_of(k, 0));
    const std::uint64_t oid = cold_oid_of(k);
    ASSERT_NE(oid, 0u);
    demote(k, oid);
    ASSERT_TRUE(tx->put(*l.t, key_of(keys[1]), value_of(keys[1], 6)).is_ok());
    const Status c = tx->commit();
    EXPECT_EQ(c.code(), Code::kConflict) << c.to_string();
    t.oids().release(oid);
  }
  // Every record reads right, and the counts agree.
  EXPECT_EQ(l.db->stats().records, std::uint64_t{kRecords});
  Result<Transaction> tx = l.db->begin();
  ASSERT_TRUE(tx.is_ok());
  for (int k : keys) {
    Result<std::string_view> r = tx->get(*l.t, key_of(k));
    ASSERT_TRUE(r.is_ok()) << k;
    EXPECT_EQ(*r, value_of(k, k == keys[0] ? 5 : 0)) << k;
  }
  ASSERT_TRUE(tx->commit().is_ok());
}

TEST(ColdStore, ConcurrentMissesShareOneRead) {
  Loaded l;
  open_loaded(std::make_shared<storage::SimFileSystem>(11), &l);
  auto& db = l.db;
  std::uint64_t e = 0;
  const int cold_key = l.first_cold(&e);
  ASSERT_GE(cold_key, 0);
  const DatabaseStats before = db->stats();
  int right = 0;
  testing::ListGenerator gen(gets_of(l.t, cold_key, 8, &right));
  TxnGenerator* gens[] = {&gen};
  const ExecCase c{ExecMode::kInterleaved, SchedulerPolicy::kBatch};
  ASSERT_TRUE(db->run(gens, testing::exec_of(c, 8)).is_ok());
  EXPECT_EQ(right, 8);
  const DatabaseStats after = db->stats();
  EXPECT_EQ(after.cold_reads - before.cold_reads, 1u);
  EXPECT_EQ(after.cold_read_joins - before.cold_read_joins, 7u);
}

// The same for index leaves: transactions of one worker that miss on a leaf on storage while
// its read is in flight wait for that read (ColdPort::read_shared) instead of reading the block
// again. Eight gets of one cold key whose leaf was evicted: one read for the leaf, one for the
// record, and every get answers the record's value.
TEST(ColdStore, ConcurrentMissesOnOneLeafShareOneRead) {
  Loaded l;
  open_loaded(std::make_shared<storage::SimFileSystem>(13), &l);
  std::uint64_t e = 0;
  const int cold_key = l.first_cold(&e);
  ASSERT_GE(cold_key, 0);
  index::BTree& tree = l.t->index();
  ASSERT_TRUE(tree.pages());
  bool evicted = false;
  ASSERT_TRUE(tree.evict_leaf(key_of(cold_key), &evicted).is_ok());
  ASSERT_TRUE(evicted);
  const DatabaseStats before = l.db->stats();
  int right = 0;
  testing::ListGenerator gen(gets_of(l.t, cold_key, 8, &right));
  TxnGenerator* gens[] = {&gen};
  const ExecCase c{ExecMode::kInterleaved, SchedulerPolicy::kBatch};
  ASSERT_TRUE(l.db->run(gens, testing::exec_of(c, 8)).is_ok());
  for (Code code : gen.outcomes) EXPECT_EQ(code, Code::kOk);
  EXPECT_EQ(right, 8);
  const DatabaseStats after = l.db->stats();
  EXPECT_EQ(after.index_leaf_read_joins - before.index_leaf_read_joins, 7u);
  EXPECT_EQ(after.index_leaf_loads - before.index_leaf_loads, 1u);
  EXPECT_EQ(after.cold_read_ios - before.cold_read_ios, 2u);  // the leaf's block, the record's
  EXPECT_EQ(after.cold_read_joins - before.cold_read_joins, 7u);
}

// Across workers too (ColdStore::read_shared): transactions on two workers, and an application
// thread, that miss on one leaf while its read is out wait for that one read. The disk holds
// every asynchronous read back (SimFileSystem::hold_io) until the misses have all met the leaf,
// so each must either issue the read or join it. `gets` per worker; in the coroutine modes
// all of them miss at once, in a sequential one the first of each worker does (it reads
// through its ring and spins, and the other worker's first get joins it); with `app`, a get on
// an application thread (no ring: it joins or reads with pread) comes once the workers' misses
// have joined, and joins too. Answers the joins, the installs, and whether every get read the
// record's value.
struct LeafShare {
  std::uint64_t joins = 0;
  std::uint64_t loads = 0;
  std::uint64_t loads_async = 0;
  bool all_right = false;
};

LeafShare misses_on_one_leaf(ExecMode mode, int gets, std::uint64_t worker_joins, bool app) {
  LeafShare out;
  auto fs = std::make_shared<storage::SimFileSystem>(17);
  Options o = budget_options();
  o.workers = 2;
  Loaded l;
  open_loaded(fs, o, &l);
  l.hold_demotions();
  std::uint64_t e = 0;
  const int cold_key = l.first_cold(&e);
  EXPECT_GE(cold_key, 0);
  if (cold_key < 0) return out;
  bool evicted = false;
  EXPECT_TRUE(l.t->index().evict_leaf(key_of(cold_key), &evicted).is_ok());
  EXPECT_TRUE(evicted);
  const DatabaseStats before = l.db->stats();
  int right[2] = {0, 0};
  testing::ListGenerator gen0(gets_of(l.t, cold_key, gets, &right[0]));
  testing::ListGenerator gen1(gets_of(l.t, cold_key, gets, &right[1]));
  TxnGenerator* gens[] = {&gen0, &gen1};
  bool app_right = !app;
  fs->hold_io(true);
  std::atomic<bool> done{false};
  // Bounded: a miss that reads on its own leaves the joins short, and the disk must go on.
  const auto joins_reach = [&](std::uint64_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done.load() && std::chrono::steady_clock::now() < until &&
           l.db->stats().index_leaf_read_joins - before.index_leaf_read_joins < n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  std::thread release([&] {
    joins_reach(worker_joins);
    std::thread app_get;
    if (app) {
      app_get = std::thread([&] {
        Result<Transaction> tx = l.db->begin();
        EXPECT_TRUE(tx.is_ok());
        if (!tx.is_ok()) return;
        Result<std::string_view> r = tx->get(*l.t, key_of(cold_key));
        EXPECT_TRUE(r.is_ok()) << r.status().to_string();
        app_right = r.is_ok() && *r == value_of(cold_key, 0);
        EXPECT_TRUE(tx->commit().is_ok());
      });
      joins_reach(worker_joins + 1);
    }
    fs->hold_io(false);
    if (app_get.joinable()) app_get.join();
  });
  ExecCase c{mode, SchedulerPolicy::kBatch};
  const Status run = l.db->run(gens, testing::exec_of(c, 8));
  done.store(true);
  release.join();
  EXPECT_TRUE(run.is_ok()) << run.to_string();
  bool ok = run.is_ok();
  for (Code code : gen0.outcomes) ok = ok && code == Code::kOk;
  for (Code code : gen1.outcomes) ok = ok && code == Code::kOk;
  out.all_right = ok && app_right && right[0] == gets && right[1] == gets;
  const DatabaseStats after = l.db->stats();
  out.joins = after.index_leaf_read_joins - before.index_leaf_read_joins;
  out.loads = after.index_leaf_loads - before.index_leaf_loads;
  out.loads_async = after.index_leaf_loads_async - before.index_leaf_loads_async;
  return out;
}

TEST(ColdStore, MissesOnOneLeafFromTwoWorkersAndAnApplicationThreadShareOneRead) {
  struct Case {
    ExecMode mode;
    int gets;
    std::uint64_t worker_joins;
    bool app;
    std::uint64_t loads_async;
  };
  // Interleaved: reading per worker made two reads and fourteen joins. Sequential: the workers
  // read through their rings and spin, and the other worker's miss and the application
  // thread's join (a pread each before, no join).
  for (const Case& c : {Case{ExecMode::kInterleaved, 8, 15, false, 1},
                        Case{ExecMode::kSequential, 4, 1, true, 0}}) {
    SCOPED_TRACE(c.mode == ExecMode::kSequential ? "sequential" : "interleaved");
    const LeafShare got = misses_on_one_leaf(c.mode, c.gets, c.worker_joins, c.app);
    EXPECT_TRUE(got.all_right);
    EXPECT_EQ(got.joins, c.worker_joins + (c.app ? 1 : 0));
    EXPECT_EQ(got.loads, 1u);
    EXPECT_EQ(got.loads_async, c.loads_async);
  }
}

// The records' hit ratio (DatabaseStats::record_accesses): every record an operation reaches
// counts once, on an application thread and on a worker, committed or aborted, and a limited
// scan counts the entries up to the one it stopped at. Each record read back was reached: the
// misses stay below the accesses.
TEST(ColdStore, RecordAccessesCountEveryRecordReached) {
  Loaded l;
  open_loaded(std::make_shared<storage::SimFileSystem>(19), &l);
  const DatabaseStats before = l.db->stats();
  {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = 0; k < 10; ++k) ASSERT_TRUE(tx->get(*l.t, key_of(k * 7)).is_ok());
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(tx->put(*l.t, key_of(k), value_of(k, 0)).is_ok());
    int rows = 0;
    ASSERT_TRUE(tx->scan(*l.t, key_of(100), "", 25, [&](std::string_view, std::string_view) {
                    ++rows;
                    return true;
                  }).is_ok());
    EXPECT_EQ(rows, 25);
    // Not counted before the transaction ends.
    EXPECT_EQ(l.db->stats().record_accesses - before.record_accesses, 0u);
    ASSERT_TRUE(tx->commit().is_ok());
  }
  EXPECT_EQ(l.db->stats().record_accesses - before.record_accesses, 38u);
  {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    ASSERT_TRUE(tx->get(*l.t, key_of(3)).is_ok());
    tx->abort();
  }
  EXPECT_EQ(l.db->stats().record_accesses - before.record_accesses, 39u);
  int right = 0;
  testing::ListGenerator gen(gets_of(l.t, 5, 8, &right));
  TxnGenerator* gens[] = {&gen};
  const ExecCase c{ExecMode::kInterleaved, SchedulerPolicy::kBatch};
  ASSERT_TRUE(l.db->run(gens, testing::exec_of(c, 8)).is_ok());
  EXPECT_EQ(right, 8);
  const DatabaseStats after = l.db->stats();
  EXPECT_EQ(after.record_accesses - before.record_accesses, 47u);
  const std::uint64_t misses =
      after.cold_reads - before.cold_reads + after.cold_read_joins - before.cold_read_joins;
  EXPECT_GT(misses, 0u);  // most of the table is cold under the budget
  EXPECT_LE(misses, 47u);
}

// Flips a byte of the value of the record at `a` in its log segment (found by number):
// *seg names the file, *original the byte it held (at a.offset + header + 8).
void damage_value(storage::SimFileSystem& fs, const mvcc::entry::ColdAddress& a, std::string* seg,
                  std::string* original) {
  std::vector<std::string> names;
  ASSERT_TRUE(fs.list("/db", &names).is_ok());
  seg->clear();
  for (const std::string& n : names) {
    storage::LogName ln{};
    if (storage::parse_log_file_name(n, &ln) && ln.segment == a.segment) *seg = "/db/" + n;
  }
  ASSERT_FALSE(seg->empty());
  std::string img;
  ASSERT_TRUE(fs.peek(*seg, &img));
  const std::uint64_t at = a.offset + storage::kRecordHeaderBytes + 8;
  *original = img.substr(at, 1);
  fs.poke(*seg, at, std::string(1, static_cast<char>((*original)[0] ^ 0x5a)), true);
}

// Every check a cold read makes of the bytes it got names what is wrong, and the Status names
// where the record is: a short read, damage, another table's or key's record, a record of
// another size, a reference instead of a value. A caller that checks the key itself passes none.
TEST(ColdStore, ARecordThatIsNotItsEntrysRecordIsNamedAsSuch) {
  const std::string key = "key-17";
  const std::string value(100, 'v');
  std::string rec(storage::record_size(static_cast<std::uint32_t>(key.size()),
                                       static_cast<std::uint32_t>(value.size())),
                  '\0');
  const std::uint32_t size =
      storage::encode_record(rec.data(), storage::WriteOp::kPut, 3, key, value, 42);
  ASSERT_EQ(size, rec.size());
  const std::uint64_t e = storage::cold_word(7, 4096, size);
  const std::string_view k = key;
  storage::RecordView rv;
  EXPECT_EQ(engine::ColdStore::record_fault(e, rec.data(), size, 3, &k, &rv), "");
  EXPECT_EQ(rv.value, value);
  EXPECT_EQ(rv.cts, 42u);
  EXPECT_EQ(engine::ColdStore::record_fault(e, rec.data(), size, 3, nullptr, &rv), "");

  EXPECT_EQ(engine::ColdStore::record_fault(e, rec.data(), size - 1, 3, &k, &rv),
            "the file ends before it");
  const std::string_view other = "key-18";
  EXPECT_EQ(engine::ColdStore::record_fault(e, rec.data(), size, 3, &other, &rv),
            engine::ColdStore::kNotItsRecord);
  EXPECT_EQ(engine::ColdStore::record_fault(e, rec.data(), size, 4, &k, &rv),
            engine::ColdStore::kNotItsRecord);
  const std::uint64_t longer = storage::cold_word(7, 4096, size + storage::kRecordAlign);
  std::string padded = rec + std::string(storage::kRecordAlign, '\0');
  EXPECT_EQ(engine::ColdStore::record_fault(longer, padded.data(), padded.size(), 3, &k, &rv),
            engine::ColdStore::kNotItsRecord);
  std::string damaged = rec;
  damaged[storage::kRecordHeaderBytes + key.size() + 5] ^= 0x5a;
  EXPECT_EQ(engine::ColdStore::record_fault(e, damaged.data(), size, 3, &k, &rv),
            "write record checksum mismatch");
  std::string ref(
      storage::record_size(static_cast<std::uint32_t>(key.size()), storage::kRefValueBytes), '\0');
  const std::uint32_t ref_size = storage::encode_record(
      ref.data(), storage::WriteOp::kRef, 3, key, std::string(storage::kRefValueBytes, 'r'), 42);
  EXPECT_EQ(engine::ColdStore::record_fault(storage::cold_word(7, 4096, ref_size), ref.data(),
                                            ref_size, 3, &k, &rv),
            "holds no value");

  const Status shortened = engine::ColdStore::fault_status(e, size - 1, "the file ends before it");
  EXPECT_EQ(shortened.code(), Code::kCorruption);
  EXPECT_NE(shortened.message().find("came back short"), std::string_view::npos)
      << shortened.to_string();
  const Status wrong = engine::ColdStore::fault_status(e, size, engine::ColdStore::kNotItsRecord);
  EXPECT_EQ(wrong.code(), Code::kCorruption);
  EXPECT_NE(wrong.message().find(engine::ColdStore::describe(7, 4096, size)),
            std::string_view::npos)
      << wrong.to_string();
  EXPECT_NE(wrong.message().find(engine::ColdStore::kNotItsRecord), std::string_view::npos);
}

// A read error and a record that does not verify fail the transaction that met them (IOError,
// Corruption), nothing else: the engine runs on, and the record reads once the disk is fixed.
TEST(ColdStore, DamagedColdRecordFailsOnlyItsReader) {
  auto fs = std::make_shared<storage::SimFileSystem>(13);
  Loaded l;
  open_loaded(fs, &l);
  auto& db = l.db;
  Table** t = &l.t;
  std::uint64_t e = 0;
  const int k = l.first_cold(&e);
  ASSERT_GE(k, 0);
  const mvcc::entry::ColdAddress a = mvcc::entry::cold(e);
  // Flip a byte of the record's value in its segment (found by number).
  std::string seg, original;
  ASSERT_NO_FATAL_FAILURE(damage_value(*fs, a, &seg, &original));
  {
    Result<Transaction> tx = db->begin();
    ASSERT_TRUE(tx.is_ok());
    Result<std::string_view> r = tx->get(**t, key_of(k));
    EXPECT_EQ(r.code(), Code::kCorruption) << r.status().to_string();
    // Another record still reads.
    Result<std::string_view> other = tx->get(**t, key_of(kRecords - 1));
    EXPECT_TRUE(other.is_ok()) << other.status().to_string();
  }
  EXPECT_EQ(db->stats().cold_read_errors, 1u);
  fs->poke(seg, a.offset + storage::kRecordHeaderBytes + 8, original, true);
  Result<Transaction> tx = db->begin();
  ASSERT_TRUE(tx.is_ok());
  Result<std::string_view> r = tx->get(**t, key_of(k));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, value_of(k, 0));
}

// Records in no order on storage (each rewritten, in a random order, after the load): the
// scan's plan makes a run of each record (or of a few that happen to lie close), so it reads
// about a block per record, not an extent per record; the rows are exact either way.
TEST(ColdStore, AScanOfScatteredRecordsReadsAboutABlockPerRecord) {
  auto fs = std::make_shared<storage::SimFileSystem>(41);
  Loaded l;
  open_loaded(fs, &l);
  std::vector<int> order(kRecords);
  for (int k = 0; k < kRecords; ++k) order[k] = k;
  util::Rng rng(43);
  for (int k = kRecords - 1; k > 0; --k) std::swap(order[k], order[rng.uniform(k + 1)]);
  for (int i = 0; i < kRecords; i += 50) {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 50; ++k)
      ASSERT_TRUE(tx->put(*l.t, key_of(order[k]), value_of(order[k], 1)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
  }
  ASSERT_TRUE(l.db->set_cache_reads(*l.t, false).is_ok());
  std::vector<std::string> sorted;
  for (int i = 0; i < kRecords; ++i) sorted.push_back(key_of(i));
  std::sort(sorted.begin(), sorted.end());
  const DatabaseStats before = l.db->stats();
  std::vector<std::string> keys;
  bool wrong = false;
  Status out;
  std::vector<testing::ListGenerator::Body> bodies;
  bodies.push_back([&](Tx& tx) -> Task<Status> {
    out = co_await tx.scan(*l.t, "", "", 0, [&](std::string_view k, std::string_view v) {
      if (v != value_of(std::stoi(std::string(k.substr(3))), 1)) wrong = true;
      keys.emplace_back(k);
      return true;
    });
    co_return Status::ok();
  });
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  ASSERT_TRUE(l.db->run(gens, testing::exec_of(
                                  ExecCase{ExecMode::kInterleaved, SchedulerPolicy::kBatch}, 1))
                  .is_ok());
  ASSERT_TRUE(out.is_ok()) << out.to_string();
  EXPECT_FALSE(wrong);
  EXPECT_EQ(keys, sorted);
  const DatabaseStats after = l.db->stats();
  const std::uint64_t records = after.cold_reads - before.cold_reads;
  const std::uint64_t bytes = after.cold_read_bytes - before.cold_read_bytes;
  ASSERT_GT(records, std::uint64_t{kRecords} / 2);
  // A record of ~640 bytes is one or two blocks, three when two lie within a read's gap; an
  // extent per record would be 128 KiB each.
  EXPECT_LT(bytes / records, std::uint64_t{12} << 10) << bytes << " bytes for " << records;
  EXPECT_EQ(after.cold_read_errors, before.cold_read_errors);
}

// One table of `all` records bulk-loaded straight to storage, keys zero-padded so the file
// holds them in key order; the records `cached(i)` names are then read once into memory (no
// budget: they stay), and later reads of the table are not cached, so every scan reads the
// cold ones again.
struct Striped {
  std::shared_ptr<storage::SimFileSystem> fs;
  std::unique_ptr<Database> db;
  Table* t = nullptr;
  int all = 0;
  static std::string key(int i) {
    std::string k = std::to_string(i);
    return "p" + std::string(6 - k.size(), '0') + k;
  }
  static std::string value(int i) { return "v" + std::to_string(i) + std::string(100, 'x'); }
};

void open_striped(std::uint64_t seed, int all, const std::function<bool(int)>& cached, Striped* s) {
  s->fs = std::make_shared<storage::SimFileSystem>(seed);
  s->all = all;
  Options o = test::wl_options(0);
  o.workers = 1;
  o.durability.checkpoint_log_bytes = 0;
  auto opened = test::open_sim(o, s->fs);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  s->db = std::move(opened).value();
  s->t = *s->db->create_table("t");
  int next = 0;
  std::string key, val;
  ASSERT_TRUE(s->db
                  ->bulk_load(*s->t,
                              [&](std::string_view* k, std::string_view* v) {
                                if (next == all) return false;
                                key = Striped::key(next);
                                val = Striped::value(next);
                                ++next;
                                *k = key;
                                *v = val;
                                return true;
                              },
                              {.keep_in_memory = false})
                  .is_ok());
  Result<Transaction> tx = s->db->begin();
  ASSERT_TRUE(tx.is_ok());
  for (int i = 0; i < all; ++i) {
    if (!cached(i)) continue;
    Result<std::string_view> r = tx->get(*s->t, Striped::key(i));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  }
  ASSERT_TRUE(tx->commit().is_ok());
  ASSERT_TRUE(s->db->set_cache_reads(*s->t, false).is_ok());
}

// A scan of the whole table on one worker (interleaved, so it reads in extents): every row
// checked, and the storage reads it made.
struct StripedScan {
  int rows = 0;
  bool wrong = false;
  Status status;
  std::uint64_t records = 0;  // cold records read
  std::uint64_t ios = 0;      // storage reads that brought them
  std::uint64_t errors = 0;
};

void scan_striped(Striped& s, ScanOrder order, StripedScan* r) {
  const DatabaseStats before = s.db->stats();
  std::vector<testing::ListGenerator::Body> bodies;
  bodies.push_back([&](Tx& tx) -> Task<Status> {
    r->status = co_await tx.scan(
        *s.t, "", "", 0,
        [&](std::string_view k, std::string_view v) {
          const int i = order == ScanOrder::kReverse ? s.all - 1 - r->rows : r->rows;
          if (k != Striped::key(i) || v != Striped::value(i)) r->wrong = true;
          ++r->rows;
          return true;
        },
        order);
    co_return Status::ok();
  });
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  ASSERT_TRUE(s.db->run(gens, testing::exec_of(
                                  ExecCase{ExecMode::kInterleaved, SchedulerPolicy::kBatch}, 1))
                  .is_ok());
  const DatabaseStats after = s.db->stats();
  r->records = after.cold_reads - before.cold_reads;
  r->ios = after.cold_read_ios - before.cold_read_ios;
  r->errors = after.cold_read_errors - before.cold_read_errors;
}

// A scan's plan goes a bounded number of entries ahead of it and grows only while the scan
// meets cold records. Past a stretch of cached records longer than that bound, the plan has
// stopped behind the scan; the scan must start it anew at the next cold record, so the cold
// records after the stretch are read in extents too, not one read each.
TEST(ColdStore, AScanPlansAnewAfterALongCachedStretch) {
  constexpr int kColdHead = 2000;  // cold, then cached up to kColdTail, then cold to the end
  constexpr int kColdTail = kColdHead + 3 * 4096 / 2;
  constexpr int kAll = kColdTail + 4000;
  Striped s;
  open_striped(47, kAll, [](int i) { return i >= kColdHead && i < kColdTail; }, &s);
  StripedScan r;
  scan_striped(s, ScanOrder::kForward, &r);
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_FALSE(r.wrong);
  EXPECT_EQ(r.rows, kAll);
  EXPECT_EQ(r.records, std::uint64_t{kAll - (kColdTail - kColdHead)});
  // About 6,000 records of ~140 bytes in 128 KiB extents: a handful of reads. Were the records
  // after the stretch read alone, that would be 4,000 reads.
  EXPECT_LT(r.ios, 40u) << r.records << " records in " << r.ios << " reads";
  EXPECT_EQ(r.errors, 0u);
}

// Cold runs between long cached stretches (an analytical table mostly in memory): the plan
// stops looking ahead a little into each stretch and starts anew at the next run, so every run
// is read with one read, none twice, no cached record is read, and the rows are exact, forward
// and reverse.
TEST(ColdStore, AScanReadsEachColdRunBetweenCachedStretchesOnce) {
  constexpr int kRunsOf = 8;
  constexpr int kCold = 300;    // records of a cold run: ~42 KiB, one extent
  constexpr int kCached = 900;  // records of a cached stretch: longer than an extent
  constexpr int kAll = kRunsOf * (kCold + kCached);
  Striped s;
  open_striped(53, kAll, [](int i) { return i % (kCold + kCached) >= kCold; }, &s);
  for (const ScanOrder order : {ScanOrder::kForward, ScanOrder::kReverse}) {
    const bool reverse = order == ScanOrder::kReverse;
    StripedScan r;
    scan_striped(s, order, &r);
    ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
    EXPECT_FALSE(r.wrong) << "reverse " << reverse;
    EXPECT_EQ(r.rows, kAll);
    EXPECT_EQ(r.records, std::uint64_t{kRunsOf * kCold});
    EXPECT_EQ(r.ios, std::uint64_t{kRunsOf}) << "reverse " << reverse;
    EXPECT_EQ(r.errors, 0u);
  }
}

// Extents: a scan over cold records, forward and reverse, gets every row right and in order
// with many records per storage read; one damaged record inside an extent fails the scan with
// Corruption (the rows it delivered before are right, none is wrong), and once repaired the
// scan is whole again.
TEST(ColdStore, ExtentsDeliverExactRowsAndFailOnADamagedRecord) {
  auto fs = std::make_shared<storage::SimFileSystem>(17);
  Loaded l;
  open_loaded(fs, &l);
  Table* const t = l.t;
  // Scans leave the records cold, so each pass reads them again. The record to damage stays
  // named by its OID (no demotion from here on): a record named by its address would take a
  // fresh OID and a version in memory at the first scan, and the damaged one would go unread.
  ASSERT_TRUE(l.db->set_cache_reads(*t, false).is_ok());
  l.hold_demotions();
  std::uint64_t e = 0;
  const int damaged = l.first_cold(&e, /*by_oid=*/true);
  ASSERT_GE(damaged, 0);
  std::vector<std::string> sorted;
  for (int i = 0; i < kRecords; ++i) sorted.push_back(key_of(i));
  std::sort(sorted.begin(), sorted.end());
  const auto scan = [&](ScanOrder order, std::vector<std::string>* keys, bool* wrong) -> Status {
    keys->clear();
    *wrong = false;
    Status out;
    std::vector<testing::ListGenerator::Body> bodies;
    bodies.push_back([&](Tx& tx) -> Task<Status> {
      out = co_await tx.scan(
          *t, "", "", 0,
          [&](std::string_view k, std::string_view v) {
            if (v != value_of(std::stoi(std::string(k.substr(3))), 0)) *wrong = true;
            keys->emplace_back(k);
            return true;
          },
          order);
      co_return Status::ok();
    });
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ExecOptions x = testing::exec_of(ExecCase{ExecMode::kInterleaved, SchedulerPolicy::kBatch}, 1);
    EXPECT_TRUE(l.db->run(gens, x).is_ok());
    return out;
  };
  for (ScanOrder order : {ScanOrder::kForward, ScanOrder::kReverse}) {
    SCOPED_TRACE(order == ScanOrder::kForward ? "forward" : "reverse");
    const DatabaseStats before = l.db->stats();
    std::vector<std::string> keys;
    bool wrong = false;
    const Status s = scan(order, &keys, &wrong);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_FALSE(wrong);
    if (order == ScanOrder::kReverse) std::reverse(keys.begin(), keys.end());
    EXPECT_EQ(keys, sorted);
    const DatabaseStats after = l.db->stats();
    const std::uint64_t records = after.cold_reads - before.cold_reads;
    const std::uint64_t ios = after.cold_read_ios - before.cold_read_ios;
    EXPECT_GT(records, std::uint64_t{kRecords} / 2);
    EXPECT_GE(records, 4 * ios) << records << " records in " << ios << " reads";
    EXPECT_EQ(after.cold_read_errors, before.cold_read_errors);
  }
  // Damage the record's value in its segment; the scan meets it inside an extent.
  const mvcc::entry::ColdAddress a = mvcc::entry::cold(e);
  std::string seg, original;
  ASSERT_NO_FATAL_FAILURE(damage_value(*fs, a, &seg, &original));
  const std::uint64_t at = a.offset + storage::kRecordHeaderBytes + 8;
  std::vector<std::string> keys;
  bool wrong = false;
  Status s = scan(ScanOrder::kForward, &keys, &wrong);
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  EXPECT_FALSE(wrong);
  // Every row before it, in order, and none after.
  const auto before_damaged = std::lower_bound(sorted.begin(), sorted.end(), key_of(damaged));
  EXPECT_EQ(keys, std::vector<std::string>(sorted.begin(), before_damaged));
  fs->poke(seg, at, original, true);
  s = scan(ScanOrder::kForward, &keys, &wrong);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_FALSE(wrong);
  EXPECT_EQ(keys, sorted);
}

// Bytes of the files of one kind in /db ("log-", "ckpt-").
std::uint64_t bytes_of(storage::SimFileSystem& fs, const std::string& prefix, int* count) {
  std::vector<std::string> names;
  EXPECT_TRUE(fs.list("/db", &names).is_ok());
  std::uint64_t bytes = 0;
  *count = 0;
  for (const std::string& n : names) {
    if (n.rfind(prefix, 0) != 0) continue;
    std::string img;
    EXPECT_TRUE(fs.peek("/db/" + n, &img));
    bytes += img.size();
    ++*count;
  }
  return bytes;
}

void expect_round(Database& db, Table* t, const std::vector<int>& rounds) {
  for (int i = 0; i < kRecords; i += 500) {
    Result<Transaction> tx = db.begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 500; ++k) {
      Result<std::string_view> r = tx->get(*t, key_of(k));
      ASSERT_TRUE(r.is_ok()) << k << ": " << r.status().to_string();
      ASSERT_EQ(*r, value_of(k, rounds[k])) << k;
    }
    ASSERT_TRUE(tx->commit().is_ok());
  }
}

// An open under a budget where the index pages builds each tree over the runs of the
// checkpoint it recovers (index-paging.md, decision 6) and reads no part for it: the leaves
// load as operations need them, each run checked as it is read. The open's own checkpoint
// carries the runs of leaves still on storage over without reading them, so opens one after
// another write no part and the directory does not grow. A run damaged on disk is Corruption
// naming its part for the operations that need its leaf, never a wrong record, and the rest
// reads on.
// A budget that writers exceed from their first commit: the hand must still lap the records
// already durable, not trail the writers at the allocation front, where every record it
// visits was just written (not yet durable: neither evicted nor marked).
TEST(ColdStore, TheHandLapsWhileWritersStayAheadOfIt) {
  auto fs = std::make_shared<storage::SimFileSystem>(13);
  Options o = budget_options();
  o.memory_budget_bytes = 1;
  Loaded l;
  open_loaded(fs, o, &l);
  EXPECT_GT(l.db->stats().evictions, std::uint64_t{kRecords} / 2);
  expect_round(*l.db, l.t, std::vector<int>(kRecords, 0));
}

// Inner nodes on storage (Options::page_index_inner, the default) and checkpoints: a checkpoint
// reads through them to the leaves below, the open after it adopts the runs it listed, and the
// hand sends whole subtrees out again between opens; every record reads back each time.
TEST(ColdStore, CheckpointsReadThroughInnerNodesOnStorage) {
  auto fs = std::make_shared<storage::SimFileSystem>(41);
  Options o = budget_options();
  o.memory_budget_bytes = 1;  // everything that may leave memory leaves it
  Loaded l;
  open_loaded(fs, o, &l);
  std::vector<int> rounds(kRecords, 0);
  for (int open = 0; open < 3; ++open) {
    SCOPED_TRACE(::testing::Message() << "open " << open);
    // Every seventh record written again (their leaves change), then every thirteenth read
    // on a worker, whose sweeps move the hands past the rest.
    for (int i = 0; i < kRecords; i += 50 * 7) {
      Result<Transaction> tx = l.db->begin();
      ASSERT_TRUE(tx.is_ok());
      for (int k = i; k < std::min(kRecords, i + 50 * 7); k += 7) {
        rounds[k] = open + 1;
        ASSERT_TRUE(tx->put(*l.t, key_of(k), value_of(k, rounds[k])).is_ok());
      }
      ASSERT_TRUE(tx->commit().is_ok());
    }
    get_on_a_worker(l, 13, false);
    ASSERT_GT(l.db->stats().index_inner_nodes_stored, 0u);
    // The scan reads through them; the records it copies out of log segments and older parts
    // are renamed in their leaves afterwards, which loads those leaves (and the path to them).
    ASSERT_TRUE(l.db->checkpoint().is_ok());
    open_table_t(fs, o, false, &l);
    const DurabilityStats d = l.db->durability_stats();
    EXPECT_EQ(d.recovered_checkpoint_records, std::uint64_t{kRecords});
    EXPECT_EQ(l.db->stats().index_leaves_stored, d.recovered_checkpoint_runs);
    expect_round(*l.db, l.t, rounds);
  }
}

TEST(ColdStore, AnOpenBuildsTheIndexOverTheCheckpointsRunsAndLoadsThemOnDemand) {
  auto fs = std::make_shared<storage::SimFileSystem>(31);
  Loaded l;
  open_loaded(fs, &l);
  ASSERT_TRUE(l.db->checkpoint().is_ok());
  const std::vector<int> rounds(kRecords, 0);
  int parts = 0;
  const std::uint64_t first_bytes = bytes_of(*fs, "ckpt-", &parts);
  for (int open = 0; open < 4; ++open) {
    SCOPED_TRACE(::testing::Message() << "open " << open);
    open_table_t(fs, budget_options(), false, &l);
    const DatabaseStats s = l.db->stats();
    const DurabilityStats d = l.db->durability_stats();
    EXPECT_GE(d.recovered_checkpoint_runs, std::uint64_t{kRecords} / 41);
    EXPECT_EQ(d.recovered_checkpoint_records, std::uint64_t{kRecords});
    EXPECT_EQ(s.index_leaves_stored, d.recovered_checkpoint_runs);
    EXPECT_EQ(s.index_leaf_evictions, 0u);
    // The adopted list, kept for carrying runs over, is counted (a run's entry and its index
    // entry: more than 16 bytes a run).
    EXPECT_GT(s.index_run_list_bytes, 16 * d.recovered_checkpoint_runs);
    EXPECT_EQ(s.records_named_by_address, std::uint64_t{kRecords});
    EXPECT_EQ(s.records, std::uint64_t{kRecords});
    // The open's checkpoint carried every run over: it wrote no part.
    EXPECT_EQ(bytes_of(*fs, "ckpt-", &parts), first_bytes) << parts << " parts";
    expect_round(*l.db, l.t, rounds);
    EXPECT_GE(l.db->stats().index_leaf_loads, d.recovered_checkpoint_runs - 1);
  }
  l.db.reset();
  // One byte of the first record of the first run the newest checkpoint lists.
  storage::CheckpointInfo newest;
  for (const char* slot : {"/db/CHECKPOINT-0", "/db/CHECKPOINT-1"}) {
    std::string img;
    storage::CheckpointInfo info;
    if (!fs->peek(slot, &img) || !storage::read_checkpoint(img, &info).is_ok() || !info.valid) {
      continue;
    }
    if (info.header.seq > newest.header.seq) newest = std::move(info);
  }
  ASSERT_GT(newest.run_count, 0u);
  std::size_t at = 0;
  const storage::ColdAddress run = storage::cold(storage::next_run(newest.runs, &at).run.address);
  const std::string part = "/db/" + storage::part_file_name(run.segment);
  std::string img;
  ASSERT_TRUE(fs->peek(part, &img));
  const std::size_t byte = run.offset + storage::kRecordHeaderBytes + 2;
  ASSERT_LT(byte, img.size());
  fs->poke(part, byte, std::string(1, static_cast<char>(img[byte] ^ 0x20)), false);
  open_table_t(fs, budget_options(), false, &l);
  int corrupt = 0;
  for (int k = 0; k < kRecords; ++k) {
    Result<Transaction> tx = l.db->begin();
    ASSERT_TRUE(tx.is_ok());
    Result<std::string_view> r = tx->get(*l.t, key_of(k));
    if (r.is_ok()) {
      EXPECT_EQ(*r, value_of(k, 0)) << k;
    } else {
      EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().to_string();
      EXPECT_NE(r.status().message().find(storage::part_file_name(run.segment)), std::string::npos)
          << r.status().to_string();
      ++corrupt;
    }
    tx->abort();
  }
  // The keys of that one leaf, the first ones.
  EXPECT_GT(corrupt, 0);
  EXPECT_LE(corrupt, 41);
}

// The log is the database: checkpoints under a budget refer to the records that live in
// checkpoint parts, copy the cold ones out of log segments, and the files nothing needs go —
// round after round the directory stays a small multiple of the data. An open under the budget
// installs addresses, not values; an open without one reads the same records.
TEST(ColdStore, CheckpointsKeepOnlyTheFilesColdRecordsNeed) {
  auto fs = std::make_shared<storage::SimFileSystem>(17);
  std::vector<int> rounds(kRecords, 0);
  const std::uint64_t data = std::uint64_t{kRecords} * (kValueBytes + 40);
  {
    auto db = test::open_sim(budget_options(), fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Result<Table*> t = (*db)->create_table("t");
    ASSERT_TRUE(t.is_ok());
    load(**db, *t, 0);
    for (int round = 1; round <= 12; ++round) {
      // A third of the records changes each round; every record is read back in between.
      for (int i = round % 3; i < kRecords; i += 150) {
        Result<Transaction> tx = (*db)->begin();
        ASSERT_TRUE(tx.is_ok());
        for (int k = i; k < std::min(kRecords, i + 150); k += 3) {
          ASSERT_TRUE(tx->put(**t, key_of(k), value_of(k, round)).is_ok());
          rounds[k] = round;
        }
        ASSERT_TRUE(tx->commit().is_ok());
      }
      ASSERT_TRUE((*db)->checkpoint().is_ok());
      expect_round(**db, *t, rounds);
      int logs = 0, parts = 0;
      const std::uint64_t log_bytes = bytes_of(*fs, "log-", &logs);
      const std::uint64_t part_bytes = bytes_of(*fs, "ckpt-", &parts);
      EXPECT_GT(parts, 0);
      // Without deletion the log alone would hold (round + 1) copies of a third or more.
      EXPECT_LT(log_bytes + part_bytes, 4 * data)
          << "round " << round << ": " << logs << " segments, " << parts << " parts";
    }
    EXPECT_GT((*db)->stats().evictions, std::uint64_t{kRecords});
  }
  {
    auto db = test::open_sim(budget_options(), fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    const DatabaseStats s = (*db)->stats();
    EXPECT_EQ((*db)->durability_stats().recovered_checkpoint_records, std::uint64_t{kRecords});
    // The checkpoint listed a run per leaf it wrote (index-paging.md, decision 6), and each
    // agreed with the records in its part: a few dozen records a run, not one.
    const std::uint64_t runs = (*db)->durability_stats().recovered_checkpoint_runs;
    EXPECT_GE(runs, std::uint64_t{kRecords} / 41);
    EXPECT_LE(runs, std::uint64_t{kRecords} / 4);
    // The open built the index over those runs: every leaf on storage where the checkpoint
    // wrote it, none written by the open (before, it rebuilt the tree from the records and
    // wrote its leaves out again).
    EXPECT_EQ(s.index_leaves_stored, runs);
    EXPECT_EQ(s.index_leaf_evictions, 0u);
    // Addresses, not values: well under the budget, let alone the data.
    EXPECT_LT(s.live_version_bytes, std::uint64_t{256} << 10);
    Result<Table*> t = (*db)->open_table("t");
    ASSERT_TRUE(t.is_ok());
    expect_round(**db, *t, rounds);
    EXPECT_GT((*db)->stats().cold_reads, std::uint64_t{kRecords} / 2);
  }
  {
    Options o = budget_options();
    o.memory_budget_bytes = 0;
    o.page_index_leaves = false;
    auto db = test::open_sim(o, fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Result<Table*> t = (*db)->open_table("t");
    ASSERT_TRUE(t.is_ok());
    expect_round(**db, *t, rounds);
  }
}

// A cold record of the table: its key and leaf value, which names an OID whose entry is cold
// or (demoted by the leaves' hand) the cold address itself.
struct ColdName {
  std::string key;
  std::uint64_t named;
};
std::vector<ColdName> cold_records_of(Table& t) {
  std::vector<ColdName> out;
  EXPECT_TRUE(t.index().for_each([&](std::string_view key, std::uint64_t named) {
    if (mvcc::entry::is_cold(t.entry_named(named))) out.push_back({std::string(key), named});
  }));
  return out;
}
// Makes `n` read as the cold word `word`, where its record's name lives.
void set_cold_word(Table& t, const ColdName& n, std::uint64_t word) {
  if (leaf_value::names_oid(n.named)) {
    t.oids().entry(leaf_value::oid(n.named)).store(word);
    return;
  }
  std::uint64_t now = 0;
  ASSERT_TRUE(t.index().lookup(n.key, &now));
  ASSERT_TRUE(t.index().replace(n.key, now, word));
}

// `braid check`'s read of every record (engine/record_check.h): the cold records are read in
// file order as extents, each record verified and matched to its key, and a read error or a
// record that is not its key's fails the check.
TEST(ColdStore, CheckReadsEveryColdRecordOnceInFileOrder) {
  auto fs = std::make_shared<storage::SimFileSystem>(23);
  Loaded l;
  open_loaded(fs, &l);
  Table& t = *l.impl->table_at(0);
  // Every cold entry, and per file the blocks its records span: extents that never read a
  // block twice read at most that many. Counted once the count holds still: the idle worker
  // sweeps on while over budget, and evicts the last records loaded once the log has made them
  // durable, so a count taken before it did would leave the check more cold records than counted.
  std::vector<ColdName> colds = cold_records_of(t);
  for (int settled = 0, polls = 0; settled < 3; ++polls) {
    ASSERT_LT(polls, 500) << "the worker kept sweeping for 10 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<ColdName> now = cold_records_of(t);
    settled = now.size() == colds.size() ? settled + 1 : 0;
    colds = std::move(now);
  }
  const std::uint64_t cold = colds.size();
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const ColdName& n : colds) {
    const mvcc::entry::ColdAddress a = mvcc::entry::cold(t.entry_named(n.named));
    auto [it, fresh] = spans.try_emplace(a.segment, a.offset, a.offset + a.size);
    it->second.first = std::min(it->second.first, a.offset);
    it->second.second = std::max(it->second.second, a.offset + a.size);
  }
  ASSERT_GT(cold, std::uint64_t{kRecords} / 2);
  std::uint64_t span_bytes = 0;
  for (const auto& [file, sp] : spans) {
    // Whole blocks: a file opened with O_DIRECT is read in them.
    span_bytes += storage::round_up(sp.second, storage::kDirectAlign) -
                  sp.first / storage::kDirectAlign * storage::kDirectAlign;
  }

  std::uint64_t progress = 0;
  auto run = [&](const engine::ColdStore::BulkOptions& o, engine::RecordCheckCounts* n) {
    return engine::check_records(*l.impl, t, o, n, [&](std::uint64_t p) { progress = p; });
  };
  engine::RecordCheckCounts n;
  ASSERT_TRUE(run({}, &n).is_ok());
  EXPECT_EQ(n.records, std::uint64_t{kRecords});
  EXPECT_EQ(n.cold, cold);
  EXPECT_EQ(n.hot + n.cold, n.records);
  EXPECT_EQ(n.bulk.records, cold);
  EXPECT_LE(n.bulk.bytes, span_bytes);
  EXPECT_GE(n.bulk.bytes, cold * (kValueBytes + 16));
  // ~640-byte records: one extent read holds many.
  EXPECT_LT(n.bulk.reads * 50, cold) << n.bulk.reads << " reads for " << cold << " records";
  EXPECT_GE(progress, std::uint64_t{kRecords});

  // A window of two four-block extents: many more reads, the same records, still no block twice.
  engine::RecordCheckCounts small;
  ASSERT_TRUE(run({2, 16384, 0}, &small).is_ok());
  EXPECT_EQ(small.records, n.records);
  EXPECT_EQ(small.bulk.records, cold);
  EXPECT_GT(small.bulk.reads, 4 * n.bulk.reads);
  EXPECT_LE(small.bulk.bytes, span_bytes);

  // A read error fails the check with IOError; the next check passes.
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 3, false);
  engine::RecordCheckCounts failed;
  const Status eio = run({}, &failed);
  EXPECT_EQ(eio.code(), Code::kIOError) << eio.to_string();
  EXPECT_EQ(fs->faults_fired(), 1u);
  engine::RecordCheckCounts again;
  EXPECT_TRUE(run({}, &again).is_ok());
  EXPECT_EQ(again.bulk.records, cold);

  // Two cold entries swapped: each names a whole record of the table, but not its key's.
  const ColdName& a = colds[10];
  const ColdName& b = colds[colds.size() - 10];
  const std::uint64_t ea = t.entry_named(a.named), eb = t.entry_named(b.named);
  set_cold_word(t, a, eb);
  set_cold_word(t, b, ea);
  engine::RecordCheckCounts swapped;
  const Status bad = run({}, &swapped);
  EXPECT_EQ(bad.code(), Code::kCorruption) << bad.to_string();
  EXPECT_NE(bad.to_string().find("not the record of the key"), std::string::npos)
      << bad.to_string();
  set_cold_word(t, a, ea);
  set_cold_word(t, b, eb);
  engine::RecordCheckCounts restored;
  EXPECT_TRUE(run({}, &restored).is_ok());
}

// A checkpoint copies the cold records that live in log segments into its parts: it reads each
// leaf's such records together, in file order through worker 0's ring (far fewer reads than
// records), and a read that fails fails that checkpoint only.
TEST(ColdStore, ACheckpointReadsTheRecordsItCopiesTogether) {
  auto fs = std::make_shared<storage::SimFileSystem>(37);
  Loaded l;
  open_loaded(fs, &l);
  Table& t = *l.impl->table_at(0);
  const std::uint64_t in_logs = cold_records_of(t).size();  // no checkpoint holds records yet
  ASSERT_GT(in_logs, std::uint64_t{kRecords} / 2);

  // The first copy fails on a read: IOError, nothing halts, nothing changes.
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 2, false);
  const Status failed = l.db->checkpoint();
  EXPECT_EQ(failed.code(), Code::kIOError) << failed.to_string();
  EXPECT_EQ(fs->faults_fired(), 1u);
  EXPECT_FALSE(l.db->durability_stats().halted);

  const std::uint64_t reads = l.db->stats().cold_read_ios;
  ASSERT_TRUE(l.db->checkpoint().is_ok());
  const std::uint64_t used = l.db->stats().cold_read_ios - reads;
  EXPECT_GT(used, 0u);
  EXPECT_LT(used * 4, in_logs) << used << " reads to copy " << in_logs << " records";
  // Every cold entry now names the new checkpoint's part, and every value reads back.
  const std::vector<int> rounds(kRecords, 0);
  expect_round(*l.db, l.t, rounds);
  l.db.reset();
  auto db = test::open_sim(budget_options(), fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Result<Table*> t2 = (*db)->open_table("t");
  ASSERT_TRUE(t2.is_ok());
  expect_round(**db, *t2, rounds);
}

// Differential: one seeded workload — gets, puts, inserts, removes and scans from an
// application thread, a checkpoint and a reopen halfway — gives the same transcript (every
// operation's outcome and every value read) with a one-byte budget, where nearly every access
// is a cold read, as without a budget; and again with the leaves paged too, where the reopen
// adopts the checkpoint's runs, records are named by their address and the hand demotes them.
std::string differential_transcript(std::uint64_t budget, bool page_leaves = false) {
  constexpr int kKeys = 3000;
  auto fs = std::make_shared<storage::SimFileSystem>(29);
  Options o = test::wl_options(0);
  o.memory_budget_bytes = budget;
  o.page_index_leaves = page_leaves;
  util::Rng rng(31);
  std::string out;
  for (int life = 0; life < 2; ++life) {
    auto db = test::open_sim(o, fs);
    EXPECT_TRUE(db.is_ok()) << db.status().to_string();
    if (!db.is_ok()) return out;
    Result<Table*> t = life == 0 ? (*db)->create_table("t") : (*db)->open_table("t");
    EXPECT_TRUE(t.is_ok());
    if (!t.is_ok()) return out;
    // Every key there to begin with: ~70 leaves, enough for the leaves' hand to evict some.
    for (int first = 0; life == 0 && first < kKeys; first += 20) {
      Result<Transaction> tx = (*db)->begin();
      EXPECT_TRUE(tx.is_ok());
      if (!tx.is_ok()) return out;
      for (int k = first; k < first + 20; ++k) {
        Status s = tx->insert(**t, key_of(k), value_of(k, 0));
        EXPECT_TRUE(s.is_ok()) << s.to_string();
      }
      Status c = tx->commit();
      EXPECT_TRUE(c.is_ok()) << c.to_string();
    }
    for (int txn = 0; txn < 400; ++txn) {
      Result<Transaction> tx = (*db)->begin();
      EXPECT_TRUE(tx.is_ok());
      if (!tx.is_ok()) return out;
      for (int op = 0; op < 6; ++op) {
        const std::string key = key_of(static_cast<int>(rng.uniform(kKeys)));
        const std::string value = value_of(static_cast<int>(rng.uniform(1000)), txn);
        switch (rng.uniform(6)) {
          case 0:
          case 1: {
            Result<std::string_view> r = tx->get(**t, key);
            out += "g" + std::to_string(static_cast<int>(r.code()));
            if (r.is_ok()) out += std::string(*r, 0, 12);
            break;
          }
          case 2:
            out += "p" + std::to_string(static_cast<int>(tx->put(**t, key, value).code()));
            break;
          case 3:
            out += "i" + std::to_string(static_cast<int>(tx->insert(**t, key, value).code()));
            break;
          case 4:
            out += "r" + std::to_string(static_cast<int>(tx->remove(**t, key).code()));
            break;
          default: {
            std::string seen;
            const std::string end = key_of(static_cast<int>(rng.uniform(kKeys)));
            Status s = tx->scan(**t, key, end, 20, [&](std::string_view k, std::string_view v) {
              seen += std::string(k) + "=" + std::string(v, 0, 8) + ";";
              return true;
            });
            out += "s" + std::to_string(static_cast<int>(s.code())) + seen;
          }
        }
      }
      out += "c" + std::to_string(static_cast<int>(tx->commit().code())) + "\n";
    }
    if (life == 0) {
      EXPECT_TRUE((*db)->checkpoint().is_ok());
    }
    if (budget != 0) {
      const DatabaseStats s = (*db)->stats();
      EXPECT_GT(s.cold_reads, 100u);
      EXPECT_EQ(s.cold_read_errors, 0u);
      if (page_leaves) {
        EXPECT_GT(s.index_leaf_loads, 50u);
        EXPECT_GT(s.index_leaf_evictions, 20u);
        EXPECT_GT(s.records_demoted, 100u);
        if (life == 1) {
          EXPECT_GT((*db)->durability_stats().recovered_checkpoint_runs, 0u);
        }
      }
    }
  }
  return out;
}

TEST(ColdStore, SameWorkloadSameResultsWithAndWithoutABudget) {
  const std::string with = differential_transcript(1);
  const std::string paged = differential_transcript(1, true);
  const std::string without = differential_transcript(0);
  ASSERT_GT(without.size(), 10000u);
  EXPECT_EQ(with, without);
  EXPECT_EQ(paged, without);
}

// set_cache_reads(false): every get of a cold record is a read (MosaicDB's uncached cold store),
// through the application API and the workers alike; a cached table reads a record once.
TEST(ColdStore, AnUncachedTableReadsEveryGetFromStorage) {
  auto fs = std::make_shared<storage::SimFileSystem>(43);
  Options o = test::wl_options(0);
  o.durability.checkpoint_log_bytes = 0;
  auto opened = test::open_sim(o, fs);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  std::unique_ptr<Database> db = std::move(opened).value();
  Table* t = *db->create_table("cold");
  int next = 0;
  std::string key, value;
  ASSERT_TRUE(db->bulk_load(*t,
                            [&](std::string_view* k, std::string_view* v) {
                              if (next == 32) return false;
                              key = key_of(next);
                              value = value_of(next, 2);
                              ++next;
                              *k = key;
                              *v = value;
                              return true;
                            },
                            {.keep_in_memory = false})
                  .is_ok());
  auto reads_of = [&](int times, bool workers) {
    const std::uint64_t before = db->stats().cold_reads;
    for (int i = 0; i < times; ++i) {
      if (!workers) {
        Result<Transaction> tx = db->begin();
        EXPECT_TRUE(tx.is_ok());
        Result<std::string_view> r = tx->get(*t, key_of(7));
        EXPECT_TRUE(r.is_ok()) << r.status().to_string();
        if (r.is_ok()) {
          EXPECT_EQ(*r, value_of(7, 2));
        }
        EXPECT_TRUE(tx->commit().is_ok());
        continue;
      }
      std::vector<testing::ListGenerator::Body> bodies;
      bodies.push_back([&](Tx& tx) -> Task<Status> {
        Result<std::string_view> r = co_await tx.get(*t, key_of(7));
        if (!r.is_ok()) co_return r.status();
        if (*r != value_of(7, 2)) co_return Status::corruption("wrong value");
        co_return Status::ok();
      });
      testing::ListGenerator gen(std::move(bodies));
      TxnGenerator* gens[] = {&gen};
      Status rs =
          db->run(gens, testing::exec_of({ExecMode::kInterleaved, SchedulerPolicy::kDualQueue}, 4));
      EXPECT_TRUE(rs.is_ok()) << rs.to_string();
      EXPECT_EQ(gen.outcomes, std::vector<Code>{Code::kOk});
    }
    return db->stats().cold_reads - before;
  };
  ASSERT_TRUE(db->set_cache_reads(*t, false).is_ok());
  EXPECT_EQ(reads_of(3, false), 3u);
  EXPECT_EQ(reads_of(3, true), 3u);
  EXPECT_EQ(db->stats().read_drops, 6u);
  ASSERT_TRUE(db->set_cache_reads(*t, true).is_ok());
  EXPECT_EQ(reads_of(3, true), 1u);
  EXPECT_EQ(reads_of(3, false), 0u);
  EXPECT_EQ(db->stats().read_drops, 6u);
  Result<std::unique_ptr<Database>> other = Database::open(Options{});
  ASSERT_TRUE(other.is_ok());
  Result<Table*> foreign = (*other)->create_table("x");
  ASSERT_TRUE(foreign.is_ok());
  EXPECT_EQ(db->set_cache_reads(**foreign, false).code(), Code::kInvalidArgument);
}

// A database on the simulated disk for one worker with `slots` slots, checkpoints off, and
// table "cold" bulk-loaded straight to storage with `n` records (values of round `round`).
struct ColdDb {
  std::unique_ptr<Database> db;
  Table* cold = nullptr;
};
// `dir`: where the database lives on `fs` (the simulated disk's, or a real directory).
ColdDb open_with_cold_table(std::shared_ptr<storage::FileSystem> fs, std::uint32_t slots, int n,
                            int round, const std::string& dir = "/db") {
  Options o = test::wl_options(0);
  o.directory = dir;
  o.workers = 1;
  o.slots_per_worker = slots;
  o.durability.checkpoint_log_bytes = 0;
  Result<std::unique_ptr<Database>> opened = [&]() -> Result<std::unique_ptr<Database>> {
    auto impl = engine::DatabaseImpl::open(o, std::move(fs));
    if (!impl.is_ok()) return impl.status();
    return engine::WorkerPool::wrap(std::move(impl).value());
  }();
  EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
  if (!opened.is_ok()) return {};
  ColdDb out{std::move(opened).value(), nullptr};
  out.cold = *out.db->create_table("cold");
  int next = 0;
  EXPECT_TRUE(out.db
                  ->bulk_load(*out.cold,
                              [&](std::string_view* k, std::string_view* v) {
                                if (next == n) return false;
                                static thread_local std::string key, value;
                                key = key_of(next);
                                value = value_of(next, round);
                                ++next;
                                *k = key;
                                *v = value;
                                return true;
                              },
                              {.keep_in_memory = false})
                  .is_ok());
  return out;
}

// A cold record whose file cannot be opened (gone from the directory) fails its read with
// IOError, through the application API and a worker alike. No storage read was made, so none
// is counted; each failed load is one error.
TEST(ColdStore, ARecordWhoseFileIsGoneFailsWithoutCountingARead) {
  auto fs = std::make_shared<storage::SimFileSystem>(53);
  ColdDb c = open_with_cold_table(fs, 4, 32, 1);
  ASSERT_NE(c.cold, nullptr);
  std::vector<std::string> names;
  ASSERT_TRUE(fs->list("/db", &names).is_ok());
  int parts = 0;
  for (const std::string& name : names) {
    std::uint64_t number = 0;
    if (!storage::parse_part_file_name(name, &number)) continue;
    ASSERT_TRUE(fs->remove("/db/" + name).is_ok());
    ++parts;
  }
  ASSERT_GT(parts, 0);
  const DatabaseStats before = c.db->stats();
  {
    Result<Transaction> tx = c.db->begin();
    ASSERT_TRUE(tx.is_ok());
    Result<std::string_view> r = tx->get(*c.cold, key_of(3));
    EXPECT_EQ(r.status().code(), Code::kIOError) << r.status().to_string();
  }
  std::vector<testing::ListGenerator::Body> bodies;
  bodies.push_back([&](Tx& tx) -> Task<Status> {
    Result<std::string_view> r = co_await tx.get(*c.cold, key_of(5));
    co_return r.status();
  });
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  (void)c.db->run(gens, testing::exec_of({ExecMode::kInterleaved, SchedulerPolicy::kBatch}, 4));
  EXPECT_EQ(gen.outcomes, std::vector<Code>{Code::kIOError});
  const DatabaseStats after = c.db->stats();
  EXPECT_EQ(after.cold_read_ios, before.cold_read_ios);
  EXPECT_EQ(after.cold_read_bytes, before.cold_read_bytes);
  EXPECT_EQ(after.cold_read_errors - before.cold_read_errors, 2u);
}

// MosaicDB §4.3: a storage-bound transaction must not hold memory-bound ones back. One
// transaction reads a record of a table loaded straight to storage while the disk is stalled;
// 200 read-only transactions on an in-memory table come after it. Under dual-queue all 200 end
// while the read is still out (the reader moves to the cold queue and its hot place refills);
// under storage-batch only the 7 others of its batch do, and the rest wait for the disk (the
// stall is lifted after a timeout). batch resumes the parked reader to ask (io_checks); the
// storage-aware policies never do.
struct StallRun {
  std::size_t hot_before_cold = 0;  // hot transactions that ended before the cold one
  std::uint64_t io_checks = 0;
  bool all_ok = true;
};

StallRun run_with_stalled_read(SchedulerPolicy policy) {
  constexpr int kHot = 200;
  auto fs = std::make_shared<storage::SimFileSystem>(41);
  ColdDb opened = open_with_cold_table(fs, 32, 64, 1);
  if (opened.db == nullptr) return {};
  std::unique_ptr<Database> db = std::move(opened.db);
  Table* cold = opened.cold;
  Table* hot = *db->create_table("hot");
  for (int i = 0; i < 64; ++i) {  // one record per transaction: the log buffer is small
    Result<Transaction> tx = db->begin();
    EXPECT_TRUE(tx.is_ok());
    EXPECT_TRUE(tx->put(*hot, key_of(i), value_of(i, 0)).is_ok());
    Status s = tx->commit();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }

  std::vector<int> ended;  // body indexes, in the order they ended (the worker's thread)
  std::atomic<bool> released{false};
  auto release = [&] {
    if (!released.exchange(true)) fs->hold_io(false);
  };
  std::vector<testing::ListGenerator::Body> bodies;
  bodies.push_back([&](Tx& tx) -> Task<Status> {
    Result<std::string_view> r = co_await tx.get(*cold, key_of(5));
    if (!r.is_ok()) co_return r.status();
    if (*r != value_of(5, 1)) co_return Status::corruption("wrong cold value");
    ended.push_back(0);
    co_return Status::ok();
  });
  for (int i = 1; i <= kHot; ++i) {
    bodies.push_back([&, i](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*hot, key_of(i % 64));
      if (!r.is_ok()) co_return r.status();
      ended.push_back(i);
      if (ended.size() == kHot) release();  // every hot one ended first: lift the stall
      co_return Status::ok();
    });
  }
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  const ExecStats before = db->exec_stats();
  fs->hold_io(true);
  std::thread watchdog([&] {
    for (int i = 0; i < 100 && !released.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    release();
  });
  const ExecCase c{ExecMode::kInterleaved, policy};
  EXPECT_TRUE(db->run(gens, testing::exec_of(c, 8)).is_ok());
  watchdog.join();
  StallRun out;
  for (Code code : gen.outcomes) out.all_ok = out.all_ok && code == Code::kOk;
  EXPECT_EQ(gen.outcomes.size(), std::size_t{kHot} + 1);
  const auto cold_at = std::find(ended.begin(), ended.end(), 0);
  out.hot_before_cold = static_cast<std::size_t>(cold_at - ended.begin());
  out.io_checks = db->exec_stats().io_checks - before.io_checks;
  return out;
}

TEST(ColdStore, AStorageBoundTransactionNeverStallsHotAdmissionsUnderDualQueue) {
  const StallRun dual = run_with_stalled_read(SchedulerPolicy::kDualQueue);
  EXPECT_TRUE(dual.all_ok);
  EXPECT_EQ(dual.hot_before_cold, 200u);
  EXPECT_EQ(dual.io_checks, 0u);
  const StallRun sbatch = run_with_stalled_read(SchedulerPolicy::kStorageBatch);
  EXPECT_TRUE(sbatch.all_ok);
  EXPECT_EQ(sbatch.hot_before_cold, 7u) << "the batch waits for its reader";
  EXPECT_EQ(sbatch.io_checks, 0u);
  const StallRun batch = run_with_stalled_read(SchedulerPolicy::kBatch);
  EXPECT_TRUE(batch.all_ok);
  EXPECT_EQ(batch.hot_before_cold, 7u);
  EXPECT_GT(batch.io_checks, 0u) << "batch resumes the parked reader to ask";
  const StallRun pipe = run_with_stalled_read(SchedulerPolicy::kPipeline);
  EXPECT_TRUE(pipe.all_ok);
  EXPECT_EQ(pipe.hot_before_cold, 200u);  // one reader cannot fill the pipeline
}

// ExecOptions::profile_storage: a run whose transactions read a table loaded straight to
// storage charges the worker's time to the storage path's stages, each read counted once as
// issued and once as reaped; the stages add up to no more than the run took; and without the
// profile nothing is charged. The coroutine modes park on their reads (wake); sequential spins
// on its own (sync wait).
struct ProfiledRun {
  ExecStats stats;
  std::uint64_t cold_reads = 0;  // records
  std::uint64_t ios = 0;         // storage reads (neighbours may share one: an extent)
  std::uint64_t elapsed_ns = 0;
};

ProfiledRun run_cold_reads(ExecMode mode, bool profile,
                           std::uint32_t read_batch = ExecOptions{}.read_batch,
                           std::shared_ptr<storage::FileSystem> fs = nullptr,
                           const std::string& dir = "/db") {
  constexpr int kCold = 48;
  if (fs == nullptr) fs = std::make_shared<storage::SimFileSystem>(43);
  ColdDb c = open_with_cold_table(std::move(fs), 16, kCold, 2, dir);
  if (c.db == nullptr) return {};
  std::unique_ptr<Database> db = std::move(c.db);
  Table* cold = c.cold;
  std::vector<testing::ListGenerator::Body> bodies;
  for (int i = 0; i < kCold; ++i) {
    bodies.push_back([&, i](Tx& tx) -> Task<Status> {
      Result<std::string_view> r = co_await tx.get(*cold, key_of(i));
      if (!r.is_ok()) co_return r.status();
      if (*r != value_of(i, 2)) co_return Status::corruption("wrong cold value");
      co_return Status::ok();
    });
  }
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  const ExecStats before = db->exec_stats();
  const std::uint64_t reads_before = db->stats().cold_reads;
  const std::uint64_t ios_before = db->stats().cold_read_ios;
  ExecOptions e = testing::exec_of(ExecCase{mode, SchedulerPolicy::kDualQueue}, 8);
  e.profile_storage = profile;
  e.read_batch = read_batch;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(db->run(gens, e).is_ok());
  ProfiledRun out;
  out.elapsed_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  for (Code code : gen.outcomes) EXPECT_EQ(code, Code::kOk);
  const ExecStats after = db->exec_stats();
  out.stats = after;
  out.stats.cold_reads_issued -= before.cold_reads_issued;
  out.stats.cold_read_submissions -= before.cold_read_submissions;
  out.stats.cold_reaps -= before.cold_reaps;
  out.stats.cold_reads_reaped -= before.cold_reads_reaped;
  for (int i = 0; i < ExecStats::kStorageStages; ++i) {
    out.stats.storage_stage_ns[i] -= before.storage_stage_ns[i];
  }
  out.cold_reads = db->stats().cold_reads - reads_before;
  out.ios = db->stats().cold_read_ios - ios_before;
  return out;
}

std::uint64_t stage_ns(const ProfiledRun& r, std::string_view name) {
  for (int i = 0; i < ExecStats::kStorageStages; ++i) {
    if (name == storage_stage_name(i)) return r.stats.storage_stage_ns[i];
  }
  ADD_FAILURE() << "no stage named " << name;
  return 0;
}

TEST(ColdStore, TheStorageProfileChargesEachStageOfAWorkersReads) {
  for (ExecMode mode : {ExecMode::kInterleaved, ExecMode::kSequential}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    const ProfiledRun r = run_cold_reads(mode, true);
    EXPECT_EQ(r.cold_reads, 48u);  // every record once, no joins
    EXPECT_GE(r.ios, 1u);
    EXPECT_LE(r.ios, r.cold_reads);
    EXPECT_EQ(r.stats.cold_reads_issued, r.ios);
    EXPECT_EQ(r.stats.cold_reads_reaped, r.ios);
    EXPECT_GE(r.stats.cold_read_submissions, 1u);
    EXPECT_LE(r.stats.cold_read_submissions, r.stats.cold_reads_issued);
    EXPECT_GE(r.stats.cold_reaps, 1u);
    EXPECT_LE(r.stats.cold_reaps, r.ios);
    std::uint64_t sum = 0;
    for (std::uint64_t ns : r.stats.storage_stage_ns) sum += ns;
    EXPECT_LE(sum, r.elapsed_ns) << "the profile covers the run, no more";
    for (const char* st : {"submit", "reap", "complete", "load table"}) {
      EXPECT_GT(stage_ns(r, st), 0u) << st;
    }
    EXPECT_EQ(stage_ns(r, "drop"), 0u) << "the table caches its reads";
    if (mode == ExecMode::kSequential) {
      EXPECT_GT(stage_ns(r, "sync wait"), 0u);
      EXPECT_EQ(stage_ns(r, "wake"), 0u) << "nothing parks";
    } else {
      EXPECT_GT(stage_ns(r, "wake"), 0u);
      EXPECT_EQ(stage_ns(r, "sync wait"), 0u) << "nothing spins";
    }
    const ProfiledRun off = run_cold_reads(mode, false);
    EXPECT_EQ(off.cold_reads, 48u);
    EXPECT_EQ(off.stats.cold_reads_issued, off.ios) << "the counters are kept either way";
    for (std::uint64_t ns : off.stats.storage_stage_ns) EXPECT_EQ(ns, 0u);
  }
  EXPECT_STREQ(storage_stage_name(ExecStats::kStorageStages), "");
}

// ExecOptions::read_batch: a worker with many transactions parked on reads issues them several
// to a kernel entry (never more than the batch), and neighbours among them as one extent; with
// a batch of 1, or in a sequential mode (which waits for its own read), each read has its own.
TEST(ColdStore, AWorkersReadsAreIssuedTogetherUpToTheBatch) {
  const ProfiledRun batched = run_cold_reads(ExecMode::kInterleaved, false, 4);
  EXPECT_EQ(batched.cold_reads, 48u);
  EXPECT_EQ(batched.stats.cold_reads_issued, batched.ios);
  // The 48 records were written in a row: a batch of 4 neighbours goes as one read or more.
  EXPECT_LT(batched.ios, 48u);
  EXPECT_GE(batched.ios * 4, 48u);
  EXPECT_LE(batched.stats.cold_read_submissions, batched.stats.cold_reads_issued);
  EXPECT_LT(batched.stats.cold_read_submissions, 48u);
  const ProfiledRun single = run_cold_reads(ExecMode::kInterleaved, false, 1);
  EXPECT_EQ(single.stats.cold_reads_issued, 48u);
  EXPECT_EQ(single.stats.cold_read_submissions, 48u);
  const ProfiledRun sequential = run_cold_reads(ExecMode::kSequential, false, 8);
  EXPECT_EQ(sequential.stats.cold_read_submissions, 48u);
}

// Scans the bulk-loaded cold table on a worker and checks every row; answers the reads the
// worker issued and how many of them went into registered blocks.
std::pair<std::uint64_t, std::uint64_t> scan_cold_table(Database& db, Table& cold, int n) {
  std::vector<testing::ListGenerator::Body> bodies;
  int rows = 0;
  bodies.push_back([&](Tx& tx) -> Task<Status> {
    Status s = co_await tx.scan(cold, "", "", 0, [&](std::string_view k, std::string_view v) {
      EXPECT_EQ(v, value_of(std::stoi(std::string(k.substr(3))), 2)) << k;
      ++rows;
      return true;
    });
    co_return s;
  });
  testing::ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  const ExecStats before = db.exec_stats();
  EXPECT_TRUE(
      db.run(gens, testing::exec_of({ExecMode::kInterleaved, SchedulerPolicy::kBatch}, 1)).is_ok());
  for (Code code : gen.outcomes) EXPECT_EQ(code, Code::kOk);
  EXPECT_EQ(rows, n);
  const ExecStats after = db.exec_stats();
  return {after.cold_reads_issued - before.cold_reads_issued,
          after.cold_reads_registered - before.cold_reads_registered};
}

// On io_uring a worker's reads land in blocks registered with its ring once (no page pinning
// per read): single records, the extents of neighbouring loads and scans' extents alike. They
// read the same records as anywhere else; the simulated disk registers none.
TEST(ColdStore, AWorkersReadsGoIntoItsRegisteredBuffersOnIoUring) {
  const ProfiledRun sim = run_cold_reads(ExecMode::kInterleaved, false);
  EXPECT_EQ(sim.cold_reads, 48u);
  EXPECT_EQ(sim.stats.cold_reads_issued, sim.ios);
  EXPECT_EQ(sim.stats.cold_reads_registered, 0u);
  std::string why;
  if (!storage::probe_io_uring(&why)) GTEST_SKIP() << "io_uring unavailable: " << why;
  char tmpl[] = "/tmp/braid-coldfixedXXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/db";
  for (ExecMode mode : {ExecMode::kInterleaved, ExecMode::kSequential}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    std::filesystem::remove_all(dir);
    // Every body checks the value it read (run_cold_reads): a read into the wrong buffer fails.
    const ProfiledRun real = run_cold_reads(
        mode, false, 4, std::shared_ptr<storage::FileSystem>(storage::make_posix_file_system(true)),
        dir);
    EXPECT_EQ(real.cold_reads, 48u);
    EXPECT_EQ(real.stats.cold_reads_issued, real.ios);
    if (mode == ExecMode::kSequential) {
      EXPECT_EQ(real.stats.cold_reads_issued, 48u);
    }
    EXPECT_EQ(real.stats.cold_reads_registered, real.stats.cold_reads_issued)
        << "root or RLIMIT_MEMLOCK >= 1.5 MiB";
  }
  // A scan of records that lie together reads them in extents, into the scans' own block.
  std::filesystem::remove_all(dir);
  {
    constexpr int kRows = 3000;
    ColdDb c = open_with_cold_table(
        std::shared_ptr<storage::FileSystem>(storage::make_posix_file_system(true)), 4, kRows, 2,
        dir);
    ASSERT_NE(c.cold, nullptr);
    ASSERT_TRUE(c.db->set_cache_reads(*c.cold, false).is_ok());
    for (int pass = 0; pass < 2; ++pass) {
      const auto [issued, registered] = scan_cold_table(*c.db, *c.cold, kRows);
      EXPECT_GT(issued, 0u);
      EXPECT_LT(issued, std::uint64_t{kRows} / 4) << "extents, not a read per record";
      EXPECT_EQ(registered, issued) << "root or RLIMIT_MEMLOCK >= 5.5 MiB";
    }
  }
  std::filesystem::remove_all(tmpl);
}

INSTANTIATE_TEST_SUITE_P(All, ColdStoreModes, ::testing::ValuesIn(testing::all_cases()),
                         testing::case_name);

}  // namespace
}  // namespace braid
