// Coroutine transactions in every execution mode and scheduler policy: the reference-model test,
// isolation anomalies, determinism under a seed, multi_get, submit/execute, and frame accounting.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/access.h"
#include "engine/exec_test_util.h"
#include "engine/ref_model.h"
#include "engine/table.h"
#include "engine/test_util.h"
#include "storage/durability_util.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::ExecCase;
using testing::ListGenerator;
using testing::RefModel;
using testing::RefTx;
using testing::WriteOp;

using testing::env_u64;

std::map<std::string, std::string> dump(Database& db, Table& t) {
  Transaction tx = testing::begin(db);
  std::map<std::string, std::string> got;
  EXPECT_TRUE(tx.scan(t, "", "", 0, [&](std::string_view k, std::string_view v) {
                  got.emplace(k, v);
                  return true;
                }).is_ok());
  EXPECT_TRUE(tx.commit().is_ok());
  return got;
}

void expect_frames_balance(Database& db) {
  const ExecStats s = db.exec_stats();
  EXPECT_EQ(s.frames_allocated, s.frames_freed) << "coroutine frames leak";
  EXPECT_EQ(s.frame_heap_fallbacks, 0u);
  EXPECT_EQ(db.stats().open_transactions, 0u);
}

// ---- The reference model, driven by coroutine transactions on one worker ----------------------
//
// One worker runs up to `batch` transactions interleaved; each checks every operation's outcome
// against the model when it completes. That is sound because an operation's effect (a write's
// installation) and its return to the transaction body happen without the scheduler running
// anything in between, and the model snapshot is taken in next(), just before the worker
// begins the transaction.
class CoroModel : public TxnGenerator {
 public:
  CoroModel(Table& table, std::uint64_t seed, std::uint64_t txns)
      : table_(table), rng_(seed), keys_(RefModel::make_keys(40)), total_(txns) {}

  bool next(Tx& tx, Task<Status>* out) override {
    if (made_ == total_) return false;
    ++made_;
    refs_.push_back(std::make_unique<RefTx>());
    RefTx* ref = refs_.back().get();
    model_.open(ref);
    *out = body(tx, ref, made_);
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    if (!s.is_ok() && s != Code::kConflict)
      ADD_FAILURE() << "transaction failed: " << s.to_string();
  }
  const RefModel& model() const { return model_; }
  std::uint64_t checked() const { return checked_; }

 private:
  std::string key() { return keys_[rng_.uniform(keys_.size())]; }

  Task<Status> body(Tx& tx, RefTx* ref, std::uint64_t id) {
    const std::uint64_t ops = 1 + rng_.uniform(8);
    for (std::uint64_t i = 0; i < ops; ++i) {
      const std::uint64_t op = rng_.uniform(100);
      if (op < 30) {
        const std::string k = key();
        Result<std::string_view> r = co_await tx.get(table_, k);
        const testing::Value want = model_.visible(*ref, k);
        if (want) {
          EXPECT_TRUE(r.is_ok()) << "txn " << id << " get " << r.status().to_string();
          if (r.is_ok()) {
            EXPECT_EQ(std::string(*r), *want) << "txn " << id;
          }
        } else {
          EXPECT_EQ(r.code(), Code::kNotFound) << "txn " << id;
        }
      } else if (op < 40) {
        std::string a = key();
        std::string b = rng_.uniform(3) == 0 ? std::string() : key();
        if (!b.empty() && b < a) std::swap(a, b);
        const std::size_t limit = rng_.uniform(3) == 0 ? 1 + rng_.uniform(5) : 0;
        const ScanOrder order = rng_.uniform(2) == 0 ? ScanOrder::kForward : ScanOrder::kReverse;
        std::vector<std::pair<std::string, std::string>> got;
        Status s = co_await tx.scan(
            table_, a, b, limit,
            [&got](std::string_view k, std::string_view v) {
              got.emplace_back(k, v);
              return true;
            },
            order);
        EXPECT_TRUE(s.is_ok()) << s.to_string();
        EXPECT_EQ(got, model_.expected_scan(*ref, a, b, limit, order)) << "txn " << id;
      } else if (op < 45) {
        const std::string keys[3] = {key(), key(), key()};
        const std::string_view views[3] = {keys[0], keys[1], keys[2]};
        GetResult results[3];
        Status s = co_await tx.multi_get(table_, views, results);
        EXPECT_TRUE(s.is_ok()) << s.to_string();
        for (int j = 0; j < 3; ++j) {
          const testing::Value want = model_.visible(*ref, keys[j]);
          EXPECT_EQ(results[j].code, want ? Code::kOk : Code::kNotFound) << "txn " << id;
          if (want && results[j].is_ok()) {
            EXPECT_EQ(std::string(results[j].value), *want);
          }
        }
      } else {
        static constexpr WriteOp kinds[] = {WriteOp::kInsert, WriteOp::kUpdate, WriteOp::kPut,
                                            WriteOp::kRemove};
        const WriteOp kind = kinds[rng_.uniform(4)];
        const std::string k = key();
        const std::string v = RefModel::random_value(rng_);
        Status got;
        switch (kind) {
          case WriteOp::kInsert:
            got = co_await tx.insert(table_, k, v);
            break;
          case WriteOp::kUpdate:
            got = co_await tx.update(table_, k, v);
            break;
          case WriteOp::kPut:
            got = co_await tx.put(table_, k, v);
            break;
          case WriteOp::kRemove:
            got = co_await tx.remove(table_, k);
            break;
        }
        const Code want = model_.predict_write(*ref, kind, k);
        EXPECT_EQ(got.code(), want)
            << "txn " << id << " kind " << static_cast<int>(kind) << " got " << got.to_string();
        if (got == Code::kConflict) {
          EXPECT_FALSE(tx.is_active());
          model_.close(ref);
          co_return got;
        }
        if (got.is_ok()) model_.apply_write(ref, kind, k, v);
      }
      ++checked_;
    }
    if (rng_.uniform(8) == 0) {
      tx.abort();
      model_.close(ref);
      co_return Status::ok();
    }
    Status s = co_await tx.commit();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    model_.commit(ref);
    co_return s;
  }

