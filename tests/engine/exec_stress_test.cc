// Bank transfers as coroutine transactions on two workers, in every execution mode and policy:
// conflicting transfers interleave on each worker and race across workers; auditors (one in
// eight transactions) read every account with multi_get and must always see the initial total.
// Also run under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/exec_test_util.h"
#include "engine/test_util.h"
#include "storage/durability_util.h"
#include "util/random.h"

namespace braid {
namespace {

constexpr int kAccounts = 48;
constexpr std::int64_t kInitial = 1000;

using testing::account;
using testing::as_int;

class Bank : public TxnGenerator {
 public:
  Bank(Table& t, std::uint64_t seed, int txns, const std::vector<std::string>& keys)
      : t_(t), rng_(seed), left_(txns), keys_(keys), views_(keys.begin(), keys.end()) {}

  bool next(Tx& tx, Task<Status>* out) override {
    if (left_-- == 0) return false;
    *out = rng_.uniform(8) == 0 ? audit(tx) : transfer(tx);
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    if (s.is_ok()) {
      ++commits;
    } else if (s == Code::kConflict) {
      ++conflicts;
    } else {
      ADD_FAILURE() << s.to_string();
    }
  }
  std::uint64_t commits = 0, conflicts = 0, audits = 0, bad_audits = 0;

 private:
  Task<Status> transfer(Tx& tx) {
    const int a = static_cast<int>(rng_.uniform(kAccounts));
    int b = static_cast<int>(rng_.uniform(kAccounts - 1));
    if (b >= a) ++b;
    const std::int64_t amount = static_cast<std::int64_t>(rng_.uniform(50));
    Result<std::string_view> va = co_await tx.get(t_, keys_[a]);
    if (!va.is_ok()) co_return va.status();
    const std::int64_t na = as_int(*va) - amount;
    Result<std::string_view> vb = co_await tx.get(t_, keys_[b]);
    if (!vb.is_ok()) co_return vb.status();
    const std::int64_t nb = as_int(*vb) + amount;
    if (Status s = co_await tx.update(t_, keys_[a], std::to_string(na)); !s.is_ok()) co_return s;
    co_return co_await tx.update(t_, keys_[b], std::to_string(nb));
  }
  Task<Status> audit(Tx& tx) {
    std::vector<GetResult> results(kAccounts);
    if (Status s = co_await tx.multi_get(t_, views_, results); !s.is_ok()) co_return s;
    std::int64_t sum = 0;
    for (const GetResult& r : results) {
      if (!r.is_ok()) co_return Status(r.code, "audit read");
      sum += as_int(r.value);
    }
    ++audits;
    if (sum != kAccounts * kInitial) ++bad_audits;
    co_return Status::ok();
  }

