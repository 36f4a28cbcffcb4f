// The MVCC protocol on one record's chain, without an index or an engine: snapshot visibility,
// first-updater-wins, the owner's replacement of its own head, commit and abort.
#include "mvcc/protocol.h"

#include <gtest/gtest.h>

#include <string>

namespace braid::mvcc {
namespace {

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(txns_.init_heap(std::size_t{8} << 20, false).is_ok()); }

  // The value of the version `ctx` sees, or "" when none.
  std::string read(const TxnContext* ctx) {
    const std::uint64_t e = slot_.load();
    for (const Version* v = entry::is_hot(e) ? entry::hot(e) : nullptr; v != nullptr;
         v = v->next.load()) {
      Vis vis;
      do {
        vis = p_.visibility(ctx, v->stamp.load());
      } while (vis == Vis::kRetry);
      if (vis == Vis::kVisible) {
        return v->tombstone() ? "" : std::string(static_cast<const char*>(v->payload()), v->size);
      }
    }
    return "";
  }
  Status write(TxnContext* ctx, std::string_view value, WriteKind kind = WriteKind::kPut) {
    Status s;
    const Version* prev = nullptr;
    EXPECT_EQ(p_.install(ctx, nullptr, slot_, 1, "k", value, kind, &s, &prev), Install::kDone);
    return s;
  }
  void commit(TxnContext* ctx) {
    (void)p_.publish_commit(ctx);
    (void)txns_.finish(ctx);
  }
  // A fresh record's first version, ctx's write (slot_ must be empty).
  Version* insert_fresh(TxnContext* ctx, std::string_view value) {
    Version* v = p_.make_version(ctx, value, false);
    EXPECT_NE(v, nullptr);
    if (v == nullptr) return nullptr;
    p_.install_fresh(slot_, v);
    p_.add_write(ctx, nullptr, &slot_, 1, v, "k", true);
    return v;
  }
  void abort(TxnContext* ctx) {
    p_.abort_begin(ctx);
    p_.unlink_writes(ctx);
    (void)txns_.finish(ctx);
  }

  TxnTable txns_{0, 8, 16};
  Protocol p_{&txns_, 8 << 20};
  std::atomic<std::uint64_t> slot_{entry::kEmpty};
};

TEST_F(ProtocolTest, SnapshotsSeeWhatCommittedBeforeThem) {
  TxnContext* a = txns_.begin();
  Version* v = insert_fresh(a, "v1");
  ASSERT_NE(v, nullptr);
  TxnContext* early = txns_.begin();  // snapshot before a commits
  EXPECT_EQ(read(a), "v1");           // its own version
  EXPECT_EQ(read(early), "");         // uncommitted: invisible to others
  commit(a);
  TxnContext* late = txns_.begin();
  EXPECT_EQ(read(late), "v1");
  EXPECT_EQ(read(early), "");  // committed after its snapshot
  // First updater wins: early's snapshot does not hold the head, so it may not overwrite it.
  EXPECT_EQ(write(early, "x").code(), Code::kConflict);
  EXPECT_TRUE(write(late, "v2").is_ok());
  EXPECT_TRUE(write(late, "v3").is_ok());  // its own head, replaced: one version per txn
  EXPECT_EQ(late->writes.size(), 1u);
  EXPECT_EQ(read(late), "v3");
  TxnContext* other = txns_.begin();
  EXPECT_EQ(write(other, "y").code(), Code::kConflict);  // an uncommitted head is another's
  EXPECT_EQ(read(other), "v1");
  abort(other);
  abort(early);
  commit(late);
  TxnContext* last = txns_.begin();
  EXPECT_EQ(read(last), "v3");
  EXPECT_EQ(write(last, "z", WriteKind::kInsert).code(), Code::kDuplicate);
  EXPECT_TRUE(write(last, "", WriteKind::kRemove).is_ok());
  EXPECT_EQ(write(last, "w", WriteKind::kUpdate).code(), Code::kNotFound);  // removed by itself
  abort(last);
}

