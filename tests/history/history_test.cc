// The engine's histories, checked (history/checker.h): a list-append workload from worker
// coroutines and application threads at once, in snapshot isolation (no G0, G1, G-single, lost
// update: only G2-item may appear) and in serializable (no cycle at all), across execution
// modes and schedulers; and the checker's sensitivity: with a fault injected on purpose
// (Options::debug_faults, test builds only) it finds the anomaly the fault causes.
//
// Each transaction picks 1-4 distinct keys from a window of 6 that slides as transactions start
// (so lists stay short and contention high), reads each, and appends a unique element to some
// (read, then put of the list plus the element); a few append twice to one key, and a few abort
// on purpose after their appends. Every outcome is recorded by the transaction itself: Conflict
// from an operation or from commit means aborted.
#include <braid/braid.h>
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/exec_test_util.h"
#include "engine/test_util.h"
#include "history/checker.h"
#include "util/random.h"

namespace braid::history {
namespace {

constexpr std::uint32_t kWindow = 6;
constexpr std::uint64_t kSlideEvery = 40;  // transactions per step of the window

std::string key_name(std::uint32_t k) { return "k" + std::to_string(k); }

struct Shared {
  Table* table = nullptr;
  std::atomic<std::uint64_t> next_txn{1};
  std::atomic<std::uint64_t> next_element{1};
  std::atomic<std::uint32_t> max_key{0};
  std::atomic<std::uint64_t> unexpected{0};  // an operation answered something unforeseen
  std::mutex mu;
  std::string first_unexpected;
  void note(const Status& s) {
    if (s.is_ok() || s.code() == Code::kConflict || s.code() == Code::kNotFound) return;
    ++unexpected;
    std::lock_guard<std::mutex> g(mu);
    if (first_unexpected.empty()) first_unexpected = s.to_string();
  }
};

// One transaction's plan, drawn before it runs (so a coroutine body needs no generator state).
struct Plan {
  std::vector<std::uint32_t> keys;
  std::vector<int> appends;  // per key: 0, 1 or 2 appends
  bool abort_at_end = false;
};

Plan draw(Shared& sh, util::Rng& rng, std::uint64_t id) {
  Plan p;
  const auto base = static_cast<std::uint32_t>(id / kSlideEvery);
  const auto n = 1 + rng.uniform(4);
  while (p.keys.size() < n) {
    const auto k = base + static_cast<std::uint32_t>(rng.uniform(kWindow));
    if (std::find(p.keys.begin(), p.keys.end(), k) == p.keys.end()) p.keys.push_back(k);
  }
  for (std::size_t i = 0; i < p.keys.size(); ++i) {
    const auto r = rng.uniform(16);
    p.appends.push_back(r < 7 ? 0 : r < 15 ? 1 : 2);
  }
  p.abort_at_end = rng.uniform(20) == 0;
  std::uint32_t top = base + kWindow;
  std::uint32_t cur = sh.max_key.load();
  while (top > cur && !sh.max_key.compare_exchange_weak(cur, top)) {
  }
  return p;
}

// The body in the coroutine API; it fills `*t`.
Task<Status> body(Tx& tx, Shared* sh, Plan plan, Txn* t) {
  for (std::size_t i = 0; i < plan.keys.size(); ++i) {
    const std::uint32_t k = plan.keys[i];
    const std::string key = key_name(k);
    Result<std::string_view> got = co_await tx.get(*sh->table, key);
    std::vector<std::uint64_t> list;
    if (got.is_ok()) {
      if (!decode(*got, &list)) ++sh->unexpected;
    } else if (got.code() != Code::kNotFound) {
      sh->note(got.status());
      co_return got.status();
    }
    t->ops.push_back({Op::Kind::kRead, k, list, 0});
    for (int a = 0; a < plan.appends[i]; ++a) {
      const std::uint64_t e = sh->next_element.fetch_add(1);
      list.push_back(e);
      Status s = co_await tx.put(*sh->table, key, encode(list));
      if (!s.is_ok()) {
        sh->note(s);
        co_return s;
      }
      t->ops.push_back({Op::Kind::kAppend, k, {}, e});
    }
  }
  if (plan.abort_at_end) {
    tx.abort();
    co_return Status(Code::kConflict);  // recorded as aborted
  }
  Status s = co_await tx.commit();
  sh->note(s);
  t->committed = s.is_ok();
  co_return s;
}

class Generator : public TxnGenerator {
 public:
  Generator(Shared& sh, Isolation iso, std::uint64_t seed, int txns)
      : sh_(sh), iso_(iso), rng_(seed), left_(txns) {}
  bool next(Tx& tx, Task<Status>* out) override {
    if (left_-- <= 0) return false;
    EXPECT_TRUE(tx.configure(TxnOptions::with(iso_)).is_ok());
    const std::uint64_t id = sh_.next_txn.fetch_add(1);
    txns_.push_back({id, {}, false});
    *out = body(tx, &sh_, draw(sh_, rng_, id), &txns_.back());
    return true;
  }
  std::deque<Txn> txns_;  // stable addresses for the bodies