  Table& table_;
  util::Rng rng_;
  std::vector<std::string> keys_;
  RefModel model_;
  std::vector<std::unique_ptr<RefTx>> refs_;
  std::uint64_t total_;
  std::uint64_t made_ = 0;
  std::uint64_t checked_ = 0;
};

class ExecModes : public ::testing::TestWithParam<ExecCase> {};

TEST_P(ExecModes, MatchesReferenceModel) {
  for (std::uint64_t seed : {1, 2}) {
    const std::uint64_t s = env_u64("BRAID_MODEL_SEED", seed);
    SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(s));
    Options o;
    o.slots_per_worker = 8;
    auto db = testing::open_db(o);
    Table* t = testing::make_table(*db, "model");
    CoroModel model(*t, s, env_u64("BRAID_MODEL_TXNS", 3000));
    TxnGenerator* gens[] = {&model};
    ASSERT_TRUE(db->run(gens, testing::exec_of(GetParam(), 6, s)).is_ok());
    EXPECT_GT(model.checked(), 3000u);
    EXPECT_EQ(model.model().open_count(), 0u);
    EXPECT_EQ(dump(*db, *t), model.model().final_state());
    // Removed keys leave the index once reclaimed; after the queues drained, only the live
    // ones are left.
    const std::size_t live = model.model().final_state().size();
    EXPECT_GE(testing::index_keys(*db, *t), live);
    EXPECT_LE(testing::index_keys(*db, *t), model.model().indexed_keys());
    Table* scratch = testing::make_table(*db, "scratch");
    testing::drain_reclamation(*db, *scratch);
    EXPECT_EQ(testing::index_keys(*db, *t), live);
    EXPECT_EQ(db->stats().tombstones_pending, 0u);
    EXPECT_EQ(dump(*db, *t), model.model().final_state());
    expect_frames_balance(*db);
  }
}