// The window between publish_commit's state store and its restamping of the writes: a reader
// already sees the version as committed, and what persists it (the checkpoint) must write the
// owner's timestamp, not the owner tag the version still carries. (Once written to disk, such
// a tag came back from the cold store as a version whose owner had ended, and every reader of
// the record spun on it: exec_stress_test's tiny-budget hang.)
TEST_F(ProtocolTest, CommitStampIsTheOwnersTimestampBeforeTheVersionIsRestamped) {
  TxnContext* a = txns_.begin();
  Version* v = insert_fresh(a, "v1");
  ASSERT_NE(v, nullptr);
  const std::uint64_t cts = txns_.clock().fetch_add(1) + 1;
  a->state.store(cstate::committed(cts));  // published, not yet restamped
  ASSERT_TRUE(is_owner_stamp(v->stamp.load()));
  TxnContext* reader = txns_.begin();
  EXPECT_EQ(read(reader), "v1");
  bool known = false;
  EXPECT_EQ(p_.commit_stamp_of(reader, v, &known), cts);
  EXPECT_TRUE(known);
  v->stamp.store(cts);  // publish_commit restamps next (stamp_writes)
  (void)txns_.finish(a);
  EXPECT_EQ(p_.commit_stamp_of(reader, v, &known), cts);
  EXPECT_TRUE(known);
  EXPECT_EQ(v->stamp.load(), cts);
  (void)txns_.finish(reader);
}

// prune_target names the version an install over the head cuts (the drivers prefetch it with
// the head), and nothing while the head is uncommitted or newer than some snapshot.
TEST_F(ProtocolTest, PruneTargetIsTheVersionTheInstallCuts) {
  TxnContext* a = txns_.begin();
  Version* v1 = insert_fresh(a, "v1");
  ASSERT_NE(v1, nullptr);
  commit(a);
  TxnContext* b = txns_.begin();
  ASSERT_TRUE(write(b, "v2").is_ok());
  const Version* v2 = entry::hot(slot_.load());
  EXPECT_EQ(p_.prune_target(v2), nullptr);  // b's, uncommitted
  commit(b);
  (void)txns_.refresh_horizon();
  EXPECT_EQ(p_.prune_target(v2), v1);
  EXPECT_EQ(p_.prune_target(v1), nullptr);  // the oldest: nothing below it
  TxnContext* c = txns_.begin();
  ASSERT_TRUE(write(c, "v3").is_ok());
  ASSERT_FALSE(c->limbo.empty());
  EXPECT_EQ(c->limbo.back().version, v1);  // the install cut what prune_target named
  EXPECT_TRUE(c->limbo.back().chain);      // unread: its free walks it
  EXPECT_EQ(v2->next.load(), nullptr);
  TxnContext* old_reader = txns_.begin();  // its snapshot predates c's commit
  commit(c);
  (void)txns_.refresh_horizon();
  const Version* v3 = entry::hot(slot_.load());
  EXPECT_EQ(p_.prune_target(v3), nullptr);  // v3 is newer than old_reader's snapshot
  EXPECT_EQ(read(old_reader), "v2");
  (void)txns_.finish(old_reader);
  (void)txns_.refresh_horizon();
  EXPECT_EQ(p_.prune_target(v3), v2);
}

TEST_F(ProtocolTest, AbortRestoresThePreviousHead) {
  TxnContext* a = txns_.begin();
  ASSERT_NE(insert_fresh(a, "v1"), nullptr);
  commit(a);
  const std::uint64_t committed_head = slot_.load();
  TxnContext* b = txns_.begin();
  EXPECT_TRUE(write(b, "v2").is_ok());
  EXPECT_NE(slot_.load(), committed_head);
  abort(b);
  EXPECT_EQ(slot_.load(), committed_head);
  TxnContext* c = txns_.begin();
  EXPECT_EQ(read(c), "v1");
  EXPECT_TRUE(write(c, "v3").is_ok());  // the aborted version no longer blocks a writer
  commit(c);
  EXPECT_EQ(Protocol::check_chain(slot_.load()), 2u);  // v3 -> v1, ordered, all committed
  // An aborted fresh record leaves the entry empty.
  std::atomic<std::uint64_t> fresh{entry::kEmpty};
  TxnContext* d = txns_.begin();
  Version* f = p_.make_version(d, "f", false);
  p_.install_fresh(fresh, f);
  p_.add_write(d, nullptr, &fresh, 2, f, "f", true);
  abort(d);
  EXPECT_EQ(fresh.load(), entry::kEmpty);
}

}  // namespace
}  // namespace braid::mvcc
