// Morsel-driven scans (Database::scan_morsels): the morsels cover the range exactly once, in
// key order, at one snapshot whatever commits meanwhile, over hot and cold records in every
// execution mode; failures and bad arguments come back as Status. Seeded; deterministic values.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/exec_test_util.h"
#include "storage/durability_util.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::ExecCase;

constexpr int kRecords = 4000;
constexpr int kPairs = kRecords / 2;  // record i and record i + kPairs change together
constexpr std::size_t kValueBytes = 400;

std::string key_of(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%06d", i);
  return buf;
}
// Round `r` of record i: "r<round>:" then filler to kValueBytes.
std::string value_of(int i, int round) {
  std::string v = "r" + std::to_string(round) + ":" + std::to_string(i) + ":";
  while (v.size() < kValueBytes) v += static_cast<char>('a' + (i + v.size()) % 26);
  return v;
}
int round_of(std::string_view v) { return std::stoi(std::string(v.substr(1, v.find(':') - 1))); }

Options morsel_options(const ExecCase& c) {
  Options o = test::wl_options(0);
  o.workers = 2;
  o.slots_per_worker = 8;
  o.exec = testing::exec_of(c, 8);
  o.memory_budget_bytes = 512 << 10;  // ~1.7 MiB of versions: most records cold
  o.page_index_leaves = true;
  o.durability.log_buffer_bytes = 256 << 10;
  o.durability.log_segment_bytes = 1 << 20;
  o.durability.checkpoint_log_bytes = 0;
  return o;
}