// The same model on a database whose budget is one byte: every record whose head is committed,
// durable and seen by every snapshot is evicted at once (workers sweep between rounds), so
// reads, writes, scans and multi_gets keep meeting cold entries and reading them back. Async
// commits: a durable commit's body resumes after later transactions could already see it,
// which the model (updated when the body's commit returns) would take for an anomaly.
TEST_P(ExecModes, MatchesReferenceModelUnderATinyBudget) {
  for (std::uint64_t seed : {3, 4}) {
    const std::uint64_t s = env_u64("BRAID_MODEL_SEED", seed);
    SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(s));
    auto fs = std::make_shared<storage::SimFileSystem>(s);
    Options o = test::wl_options(0);
    o.slots_per_worker = 8;
    o.memory_budget_bytes = 1;
    o.page_index_leaves = true;
    o.durability.commit = CommitMode::kAsync;
    auto db = test::open_sim(o, fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Table* t = testing::make_table(**db, "model");
    CoroModel model(*t, s, env_u64("BRAID_MODEL_TXNS", 3000));
    TxnGenerator* gens[] = {&model};
    ASSERT_TRUE((*db)->run(gens, testing::exec_of(GetParam(), 6, s)).is_ok());
    EXPECT_GT(model.checked(), 3000u);
    EXPECT_EQ(dump(**db, *t), model.model().final_state());
    const std::size_t live = model.model().final_state().size();
    EXPECT_GE(testing::index_keys(**db, *t), live);
    EXPECT_LE(testing::index_keys(**db, *t), model.model().indexed_keys());
    Table* scratch = testing::make_table(**db, "scratch");
    testing::drain_reclamation(**db, *scratch);
    EXPECT_EQ(testing::index_keys(**db, *t), live);
    EXPECT_EQ(dump(**db, *t), model.model().final_state());
    expect_frames_balance(**db);
    const DatabaseStats st = (*db)->stats();
    EXPECT_GT(st.evictions, 300u);
    EXPECT_GT(st.cold_reads, 300u);
    EXPECT_EQ(st.cold_read_errors, 0u);
  }
}

// ---- Isolation anomalies, with two transactions interleaved on one worker ----------------------
//
// The transactions hand control back and forth through `step` and Tx::yield(), so each scenario
// has the same interleaving in every mode.
struct Pair {
  std::unique_ptr<Database> db;
  Table* t;
  int step = 0;
};

Pair setup(std::initializer_list<std::pair<const char*, const char*>> rows) {
  Pair p{testing::open_db(), nullptr};
  p.t = testing::make_table(*p.db, "iso");
  Transaction tx = testing::begin(*p.db);
  for (auto [k, v] : rows) EXPECT_TRUE(tx.insert(*p.t, k, v).is_ok());
  EXPECT_TRUE(tx.commit().is_ok());
  return p;
}

Task<void> wait_for(Tx& tx, int* step, int want) {
  while (*step < want) co_await tx.yield();
}

std::vector<Code> run_pair(Pair& p, const ExecCase& c, ListGenerator::Body a,
                           ListGenerator::Body b) {
  ExecCase forced = c;
  forced.force_suspend = true;  // the sequential modes interleave only when forced
  ListGenerator gen({std::move(a), std::move(b)});
  TxnGenerator* gens[] = {&gen};
  EXPECT_TRUE(p.db->run(gens, testing::exec_of(forced, 2)).is_ok());
  expect_frames_balance(*p.db);
  return gen.outcomes;
}

TEST_P(ExecModes, ReadSkewIsPrevented) {  // G-single
  Pair p = setup({{"x", "50"}, {"y", "50"}});
  std::string seen_y;
  auto reader = [&](Tx& tx) -> Task<Status> {
    Result<std::string_view> x = co_await tx.get(*p.t, "x");
    EXPECT_EQ(std::string(*x), "50");
    p.step = 1;
    co_await wait_for(tx, &p.step, 2);
    Result<std::string_view> y = co_await tx.get(*p.t, "y");
    seen_y = std::string(*y);
    co_return Status::ok();
  };
  auto writer = [&](Tx& tx) -> Task<Status> {
    co_await wait_for(tx, &p.step, 1);
    EXPECT_TRUE((co_await tx.update(*p.t, "x", "25")).is_ok());
    EXPECT_TRUE((co_await tx.update(*p.t, "y", "75")).is_ok());
    Status s = co_await tx.commit();
    p.step = 2;
    co_return s;
  };
  EXPECT_EQ(run_pair(p, GetParam(), reader, writer), (std::vector<Code>{Code::kOk, Code::kOk}));
  EXPECT_EQ(seen_y, "50");  // the reader's snapshot, not the writer's commit
}

TEST_P(ExecModes, LostUpdateIsPrevented) {  // P4
  Pair p = setup({{"x", "0"}});
  auto first = [&](Tx& tx) -> Task<Status> {
    (void)co_await tx.get(*p.t, "x");
    p.step = 1;
    co_await wait_for(tx, &p.step, 2);
    co_return co_await tx.update(*p.t, "x", "first");  // the other committed since our snapshot
  };
  auto second = [&](Tx& tx) -> Task<Status> {
    co_await wait_for(tx, &p.step, 1);
    EXPECT_TRUE((co_await tx.update(*p.t, "x", "second")).is_ok());
    Status s = co_await tx.commit();
    p.step = 2;
    co_return s;
  };
  std::vector<Code> out = run_pair(p, GetParam(), first, second);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<Code>{Code::kOk, Code::kConflict}));
  EXPECT_EQ(testing::read_committed(*p.db, *p.t, "x"), "second");
}