  Table& t_;
  util::Rng rng_;
  int left_;
  const std::vector<std::string>& keys_;
  std::vector<std::string_view> views_;
};

// kAccounts accounts of kInitial each, inserted by one application-thread transaction.
void open_accounts(Database& db, Table& t, std::vector<std::string>* keys) {
  Transaction tx = testing::begin(db);
  for (int i = 0; i < kAccounts; ++i) {
    keys->push_back(account(i));
    ASSERT_TRUE(tx.insert(t, keys->back(), std::to_string(kInitial)).is_ok());
  }
  ASSERT_TRUE(tx.commit().is_ok());
}

class ExecStress : public ::testing::TestWithParam<testing::ExecCase> {};

TEST_P(ExecStress, BankTransfersConserveTheTotal) {
  Options o;
  o.workers = 2;
  o.slots_per_worker = 8;
  auto db = testing::open_db(o);
  Table* t = testing::make_table(*db, "bank");
  std::vector<std::string> keys;
  ASSERT_NO_FATAL_FAILURE(open_accounts(*db, *t, &keys));
  Bank w0(*t, 11, 3000, keys);
  Bank w1(*t, 12, 3000, keys);
  TxnGenerator* gens[] = {&w0, &w1};
  ASSERT_TRUE(db->run(gens, testing::exec_of(GetParam(), 8, 5)).is_ok());
  EXPECT_EQ(w0.bad_audits + w1.bad_audits, 0u) << "an auditor saw money appear or vanish";
  EXPECT_GT(w0.audits + w1.audits, 100u);
  EXPECT_GT(w0.commits + w1.commits, 3000u);
  std::int64_t sum = 0;
  Transaction tx = testing::begin(*db);
  for (const std::string& k : keys) sum += as_int(*tx.get(*t, k));
  ASSERT_TRUE(tx.commit().is_ok());
  EXPECT_EQ(sum, kAccounts * kInitial);
  const ExecStats s = db->exec_stats();
  EXPECT_EQ(s.frames_allocated, s.frames_freed);
  EXPECT_EQ(db->stats().open_transactions, 0u);
  const ExecOptions e = testing::exec_of(GetParam(), 8, 5);
  if (e.scheduler == SchedulerPolicy::kTeam) {
    // No transaction waited past the bound, and teams formed.
    EXPECT_LE(s.max_passed_over, e.team_wait);
    EXPECT_GT(s.teams, 0u);
    EXPECT_GE(s.team_members, s.teams);
  } else {
    EXPECT_EQ(s.max_passed_over, 0u);
    EXPECT_EQ(s.teams, 0u);
  }
}

// The same race with eviction in it: a one-byte budget on a (simulated) directory, so every
// account is evicted as soon as its commit is durable and seen by every snapshot, while the
// workers' transfers read and write them back and an application thread scans the table and
// checks the total. Run under ThreadSanitizer too.
// One CI run (TSan, a loaded machine) hung in the test below for its whole 600 s, and 600+
// repetitions here did not do it again: past `limit` this prints what the engine was doing
// and aborts, so a next time names where it stopped instead of timing out silently.
class Watchdog {
 public:
  Watchdog(Database& db, std::chrono::seconds limit) : db_(db) {
    thread_ = std::thread([this, limit] {
      const auto until = std::chrono::steady_clock::now() + limit;
      while (!done_.load()) {
        if (std::chrono::steady_clock::now() > until) bark();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~Watchdog() {
    done_ = true;
    thread_.join();
  }
  std::atomic<std::uint64_t> scans{0};

 private:
  [[noreturn]] void bark() {
    const DatabaseStats s = db_.stats();
    const DurabilityStats d = db_.durability_stats();
    const ExecStats e = db_.exec_stats();
    std::fprintf(stderr,
                 "watchdog: stuck. commits %lu aborts %lu open txns %lu clock %lu | cold reads "
                 "%lu joins %lu errors %lu evictions %lu live versions %lu retired %lu | durable "
                 "clock %lu checkpoints %lu halted %d | worker txns %lu resumes %lu commit waits "
                 "%lu | scans %lu\n",
                 (unsigned long)s.commits, (unsigned long)s.aborts,
                 (unsigned long)s.open_transactions, (unsigned long)s.commit_clock,
                 (unsigned long)s.cold_reads, (unsigned long)s.cold_read_joins,
                 (unsigned long)s.cold_read_errors, (unsigned long)s.evictions,
                 (unsigned long)s.live_versions, (unsigned long)s.retired_versions,
                 (unsigned long)d.durable_clock, (unsigned long)d.checkpoints, d.halted ? 1 : 0,
                 (unsigned long)e.transactions, (unsigned long)e.resumes,
                 (unsigned long)e.commit_waits, (unsigned long)scans.load());
    std::abort();
  }
  Database& db_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST_P(ExecStress, BankTransfersConserveTheTotalUnderATinyBudget) {
  Options o = test::wl_options(64 << 10);  // checkpoints race the sweeps and the reads
  o.workers = 2;
  o.slots_per_worker = 8;
  o.memory_budget_bytes = 1;
  o.page_index_leaves = true;
  o.durability.commit = CommitMode::kAsync;
  auto opened = test::open_sim(o, std::make_shared<storage::SimFileSystem>(23));
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  std::unique_ptr<Database> db = std::move(opened).value();
  Watchdog watchdog(*db, std::chrono::seconds(180));
  Table* t = testing::make_table(*db, "bank");
  std::vector<std::string> keys;
  ASSERT_NO_FATAL_FAILURE(open_accounts(*db, *t, &keys));
  // An asynchronous commit on the application threads' log becomes durable without another
  // application commit: worker 0 drives that log (Durability::drive_external).
  const std::uint64_t loaded = db->stats().commit_clock;
  for (int i = 0; i < 5000 && db->durability_stats().durable_clock < loaded; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(db->durability_stats().durable_clock, loaded);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t>& scans = watchdog.scans;
  std::thread scanner([&] {
    while (!done.load()) {
      Transaction tx = testing::begin(*db);
      std::int64_t sum = 0;
      int n = 0;
      Status s = tx.scan(*t, "", "", 0, [&](std::string_view, std::string_view v) {
        sum += as_int(v);
        ++n;
        return true;
      });
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(n, kAccounts);
      ASSERT_EQ(sum, kAccounts * kInitial) << "a scan saw money appear or vanish";
      ASSERT_TRUE(tx.commit().is_ok());
      ++scans;
    }
  });
  // How many records get evicted and read back in one run depends on when checkpoints and
  // sweeps fall (CI once saw 97), so the test runs rounds until the tiny budget has shown both
  // more than 100 times; the bound keeps a budget that stopped evicting from passing silently.
  std::uint64_t commits = 0, bad_audits = 0;
  Status ran = Status::ok();
  DatabaseStats st{};
  for (int round = 0; round < 8 && ran.is_ok(); ++round) {
    Bank w0(*t, 21 + 2 * round, 1000, keys);
    Bank w1(*t, 22 + 2 * round, 1000, keys);
    TxnGenerator* gens[] = {&w0, &w1};
    ran = db->run(gens, testing::exec_of(GetParam(), 8, 7));
    commits += w0.commits + w1.commits;
    bad_audits += w0.bad_audits + w1.bad_audits;
    st = db->stats();
    if (st.evictions > 100 && st.cold_reads > 100) break;
  }
  done = true;
  scanner.join();
  ASSERT_TRUE(ran.is_ok()) << ran.to_string();
  EXPECT_EQ(bad_audits, 0u) << "an auditor saw money appear or vanish";
  EXPECT_GT(commits, 1000u);
  EXPECT_GT(scans, 0u);
  EXPECT_GT(st.evictions, 100u);
  EXPECT_GT(st.cold_reads, 100u);
  EXPECT_EQ(st.cold_read_errors, 0u);
  const ExecStats s = db->exec_stats();
  EXPECT_EQ(s.frames_allocated, s.frames_freed);
}

INSTANTIATE_TEST_SUITE_P(All, ExecStress, ::testing::ValuesIn(testing::all_cases()),
                         testing::case_name);

}  // namespace
}  // namespace braid
