// Model-based randomized test: random interleavings of several open transactions (gets, puts,
// inserts, updates, removes, scans, commits, aborts) on one thread, checked step by step against
// a simple multi-version reference model of snapshot isolation with first-updater-wins.
//
// Every run is a pure function of its seed. Default: 4 seeds x 30,000 operations. For long runs:
//   BRAID_MODEL_OPS=5000000 BRAID_MODEL_SEED=123 ./model_test
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/ref_model.h"
#include "engine/test_util.h"
#include "storage/durability_util.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::RefModel;
using testing::RefTx;
using testing::WriteOp;

struct OpenTx {
  Transaction tx;
  RefTx ref;
};

class Model {
 public:
  // `budget`: run on a simulated directory with Options::memory_budget_bytes = 1, so records
  // are evicted as soon as they may be (at every commit) and keep being read back.
  // `keys`: how many keys the operations pick from (a few dozen fit one index leaf, which as
  // the root never leaves memory; a thousand and more spread over dozens of leaves, which a
  // budget sends to storage and back all the time).
  Model(std::uint64_t seed, bool budget, std::size_t keys = 48)
      : rng_(seed), keys_(RefModel::make_keys(keys)), budget_(budget) {}

  // The database's figures once run() is done.
  DatabaseStats stats() const { return db_->stats(); }

  void run(std::uint64_t ops) {
    if (budget_) {
      Options o = test::wl_options(0);
      o.memory_budget_bytes = 1;
      o.page_index_leaves = true;
      auto db = test::open_sim(o, std::make_shared<storage::SimFileSystem>(rng_.next()));
      ASSERT_TRUE(db.is_ok()) << db.status().to_string();
      db_ = std::move(db).value();
    } else {
      db_ = testing::open_db();
    }
    table_ = testing::make_table(*db_, "model");
    for (std::uint64_t i = 0; i < ops; ++i) {
      step_ = i;
      step();
      if (HasFatalFailure()) return;
    }
    while (!open_.empty()) finish(0, true);
    verify_final();
  }

 private:
  static bool HasFatalFailure() { return ::testing::Test::HasFatalFailure(); }

  std::string key() { return keys_[rng_.uniform(keys_.size())]; }

  void step() {
    if (open_.empty() || (open_.size() < 4 && rng_.uniform(8) == 0)) {
      open_.push_back(std::make_unique<OpenTx>(OpenTx{testing::begin(*db_), {}}));
      model_.open(&open_.back()->ref);
      return;
    }
    const std::size_t ti = rng_.uniform(open_.size());
    OpenTx& t = *open_[ti];
    const std::uint64_t op = rng_.uniform(100);
    if (op < 6) {
      finish(ti, true);
    } else if (op < 9) {
      finish(ti, false);
    } else if (op < 35) {
      const std::string k = key();
      Result<std::string_view> r = t.tx.get(*table_, k);
      const testing::Value want = model_.visible(t.ref, k);
      if (want) {
        ASSERT_TRUE(r.is_ok()) << where() << r.status().to_string();
        ASSERT_EQ(std::string(*r), *want) << where();
      } else {
        ASSERT_EQ(r.code(), Code::kNotFound) << where();
      }
    } else if (op < 45) {
      scan(t);
    } else {
      static constexpr WriteOp kinds[] = {WriteOp::kInsert, WriteOp::kUpdate, WriteOp::kPut,
                                          WriteOp::kRemove};
      write(ti, kinds[rng_.uniform(4)]);
    }
  }

