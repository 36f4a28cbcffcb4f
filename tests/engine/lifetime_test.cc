// Operations destroyed while suspended mid-way (white-box: drives the engine's operation
// coroutines directly): every frame is freed once, the transaction aborts cleanly, and a write
// suspended before its installation leaves no trace.
#include <gtest/gtest.h>

#include <coroutine>
#include <string>

#include "engine/access.h"
#include "engine/database_impl.h"
#include "runtime/frame_allocator.h"

namespace braid::engine {
namespace {

class Lifetime : public ::testing::TestWithParam<bool> {  // param: nested
 protected:
  void SetUp() override {
    Options o;
    o.workers = 1;
    auto opened = DatabaseImpl::open(o);
    ASSERT_TRUE(opened.is_ok());
    db_ = std::move(opened).value();
    table_ = *db_->create_table("t");
    Result<Transaction> tx = db_->begin();
    for (int i = 0; i < 2000; ++i) {
      ASSERT_TRUE(tx->put(*table_, "key" + std::to_string(i), "v" + std::to_string(i)).is_ok());
    }
    ASSERT_TRUE(tx->commit().is_ok());
    runtime::FrameAllocator::set_current(&frames_);
  }
  void TearDown() override { runtime::FrameAllocator::set_current(nullptr); }

  Task<void> start(mvcc::TxnContext* ctx, detail::OpState* op) {
    OpEnv env{db_.get(), ctx, nullptr, &sink_, &suspends_, &site_};
    return GetParam() ? coro::run<Nested>(env, op) : coro::run<Flat>(env, op);
  }

  std::unique_ptr<DatabaseImpl> db_;
  Table* table_ = nullptr;
  runtime::FrameAllocator frames_{std::size_t{16} << 20, false};
  std::coroutine_handle<> sink_;
  std::uint64_t suspends_ = 0;
  std::uint32_t site_ = 0;
};

TEST_P(Lifetime, AbortedWhileSuspendedInsideAGetReleasesEverything) {
  mvcc::TxnContext* ctx = db_->txns().begin();
  detail::OpState op;
  op.kind = detail::OpState::Kind::kGet;
  op.table = table_;
  op.key = "key77";
  Task<void> t = start(ctx, &op);
  t.handle().resume();  // runs to its first likely miss and suspends there
  ASSERT_FALSE(t.done());
  EXPECT_EQ(suspends_, 1u);
  EXPECT_EQ(site_, 1u);           // the suspension counted in the resume site (sched/site.h)
  EXPECT_GE(frames_.live(), 1u);  // nested: up to op, driver, suspension point (HALO may merge)
  t.reset();                      // the transaction is torn down mid-op
  db_->abort(ctx, db_->external_log());
  EXPECT_EQ(frames_.live(), 0u);
  EXPECT_EQ(frames_.counters().allocated, frames_.counters().freed);
  EXPECT_EQ(db_->stats().open_transactions, 0u);
}

TEST_P(Lifetime, AWriteSuspendedBeforeItsInstallationLeavesNoTrace) {
  mvcc::TxnContext* ctx = db_->txns().begin();
  detail::OpState op;
  op.kind = detail::OpState::Kind::kUpdate;
  op.table = table_;
  op.key = "key5";
  op.value = "changed";
  Task<void> t = start(ctx, &op);
  t.handle().resume();
  ASSERT_FALSE(t.done());
  t.reset();
  db_->abort(ctx, db_->external_log());
  EXPECT_EQ(frames_.live(), 0u);
  Result<Transaction> tx = db_->begin();
  Result<std::string_view> r = tx->get(*table_, "key5");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "v5");
  // And the key is still writable by others: nothing was left locked or owned.
  EXPECT_TRUE(tx->update(*table_, "key5", "again").is_ok());
  EXPECT_TRUE(tx->commit().is_ok());
}

TEST_P(Lifetime, MultiGetTornDownMidRoundFreesItsChildren) {
  mvcc::TxnContext* ctx = db_->txns().begin();
  std::string keys[40];
  std::string_view views[40];
  GetResult results[40];
  for (int i = 0; i < 40; ++i) {
    keys[i] = "key" + std::to_string(i * 41);
    views[i] = keys[i];
  }
  detail::OpState op;
  op.kind = detail::OpState::Kind::kMultiGet;
  op.table = table_;
  op.keys = views;
  op.results = results;
  Task<void> t = start(ctx, &op);
  t.handle().resume();  // one round over the first kMultiGetWidth children, then it yields
  ASSERT_FALSE(t.done());
  EXPECT_GT(frames_.live(), kMultiGetWidth);
  t.reset();
  db_->abort(ctx, db_->external_log());
  EXPECT_EQ(frames_.live(), 0u);

  // Run to completion for comparison: every key found.
  ctx = db_->txns().begin();
  Task<void> full = start(ctx, &op);
  sink_ = full.handle();
  while (!full.done()) sink_.resume();
  for (int i = 0; i < 40; ++i) {
    EXPECT_TRUE(results[i].is_ok()) << keys[i];
    EXPECT_EQ(results[i].value, "v" + std::to_string(i * 41));
  }
  full.reset();
  ASSERT_TRUE(db_->commit(ctx, db_->external_log(), nullptr).is_ok());
  EXPECT_EQ(frames_.live(), 0u);
}

// A checkpoint in progress (it spans many worker rounds) and an eviction pass hold engine
// contexts; stats().open_transactions counts only transactions a worker or an application
// opened, so "0 open" after a run does not depend on where a checkpoint happens to be.
TEST_P(Lifetime, OpenTransactionsLeaveOutTheEnginesOwnContexts) {
  mvcc::TxnContext* ckpt = db_->txns().begin_at(db_->checkpoint_context());
  mvcc::TxnContext* evict = db_->txns().begin_at(db_->eviction_context(0));
  EXPECT_EQ(db_->stats().open_transactions, 0u);
  mvcc::TxnContext* app = db_->txns().begin();
  EXPECT_EQ(db_->stats().open_transactions, 1u);
  db_->abort(app, db_->external_log());
  EXPECT_EQ(db_->stats().open_transactions, 0u);
  (void)db_->txns().finish(evict);
  (void)db_->txns().finish(ckpt);
}

INSTANTIATE_TEST_SUITE_P(Modes, Lifetime, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Nested" : "Flat"; });

}  // namespace
}  // namespace braid::engine
