// Memory stays bounded under an update-only workload: versions no snapshot can see are pruned
// and freed once every transaction that might hold them has ended.
#include <gtest/gtest.h>

#include <string>

#include "engine/test_util.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::begin;

TEST(Reclaim, UpdateOnlyWorkloadKeepsVersionsBounded) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  constexpr int kRecords = 1000;
  {
    Transaction tx = begin(*db);
    for (int i = 0; i < kRecords; ++i) ASSERT_TRUE(tx.insert(*t, std::to_string(i), "v").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  util::Rng rng(9);
  std::uint64_t peak = 0;
  constexpr int kTxns = 100000;
  for (int n = 0; n < kTxns; ++n) {
    Transaction tx = begin(*db);
    for (int k = 0; k < 10; ++k) {
      Status s = tx.update(*t, std::to_string(rng.uniform(kRecords)), std::string(16, 'a' + k));
      ASSERT_TRUE(s.is_ok()) << s.to_string();
    }
    ASSERT_TRUE(tx.commit().is_ok());
    if (n % 1000 == 999) {
      const DatabaseStats st = db->stats();
      peak = std::max(peak, st.live_versions);
      // One million versions were written in all; a bounded number stay alive: at most a few
      // per record plus the limbo batches not yet freed.
      ASSERT_LT(st.live_versions, 4u * kRecords) << "after " << n + 1 << " transactions";
    }
  }
  const DatabaseStats st = db->stats();
  EXPECT_GT(st.pruned_versions, 900000u);
  EXPECT_LT(peak, 4u * kRecords);
  std::printf("update-only: 1,000,000 versions written, peak live %llu, pruned %llu\n",
              static_cast<unsigned long long>(peak),
              static_cast<unsigned long long>(st.pruned_versions));
}

TEST(Reclaim, AnOldSnapshotKeepsItsVersionsUntilItEnds) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.insert(*t, "k", "original").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  Transaction old = begin(*db);
  Result<std::string_view> view = old.get(*t, "k");
  ASSERT_TRUE(view.is_ok());
  for (int n = 0; n < 3000; ++n) {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.update(*t, "k", "v" + std::to_string(n)).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // The old snapshot still reads its value, through the very same memory (ASan would flag a
  // freed version here).
  EXPECT_EQ(*view, "original");
  EXPECT_EQ(testing::read(old, *t, "k"), "original");
  EXPECT_GT(db->stats().live_versions, 3000u);  // nothing newer than its pin could be pruned
  ASSERT_TRUE(old.commit().is_ok());
  for (int n = 0; n < 1000; ++n) {
    Transaction tx = begin(*db);
    ASSERT_TRUE(tx.update(*t, "k", "w").is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  const DatabaseStats st = db->stats();
  EXPECT_LT(st.live_versions, 600u);
  // The first update after the old snapshot ended cut a chain of 3000 versions at once; each
  // version written is now either allocated or freed, and a pruned one counts when it is freed
  // (TxnTable::retire_chain walks a cut chain only then).
  EXPECT_EQ(st.pruned_versions + st.live_versions, 1u + 3000u + 1000u);
}

TEST(Reclaim, SupersededOwnVersionsStayReadableUntilTheTransactionEnds) {
  auto db = testing::open_db();
  Table* t = testing::make_table(*db, "t");
  Transaction tx = begin(*db);
  ASSERT_TRUE(tx.put(*t, "k", "first").is_ok());
  Result<std::string_view> first = tx.get(*t, "k");
  ASSERT_TRUE(first.is_ok());
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(tx.put(*t, "k", "next").is_ok());
  EXPECT_EQ(*first, "first");
  EXPECT_EQ(testing::read(tx, *t, "k"), "next");
  ASSERT_TRUE(tx.commit().is_ok());
}

}  // namespace
}  // namespace braid