// Waits (bounded) until `done` holds; false after 60 s.
template <typename Fn>
bool wait_until(Fn done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

void load(Database& db, Table& t) {
  for (int i = 0; i < kRecords; i += 50) {
    Result<Transaction> tx = db.begin();
    ASSERT_TRUE(tx.is_ok());
    for (int k = i; k < i + 50; ++k) ASSERT_TRUE(tx->put(t, key_of(k), value_of(k, 0)).is_ok());
    ASSERT_TRUE(tx->commit().is_ok());
  }
}

// What each morsel saw, by morsel index, and a per-worker fold (rows and bytes).
struct Seen {
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  std::vector<std::uint64_t> worker_rows;
  std::vector<std::uint64_t> snapshots;
};

Status scan_all(Database& db, Table& t, std::string_view begin, std::string_view end,
                const MorselOptions& mo, Seen* seen) {
  seen->worker_rows.assign(db.options().workers, 0);
  std::mutex mu;  // only for the per-morsel lists the test keeps; the fold needs none
  return db.scan_morsels(t, begin, end, mo, [&](Tx& tx, Morsel m) -> Task<Status> {
    std::vector<std::pair<std::string, std::string>> mine;
    Status s = co_await tx.scan(t, m.begin, m.end, 0, [&](std::string_view k, std::string_view v) {
      mine.emplace_back(std::string(k), std::string(v));
      return true;
    });
    if (!s.is_ok()) co_return s;
    seen->worker_rows[tx.worker()] += mine.size();
    std::lock_guard<std::mutex> g(mu);
    if (seen->rows.size() < m.count) seen->rows.resize(m.count);
    seen->rows[m.index] = std::move(mine);
    seen->snapshots.push_back(tx.snapshot());
    co_return Status::ok();
  });
}

class MorselModes : public ::testing::TestWithParam<ExecCase> {};

// While a writer moves pairs of records far apart in the key order (in different morsels) to a
// new round together, every morsel reads the one snapshot: each pair is seen at one round, and
// the rows are exactly the table's keys in order, split among several morsels.
// An uncached table too: its cold records are taken from the scans' own extents (coroutine
// modes) while the writer makes records hot and evictions turn them cold again.
TEST_P(MorselModes, MorselsCoverTheRangeOnceAtOneSnapshot) {
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "caching table" : "uncached table");
    auto fs = std::make_shared<storage::SimFileSystem>(51);
    auto db = test::open_sim(morsel_options(GetParam()), fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Table* t = *(*db)->create_table("t");
    load(**db, *t);
    ASSERT_GT((*db)->stats().evictions, 0u);
    ASSERT_TRUE((*db)->set_cache_reads(*t, cache).is_ok());

    std::atomic<bool> stop{false};
    std::atomic<int> commits{0};
    std::thread writer([&] {
      util::Rng rng(53);
      for (int round = 1; !stop.load(); ++round) {
        const int i = static_cast<int>(rng.uniform(kPairs));
        Result<Transaction> tx = (*db)->begin();
        if (!tx.is_ok()) continue;
        if (tx->put(*t, key_of(i), value_of(i, round)).is_ok() &&
            tx->put(*t, key_of(i + kPairs), value_of(i + kPairs, round)).is_ok() &&
            tx->commit().is_ok()) {
          commits.fetch_add(1);
        }
      }
    });
    // The writer is under way before the scan and goes on after it.
    ASSERT_TRUE(wait_until([&] { return commits.load() >= 20; })) << "the writer made no progress";
    Seen seen;
    const std::uint64_t reads_before = (*db)->stats().cold_reads;
    MorselOptions mo;
    mo.morsels_per_worker = 8;
    mo.io_depth = 3;
    Status s = scan_all(**db, *t, "", "", mo, &seen);
    const int during = commits.load();
    const bool went_on = wait_until([&] { return commits.load() >= during + 20; });
    stop.store(true);
    writer.join();
    EXPECT_TRUE(went_on);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_GT((*db)->stats().cold_reads, reads_before);

    ASSERT_GE(seen.rows.size(), 4u) << "a 4000-record tree splits into several morsels";
    std::vector<std::pair<std::string, std::string>> all;
    for (const auto& m : seen.rows) all.insert(all.end(), m.begin(), m.end());
    ASSERT_EQ(all.size(), static_cast<std::size_t>(kRecords));
    for (int i = 0; i < kRecords; ++i) ASSERT_EQ(all[i].first, key_of(i)) << i;
    for (int i = 0; i < kPairs; ++i) {
      ASSERT_EQ(round_of(all[i].second), round_of(all[i + kPairs].second))
          << "pair " << i << " read at two snapshots";
      ASSERT_EQ(all[i].second, value_of(i, round_of(all[i].second)));
    }
    ASSERT_FALSE(seen.snapshots.empty());
    for (std::uint64_t snap : seen.snapshots) EXPECT_EQ(snap, seen.snapshots.front());
    std::uint64_t folded = 0;
    for (std::uint64_t n : seen.worker_rows) folded += n;
    EXPECT_EQ(folded, static_cast<std::uint64_t>(kRecords));
    EXPECT_EQ((*db)->stats().cold_read_errors, 0u);
  }
}

// The depth bounds the morsels a worker runs at once: an explicit one, and the default held to
// the worker's slots (8 here, below kDefaultMorselDepth). Most records are cold, so a morsel's
// scan suspends on its reads in the coroutine modes and the worker starts others meanwhile.
TEST(Morsels, TheDepthBoundsTheMorselsInFlightPerWorker) {
  auto db = test::open_sim(morsel_options({ExecMode::kInterleaved, SchedulerPolicy::kBatch}),
                           std::make_shared<storage::SimFileSystem>(73));
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  load(**db, *t);
  static_assert(kDefaultMorselDepth > 8);
  for (const std::uint32_t depth : {3u, 0u}) {
    SCOPED_TRACE("io_depth " + std::to_string(depth));
    const std::uint32_t bound = depth != 0 ? depth : 8;
    MorselOptions mo;
    mo.morsels_per_worker = 64;
    mo.io_depth = depth;
    // Worker-local counts: each worker touches only its own.
    std::vector<std::uint32_t> running((*db)->options().workers, 0);
    std::vector<std::uint32_t> most((*db)->options().workers, 0);
    std::atomic<std::uint64_t> rows{0};
    Status s = (*db)->scan_morsels(*t, "", "", mo, [&](Tx& tx, Morsel m) -> Task<Status> {
      const std::uint32_t w = tx.worker();
      most[w] = std::max(most[w], ++running[w]);
      std::uint64_t mine = 0;
      Status r = co_await tx.scan(*t, m.begin, m.end, 0, [&](std::string_view, std::string_view) {
        ++mine;
        return true;
      });
      --running[w];
      rows.fetch_add(mine);
      co_return r;
    });
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(rows.load(), static_cast<std::uint64_t>(kRecords));
    std::uint32_t overall = 0;
    for (std::uint32_t w = 0; w < most.size(); ++w) {
      EXPECT_LE(most[w], bound) << "worker " << w;
      overall = std::max(overall, most[w]);
    }
    EXPECT_GE(overall, 2u) << "no two morsels ever ran at once on a worker";
  }
}