TEST_P(ExecModes, DirtyAndAbortedReadsAreInvisible) {  // G1a, G1b
  Pair p = setup({{"x", "old"}});
  std::string seen;
  auto writer = [&](Tx& tx) -> Task<Status> {
    EXPECT_TRUE((co_await tx.update(*p.t, "x", "dirty")).is_ok());
    p.step = 1;
    co_await wait_for(tx, &p.step, 2);
    tx.abort();
    co_return Status::ok();
  };
  auto reader = [&](Tx& tx) -> Task<Status> {
    co_await wait_for(tx, &p.step, 1);
    Result<std::string_view> x = co_await tx.get(*p.t, "x");
    seen = std::string(*x);
    p.step = 2;
    co_return Status::ok();
  };
  run_pair(p, GetParam(), writer, reader);
  EXPECT_EQ(seen, "old");
  EXPECT_EQ(testing::read_committed(*p.db, *p.t, "x"), "old");
}

TEST_P(ExecModes, WriteSkewCommitsUnderSnapshotIsolation) {  // G2-item is allowed by SI
  Pair p = setup({{"x", "1"}, {"y", "1"}});
  auto on = [&](const char* mine, int mark) {
    return [&p, mine, mark](Tx& tx) -> Task<Status> {
      (void)co_await tx.get(*p.t, "x");
      (void)co_await tx.get(*p.t, "y");
      ++p.step;
      co_await wait_for(tx, &p.step, 2);
      EXPECT_TRUE((co_await tx.update(*p.t, mine, "0")).is_ok()) << mark;
      co_return Status::ok();
    };
  };
  EXPECT_EQ(run_pair(p, GetParam(), on("x", 1), on("y", 2)),
            (std::vector<Code>{Code::kOk, Code::kOk}));
}

TEST_P(ExecModes, MultiGetMatchesSingleGets) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "mg");
  {
    Transaction tx = testing::begin(*db);
    for (int i = 0; i < 500; i += 2) {
      ASSERT_TRUE(tx.insert(*t, "k" + std::to_string(i), "v" + std::to_string(i)).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.push_back("k" + std::to_string((i * 37) % 500));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<GetResult> results(keys.size());
  std::vector<Code> single(keys.size());
  Status bad;
  ListGenerator gen({[&](Tx& tx) -> Task<Status> {
    Status s = co_await tx.multi_get(*t, views, results);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      single[i] = (co_await tx.get(*t, keys[i])).code();
    }
    bad = co_await tx.multi_get(*t, views, std::span<GetResult>(results).first(3));
    co_return Status::ok();
  }});
  TxnGenerator* gens[] = {&gen};
  ASSERT_TRUE(db->run(gens, testing::exec_of(GetParam(), 4)).is_ok());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(results[i].code, single[i]) << keys[i];
    if (results[i].is_ok()) {
      EXPECT_EQ(results[i].value, "v" + keys[i].substr(1));
    }
  }
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  expect_frames_balance(*db);
}

INSTANTIATE_TEST_SUITE_P(All, ExecModes, ::testing::ValuesIn(testing::all_cases()),
                         testing::case_name);

// ---- Determinism ----------------------------------------------------------------------------

// One worker, a fixed seed: the interleaving (the order in which operations complete) and the
// final state are identical across runs; another seed gives another interleaving.
std::pair<std::vector<std::string>, std::map<std::string, std::string>> traced_run(
    ExecMode mode, std::uint64_t seed) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "det");
  std::vector<std::string> trace;
  util::Rng rng(42);  // the workload is fixed; only the resume order depends on `seed`
  std::vector<ListGenerator::Body> bodies;
  for (int id = 0; id < 64; ++id) {
    bodies.push_back([&, id](Tx& tx) -> Task<Status> {
      for (int i = 0; i < 6; ++i) {
        const std::string k = "k" + std::to_string(rng.uniform(16));
        if (rng.uniform(2) == 0) {
          Result<std::string_view> r = co_await tx.get(*t, k);
          trace.push_back(std::to_string(id) + " get " + k + "=" +
                          (r.is_ok() ? std::string(*r) : "-"));
        } else {
          Status s = co_await tx.put(*t, k, std::to_string(id));
          trace.push_back(std::to_string(id) + " put " + k + " " + s.to_string());
          if (!s.is_ok()) co_return s;
        }
      }
      co_return Status::ok();
    });
  }
  ListGenerator gen(std::move(bodies));
  TxnGenerator* gens[] = {&gen};
  ExecOptions e;
  e.mode = mode;
  e.batch = 8;
  e.force_suspend = true;
  e.shuffle_resume = true;
  e.seed = seed;
  EXPECT_TRUE(db->run(gens, e).is_ok());
  return {trace, dump(*db, *t)};
}