  void write(std::size_t ti, WriteOp kind) {
    OpenTx& t = *open_[ti];
    const std::string k = key();
    const std::string v = RefModel::random_value(rng_);
    Status got;
    switch (kind) {
      case WriteOp::kInsert:
        got = t.tx.insert(*table_, k, v);
        break;
      case WriteOp::kUpdate:
        got = t.tx.update(*table_, k, v);
        break;
      case WriteOp::kPut:
        got = t.tx.put(*table_, k, v);
        break;
      case WriteOp::kRemove:
        got = t.tx.remove(*table_, k);
        break;
    }
    const Code want = model_.predict_write(t.ref, kind, k);
    ASSERT_EQ(got.code(), want) << where() << " kind " << static_cast<int>(kind) << " key "
                                << k.substr(0, 12) << " got " << got.to_string();
    if (want == Code::kConflict) {
      EXPECT_FALSE(t.tx.is_active());
      model_.close(&t.ref);
      open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(ti));
      return;
    }
    if (want == Code::kOk) model_.apply_write(&t.ref, kind, k, v);
  }

  void scan(OpenTx& t) {
    std::string a = key();
    std::string b = rng_.uniform(3) == 0 ? std::string() : key();
    if (!b.empty() && b < a) std::swap(a, b);
    if (rng_.uniform(6) == 0) a.clear();
    const std::size_t limit = rng_.uniform(3) == 0 ? 1 + rng_.uniform(5) : 0;
    const ScanOrder order = rng_.uniform(2) == 0 ? ScanOrder::kForward : ScanOrder::kReverse;
    std::vector<std::pair<std::string, std::string>> got;
    ASSERT_TRUE(t.tx.scan(
                        *table_, a, b, limit,
                        [&](std::string_view k, std::string_view v) {
                          got.emplace_back(k, v);
                          return true;
                        },
                        order)
                    .is_ok());
    ASSERT_EQ(got, model_.expected_scan(t.ref, a, b, limit, order)) << where();
  }

  void finish(std::size_t ti, bool commit) {
    OpenTx& t = *open_[ti];
    if (commit) {
      Status s = t.tx.commit();
      ASSERT_TRUE(s.is_ok()) << where() << s.to_string();
      model_.commit(&t.ref);
    } else {
      t.tx.abort();
      model_.close(&t.ref);
    }
    open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(ti));
  }

  void verify_final() {
    Transaction tx = testing::begin(*db_);
    std::map<std::string, std::string> got;
    ASSERT_TRUE(tx.scan(*table_, "", "", 0, [&](std::string_view k, std::string_view v) {
                    got.emplace(k, v);
                    return true;
                  }).is_ok());
    ASSERT_EQ(got, model_.final_state());
    ASSERT_TRUE(tx.commit().is_ok());
    // Removed keys leave the index once reclaimed: every key the model ever committed is
    // either live, or removed and waiting, or gone.
    const std::size_t live = model_.final_state().size();
    const std::size_t indexed = testing::index_keys(*db_, *table_);
    EXPECT_GE(indexed, live);
    EXPECT_LE(indexed, model_.indexed_keys());
    // Once every context's queue drained, exactly the live keys are left.
    Table* scratch = testing::make_table(*db_, "scratch");
    testing::drain_reclamation(*db_, *scratch, 3000);
    EXPECT_EQ(testing::index_keys(*db_, *table_), live);
    const DatabaseStats st = db_->stats();
    EXPECT_EQ(st.tombstones_pending, 0u);
    EXPECT_GT(st.records_reclaimed, 0u);
    EXPECT_EQ(st.records, live + 1);  // the scratch record
    EXPECT_EQ(st.open_transactions, 0u);
    EXPECT_LT(st.live_versions, 4 * keys_.size() + 1024) << "versions leak";
    if (budget_) {
      EXPECT_GT(st.evictions, 1000u);
      EXPECT_GT(st.cold_reads, 1000u);
      EXPECT_EQ(st.cold_read_errors, 0u);
    }
  }

  std::string where() const { return "step " + std::to_string(step_) + ": "; }

  util::Rng rng_;
  std::vector<std::string> keys_;
  bool budget_;
  RefModel model_;
  std::unique_ptr<Database> db_;
  Table* table_ = nullptr;
  std::vector<std::unique_ptr<OpenTx>> open_;
  std::uint64_t step_ = 0;
};

using testing::env_u64;

class ModelTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ModelTest, MatchesReferenceModel) {
  const std::uint64_t seed = env_u64("BRAID_MODEL_SEED", GetParam());
  SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(seed));
  Model m(seed, false);
  m.run(env_u64("BRAID_MODEL_OPS", 30000));
}

TEST_P(ModelTest, MatchesReferenceModelUnderATinyBudget) {
  const std::uint64_t seed = env_u64("BRAID_MODEL_SEED", GetParam());
  SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(seed));
  Model m(seed, true);
  m.run(env_u64("BRAID_MODEL_OPS", 30000));
}

TEST_P(ModelTest, MatchesReferenceModelWithIndexLeavesOnStorage) {
  const std::uint64_t seed = env_u64("BRAID_MODEL_SEED", GetParam());
  SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(seed));
  Model m(seed, true, 2000);
  m.run(env_u64("BRAID_MODEL_OPS", 30000));
  if (HasFatalFailure()) return;
  const DatabaseStats s = m.stats();
  EXPECT_GT(s.index_leaf_evictions, 50u);
  EXPECT_GT(s.index_leaf_loads, 50u);
  EXPECT_GT(s.index_frame_bytes_released, 0u);  // the evicted leaves' frames went back too
}

// The same, its keys spread over enough leaves for inner nodes to go out whole (the default,
// Options::page_index_inner) and come back under the model's operations.
TEST_P(ModelTest, MatchesReferenceModelWithInnerNodesOnStorage) {
  const std::uint64_t seed = env_u64("BRAID_MODEL_SEED", GetParam());
  SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(seed));
  Model m(seed, true, 20000);
  m.run(env_u64("BRAID_MODEL_OPS", 30000));
  if (HasFatalFailure()) return;
  const DatabaseStats s = m.stats();
  EXPECT_GT(s.index_inner_evictions, 100u);  // 400-420 a seed
  EXPECT_GT(s.index_inner_loads, 100u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, ModelTest, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace braid