// Sub-ranges: exactly the keys in [begin, end), and an open end.
TEST_P(MorselModes, MorselsOfASubRange) {
  auto db =
      test::open_sim(morsel_options(GetParam()), std::make_shared<storage::SimFileSystem>(57));
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  load(**db, *t);
  util::Rng rng(59);
  for (int c = 0; c < 4; ++c) {
    int lo = static_cast<int>(rng.uniform(kRecords));
    int hi = c == 3 ? kRecords : static_cast<int>(rng.uniform(kRecords));
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) ++hi;
    const std::string begin = key_of(lo);
    const std::string end = hi == kRecords ? std::string() : key_of(hi);
    Seen seen;
    MorselOptions mo;
    mo.io_depth = 2;
    ASSERT_TRUE(scan_all(**db, *t, begin, end, mo, &seen).is_ok());
    std::vector<std::string> keys;
    for (const auto& m : seen.rows) {
      for (const auto& [k, v] : m) keys.push_back(k);
    }
    ASSERT_EQ(keys.size(), static_cast<std::size_t>(hi - lo)) << begin << ".." << end;
    for (int i = lo; i < hi; ++i) ASSERT_EQ(keys[i - lo], key_of(i));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, MorselModes,
    ::testing::Values(ExecCase{ExecMode::kSequential, SchedulerPolicy::kBatch},
                      ExecCase{ExecMode::kInterleaved, SchedulerPolicy::kBatch},
                      ExecCase{ExecMode::kInterleaved, SchedulerPolicy::kDualQueue},
                      ExecCase{ExecMode::kNested, SchedulerPolicy::kPipeline,
                               /*force_suspend=*/true, /*shuffle=*/true}),
    testing::case_name);

// A read that fails fails the scan with its error; the engine goes on, and the next scan reads
// everything. A morsel's own error comes back the same way, and later morsels do not start.
TEST(Morsels, AFailedMorselFailsTheScan) {
  auto fs = std::make_shared<storage::SimFileSystem>(61);
  auto db = test::open_sim(morsel_options({ExecMode::kInterleaved, SchedulerPolicy::kBatch}), fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  load(**db, *t);
  Seen seen;
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 3, false);
  EXPECT_EQ(scan_all(**db, *t, "", "", MorselOptions{}, &seen).code(), Code::kIOError);
  EXPECT_FALSE((*db)->durability_stats().halted);
  Seen again;
  ASSERT_TRUE(scan_all(**db, *t, "", "", MorselOptions{}, &again).is_ok());
  std::size_t rows = 0;
  for (const auto& m : again.rows) rows += m.size();
  EXPECT_EQ(rows, static_cast<std::size_t>(kRecords));

  // One worker, one morsel at a time: morsel 0 fails and no other starts.
  Options o1 = morsel_options({ExecMode::kInterleaved, SchedulerPolicy::kBatch});
  o1.workers = 1;
  auto db1 = test::open_sim(o1, std::make_shared<storage::SimFileSystem>(63));
  ASSERT_TRUE(db1.is_ok()) << db1.status().to_string();
  Table* t1 = *(*db1)->create_table("t");
  load(**db1, *t1);
  std::atomic<std::uint32_t> started{0};
  std::atomic<std::uint32_t> count{0};
  MorselOptions one;
  one.io_depth = 1;
  one.morsels_per_worker = 8;
  Status s = (*db1)->scan_morsels(*t1, "", "", one, [&](Tx&, Morsel m) -> Task<Status> {
    started.fetch_add(1);
    count.store(m.count);
    if (m.index == 0) co_return Status::corruption("morsel 0 says no");
    co_return Status::ok();
  });
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.to_string().find("morsel 0 says no"), std::string::npos);
  EXPECT_GT(count.load(), 1u);
  EXPECT_EQ(started.load(), 1u);
}

