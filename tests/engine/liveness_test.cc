// Liveness of durable commits: every wait on the durable clock ends.
//
// A durable commit is acknowledged once the durable clock — min(commit clock, every log's safe
// bound) — reaches its timestamp. A timestamp spent without data (a serializable commit SSN
// refused after taking it) is logged as an empty record; if that record sits in a log nobody
// drives, the clock stops below it and every later durable commit, from any thread, waits
// forever. These tests make that happen deterministically on the simulated disk and watch the
// waits with a watchdog, so a regression fails the test instead of hanging it.
#include <braid/braid.h>
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/test_util.h"
#include "storage/durability_util.h"

namespace braid {
namespace {

using testing::read;

// Runs `fn` on its own thread and waits up to `seconds` for it. A wait that never ends cannot
// be joined, so a timeout reports the durable clock's state and ends the process (failed).
template <typename Fn>
auto within(Database& db, int seconds, const char* what, Fn fn) {
  auto f = std::async(std::launch::async, fn);
  if (f.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    const DurabilityStats d = db.durability_stats();
    const DatabaseStats s = db.stats();
    std::fprintf(stderr,
                 "HANG: %s did not return within %d s (durable clock %llu, commit clock %llu, "
                 "log flushes %llu)\n",
                 what, seconds, static_cast<unsigned long long>(d.durable_clock),
                 static_cast<unsigned long long>(s.commit_clock),
                 static_cast<unsigned long long>(d.log_flushes));
    std::fflush(stderr);
    std::_Exit(1);
  }
  return f.get();
}

class RefusedSerializable : public ::testing::TestWithParam<CommitMode> {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<storage::SimFileSystem>(/*seed=*/49);
    Options o = test::wl_options();
    o.workers = 1;
    o.durability.commit = GetParam();
    o.isolation = Isolation::kSerializable;
    auto db = test::open_sim(o, fs_);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    db_ = std::move(db).value();
    t_ = testing::make_table(*db_, "t");
    Transaction tx = testing::begin(*db_);
    ASSERT_TRUE(tx.insert(*t_, "1", "10").is_ok());
    ASSERT_TRUE(tx.insert(*t_, "2", "20").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // Write skew between two application-thread transactions: the second committer is refused
  // by SSN after it took its commit timestamp (logged as an empty record). Key "1" ends as
  // `value`.
  void refuse_one(const std::string& value = "11") {
    Transaction t1 = testing::begin(*db_);
    Transaction t2 = testing::begin(*db_);
    for (Transaction* tx : {&t1, &t2}) {
      EXPECT_NE(read(*tx, *t_, "1"), "<none>");
      EXPECT_NE(read(*tx, *t_, "2"), "<none>");
    }
    ASSERT_TRUE(t1.put(*t_, "1", value).is_ok());
    ASSERT_TRUE(t2.put(*t_, "2", value).is_ok());
    ASSERT_TRUE(t1.commit().is_ok());
    const std::uint64_t before = db_->stats().ssn_aborts;
    ASSERT_EQ(t2.commit().code(), Code::kConflict);
    ASSERT_EQ(db_->stats().ssn_aborts, before + 1);
  }
  // Every timestamp taken so far reaches the disk: at once after a durable commit, and in
  // kAsync once the workers drove the logs (bounded: a clock that stays behind fails).
  void expect_clock_catches_up() {
    const std::uint64_t clock = db_->stats().commit_clock;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (db_->durability_stats().durable_clock < clock &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GE(db_->durability_stats().durable_clock, clock);
  }
  std::shared_ptr<storage::SimFileSystem> fs_;
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
};

// The reader's snapshot covers the refused timestamp: its commit waits for the clock to pass it.
TEST_P(RefusedSerializable, ALaterReadOnlyCommitReturns) {
  refuse_one();
  const Status s = within(*db_, 30, "a read-only commit after a refused one", [&] {
    Transaction r = testing::begin(*db_);
    EXPECT_EQ(read(r, *t_, "1"), "11");
    return r.commit();
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  expect_clock_catches_up();
}

// A worker's commit after the refusal waits for the clock as well (its ack is the worker's).
TEST_P(RefusedSerializable, ALaterWorkerCommitIsAcknowledged) {
  refuse_one();
  const Status s = within(*db_, 30, "a worker commit after a refused one", [&] {
    return db_->execute(
        [t = t_](Tx& tx) -> Task<Status> { co_return co_await tx.put(*t, "3", "30"); });
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  expect_clock_catches_up();
}

// Many refusals in a row, each followed by a read-only commit: none of them may stall.
TEST_P(RefusedSerializable, RefusalsInARowNeverStallTheClock) {
  for (int i = 0; i < 20; ++i) {
    refuse_one(std::to_string(i));
    const Status s = within(*db_, 30, "a read-only commit", [&] {
      Transaction r = testing::begin(*db_);
      EXPECT_EQ(read(r, *t_, "1"), std::to_string(i));
      return r.commit();
    });
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  expect_clock_catches_up();
}

INSTANTIATE_TEST_SUITE_P(Commit, RefusedSerializable,
                         ::testing::Values(CommitMode::kDurable, CommitMode::kAsync),
                         [](const ::testing::TestParamInfo<CommitMode>& i) {
                           return i.param == CommitMode::kDurable ? std::string("Durable")
                                                                  : std::string("Async");
                         });

// ---- The stall detector ----------------------------------------------------------------------
//
// Each wait the engine bounds by progress is made to stand still on purpose — the simulated
// disk holding its I/O, or (test builds) a certifying transaction holding its verdict — for
// several stall timeouts: the wait is reported exactly once, by name, with the state it waits
// on, DatabaseStats::stalls counts it, and once the hold ends the wait finishes normally.

constexpr std::uint32_t kStallMs = 40;

struct Reports {
  std::mutex mu;
  std::vector<StallReport> all;
  std::function<void(const StallReport&)> sink() {
    return [this](const StallReport& r) {
      std::lock_guard<std::mutex> g(mu);
      all.push_back(r);
    };
  }
  std::size_t count(std::string_view wait) {
    std::lock_guard<std::mutex> g(mu);
    std::size_t n = 0;
    for (const StallReport& r : all) n += wait == r.wait;
    return n;
  }
  std::string detail(std::string_view wait) {
    std::lock_guard<std::mutex> g(mu);
    for (const StallReport& r : all) {
      if (wait == r.wait) return r.detail;
    }
    return {};
  }
  // Waits (bounded) until `wait` was reported, then lets `extra` timeouts pass: a second
  // report of the same stall would come within them.
  bool await(std::string_view wait, int extra = 4) {
    for (int i = 0; i < 2000 && count(wait) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(extra * kStallMs));
    return count(wait) != 0;
  }
};

Options stall_options(Reports* reports) {
  Options o = test::wl_options(0);
  o.workers = 1;
  o.stall_timeout_ms = kStallMs;
  o.on_stall = reports->sink();
  return o;
}

TEST(StallDetector, AnApplicationCommitOnAHeldDiskIsReportedOnce) {
  Reports reports;
  auto fs = std::make_shared<storage::SimFileSystem>(50);
  auto db = test::open_sim(stall_options(&reports), fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = testing::make_table(**db, "t");
  fs->hold_io(true);
  auto commit = std::async(std::launch::async, [&] {
    Transaction tx = testing::begin(**db);
    EXPECT_TRUE(tx.put(*t, "k", "v").is_ok());
    return tx.commit();
  });
  ASSERT_TRUE(reports.await("application log flush"));
  EXPECT_EQ(reports.count("application log flush"), 1u);
  EXPECT_NE(reports.detail("application log flush").find("application (safe"), std::string::npos)
      << reports.detail("application log flush");
  EXPECT_NE(reports.detail("application log flush").find("a block in flight"), std::string::npos);
  EXPECT_EQ(commit.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  fs->hold_io(false);
  const Status s =
      within(**db, 30, "the commit after the disk came back", [&] { return commit.get(); });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ((*db)->stats().stalls, reports.all.size());
  EXPECT_EQ(testing::read_committed(**db, *t, "k"), "v");
}

TEST(StallDetector, AWorkerCommitOnAHeldDiskIsReportedOnce) {
  Reports reports;
  auto fs = std::make_shared<storage::SimFileSystem>(51);
  auto db = test::open_sim(stall_options(&reports), fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = testing::make_table(**db, "t");
  fs->hold_io(true);
  Result<Pending> p =
      (*db)->submit([t](Tx& tx) -> Task<Status> { co_return co_await tx.put(*t, "k", "v"); });
  ASSERT_TRUE(p.is_ok());
  ASSERT_TRUE(reports.await("worker commit acknowledgement"));
  EXPECT_EQ(reports.count("worker commit acknowledgement"), 1u);
  EXPECT_NE(reports.detail("worker commit acknowledgement").find("waiting for durable clock >="),
            std::string::npos)
      << reports.detail("worker commit acknowledgement");
  EXPECT_FALSE(p->ready());
  fs->hold_io(false);
  const Status s =
      within(**db, 30, "Pending::wait after the disk came back", [&] { return p->wait(); });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_GE((*db)->stats().stalls, 1u);
}

TEST(StallDetector, ACheckpointOnAHeldDiskIsReportedOnce) {
  Reports reports;
  auto fs = std::make_shared<storage::SimFileSystem>(52);
  Options o = stall_options(&reports);
  o.durability.commit = CommitMode::kAsync;  // the load's commits do not wait for the disk
  auto db = test::open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = testing::make_table(**db, "t");
  for (int i = 0; i < 200; ++i) {
    Transaction tx = testing::begin(**db);
    ASSERT_TRUE(tx.put(*t, "k" + std::to_string(i), std::string(100, 'x')).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  fs->hold_io(true);
  auto ckpt = std::async(std::launch::async, [&] { return (*db)->checkpoint(); });
  ASSERT_TRUE(reports.await("checkpoint"));
  EXPECT_EQ(reports.count("checkpoint"), 1u);
  EXPECT_NE(reports.detail("checkpoint").find("checkpoint ticket"), std::string::npos);
  fs->hold_io(false);
  const Status s =
      within(**db, 30, "the checkpoint after the disk came back", [&] { return ckpt.get(); });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(StallDetector, AColdReadOnAHeldDiskIsReportedOnce) {
  Reports reports;
  auto fs = std::make_shared<storage::SimFileSystem>(53);
  Options o = stall_options(&reports);
  o.exec.mode = ExecMode::kInterleaved;
  o.exec.batch = 4;
  auto db = test::open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = testing::make_table(**db, "cold");
  int next = 0;
  ASSERT_TRUE((*db)
                  ->bulk_load(*t,
                              [&](std::string_view* k, std::string_view* v) {
                                if (next == 16) return false;
                                static thread_local std::string key;
                                key = "k" + std::to_string(next++);
                                *k = key;
                                *v = "cold value";
                                return true;
                              },
                              {.keep_in_memory = false})
                  .is_ok());
  fs->hold_io(true);
  Result<Pending> p = (*db)->submit([t](Tx& tx) -> Task<Status> {
    Result<std::string_view> r = co_await tx.get(*t, "k3");
    if (!r.is_ok()) co_return r.status();
    co_return *r == "cold value" ? Status::ok() : Status::corruption("wrong value");
  });
  ASSERT_TRUE(p.is_ok());
  ASSERT_TRUE(reports.await("cold read"));
  EXPECT_EQ(reports.count("cold read"), 1u);
  EXPECT_NE(reports.detail("cold read").find("1 reads in flight"), std::string::npos)
      << reports.detail("cold read");
  fs->hold_io(false);
  const Status s =
      within(**db, 30, "the cold read after the disk came back", [&] { return p->wait(); });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_GE((*db)->stats().cold_reads, 1u);
}

#if defined(BRAID_DEBUG_CHECKS)
// A serializable writer on the worker holds its verdict (DebugFaults::precommit_pause_ms).
// Meanwhile an application thread's read meets its precommitted version and waits for the
// verdict, and another certifies a read of the version it overwrites, which waits too: each
// wait is reported once, and both end normally when the verdict comes.
TEST(StallDetector, WaitsOnACertifyingTransactionAreReportedOnce) {
  Reports reports;
  Options o;
  o.workers = 1;
  o.pin_workers = false;
  o.huge_pages = false;
  o.isolation = Isolation::kSerializable;
  o.stall_timeout_ms = kStallMs;
  o.on_stall = reports.sink();
  o.debug_faults.precommit_pause_ms = 25 * kStallMs;  // room for both waits on a loaded machine
  auto db = testing::open_db(o);
  Table* t = testing::make_table(*db, "t");
  {
    // Snapshot isolation: this one does not certify, so it does not pause.
    Transaction tx = *db->begin(TxnOptions::with(Isolation::kSnapshot));
    ASSERT_TRUE(tx.insert(*t, "x", "0").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // The reader of the old version, open before the writer commits.
  Transaction reader = testing::begin(*db);
  EXPECT_EQ(read(reader, *t, "x"), "0");
  const std::uint64_t clock = db->stats().commit_clock;
  Result<Pending> w =
      db->submit([t](Tx& tx) -> Task<Status> { co_return co_await tx.put(*t, "x", "1"); });
  ASSERT_TRUE(w.is_ok());
  // The writer took its timestamp: it is certifying (paused).
  for (int i = 0; i < 2000 && db->stats().commit_clock == clock; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(db->stats().commit_clock, clock);
  auto certify = std::async(std::launch::async, [&] { return reader.commit(); });
  auto late_read = std::async(std::launch::async, [&] {
    Transaction late = testing::begin(*db);
    std::string v = read(late, *t, "x");
    EXPECT_TRUE(late.commit().is_ok());
    return v;
  });
  EXPECT_EQ(within(*db, 30, "a read of a precommitted version", [&] { return late_read.get(); }),
            "1");
  const Status s =
      within(*db, 30, "a certification behind a certifying writer", [&] { return certify.get(); });
  // The reader's rw edge goes into a committed writer, no cycle: it commits.
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_TRUE(within(*db, 30, "the paused writer", [&] { return w->wait(); }).is_ok());
  EXPECT_EQ(reports.count("read of a precommitted version"), 1u);
  EXPECT_NE(reports.detail("read of a precommitted version").find("certifying (precommit)"),
            std::string::npos)
      << reports.detail("read of a precommitted version");
  EXPECT_EQ(reports.count("serializable certification"), 1u);
  EXPECT_EQ(db->stats().stalls, 2u);
}
#endif

// Checkpoints run on worker 0, which sleeps while no worker has work. A store used only
// through Transaction (application threads, durable commits) must still checkpoint as its log
// grows, or the log, and the directory with it, grows without end. A constant live set of 40
// keys rewritten in 6 phases of 500 commits (each ~125 KB of log, twice the trigger): after
// each, a new checkpoint follows (waited for, 10 s at most), and the directory holds about
// one checkpoint and the log since it, not every commit so far.
TEST(Checkpoints, ApplicationThreadsAloneKeepTheDirectoryBounded) {
  auto fs = std::make_shared<storage::SimFileSystem>(54);
  Options o = test::wl_options(/*checkpoint_bytes=*/64 << 10);
  auto db = test::open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = testing::make_table(**db, "t");
  const auto directory_bytes = [&] {
    std::vector<std::string> names;
    EXPECT_TRUE(fs->list(o.directory, &names).is_ok());
    std::uint64_t n = 0;
    for (const std::string& name : names) {
      const Result<std::uint64_t> b = storage::file_size(*fs, o.directory + "/" + name);
      n += b.is_ok() ? *b : 0;
    }
    return n;
  };
  int i = 0;
  for (int phase = 0; phase < 6; ++phase) {
    const std::uint64_t before = (*db)->durability_stats().checkpoints;
    for (int end = i + 500; i < end; ++i) {
      Transaction tx = testing::begin(**db);
      ASSERT_TRUE(tx.put(*t, "k" + std::to_string(i % 40), std::string(200, 'a' + i % 26)).is_ok());
      ASSERT_TRUE(tx.commit().is_ok());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((*db)->durability_stats().checkpoints == before &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GT((*db)->durability_stats().checkpoints, before) << "phase " << phase;
    // The newest checkpoint, the log since its start (up to two phases) and a segment, under
    // the 750 KB of every commit by phase 5. The segments the checkpoint released go on the
    // workers' next turns (worker 0 retires the application threads' log), a moment after the
    // count moved: a sanitizer's timing can show the directory in between.
    constexpr std::uint64_t kBound = std::uint64_t{500} << 10;
    const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (directory_bytes() >= kBound && std::chrono::steady_clock::now() < settle) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_LT(directory_bytes(), kBound)
        << "phase " << phase << ", roll misses " << (*db)->durability_stats().checkpoint_roll_misses
        << ", checkpoints " << (*db)->durability_stats().checkpoints;
  }
}

TEST(StallDetector, TimeoutIsValidated) {
  Options o;
  o.stall_timeout_ms = 3'600'001;
  Result<std::unique_ptr<Database>> db = Database::open(o);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kInvalidArgument);
  EXPECT_NE(db.status().message().find("stall_timeout_ms"), std::string::npos);
  o.stall_timeout_ms = 0;  // off
  EXPECT_TRUE(Database::open(o).is_ok());
}

}  // namespace
}  // namespace braid