 private:
  Shared& sh_;
  Isolation iso_;
  util::Rng rng_;
  int left_;
};

// The same transaction through the blocking API on an application thread.
void run_blocking(Database& db, Shared& sh, Isolation iso, std::uint64_t seed, int txns,
                  std::vector<Txn>* out) {
  util::Rng rng(seed);
  for (int n = 0; n < txns; ++n) {
    const std::uint64_t id = sh.next_txn.fetch_add(1);
    const Plan plan = draw(sh, rng, id);
    Txn t{id, {}, false};
    Result<Transaction> begun = db.begin(TxnOptions::with(iso));
    if (!begun.is_ok()) {
      sh.note(begun.status());
      continue;
    }
    Transaction tx = std::move(begun).value();
    bool failed = false;
    for (std::size_t i = 0; i < plan.keys.size() && !failed; ++i) {
      const std::uint32_t k = plan.keys[i];
      const std::string key = key_name(k);
      std::vector<std::uint64_t> list;
      Result<std::string_view> got = tx.get(*sh.table, key);
      if (got.is_ok()) {
        if (!decode(*got, &list)) ++sh.unexpected;
      } else if (got.code() != Code::kNotFound) {
        sh.note(got.status());
        failed = true;
        break;
      }
      t.ops.push_back({Op::Kind::kRead, k, list, 0});
      for (int a = 0; a < plan.appends[i] && !failed; ++a) {
        const std::uint64_t e = sh.next_element.fetch_add(1);
        list.push_back(e);
        Status s = tx.put(*sh.table, key, encode(list));
        if (!s.is_ok()) {
          sh.note(s);
          failed = true;
        } else {
          t.ops.push_back({Op::Kind::kAppend, k, {}, e});
        }
      }
    }
    if (failed || plan.abort_at_end) {
      tx.abort();
    } else {
      Status s = tx.commit();
      sh.note(s);
      t.committed = s.is_ok();
    }
    out->push_back(std::move(t));
  }
}

struct RunConfig {
  Isolation iso = Isolation::kSnapshot;
  testing::ExecCase exec{ExecMode::kInterleaved, SchedulerPolicy::kBatch};
  DebugFaults faults;
  int worker_txns = 2000;  // per worker (2 workers)
  int thread_txns = 500;   // per application thread (2 threads)
  std::uint64_t seed = 1;
  // Durable: a database directory, asynchronous commits, and a memory budget small enough
  // that records are evicted and read back while they are read and written; the final state
  // must survive a reopen.
  std::string dir;
};

struct RunResult {
  Report report;
  DatabaseStats stats;
};

RunResult run_history(const RunConfig& c) {
  Options o;
  o.workers = 2;
  o.slots_per_worker = 16;
  o.pin_workers = false;
  o.debug_faults = c.faults;
  if (!c.dir.empty()) {
    o.directory = c.dir;
    o.durability.commit = CommitMode::kAsync;
    o.memory_budget_bytes = 1;   // every record it may evict goes, as soon as it may
    o.page_index_leaves = true;  // and every leaf
    o.huge_pages = false;
  }
  auto opened = Database::open(o);
  EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
  if (!opened.is_ok()) return {};
  std::unique_ptr<Database> db = std::move(opened).value();
  Shared sh;
  sh.table = testing::make_table(*db, "lists");
  Generator g0(sh, c.iso, c.seed * 7 + 1, c.worker_txns);
  Generator g1(sh, c.iso, c.seed * 7 + 2, c.worker_txns);
  std::vector<Txn> threads[2];
  std::vector<std::thread> apps;
  for (int i = 0; i < 2; ++i) {
    apps.emplace_back([&, i] {
      run_blocking(*db, sh, c.iso, c.seed * 7 + 3 + static_cast<std::uint64_t>(i), c.thread_txns,
                   &threads[i]);
    });
  }
  TxnGenerator* gens[] = {&g0, &g1};
  const Status ran = db->run(gens, testing::exec_of(c.exec, 8, c.seed));
  for (std::thread& t : apps) t.join();
  EXPECT_TRUE(ran.is_ok()) << ran.to_string();
  EXPECT_EQ(sh.unexpected.load(), 0u)
      << "an operation answered neither OK, NotFound nor Conflict; first: " << sh.first_unexpected;

  std::vector<Txn> all;
  for (Generator* g : {&g0, &g1}) all.insert(all.end(), g->txns_.begin(), g->txns_.end());
  for (auto& v : threads) all.insert(all.end(), v.begin(), v.end());
  // The final state, read by one snapshot after everything ended.
  std::map<std::uint32_t, std::vector<std::uint64_t>> final_state;
  Transaction reader = testing::begin(*db);
  for (std::uint32_t k = 0; k <= sh.max_key.load(); ++k) {
    Result<std::string_view> got = reader.get(*sh.table, key_name(k));
    std::vector<std::uint64_t> list;
    if (got.is_ok()) {
      EXPECT_TRUE(decode(*got, &list));
    }
    final_state[k] = std::move(list);
  }
  EXPECT_TRUE(reader.commit().is_ok());
  RunResult r{check(all, final_state), db->stats()};
  if (!c.dir.empty()) {
    const std::string table = sh.table->name();
    db.reset();
    auto again = Database::open(o);
    EXPECT_TRUE(again.is_ok()) << again.status().to_string();
    if (again.is_ok()) {
      Table* t = *(*again)->open_table(table);
      Transaction tx = testing::begin(**again);
      for (const auto& [k, list] : final_state) {
        Result<std::string_view> got = tx.get(*t, key_name(k));
        EXPECT_EQ(got.is_ok() ? std::string(*got) : std::string(), encode(list))
            << "key " << k << " after the reopen";
      }
      EXPECT_TRUE(tx.commit().is_ok());
    }
  }
  // A failure names transactions: spell out the first forbidden anomalies' operations (write
  // skew is allowed under snapshot isolation).
  std::size_t dumped = 0;
  for (const Anomaly& an : r.report.anomalies) {
    if (dumped == 3) break;
    if (c.iso == Isolation::kSnapshot && an.type == "G2-item") continue;
    ++dumped;
    for (std::uint64_t id : an.txns) {
      for (const Txn& t : all) {
        if (t.id != id) continue;
        std::string ops;
        for (const Op& op : t.ops) {
          ops += op.kind == Op::Kind::kRead
                     ? " r(" + std::to_string(op.key) + ")=[" + encode(op.list) + "]"
                     : " a(" + std::to_string(op.key) + "," + std::to_string(op.element) + ")";
        }
        std::printf("  T%lu %s:%s\n", static_cast<unsigned long>(id),
                    t.committed ? "committed" : "aborted", ops.c_str());
      }
    }
  }
  EXPECT_EQ(r.report.committed + r.report.aborted,
            static_cast<std::size_t>(2 * c.worker_txns + 2 * c.thread_txns));
  return r;
}

// Modes and schedulers the histories run under (each a fresh database of 5 000 transactions).
std::vector<testing::ExecCase> history_cases() {
  return {{ExecMode::kSequential, SchedulerPolicy::kBatch},
          {ExecMode::kInterleaved, SchedulerPolicy::kPipeline, true, true},
          {ExecMode::kNested, SchedulerPolicy::kBatch},
          {ExecMode::kInterleaved, SchedulerPolicy::kDualQueue}};
}

const char* kForbiddenUnderSI[] = {"G0",
                                   "G1a",
                                   "G1b",
                                   "G1c",
                                   "G-single",
                                   "lost-update",
                                   "garbage-read",
                                   "incompatible-order",
                                   "duplicate-element"};

class Histories : public ::testing::TestWithParam<testing::ExecCase> {};

TEST_P(Histories, SnapshotIsolationAllowsOnlyWriteSkew) {
  RunConfig c;
  c.exec = GetParam();
  c.seed = testing::env_u64("BRAID_HISTORY_SEED", 11);
  const RunResult r = run_history(c);
  for (const char* type : kForbiddenUnderSI) EXPECT_EQ(r.report.count(type), 0u) << type;
  EXPECT_EQ(r.stats.ssn_aborts, 0u);
  EXPECT_GT(r.report.committed, 1000u);
  std::printf("SI %s: %s\n", testing::case_name({GetParam(), 0}).c_str(),
              r.report.summary().c_str());
}

TEST_P(Histories, SerializableHasNoCycle) {
  RunConfig c;
  c.iso = Isolation::kSerializable;
  c.exec = GetParam();
  c.seed = testing::env_u64("BRAID_HISTORY_SEED", 12);
  const RunResult r = run_history(c);
  EXPECT_TRUE(r.report.anomalies.empty()) << r.report.summary();
  EXPECT_GT(r.report.committed, 1000u);
  // The certifier was exercised: it refused something, and everything else committed through it.
  EXPECT_GT(r.stats.ssn_aborts + r.stats.phantom_aborts, 0u);
  EXPECT_EQ(r.stats.serializable_commits, r.stats.commits - 1);  // all but the final reader
  std::printf("SSN %s: %s (ssn aborts %lu, phantom aborts %lu, write conflicts %lu)\n",
              testing::case_name({GetParam(), 0}).c_str(), r.report.summary().c_str(),
              static_cast<unsigned long>(r.stats.ssn_aborts),
              static_cast<unsigned long>(r.stats.phantom_aborts),
              static_cast<unsigned long>(r.stats.write_conflicts));
}

INSTANTIATE_TEST_SUITE_P(Modes, Histories, ::testing::ValuesIn(history_cases()),
                         testing::case_name);

// Serializable with durability and the cold store: SSN's refusals after the timestamp was
// taken are logged as empty records, evicted versions carry their readers' stamps in the cold
// floor, and the history is still serializable and survives the reopen.
TEST(DurableHistories, SerializableUnderAMemoryBudgetSurvivesAReopen) {
  char tmpl[] = "/tmp/braid-history-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  RunConfig c;
  c.iso = Isolation::kSerializable;
  c.exec = {ExecMode::kInterleaved, SchedulerPolicy::kDualQueue};
  c.dir = std::string(tmpl) + "/db";
  c.worker_txns = 1500;
  c.thread_txns = 300;
  c.seed = testing::env_u64("BRAID_HISTORY_SEED", 14);
  const RunResult r = run_history(c);
  EXPECT_TRUE(r.report.anomalies.empty()) << r.report.summary();
  EXPECT_GT(r.stats.evictions, 0u);
  EXPECT_GT(r.stats.cold_reads, 0u);
  EXPECT_GT(r.stats.ssn_aborts + r.stats.phantom_aborts, 0u);
  std::printf("durable SSN: %s (evictions %lu, cold reads %lu, ssn aborts %lu)\n",
              r.report.summary().c_str(), static_cast<unsigned long>(r.stats.evictions),
              static_cast<unsigned long>(r.stats.cold_reads),
              static_cast<unsigned long>(r.stats.ssn_aborts));
  std::filesystem::remove_all(tmpl);
}

// ---- Durable serializable clients ---------------------------------------------------------
//
// A database in a directory with durable commits, serializable by default, used as an
// application would: three threads run blocking Transactions with ~100 us of think time between
// operations while a fourth keeps up to eight coroutine transactions in flight through
// submit()/Pending::wait(). Each transaction does 1-4 operations on distinct keys of a window of
// 12: a read (get, a one-key scan, or in coroutines multi_get) or an append. A key whose list
// reached its retirement length (40-80 elements) is removed by the append that finds it so, and
// the window slides past it; fresh keys are created by their first append.
//
// In the checker's terms a removal is the key's last append (a tombstone element), so a
// removed key's final order is what its remover read plus that element. A read that finds no
// record is a read of the empty list only while no removal of its key has begun (a removal sets
// the key's `retiring` flag before its transaction writes, so a snapshot that misses the record
// without seeing the flag cannot be after a removal); otherwise its place in the key's history
// is unknown, and it is not recorded (no edge, never a false anomaly). An append never recreates
// a removed key: it writes only over a record it read, or where it may create one.
namespace clients {

constexpr std::uint32_t kWindow = 12;
constexpr std::uint32_t kMaxKeys = 4096;

struct World {
  Table* table = nullptr;
  std::atomic<std::uint64_t> next_txn{1};
  std::atomic<std::uint64_t> next_element{1};
  std::atomic<std::uint32_t> retired{0};  // committed removals: the window's base
  std::atomic<std::uint32_t> max_key{0};
  std::unique_ptr<std::atomic<bool>[]> retiring{new std::atomic<bool>[kMaxKeys]()};
  std::vector<std::uint32_t> retire_at;  // per key: 40..80 appends
  std::atomic<std::uint64_t> unexpected{0};
  std::mutex mu;
  std::string first_unexpected;
  struct Removal {
    std::uint64_t txn;
    std::uint32_t key;
    std::vector<std::uint64_t> order;  // the key's final order if the removal commits
  };
  std::vector<Removal> removals;
  void note(const Status& s) {
    if (s.is_ok() || s.code() == Code::kConflict || s.code() == Code::kNotFound) return;
    ++unexpected;
    std::lock_guard<std::mutex> g(mu);
    if (first_unexpected.empty()) first_unexpected = s.to_string();
  }
};

enum class Step : std::uint8_t { kGet, kScan, kMultiGet, kAppend };
struct Plan {
  std::vector<std::uint32_t> keys;
  std::vector<Step> steps;
};

Plan draw(World& w, util::Rng& rng, bool coroutine) {
  Plan p;
  const std::uint32_t base = w.retired.load();
  EXPECT_LT(base + kWindow, kMaxKeys);
  const auto n = 1 + rng.uniform(4);
  while (p.keys.size() < n) {
    const auto k = base + static_cast<std::uint32_t>(rng.uniform(kWindow));
    if (std::find(p.keys.begin(), p.keys.end(), k) != p.keys.end()) continue;
    p.keys.push_back(k);
    const auto r = rng.uniform(8);
    p.steps.push_back(r < 4                 ? Step::kAppend
                      : r < 6               ? Step::kGet
                      : r < 7 || !coroutine ? Step::kScan
                                            : Step::kMultiGet);
  }
  std::uint32_t top = base + kWindow;
  std::uint32_t cur = w.max_key.load();
  while (top > cur && !w.max_key.compare_exchange_weak(cur, top)) {
  }
  return p;
}

// What a read found, as the checker may use it: false when it cannot be placed (not recorded).
bool placeable(World& w, std::uint32_t k, bool found) {
  return found || !w.retiring[k].load(std::memory_order_seq_cst);
}

// The write an append makes after reading `list` (found or not), recorded in `t`; `*remove`
// when it retires the key instead. False: nothing to write (a removed key).
struct AppendPlan {
  bool write = false;
  bool remove = false;
  std::uint64_t element = 0;
  std::vector<std::uint64_t> list;  // the new value (remove: the final order)
};
AppendPlan plan_append(World& w, std::uint32_t k, bool found, std::vector<std::uint64_t> list) {
  AppendPlan a;
  if (!placeable(w, k, found)) return a;
  a.write = true;
  a.element = w.next_element.fetch_add(1);
  a.remove = found && list.size() >= w.retire_at[k];
  if (a.remove) w.retiring[k].store(true, std::memory_order_seq_cst);
  list.push_back(a.element);
  a.list = std::move(list);
  return a;
}

void record_removal(World& w, std::uint64_t txn, std::uint32_t k,
                    const std::vector<std::uint64_t>& order) {
  std::lock_guard<std::mutex> g(w.mu);
  w.removals.push_back({txn, k, order});
}

Task<Status> coroutine_body(Tx& tx, World* w, Plan plan, Txn* t) {
  for (std::size_t i = 0; i < plan.keys.size(); ++i) {
    const std::uint32_t k = plan.keys[i];
    const std::string key = key_name(k);
    std::vector<std::uint64_t> list;
    bool found = false;
    if (plan.steps[i] == Step::kScan) {
      std::string got;
      Status s = co_await tx.scan(*w->table, key, key + std::string(1, '\0'), 1,
                                  [&](std::string_view, std::string_view v) {
                                    got = std::string(v);
                                    found = true;
                                    return true;
                                  });
      if (!s.is_ok()) {
        w->note(s);
        co_return s;
      }
      if (found && !decode(got, &list)) ++w->unexpected;
    } else if (plan.steps[i] == Step::kMultiGet) {
      const std::string_view keys[1] = {key};
      GetResult results[1];
      Status s = co_await tx.multi_get(*w->table, keys, results);
      if (!s.is_ok()) {
        w->note(s);
        co_return s;
      }
      found = results[0].is_ok();
      if (found && !decode(results[0].value, &list)) ++w->unexpected;
    } else {
      Result<std::string_view> got = co_await tx.get(*w->table, key);
      if (got.is_ok()) {
        found = true;
        if (!decode(*got, &list)) ++w->unexpected;
      } else if (got.code() != Code::kNotFound) {
        w->note(got.status());
        co_return got.status();
      }
    }
    if (!placeable(*w, k, found)) continue;
    t->ops.push_back({Op::Kind::kRead, k, list, 0});
    if (plan.steps[i] != Step::kAppend) continue;
    const AppendPlan a = plan_append(*w, k, found, list);
    if (!a.write) continue;
    Status s = a.remove ? co_await tx.remove(*w->table, key)
                        : co_await tx.put(*w->table, key, encode(a.list));
    if (!s.is_ok()) {
      w->note(s);
      co_return s;
    }
    t->ops.push_back({Op::Kind::kAppend, k, {}, a.element});
    if (a.remove) record_removal(*w, t->id, k, a.list);
  }
  co_return Status::ok();  // the worker commits; the submitter records the outcome
}

void run_blocking_client(Database& db, World& w, std::uint64_t seed, int txns,
                         std::vector<Txn>* out) {
  util::Rng rng(seed);
  const auto think = [] { std::this_thread::sleep_for(std::chrono::microseconds(100)); };
  for (int n = 0; n < txns; ++n) {
    Txn t{w.next_txn.fetch_add(1), {}, false};
    const Plan plan = draw(w, rng, false);
    Result<Transaction> begun = db.begin();
    if (!begun.is_ok()) {
      w.note(begun.status());
      continue;
    }
    Transaction tx = std::move(begun).value();
    bool failed = false;
    for (std::size_t i = 0; i < plan.keys.size() && !failed; ++i) {
      if (i != 0) think();
      const std::uint32_t k = plan.keys[i];
      const std::string key = key_name(k);
      std::vector<std::uint64_t> list;
      bool found = false;
      Status s;
      if (plan.steps[i] == Step::kScan) {
        std::string got;
        s = tx.scan(*w.table, key, key + std::string(1, '\0'), 1,
                    [&](std::string_view, std::string_view v) {
                      got = std::string(v);
                      found = true;
                      return true;
                    });
        if (found && !decode(got, &list)) ++w.unexpected;
      } else {
        Result<std::string_view> got = tx.get(*w.table, key);
        if (got.is_ok()) {
          found = true;
          if (!decode(*got, &list)) ++w.unexpected;
        } else if (got.code() != Code::kNotFound) {
          s = got.status();
        }
      }
      if (!s.is_ok()) {
        w.note(s);
        failed = true;
        break;
      }
      if (!placeable(w, k, found)) continue;
      t.ops.push_back({Op::Kind::kRead, k, list, 0});
      if (plan.steps[i] != Step::kAppend) continue;
      const AppendPlan a = plan_append(w, k, found, list);
      if (!a.write) continue;
      s = a.remove ? tx.remove(*w.table, key) : tx.put(*w.table, key, encode(a.list));
      if (!s.is_ok()) {
        w.note(s);
        failed = true;
        break;
      }
      t.ops.push_back({Op::Kind::kAppend, k, {}, a.element});
      if (a.remove) record_removal(w, t.id, k, a.list);
    }
    if (failed) {
      tx.abort();
    } else {
      const Status s = tx.commit();
      w.note(s);
      t.committed = s.is_ok();
    }
    out->push_back(std::move(t));
  }
}

// Keeps up to `depth` coroutine transactions in flight through submit()/Pending::wait().
void run_coroutine_client(Database& db, World& w, std::uint64_t seed, int txns,
                          std::deque<Txn>* out, std::uint32_t depth) {
  util::Rng rng(seed);
  struct InFlight {
    Pending pending;
    Txn* txn;
  };
  std::deque<InFlight> flight;
  const auto settle_oldest = [&] {
    InFlight f = std::move(flight.front());
    flight.pop_front();
    const Status s = f.pending.wait();
    w.note(s);
    f.txn->committed = s.is_ok();
  };
  for (int n = 0; n < txns;) {
    if (flight.size() == depth) settle_oldest();
    out->push_back({w.next_txn.fetch_add(1), {}, false});
    Txn* t = &out->back();
    Plan plan = draw(w, rng, true);
    World* wp = &w;
    Result<Pending> p =
        db.submit([wp, plan, t](Tx& tx) { return coroutine_body(tx, wp, plan, t); });
    if (!p.is_ok()) {
      out->pop_back();  // never ran: not part of the history
      if (p.code() != Code::kBusy) {
        w.note(p.status());
        return;
      }
      if (!flight.empty()) settle_oldest();
      continue;
    }
    flight.push_back({std::move(p).value(), t});
    ++n;
  }
  while (!flight.empty()) settle_oldest();
}

struct Config {
  testing::ExecCase exec{ExecMode::kInterleaved, SchedulerPolicy::kPipeline};
  std::uint64_t seed = 1;
  int blocking_txns = 250;   // per blocking thread (three)
  int coroutine_txns = 250;  // the coroutine thread's
  Isolation iso = Isolation::kSerializable;
};

struct Outcome {
  Report report;
  DatabaseStats stats;
  std::size_t removals = 0;
};

Outcome run(const Config& c) {
  char tmpl[] = "/tmp/braid-clients-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl), nullptr);
  Options o;
  o.directory = std::string(tmpl) + "/db";
  o.durability.commit = CommitMode::kDurable;
  o.isolation = c.iso;
  o.workers = 2;
  o.pin_workers = false;
  o.huge_pages = false;
  o.max_version_bytes = std::uint64_t{1} << 30;
  o.exec = testing::exec_of(c.exec, 8, c.seed);
  Outcome out;
  auto opened = Database::open(o);
  EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
  if (!opened.is_ok()) return out;
  std::unique_ptr<Database> db = std::move(opened).value();
  World w;
  w.table = testing::make_table(*db, "lists");
  util::Rng rng(c.seed * 31 + 5);
  for (std::uint32_t k = 0; k < kMaxKeys; ++k) {
    w.retire_at.push_back(40 + static_cast<std::uint32_t>(rng.uniform(41)));
  }
  std::vector<Txn> blocking[3];
  std::deque<Txn> coroutines;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      run_blocking_client(*db, w, c.seed * 7 + static_cast<std::uint64_t>(i), c.blocking_txns,
                          &blocking[i]);
    });
  }
  threads.emplace_back(
      [&] { run_coroutine_client(*db, w, c.seed * 7 + 3, c.coroutine_txns, &coroutines, 8); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(w.unexpected.load(), 0u)
      << "an operation answered neither OK, NotFound nor Conflict; first: " << w.first_unexpected;

  std::vector<Txn> all(coroutines.begin(), coroutines.end());
  for (auto& v : blocking) all.insert(all.end(), v.begin(), v.end());
  std::set<std::uint64_t> committed;
  for (const Txn& t : all) {
    if (t.committed) committed.insert(t.id);
  }
  // The final state: one snapshot after everything ended, with each committed removal's
  // final order for the keys it removed.
  std::map<std::uint32_t, std::vector<std::uint64_t>> removed;
  for (const World::Removal& r : w.removals) {
    if (committed.count(r.txn) == 0) continue;
    EXPECT_EQ(removed.count(r.key), 0u) << "key " << r.key << " removed twice";
    removed[r.key] = r.order;
  }
  out.removals = removed.size();
  std::map<std::uint32_t, std::vector<std::uint64_t>> final_state;
  {
    Transaction reader = testing::begin(*db);
    for (std::uint32_t k = 0; k <= w.max_key.load(); ++k) {
      Result<std::string_view> got = reader.get(*w.table, key_name(k));
      std::vector<std::uint64_t> list;
      if (got.is_ok()) {
        EXPECT_TRUE(decode(*got, &list));
        EXPECT_EQ(removed.count(k), 0u) << "key " << k << " is present after its removal";
      } else if (auto it = removed.find(k); it != removed.end()) {
        list = it->second;
      }
      final_state[k] = std::move(list);
    }
    EXPECT_TRUE(reader.commit().is_ok());
  }
  out.report = check(all, final_state);
  out.stats = db->stats();
  // A failure names the key: every transaction that touched the first anomaly's key.
  if (!out.report.anomalies.empty() && testing::env_u64("BRAID_HISTORY_DUMP", 0) != 0) {
    const Anomaly& an = out.report.anomalies.front();
    std::uint32_t key = UINT32_MAX;
    for (const Txn& t : all) {
      if (t.id == an.txns.front() && !t.ops.empty()) key = t.ops.back().key;
    }
    std::sscanf(an.detail.c_str(), "%*[^k]key %u", &key);
    for (const Txn& t : all) {
      std::string ops;
      bool touches = false;
      for (const Op& op : t.ops) {
        if (op.key != key) continue;
        touches = true;
        ops += op.kind == Op::Kind::kRead ? " r=[" + encode(op.list) + "]"
                                          : " a(" + std::to_string(op.element) + ")";
      }
      bool removal = false;
      for (const World::Removal& r : w.removals) removal |= r.txn == t.id && r.key == key;
      if (touches || removal) {
        std::printf("  T%lu %s%s:%s\n", static_cast<unsigned long>(t.id),
                    t.committed ? "committed" : "aborted", removal ? " (removal)" : "",
                    ops.c_str());
      }
    }
  }
  EXPECT_EQ(out.stats.stalls, 0u) << "a wait was reported stalled";
  // Everything acknowledged survives a reopen.
  db.reset();
  auto again = Database::open(o);
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
  if (again.is_ok()) {
    Table* t = *(*again)->open_table("lists");
    Transaction tx = testing::begin(**again);
    for (const auto& [k, list] : final_state) {
      Result<std::string_view> got = tx.get(*t, key_name(k));
      const std::string expect = removed.count(k) != 0 ? std::string() : encode(list);
      EXPECT_EQ(got.is_ok() ? std::string(*got) : std::string(), expect)
          << "key " << k << " after the reopen";
    }
    EXPECT_TRUE(tx.commit().is_ok());
  }
  std::filesystem::remove_all(tmpl);
  EXPECT_EQ(out.report.committed + out.report.aborted,
            static_cast<std::size_t>(3 * c.blocking_txns + c.coroutine_txns));
  return out;
}

// Every mode and every scheduler at least once (the sequential modes open one transaction at a
// time, so the storage-aware policies are the interleaving modes' business), and the debug
// switches.
std::vector<testing::ExecCase> cases() {
  return {{ExecMode::kSequential, SchedulerPolicy::kBatch},
          {ExecMode::kPrefetch, SchedulerPolicy::kPipeline},
          {ExecMode::kNested, SchedulerPolicy::kStorageBatch},
          {ExecMode::kInterleaved, SchedulerPolicy::kDualQueue},
          {ExecMode::kAuto, SchedulerPolicy::kTeam},
          {ExecMode::kInterleaved, SchedulerPolicy::kPipeline, true, true},
          {ExecMode::kInterleaved, SchedulerPolicy::kTeam, true, true}};
}

class DurableClients : public ::testing::TestWithParam<testing::ExecCase> {};

TEST_P(DurableClients, SerializableBlockingAndCoroutineClientsNeverHang) {
  Config c;
  c.exec = GetParam();
  c.seed = testing::env_u64("BRAID_HISTORY_SEED", 49);
  c.blocking_txns = static_cast<int>(testing::env_u64("BRAID_CLIENT_TXNS", 250));
  c.coroutine_txns = c.blocking_txns;
  const Outcome r = run(c);
  EXPECT_TRUE(r.report.anomalies.empty()) << r.report.summary();
  EXPECT_GT(r.report.committed, static_cast<std::size_t>(c.blocking_txns));
  EXPECT_GT(r.stats.ssn_aborts + r.stats.phantom_aborts, 0u);
  std::printf("durable clients %s: %s (removals %zu, ssn aborts %lu)\n",
              testing::case_name({GetParam(), 0}).c_str(), r.report.summary().c_str(), r.removals,
              static_cast<unsigned long>(r.stats.ssn_aborts));
}

INSTANTIATE_TEST_SUITE_P(Modes, DurableClients, ::testing::ValuesIn(cases()), testing::case_name);

}  // namespace clients

// ---- Sensitivity: each injected fault is caught --------------------------------------------

#if defined(BRAID_DEBUG_CHECKS)
constexpr bool kFaults = true;
#else
constexpr bool kFaults = false;
#endif

RunConfig faulty(Isolation iso) {
  RunConfig c;
  c.iso = iso;
  c.exec = {ExecMode::kInterleaved, SchedulerPolicy::kBatch, true, true};
  c.worker_txns = 1000;
  c.thread_txns = 250;
  c.seed = testing::env_u64("BRAID_HISTORY_SEED", 13);
  return c;
}

// Whether an injected fault shows is a matter of interleaving: a G1b, say, needs a reader to run
// between a transaction's two appends to one key and then commit, and a sanitizer's timing can
// leave a whole run without one. So a run that misses is repeated with the next seed, up to
// kSensitivityTries; each run replays from its seed, and the assertion is on the union.
constexpr int kSensitivityTries = 4;

template <typename Caught>
RunResult run_until(RunConfig c, Caught caught) {
  RunResult r;
  for (int i = 0; i < kSensitivityTries; ++i, ++c.seed) {
    r = run_history(c);
    std::printf("seed %lu: %s\n", static_cast<unsigned long>(c.seed), r.report.summary().c_str());
    if (caught(r)) break;
  }
  return r;
}

TEST(HistorySensitivity, NoFirstUpdaterWinsLosesUpdates) {
  if (!kFaults) GTEST_SKIP() << "Options::debug_faults needs a BRAID_DEBUG_CHECKS build";
  RunConfig c = faulty(Isolation::kSnapshot);
  c.faults.no_first_updater_wins = true;
  const RunResult r = run_until(c, [](const RunResult& x) {
    return x.report.count("lost-update") + x.report.count("incompatible-order") > 0;
  });
  EXPECT_GT(r.report.count("lost-update") + r.report.count("incompatible-order"), 0u)
      << r.report.summary();
}

TEST(HistorySensitivity, DirtyReadsShowAbortedAndIntermediateReads) {
  if (!kFaults) GTEST_SKIP() << "Options::debug_faults needs a BRAID_DEBUG_CHECKS build";
  RunConfig c = faulty(Isolation::kSnapshot);
  c.faults.dirty_reads = true;
  bool aborted_read = false;
  bool intermediate_read = false;
  run_until(c, [&](const RunResult& x) {
    aborted_read = aborted_read || x.report.count("G1a") > 0;
    intermediate_read = intermediate_read || x.report.count("G1b") > 0;
    return aborted_read && intermediate_read;
  });
  EXPECT_TRUE(aborted_read) << "no run read an aborted transaction's write (G1a)";
  EXPECT_TRUE(intermediate_read) << "no run read a write its writer later overwrote (G1b)";
}

TEST(HistorySensitivity, SkippedSsnTestLetsCyclesCommit) {
  if (!kFaults) GTEST_SKIP() << "Options::debug_faults needs a BRAID_DEBUG_CHECKS build";
  RunConfig c = faulty(Isolation::kSerializable);
  c.faults.skip_ssn_test = true;
  const RunResult r = run_until(c, [](const RunResult& x) {
    return x.report.count("G2-item") + x.report.count("G-single") > 0;
  });
  EXPECT_GT(r.report.count("G2-item") + r.report.count("G-single"), 0u) << r.report.summary();
  EXPECT_EQ(r.stats.ssn_aborts, 0u);
}

TEST(HistorySensitivity, FaultsAreRefusedOutsideTestBuilds) {
  if (kFaults) GTEST_SKIP() << "this build honours Options::debug_faults";
  Options o;
  o.debug_faults.dirty_reads = true;
  auto opened = Database::open(o);
  ASSERT_FALSE(opened.is_ok());
  EXPECT_EQ(opened.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace braid::history