TEST(Morsels, BadArgumentsAnswerInvalidArgument) {
  auto db = test::open_sim(morsel_options({ExecMode::kInterleaved, SchedulerPolicy::kBatch}),
                           std::make_shared<storage::SimFileSystem>(67));
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  const auto noop = [](Tx&, Morsel) -> Task<Status> { co_return Status::ok(); };
  const auto with = [](std::uint32_t per_worker, std::uint32_t depth) {
    MorselOptions o;
    o.morsels_per_worker = per_worker;
    o.io_depth = depth;
    return o;
  };
  EXPECT_EQ((*db)->scan_morsels(*t, "", "", with(0, 4), noop).code(), Code::kInvalidArgument);
  EXPECT_EQ((*db)->scan_morsels(*t, "", "", with(kMaxMorselsPerWorker + 1, 4), noop).code(),
            Code::kInvalidArgument);
  // 0: the default depth (kDefaultMorselDepth), held to the worker's 8 slots here.
  EXPECT_TRUE((*db)->scan_morsels(*t, "", "", with(4, 0), noop).is_ok());
  static_assert(kDefaultMorselDepth > 8);
  // Beyond the worker's slots (8 here), though within kMaxMorselDepth.
  EXPECT_EQ((*db)->scan_morsels(*t, "", "", with(4, 9), noop).code(), Code::kInvalidArgument);
  EXPECT_EQ((*db)->scan_morsels(*t, "b", "a", MorselOptions{}, noop).code(),
            Code::kInvalidArgument);
  EXPECT_EQ((*db)->scan_morsels(*t, "a", "a", MorselOptions{}, noop).code(),
            Code::kInvalidArgument);
  EXPECT_EQ((*db)->scan_morsels(*t, "", "", MorselOptions{}, MorselFunction{}).code(),
            Code::kInvalidArgument);
  Result<std::unique_ptr<Database>> other = Database::open(Options{});
  ASSERT_TRUE(other.is_ok());
  Table* foreign = *(*other)->create_table("x");
  EXPECT_EQ((*db)->scan_morsels(*foreign, "", "", MorselOptions{}, noop).code(),
            Code::kInvalidArgument);
  // From a worker: it would wait for its own worker.
  Status inner;
  ASSERT_TRUE((*db)
                  ->execute([&](Tx&) -> Task<Status> {
                    inner = (*db)->scan_morsels(*t, "", "", MorselOptions{}, noop);
                    co_return Status::ok();
                  })
                  .is_ok());
  EXPECT_EQ(inner.code(), Code::kInvalidArgument);
  // Every application-thread transaction open: no keeper for the snapshot.
  std::vector<Transaction> open;
  for (std::uint32_t i = 0; i < (*db)->options().external_transactions; ++i) {
    Result<Transaction> tx = (*db)->begin();
    ASSERT_TRUE(tx.is_ok());
    open.push_back(std::move(tx).value());
  }
  EXPECT_EQ((*db)->scan_morsels(*t, "", "", MorselOptions{}, noop).code(), Code::kBusy);
  open.clear();
  // An empty table: one morsel, no rows.
  std::atomic<int> morsels{0};
  EXPECT_TRUE((*db)
                  ->scan_morsels(*t, "", "", MorselOptions{},
                                 [&](Tx&, Morsel m) -> Task<Status> {
                                   morsels.fetch_add(1);
                                   EXPECT_EQ(m.count, 1u);
                                   co_return Status::ok();
                                 })
                  .is_ok());
  EXPECT_EQ(morsels.load(), 1);
}