TEST(ExecDeterminism, SameSeedSameInterleavingAndResult) {
  for (ExecMode mode : {ExecMode::kSequential, ExecMode::kInterleaved, ExecMode::kNested}) {
    SCOPED_TRACE(testing::mode_name(mode));
    const auto a = traced_run(mode, 7);
    const auto b = traced_run(mode, 7);
    const auto c = traced_run(mode, 8);
    EXPECT_EQ(a.first, b.first);
    EXPECT_EQ(a.second, b.second);
    EXPECT_NE(a.first, c.first);  // the seed drives the resume order
  }
}

// ---- Suspension points -------------------------------------------------------------------------

// A get suspends before its OID entry, before its version unless the leaf's value hint fetched
// it with the entry (a fresh hint here: the record's only version), and before each node below
// the root on a level too large to stay cached (index::BTree::resident_level). A 100-key tree's
// leaves fit any cache; ExecOptions::force_suspend adds the leaf's suspension and the
// version's.
// Table `name` with keys k1000..k1099: a root over leaves that fit any cache.
Table* hundred_keys(Database& db, std::string_view name) {
  Table* t = testing::make_table(db, name);
  Transaction tx = testing::begin(db);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(tx.insert(*t, "k" + std::to_string(1000 + i), "v").is_ok());
  }
  EXPECT_TRUE(tx.commit().is_ok());
  EXPECT_EQ(t->index().height(), 2u);
  return t;
}

// The suspensions one transaction running `body` takes in `mode`.
std::uint64_t suspends_of(Database& db, ListGenerator::Body body, ExecMode mode, bool forced) {
  ListGenerator gen({std::move(body)});
  TxnGenerator* gens[] = {&gen};
  ExecOptions e;
  e.mode = mode;
  e.batch = 2;
  e.force_suspend = forced;
  const std::uint64_t before = db.exec_stats().suspends;
  EXPECT_TRUE(db.run(gens, e).is_ok());
  return db.exec_stats().suspends - before;
}

TEST(ExecSuspensions, ResidentLevelsSuspendOnlyWhenForced) {
  auto db = testing::open_db();
  Table* t = hundred_keys(*db, "res");
  ASSERT_TRUE(t->index().resident_level(0));
  for (ExecMode mode : {ExecMode::kInterleaved, ExecMode::kNested}) {
    for (bool forced : {false, true}) {
      SCOPED_TRACE(testing::mode_name(mode) + (forced ? " forced" : ""));
      const std::uint64_t n = suspends_of(
          *db,
          [&](Tx& tx) -> Task<Status> {
            Result<std::string_view> r = co_await tx.get(*t, "k1050");
            EXPECT_TRUE(r.is_ok());
            co_return Status::ok();
          },
          mode, forced);
      EXPECT_EQ(n, forced ? 3u : 1u);
    }
  }
}

// A write of the key the transaction's last get found starts from that get's lookup
// (mvcc::RecentRead): its descent, and so the leaf's suspension forced here, is skipped. A
// write of another key descends.
TEST(ExecSuspensions, AWriteAfterAGetOfItsKeySkipsTheDescent) {
  auto db = testing::open_db();
  Table* t = hundred_keys(*db, "rmw");
  for (ExecMode mode : {ExecMode::kInterleaved, ExecMode::kNested}) {
    auto get_then_update = [&](std::string written) {
      return suspends_of(
          *db,
          [&, written](Tx& tx) -> Task<Status> {
            EXPECT_TRUE((co_await tx.get(*t, "k1050")).is_ok());
            EXPECT_TRUE((co_await tx.update(*t, written, "w")).is_ok());
            co_return Status::ok();
          },
          mode, true);
    };
    SCOPED_TRACE(testing::mode_name(mode));
    EXPECT_EQ(get_then_update("k1050") + 1, get_then_update("k1051"));
  }
}

