// API misuse answers an error instead of crashing, hanging or corrupting.
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <string>

#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::make_table;
using testing::open_db;

Task<Status> put_kv(Tx& tx, Table* t, std::string k, std::string v) {
  co_return co_await tx.put(*t, k, v);
}

TEST(Misuse, TableOfAnotherDatabaseIsInvalidArgument) {
  auto a = open_db();
  auto b = open_db();
  Table* ta = make_table(*a, "t");
  (void)make_table(*b, "t");
  Transaction tx = begin(*b);
  EXPECT_EQ(tx.get(*ta, "k").code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.put(*ta, "k", "v").code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.scan(*ta, "", "", 0, [](auto, auto) { return true; }).code(),
            Code::kInvalidArgument);
  tx.abort();
  Status s = b->execute([ta](Tx& t) { return put_kv(t, ta, "k", "v"); });
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("another Database"), std::string_view::npos) << s.to_string();
}

Task<Status> nested_execute(Tx&, Database* db, Status* inner) {
  *inner = db->execute([](Tx&) -> Task<Status> { co_return Status::ok(); });
  co_return Status::ok();
}

TEST(Misuse, BlockingCallsFromATransactionBodyAreRefused) {
  Options o;
  o.workers = 1;
  auto db = open_db(o);
  Status inner;
  ASSERT_TRUE(db->execute([&](Tx& tx) { return nested_execute(tx, db.get(), &inner); }).is_ok());
  EXPECT_EQ(inner.code(), Code::kInvalidArgument) << inner.to_string();
  EXPECT_NE(inner.message().find("worker"), std::string_view::npos);
}

TEST(Misuse, TransactionOutlivingItsDatabaseAnswersAnError) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  ASSERT_TRUE(tx.put(*t, "k", "v").is_ok());
  db.reset();  // aborts the open transaction
  EXPECT_FALSE(tx.is_active());
  Status s = tx.commit();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("database closed"), std::string_view::npos) << s.to_string();
}  // destroying tx does nothing

TEST(Misuse, FailedWriteFailsTheCoroutineTransaction) {
  Options o;
  o.max_txn_writes = 2;
  auto db = open_db(o);
  Table* t = make_table(*db, "t");
  Status third;
  Status s = db->execute([&](Tx& tx) -> Task<Status> {
    (void)co_await tx.put(*t, "a", "1");
    (void)co_await tx.put(*t, "b", "2");
    third = co_await tx.put(*t, "c", "3");  // Busy: the write set is full
    co_return Status::ok();                 // the body ignores it; the commit must not
  });
  EXPECT_EQ(third.code(), Code::kBusy);
  EXPECT_EQ(s.code(), Code::kBusy) << s.to_string();
  Transaction check = begin(*db);
  EXPECT_EQ(check.get(*t, "a").code(), Code::kNotFound);
}

