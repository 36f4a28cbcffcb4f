// Isolation anomalies after Hermitage (github.com/ept/hermitage): the cases snapshot isolation
// must prevent, and write skew (G2-item), which SI allows. Each test interleaves transactions
// step by step on one thread; several transactions are open at once.
#include <gtest/gtest.h>

#include <string>

#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::read;
using testing::read_committed;

class Isolation : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::open_db();
    t_ = testing::make_table(*db_, "test");
    Transaction tx = begin(*db_);
    ASSERT_TRUE(tx.insert(*t_, "1", "10").is_ok());
    ASSERT_TRUE(tx.insert(*t_, "2", "20").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  std::string scan_all(Transaction& tx) {
    std::string out;
    EXPECT_TRUE(tx.scan(*t_, "", "", 0, [&](std::string_view k, std::string_view v) {
                    out += std::string(k) + "=" + std::string(v) + ";";
                    return true;
                  }).is_ok());
    return out;
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
};

// G0, write cycles: two transactions updating the same rows; the second updater loses.
TEST_F(Isolation, G0WriteCyclesPrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  ASSERT_TRUE(t1.update(*t_, "1", "11").is_ok());
  EXPECT_EQ(t2.update(*t_, "1", "12").code(), Code::kConflict);
  ASSERT_TRUE(t1.update(*t_, "2", "21").is_ok());
  ASSERT_TRUE(t1.commit().is_ok());
  EXPECT_EQ(read_committed(*db_, *t_, "1"), "11");
  EXPECT_EQ(read_committed(*db_, *t_, "2"), "21");
}

// G1a, aborted reads: nobody ever sees an aborted write.
TEST_F(Isolation, G1aAbortedReadsPrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  ASSERT_TRUE(t1.update(*t_, "1", "101").is_ok());
  EXPECT_EQ(scan_all(t2), "1=10;2=20;");
  t1.abort();
  EXPECT_EQ(scan_all(t2), "1=10;2=20;");
  ASSERT_TRUE(t2.commit().is_ok());
  EXPECT_EQ(read_committed(*db_, *t_, "1"), "10");
}

// G1b, intermediate reads: a transaction's non-final write is never seen.
TEST_F(Isolation, G1bIntermediateReadsPrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  ASSERT_TRUE(t1.update(*t_, "1", "101").is_ok());
  EXPECT_EQ(read(t2, *t_, "1"), "10");
  ASSERT_TRUE(t1.update(*t_, "1", "11").is_ok());
  ASSERT_TRUE(t1.commit().is_ok());
  EXPECT_EQ(read(t2, *t_, "1"), "10");  // its snapshot predates t1's commit
  ASSERT_TRUE(t2.commit().is_ok());
  Transaction t3 = begin(*db_);
  EXPECT_EQ(scan_all(t3), "1=11;2=20;");  // never 101
}

// G1c, circular information flow: neither sees the other's write.
TEST_F(Isolation, G1cCircularInformationFlowPrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  ASSERT_TRUE(t1.update(*t_, "1", "11").is_ok());
  ASSERT_TRUE(t2.update(*t_, "2", "22").is_ok());
  EXPECT_EQ(read(t1, *t_, "2"), "20");
  EXPECT_EQ(read(t2, *t_, "1"), "10");
  ASSERT_TRUE(t1.commit().is_ok());
  ASSERT_TRUE(t2.commit().is_ok());
}

// OTV, observed transaction vanishes.
TEST_F(Isolation, OtvObservedTransactionVanishesPrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  Transaction t3 = begin(*db_);
  ASSERT_TRUE(t1.update(*t_, "1", "11").is_ok());
  ASSERT_TRUE(t1.update(*t_, "2", "19").is_ok());
  EXPECT_EQ(t2.update(*t_, "1", "12").code(), Code::kConflict);
  ASSERT_TRUE(t1.commit().is_ok());
  EXPECT_EQ(read(t3, *t_, "1"), "10");
  EXPECT_EQ(read(t3, *t_, "2"), "20");
  ASSERT_TRUE(t3.commit().is_ok());
}

// PMP, predicate-many-preceders, for reads: a predicate read is repeatable in a snapshot.
TEST_F(Isolation, PmpPredicateReadsAreStable) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  EXPECT_EQ(scan_all(t1), "1=10;2=20;");
  ASSERT_TRUE(t2.insert(*t_, "3", "30").is_ok());
  ASSERT_TRUE(t2.commit().is_ok());
  EXPECT_EQ(scan_all(t1), "1=10;2=20;");
  ASSERT_TRUE(t1.commit().is_ok());
}