// An uncached table (Database::set_cache_reads false): a scan leaves every record it read back
// cold, so a second scan reads them all again. Read record by record (scan_extent_bytes 0),
// each read installs a version that is dropped at once; from the scan's own extents (the
// default), nothing is installed, and the 500 records of the bulk load (in key order in one
// file) take a few reads, each block read once.
TEST(Morsels, AScanOfAnUncachedTableLeavesItCold) {
  for (const std::uint32_t extent : {0u, Options{}.scan_extent_bytes}) {
    SCOPED_TRACE("scan_extent_bytes " + std::to_string(extent));
    Options o = morsel_options({ExecMode::kInterleaved, SchedulerPolicy::kBatch});
    o.scan_extent_bytes = extent;
    auto fs = std::make_shared<storage::SimFileSystem>(71);
    auto db = test::open_sim(o, fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Table* t = *(*db)->create_table("t");
    int next = 0;
    std::string key, value;
    ASSERT_TRUE((*db)
                    ->bulk_load(*t,
                                [&](std::string_view* k, std::string_view* v) {
                                  if (next == 500) return false;
                                  key = key_of(next);
                                  value = value_of(next, 0);
                                  ++next;
                                  *k = key;
                                  *v = value;
                                  return true;
                                },
                                {.keep_in_memory = false})
                    .is_ok());
    ASSERT_TRUE((*db)->set_cache_reads(*t, false).is_ok());
    for (int pass = 0; pass < 2; ++pass) {
      const DatabaseStats before = (*db)->stats();
      Seen seen;
      ASSERT_TRUE(scan_all(**db, *t, "", "", MorselOptions{}, &seen).is_ok());
      std::size_t rows = 0;
      for (const auto& m : seen.rows) {
        for (const auto& [k, v] : m) {
          ASSERT_EQ(v, value_of(std::stoi(k.substr(1)), 0));
          ++rows;
        }
      }
      EXPECT_EQ(rows, 500u);
      const DatabaseStats after = (*db)->stats();
      const std::uint64_t ios = after.cold_read_ios - before.cold_read_ios;
      EXPECT_EQ(after.cold_reads - before.cold_reads, 500u) << "pass " << pass;
      EXPECT_EQ(after.cold_read_errors, before.cold_read_errors);
      if (extent == 0) {
        EXPECT_EQ(after.read_drops - before.read_drops, 500u) << "pass " << pass;
      } else {
        EXPECT_EQ(after.read_drops, before.read_drops) << "pass " << pass;
        // The records lie in one file in key order: a morsel reads its part of it in extents
        // (a block two morsels share is read by both), never a block twice within one.
        std::vector<std::string> names;
        ASSERT_TRUE(fs->list("/db", &names).is_ok());
        std::uint64_t data = 0;
        for (const std::string& n : names) {
          std::string img;
          const bool records = n.rfind("log-", 0) == 0 || n.rfind("ckpt-", 0) == 0;
          if (records && fs->peek("/db/" + n, &img)) data += img.size();
        }
        const auto morsels = static_cast<std::uint32_t>(seen.rows.size());
        EXPECT_LE(ios, 2 * morsels) << "pass " << pass;
        EXPECT_LE(after.cold_read_bytes - before.cold_read_bytes,
                  data + std::uint64_t{morsels} * 2 * 4096)
            << "pass " << pass;
      }
    }
  }
}

}  // namespace
}  // namespace braid