// Choosing isolation after the first operation, writing in a declared read-only transaction,
// and an isolation that is no Isolation: each answers InvalidArgument and changes nothing.
TEST(Misuse, IsolationChoicesAreCheckedInBothApis) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Status late;
  Status s = db->execute([&](Tx& tx) -> Task<Status> {
    (void)co_await tx.get(*t, "a");
    late = tx.configure(TxnOptions::with(Isolation::kSerializable));
    co_return Status::ok();
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(late.code(), Code::kInvalidArgument);

  SubmitOptions ro;
  ro.txn = TxnOptions::with(Isolation::kSerializable, true);
  Status write;
  s = db->execute(
      [&](Tx& tx) -> Task<Status> {
        write = co_await tx.put(*t, "a", "1");
        co_return Status::ok();
      },
      ro);
  EXPECT_EQ(write.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.to_string();  // the failed write fails it

  Result<Transaction> blocking = db->begin(TxnOptions::with(Isolation::kSnapshot, true));
  ASSERT_TRUE(blocking.is_ok());
  EXPECT_EQ(blocking->put(*t, "a", "1").code(), Code::kInvalidArgument);
  blocking->abort();

  TxnOptions bad;
  bad.override_isolation = true;
  bad.isolation = static_cast<Isolation>(7);
  EXPECT_EQ(db->begin(bad).status().code(), Code::kInvalidArgument);
  SubmitOptions bad_submit;
  bad_submit.txn = bad;
  EXPECT_EQ(db->execute([&](Tx&) -> Task<Status> { co_return Status::ok(); }, bad_submit).code(),
            Code::kInvalidArgument);
  Transaction check = begin(*db);
  EXPECT_EQ(check.get(*t, "a").code(), Code::kNotFound);
}

// What Database::open answers for in-memory options changed by `set`.
template <typename Set>
Status open_with(Set set) {
  Options o;
  o.huge_pages = false;
  o.max_version_bytes = std::uint64_t{64} << 20;
  set(o);
  return Database::open(o).status();
}

TEST(Misuse, OutOfRangeEnumsAreRefused) {
  EXPECT_EQ(open_with([](Options& o) { o.durability.commit = static_cast<CommitMode>(7); }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(open_with([](Options& o) { o.durability.sync = static_cast<LogSync>(9); }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(open_with([](Options& o) { o.durability.io = static_cast<IoMode>(9); }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(open_with([](Options& o) { o.exec.mode = static_cast<ExecMode>(9); }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(
      open_with([](Options& o) { o.exec.scheduler = static_cast<SchedulerPolicy>(9); }).code(),
      Code::kInvalidArgument);
  EXPECT_EQ(open_with([](Options& o) { o.recovery = static_cast<RecoveryMode>(9); }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(open_with([](Options& o) { o.isolation = static_cast<Isolation>(9); }).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(open_with([](Options& o) { o.max_txn_reads = 0; }).code(), Code::kInvalidArgument);
  auto db = open_db();
  ExecOptions e;
  e.mode = static_cast<ExecMode>(12);
  EXPECT_EQ(db->run({}, e).code(), Code::kInvalidArgument);
}

// The storage-path options, as an application could set them wrongly: refused at open and per run,
// with the option's name.
TEST(Misuse, SchedulerAndFlusherOptionsOutOfRangeAreRefused) {
  // Refused as InvalidArgument, naming the option.
  const auto refused = [](const Status& s, std::string_view option) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << option;
    EXPECT_NE(s.message().find(option), std::string_view::npos) << s.to_string();
  };
  refused(open_with([](Options& o) { o.exec.storage_path = static_cast<StoragePath>(5); }),
          "storage_path");
  refused(open_with([](Options& o) { o.exec.cold_check_every = 0; }), "cold_check_every");
  refused(open_with([](Options& o) {
            o.exec.scheduler = SchedulerPolicy::kDualQueue;
            o.exec.cold_slots = 0;
          }),
          "cold_slots");
  refused(open_with([](Options& o) {
            o.durability.flusher_thread = true;
            o.durability.flusher_interval_us = 0;
          }),
          "flusher_interval_us");
  refused(open_with([](Options& o) { o.durability.sq_poll_cpu = -2; }), "sq_poll_cpu");
  refused(open_with([](Options& o) {
            o.durability.sq_poll_cpu = 0;
            o.durability.io = IoMode::kSync;
          }),
          "sq_poll_cpu");
  refused(open_with([](Options& o) {
            o.durability.sq_poll_cpu = 0;
            o.durability.sq_poll_idle_ms = 0;
          }),
          "sq_poll_idle_ms");
  // The team scheduler's: an admission that is not a policy, or is team itself; no team size.
  refused(open_with([](Options& o) { o.exec.team_admission = SchedulerPolicy::kTeam; }),
          "team_admission");
  refused(open_with([](Options& o) { o.exec.team_admission = static_cast<SchedulerPolicy>(9); }),
          "team_admission");
  refused(open_with([](Options& o) { o.exec.team_size = 0; }), "team_size");
  // The cold reads issued together: a batch of none, or more than a worker has in flight; a
  // window past 100 ms.
  refused(open_with([](Options& o) { o.exec.read_batch = 0; }), "read_batch");
  refused(open_with([](Options& o) { o.exec.read_batch = 65; }), "read_batch");
  refused(open_with([](Options& o) { o.exec.read_window_us = 100'001; }), "read_window_us");
  refused(open_with([](Options& o) {
            o.exec.scheduler = SchedulerPolicy::kTeam;
            o.exec.team_admission = SchedulerPolicy::kDualQueue;
            o.exec.cold_slots = 0;
          }),
          "cold_slots");
  auto db = open_db();
  ExecOptions e;
  e.scheduler = SchedulerPolicy::kDualQueue;
  e.cold_slots = 0;
  EXPECT_EQ(db->run({}, e).code(), Code::kInvalidArgument);
  e = ExecOptions{};
  e.scheduler = SchedulerPolicy::kTeam;
  e.team_size = 0;
  EXPECT_EQ(db->run({}, e).code(), Code::kInvalidArgument);
  e = ExecOptions{};
  e.read_batch = 0;
  EXPECT_EQ(db->run({}, e).code(), Code::kInvalidArgument);
  e = ExecOptions{};
  e.read_window_us = 1'000'000;
  EXPECT_EQ(db->run({}, e).code(), Code::kInvalidArgument);
}

TEST(Misuse, BusyNamesTheLimitThatWasHit) {
  Options o;
  o.external_transactions = 1;
  auto db = open_db(o);
  Transaction one = begin(*db);
  Result<Transaction> two = db->begin();
  ASSERT_EQ(two.code(), Code::kBusy);
  EXPECT_NE(two.status().message().find("external_transactions"), std::string_view::npos)
      << two.status().to_string();
}

}  // namespace
}  // namespace braid