// P4, lost update: both read, both write; the second writer must not silently win.
TEST_F(Isolation, P4LostUpdatePrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  EXPECT_EQ(read(t1, *t_, "1"), "10");
  EXPECT_EQ(read(t2, *t_, "1"), "10");
  ASSERT_TRUE(t1.update(*t_, "1", "11").is_ok());
  EXPECT_EQ(t2.update(*t_, "1", "11").code(), Code::kConflict);  // t1 still open
  ASSERT_TRUE(t1.commit().is_ok());

  // The same, with the first writer committed before the second writes.
  Transaction t3 = begin(*db_);
  Transaction t4 = begin(*db_);
  EXPECT_EQ(read(t3, *t_, "1"), "11");
  EXPECT_EQ(read(t4, *t_, "1"), "11");
  ASSERT_TRUE(t3.update(*t_, "1", "12").is_ok());
  ASSERT_TRUE(t3.commit().is_ok());
  EXPECT_EQ(t4.update(*t_, "1", "12").code(), Code::kConflict);
  EXPECT_EQ(read_committed(*db_, *t_, "1"), "12");
}

// G-single, read skew: a transaction never sees half of another's effects.
TEST_F(Isolation, GSingleReadSkewPrevented) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  EXPECT_EQ(read(t1, *t_, "1"), "10");
  EXPECT_EQ(read(t2, *t_, "1"), "10");
  EXPECT_EQ(read(t2, *t_, "2"), "20");
  ASSERT_TRUE(t2.update(*t_, "1", "12").is_ok());
  ASSERT_TRUE(t2.update(*t_, "2", "18").is_ok());
  ASSERT_TRUE(t2.commit().is_ok());
  EXPECT_EQ(read(t1, *t_, "2"), "20");  // not 18: the total t1 sees stays 30
  ASSERT_TRUE(t1.commit().is_ok());
}

// G-single with a write: t1 acting on its skewed read must fail.
TEST_F(Isolation, GSingleWriteAfterSkewConflicts) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  EXPECT_EQ(read(t1, *t_, "1"), "10");
  ASSERT_TRUE(t2.update(*t_, "1", "12").is_ok());
  ASSERT_TRUE(t2.update(*t_, "2", "18").is_ok());
  ASSERT_TRUE(t2.commit().is_ok());
  EXPECT_EQ(t1.remove(*t_, "2").code(), Code::kConflict);
}

// G2-item, write skew: allowed under snapshot isolation (serializability needs SSN).
TEST_F(Isolation, G2ItemWriteSkewIsAllowedUnderSI) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  EXPECT_EQ(read(t1, *t_, "1"), "10");
  EXPECT_EQ(read(t1, *t_, "2"), "20");
  EXPECT_EQ(read(t2, *t_, "1"), "10");
  EXPECT_EQ(read(t2, *t_, "2"), "20");
  ASSERT_TRUE(t1.update(*t_, "1", "11").is_ok());
  ASSERT_TRUE(t2.update(*t_, "2", "21").is_ok());
  EXPECT_TRUE(t1.commit().is_ok());
  EXPECT_TRUE(t2.commit().is_ok());  // both commit: the anomaly SI permits
  EXPECT_EQ(read_committed(*db_, *t_, "1"), "11");
  EXPECT_EQ(read_committed(*db_, *t_, "2"), "21");
}

// Inserting a key another open transaction inserted conflicts; after it aborts, the key is free.
TEST_F(Isolation, ConcurrentInsertsOfOneKey) {
  Transaction t1 = begin(*db_);
  Transaction t2 = begin(*db_);
  ASSERT_TRUE(t1.insert(*t_, "9", "a").is_ok());
  EXPECT_EQ(t2.insert(*t_, "9", "b").code(), Code::kConflict);
  t1.abort();
  Transaction t3 = begin(*db_);
  EXPECT_TRUE(t3.insert(*t_, "9", "c").is_ok());
  ASSERT_TRUE(t3.commit().is_ok());
  EXPECT_EQ(read_committed(*db_, *t_, "9"), "c");
}

}  // namespace
}  // namespace braid