// The write that follows a get reuses that get's lookup only for the same table and key: the
// same key in another table, and another key in the same table, are written where they are.
TEST(ExecRecentRead, OnlyTheSameTableAndKeyReuseAGetsLookup) {
  for (const ExecCase& c : testing::all_cases()) {
    SCOPED_TRACE(testing::case_name(::testing::TestParamInfo<ExecCase>(c, 0)));
    auto db = testing::open_db();
    Table* a = testing::make_table(*db, "a");
    Table* b = testing::make_table(*db, "b");
    {
      Transaction tx = testing::begin(*db);
      ASSERT_TRUE(tx.insert(*a, "k0", "ak0").is_ok());  // so a's OIDs are not b's for a key
      for (const char* k : {"k1", "k2", "k3"}) {
        ASSERT_TRUE(tx.insert(*a, k, std::string("a") + k).is_ok());
        ASSERT_TRUE(tx.insert(*b, k, std::string("b") + k).is_ok());
      }
      ASSERT_TRUE(tx.commit().is_ok());
    }
    ListGenerator gen({[&](Tx& tx) -> Task<Status> {
      EXPECT_TRUE((co_await tx.get(*a, "k1")).is_ok());
      EXPECT_TRUE((co_await tx.update(*b, "k1", "B1")).is_ok());
      EXPECT_TRUE((co_await tx.get(*a, "k2")).is_ok());
      EXPECT_TRUE((co_await tx.update(*a, "k3", "A3")).is_ok());
      EXPECT_TRUE((co_await tx.get(*b, "k2")).is_ok());
      EXPECT_TRUE((co_await tx.remove(*b, "k2")).is_ok());
      EXPECT_TRUE((co_await tx.put(*b, "k2", "B2")).is_ok());
      Result<std::string_view> again = co_await tx.get(*b, "k2");
      EXPECT_TRUE(again.is_ok());
      if (again.is_ok()) {
        EXPECT_EQ(*again, "B2");
      }
      co_return Status::ok();
    }});
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE(db->run(gens, testing::exec_of(c, 2)).is_ok());
    using M = std::map<std::string, std::string>;
    EXPECT_EQ(dump(*db, *a), (M{{"k0", "ak0"}, {"k1", "ak1"}, {"k2", "ak2"}, {"k3", "A3"}}));
    EXPECT_EQ(dump(*db, *b), (M{{"k1", "B1"}, {"k2", "B2"}, {"k3", "bk3"}}));
  }
}

// The key a get noted is recalled for exactly that key: every length from 1 to 32 bytes (the
// words that cover it overlap), a key that differs from it in any one byte is not, and a key
// longer than 32 bytes is never noted.
TEST(ExecRecentRead, KeysOfEveryLengthAreRecalledExactly) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  Table* other = testing::make_table(*db, "other");
  mvcc::TxnContext ctx;
  for (std::size_t n = 1; n <= mvcc::RecentRead::kMaxKey + 1; ++n) {
    std::string key(n, '\0');
    for (std::size_t i = 0; i < n; ++i) key[i] = static_cast<char>('a' + i % 26);
    engine::note_read(&ctx, *t, key, 7 + n, index::LeafRead{}, 3);
    engine::LookupHint hint;
    const bool noted = n <= mvcc::RecentRead::kMaxKey;
    ASSERT_EQ(engine::recall_read(&ctx, *t, key, &hint), noted) << n;
    if (noted) {
      EXPECT_TRUE(hint.found);
      EXPECT_EQ(hint.oid, 7 + n);
      EXPECT_EQ(hint.slot, 3u);
    }
    EXPECT_FALSE(engine::recall_read(&ctx, *other, key, &hint)) << n;
    EXPECT_FALSE(engine::recall_read(&ctx, *t, key + "x", &hint)) << n;
    for (std::size_t i = 0; i < n; ++i) {
      std::string changed = key;
      changed[i] = static_cast<char>(changed[i] ^ 0x40);
      EXPECT_FALSE(engine::recall_read(&ctx, *t, changed, &hint)) << n << " " << i;
    }
  }
}

// ---- submit / execute -------------------------------------------------------------------------

