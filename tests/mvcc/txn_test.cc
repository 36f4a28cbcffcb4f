#include "mvcc/txn.h"

#include <gtest/gtest.h>

#include <vector>

namespace braid::mvcc {
namespace {

TEST(TxnTable, ContextsAreBoundedAndReused) {
  TxnTable t(4, 100);
  std::vector<TxnContext*> open;
  for (int i = 0; i < 4; ++i) {
    TxnContext* c = t.begin();
    ASSERT_NE(c, nullptr);
    open.push_back(c);
  }
  EXPECT_EQ(t.begin(), nullptr);  // all four slots taken
  const std::uint64_t old_xid = open[0]->xid.load();
  t.finish(open[0]);
  TxnContext* again = t.begin();
  ASSERT_EQ(again, open[0]);
  // A new generation: versions tagged by the previous occupant are not mistaken for ours.
  EXPECT_NE(again->xid.load(), old_xid);
  EXPECT_NE(again->tag, owner_stamp(old_xid));
  open[0] = again;
  for (TxnContext* c : open) t.finish(c);
}

TEST(TxnTable, HorizonIsTheOldestPin) {
  TxnTable t(4, 100);
  TxnContext* old_reader = t.begin();
  const std::uint64_t pinned = old_reader->pin.load();
  for (int i = 0; i < 10; ++i) t.clock().fetch_add(1);
  TxnContext* young = t.begin();
  EXPECT_GT(young->snapshot, old_reader->snapshot);
  EXPECT_EQ(t.refresh_horizon(), pinned);
  t.finish(old_reader);
  EXPECT_EQ(t.refresh_horizon(), young->pin.load());
  t.finish(young);
  EXPECT_EQ(t.refresh_horizon(), t.clock().load());
}

TEST(TxnTable, RetiredVersionsWaitForOlderPins) {
  TxnTable t(4, 100);
  TxnContext* reader = t.begin();  // may still see what the writer unlinks
  TxnContext* writer = t.begin();
  Version* v = t.alloc_version(writer, 16);
  EXPECT_EQ(writer->versions_live.load(), 1);
  t.retire(writer, v);
  t.reclaim(writer);
  EXPECT_EQ(writer->limbo.size(), 1u);  // the reader's pin holds it
  t.finish(reader);
  t.reclaim(writer);
  EXPECT_EQ(writer->limbo.size(), 1u);  // so does the writer's own (views it handed out)
  t.finish(writer);
  t.reclaim(writer);
  EXPECT_TRUE(writer->limbo.empty());
  EXPECT_EQ(writer->versions_live.load(), 0);
}

}  // namespace
}  // namespace braid::mvcc