TEST(ExecSubmit, ConcurrentSubmittersWithRetriesLoseNoIncrement) {
  Options o;
  o.workers = 2;
  o.exec.batch = 4;
  auto db = testing::open_db(o);
  Table* t = testing::make_table(*db, "ctr");
  ASSERT_TRUE(db->execute([&](Tx& tx) -> Task<Status> {
                  co_return co_await tx.insert(*t, "n", "0");
                }).is_ok());
  constexpr int kThreads = 4;
  constexpr int kEach = 150;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      std::vector<Pending> pending;
      for (int j = 0; j < kEach; ++j) {
        SubmitOptions so;
        so.conflict_retries = 100000;
        Result<Pending> p = db->submit(
            [&](Tx& tx) -> Task<Status> {
              Result<std::string_view> r = co_await tx.get(*t, "n");
              if (!r.is_ok()) co_return r.status();
              const std::string next = std::to_string(std::stoi(std::string(*r)) + 1);
              co_return co_await tx.update(*t, "n", next);
            },
            so);
        if (!p.is_ok()) {
          ++failures;
          continue;
        }
        pending.push_back(std::move(p).value());
      }
      for (Pending& p : pending) {
        if (!p.wait().is_ok()) ++failures;
        EXPECT_TRUE(p.ready());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(testing::read_committed(*db, *t, "n"), std::to_string(kThreads * kEach));
}

// A retry after Conflict waits (exponential backoff) instead of running again at once: here
// the writer holding the record's uncommitted version runs 3000 more operations in the other
// slot, one per round (force_suspend), so 100 immediate retries (one per round) would all meet
// its write and fail. With the backoff the retrier outlasts it and commits after it.
TEST(ExecSubmit, ConflictRetriesBackOffUntilTheWriterFinishes) {
  Options o;
  o.workers = 1;
  o.exec.batch = 2;
  o.exec.scheduler = SchedulerPolicy::kPipeline;  // admits the retrier beside the writer
  o.exec.force_suspend = true;
  auto db = testing::open_db(o);
  Table* t = testing::make_table(*db, "t");
  ASSERT_TRUE(db->execute([&](Tx& tx) -> Task<Status> {
                  Status s = co_await tx.insert(*t, "k", "0");
                  if (!s.is_ok()) co_return s;
                  co_return co_await tx.insert(*t, "other", "x");
                }).is_ok());
  std::atomic<bool> written{false};
  std::atomic<int> runs{0};  // of the retrier
  Result<Pending> writer = db->submit([&](Tx& tx) -> Task<Status> {
    Status s = co_await tx.update(*t, "k", "writer");
    written = true;
    if (!s.is_ok()) co_return s;
    // Hold the write until the retrier has run once (it then conflicts), and 3000 rounds more.
    for (int i = 0; runs.load() == 0; ++i) {
      if (i == 10'000'000) co_return Status::busy("the retrier never ran");
      Result<std::string_view> r = co_await tx.get(*t, "other");
      if (!r.is_ok()) co_return r.status();
    }
    for (int i = 0; i < 3000; ++i) {
      Result<std::string_view> r = co_await tx.get(*t, "other");
      if (!r.is_ok()) co_return r.status();
    }
    co_return Status::ok();
  });
  ASSERT_TRUE(writer.is_ok());
  while (!written.load()) std::this_thread::yield();
  SubmitOptions so;
  so.conflict_retries = 100;
  Result<Pending> retrier = db->submit(
      [&](Tx& tx) -> Task<Status> {
        ++runs;
        co_return co_await tx.update(*t, "k", "retrier");
      },
      so);
  ASSERT_TRUE(retrier.is_ok());
  EXPECT_TRUE(writer->wait().is_ok());
  EXPECT_TRUE(retrier->wait().is_ok());
  EXPECT_EQ(testing::read_committed(*db, *t, "k"), "retrier");
  // It did conflict (it ran more than once), and used fewer runs than its retries.
  EXPECT_GT(runs.load(), 1);
  EXPECT_LE(runs.load(), 101);
}

// Write skew under serializable isolation, through submit with conflict_retries: two
// doctors on call each go off call if the other is still on. SSN refuses the second commit of
// the skew; its re-run sees one doctor left and stays. At least one stays on call.
TEST(ExecSubmit, SerializableWriteSkewIsRefusedAndRetried) {
  Options o;
  o.workers = 1;
  o.exec.batch = 2;
  o.exec.scheduler = SchedulerPolicy::kPipeline;
  o.exec.force_suspend = true;  // each operation yields: the two interleave
  o.isolation = Isolation::kSerializable;
  auto db = testing::open_db(o);
  Table* t = testing::make_table(*db, "oncall");
  ASSERT_TRUE(db->execute([&](Tx& tx) -> Task<Status> {
                  Status s = co_await tx.insert(*t, "alice", "1");
                  if (!s.is_ok()) co_return s;
                  co_return co_await tx.insert(*t, "bob", "1");
                }).is_ok());
  auto go_off = [&](std::string me, std::string other) {
    return [&, me, other](Tx& tx) -> Task<Status> {
      Result<std::string_view> a = co_await tx.get(*t, me);
      if (!a.is_ok()) co_return a.status();
      const bool me_on = *a == "1";
      Result<std::string_view> b = co_await tx.get(*t, other);
      if (!b.is_ok()) co_return b.status();
      if (me_on && *b == "1") co_return co_await tx.update(*t, me, "0");
      co_return Status::ok();
    };
  };
  SubmitOptions so;
  so.conflict_retries = 20;
  Result<Pending> p1 = db->submit(go_off("alice", "bob"), so);
  Result<Pending> p2 = db->submit(go_off("bob", "alice"), so);
  ASSERT_TRUE(p1.is_ok() && p2.is_ok());
  EXPECT_TRUE(p1->wait().is_ok());
  EXPECT_TRUE(p2->wait().is_ok());
  const std::string a = testing::read_committed(*db, *t, "alice");
  const std::string b = testing::read_committed(*db, *t, "bob");
  EXPECT_TRUE(a == "1" || b == "1") << "both went off call: write skew committed";
  EXPECT_NE(a, b) << "exactly one goes off call";
  // One refusal when the two interleaved (the usual case); none when one finished first.
  EXPECT_LE(db->stats().ssn_aborts, 1u);
}

TEST(ExecSubmit, FullQueueAnswersBusyAndBadArgumentsAreRefused) {
  Options o;
  o.submit_queue_depth = 2;
  auto db = testing::open_db(o);
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  Result<Pending> blocker = db->submit([&](Tx&) -> Task<Status> {
    started = true;
    while (!release.load()) std::this_thread::yield();  // holds the only worker
    co_return Status::ok();
  });
  ASSERT_TRUE(blocker.is_ok());
  while (!started.load()) std::this_thread::yield();
  std::vector<Pending> queued;
  Status busy;
  for (int i = 0; i < 10 && busy.is_ok(); ++i) {
    Result<Pending> p = db->submit([](Tx&) -> Task<Status> { co_return Status::ok(); });
    if (p.is_ok()) {
      queued.push_back(std::move(p).value());
    } else {
      busy = p.status();
    }
  }
  EXPECT_EQ(busy.code(), Code::kBusy);
  EXPECT_EQ(queued.size(), 2u);
  release = true;
  EXPECT_TRUE(blocker->wait().is_ok());
  for (Pending& p : queued) EXPECT_TRUE(p.wait().is_ok());
  EXPECT_EQ(db->submit(TxnFunction{}).code(), Code::kInvalidArgument);
  SubmitOptions so;
  so.worker = 5;
  EXPECT_EQ(db->submit([](Tx&) -> Task<Status> { co_return Status::ok(); }, so).code(),
            Code::kInvalidArgument);
  ExecOptions e;
  e.batch = 1000;
  EXPECT_EQ(db->run({}, e).code(), Code::kInvalidArgument);
}

TEST(ExecSubmit, BodyErrorsAbortAndIgnoredConflictsAreReported) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  // A body that fails after writing: the worker aborts, nothing is visible.
  EXPECT_EQ(db->execute([&](Tx& tx) -> Task<Status> {
                EXPECT_TRUE((co_await tx.put(*t, "a", "1")).is_ok());
                co_return Status::invalid_argument("application says no");
              }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(testing::read_committed(*db, *t, "a"), "<none>");
  // Operations on an ended transaction are refused, not undefined.
  EXPECT_TRUE(db->execute([&](Tx& tx) -> Task<Status> {
                  EXPECT_TRUE((co_await tx.put(*t, "b", "1")).is_ok());
                  EXPECT_TRUE((co_await tx.commit()).is_ok());
                  EXPECT_EQ((co_await tx.get(*t, "b")).code(), Code::kInvalidArgument);
                  EXPECT_EQ((co_await tx.get(*t, std::string(300, 'k'))).code(),
                            Code::kInvalidArgument);
                  co_return Status::ok();
                }).is_ok());
  EXPECT_EQ(testing::read_committed(*db, *t, "b"), "1");
}

}  // namespace
}  // namespace braid
