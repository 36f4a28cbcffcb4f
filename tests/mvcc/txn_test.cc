#include "mvcc/txn.h"

#include <gtest/gtest.h>

#include <vector>

namespace braid::mvcc {
namespace {

TEST(TxnTable, ContextsAreBoundedAndReused) {
  TxnTable t(0, 4, 100);
  std::vector<TxnContext*> open;
  for (int i = 0; i < 4; ++i) {
    TxnContext* c = t.begin();
    ASSERT_NE(c, nullptr);
    open.push_back(c);
  }
  EXPECT_EQ(t.begin(), nullptr);  // all four slots taken
  const std::uint64_t old_xid = open[0]->xid.load();
  (void)t.finish(open[0]);
  TxnContext* again = t.begin();
  ASSERT_EQ(again, open[0]);
  // A new generation: versions tagged by the previous occupant are not mistaken for ours.
  EXPECT_NE(again->xid.load(), old_xid);
  EXPECT_NE(again->tag, owner_stamp(old_xid));
  open[0] = again;
  for (TxnContext* c : open) (void)t.finish(c);
}

TEST(TxnTable, HorizonIsTheOldestPin) {
  TxnTable t(0, 4, 100);
  TxnContext* old_reader = t.begin();
  const std::uint64_t pinned = old_reader->pin.load();
  for (int i = 0; i < 10; ++i) t.clock().fetch_add(1);
  TxnContext* young = t.begin();
  EXPECT_GT(young->snapshot, old_reader->snapshot);
  EXPECT_EQ(t.refresh_horizon(), pinned);
  (void)t.finish(old_reader);
  EXPECT_EQ(t.refresh_horizon(), young->pin.load());
  (void)t.finish(young);
  EXPECT_EQ(t.refresh_horizon(), t.clock().load());
}

TEST(TxnTable, RetiredVersionsWaitForOlderPins) {
  TxnTable t(0, 4, 100);
  ASSERT_TRUE(t.init_heap(std::size_t{64} << 20, true).is_ok());
  TxnContext* reader = t.begin();  // may still see what the writer unlinks
  TxnContext* writer = t.begin();
  Version* v = t.alloc_version(writer, 16);
  EXPECT_EQ(writer->versions_live.load(), 1);
  t.retire(writer, v);
  (void)t.reclaim(writer);
  EXPECT_EQ(writer->limbo.size(), 1u);  // the reader's pin holds it
  (void)t.finish(reader);
  (void)t.reclaim(writer);
  EXPECT_EQ(writer->limbo.size(), 1u);  // so does the writer's own (views it handed out)
  (void)t.finish(writer);
  (void)t.reclaim(writer);
  EXPECT_TRUE(writer->limbo.empty());
  EXPECT_EQ(writer->versions_live.load(), 0);
}

// A retire reads no clock: the retirer's finish reads one for everything it retired (one fence
// per transaction, TxnTable::seal_limbo), and until then nothing it retired can be freed.
TEST(TxnTable, RetiredVersionsTakeTheClockOfTheirRetirersFinish) {
  TxnTable t(0, 4, 100);
  ASSERT_TRUE(t.init_heap(std::size_t{64} << 20, true).is_ok());
  TxnContext* writer = t.begin();
  t.retire(writer, t.alloc_version(writer, 16));
  t.clock().fetch_add(5);
  t.retire(writer, t.alloc_version(writer, 40));
  ASSERT_EQ(writer->limbo.size(), 2u);
  EXPECT_EQ(writer->limbo[0].clock, kUnsealed);
  EXPECT_EQ(writer->limbo[1].clock, kUnsealed);
  (void)t.reclaim(writer);  // unsealed: above every horizon
  EXPECT_EQ(writer->limbo.size(), 2u);
  const std::uint64_t at_finish = t.clock().load();
  (void)t.finish(writer);
  ASSERT_EQ(writer->limbo.size(), 2u);  // the cached horizon is not past the clock yet
  EXPECT_EQ(writer->limbo[0].clock, at_finish);
  EXPECT_EQ(writer->limbo[1].clock, at_finish);
  EXPECT_EQ(writer->limbo_sealed, 2u);
  t.clock().fetch_add(1);
  (void)t.reclaim(writer);  // no pins: the horizon is the clock, past both
  EXPECT_TRUE(writer->limbo.empty());
  EXPECT_EQ(writer->limbo_sealed, 0u);
  EXPECT_EQ(writer->versions_live.load(), 0);
}

// A context nobody occupies frees its last occupant's limbo once the horizon passes it, without
// a tick of its own (a worker's eviction context between sweeps: Worker::service_cold).
TEST(TxnTable, AnIdleContextsLimboIsReleasedOnceTheHorizonPassesIt) {
  TxnTable t(1, 4, 100);
  ASSERT_TRUE(t.init_heap(std::size_t{64} << 20, true).is_ok());
  TxnContext* evict = t.begin_at(0);
  for (int i = 0; i < 3; ++i) t.retire(evict, t.alloc_version(evict, 16));
  (void)t.finish(evict);  // below kLimboBatch: finish frees only what the cached horizon allows
  ASSERT_EQ(evict->limbo.size(), 3u);
  const std::uint64_t clock_before = t.clock().load();
  t.release_limbo(evict);  // the clock has not moved: no horizon can pass the retires
  EXPECT_EQ(evict->limbo.size(), 3u);
  EXPECT_EQ(t.clock().load(), clock_before);  // and the release ticks nothing
  TxnContext* reader = t.begin();             // pinned at the retires' clock: it may still see them
  t.clock().fetch_add(1);
  t.release_limbo(evict);
  EXPECT_EQ(evict->limbo.size(), 3u);
  (void)t.finish(reader);
  t.release_limbo(evict);
  EXPECT_TRUE(evict->limbo.empty());
  EXPECT_EQ(evict->retired.load(), 0u);
  EXPECT_EQ(evict->versions_live.load(), 0);
  EXPECT_EQ(evict->version_bytes_live.load(), 0);
  t.release_limbo(evict);  // an empty limbo: nothing to do
  EXPECT_TRUE(evict->limbo.empty());
}

// A durable database takes reclamation's clock tick through its log. Handed to finish, the tick
// is taken before the context is let go and the batch is freed there; without it, the batch
// waits for the context's next finish (an application thread's context may idle for long).
TEST(TxnTable, ALoggedTickTakenAtFinishFreesTheBatchThere) {
  TxnTable t(3, 1, 100);  // three contexts of their own, one after the other
  ASSERT_TRUE(t.init_heap(std::size_t{64} << 20, true).is_ok());
  t.set_logged_ticks(true);
  struct Clock {
    TxnTable* t;
    int taken = 0;
    bool works = true;
  } clock{&t};
  const TxnTable::LoggedTick tick{[](void* a) {
                                    auto* c = static_cast<Clock*>(a);
                                    if (!c->works) return false;
                                    ++c->taken;
                                    c->t->clock().fetch_add(1);
                                    return true;
                                  },
                                  &clock};
  auto retire_batch = [&t](TxnContext* c) {
    for (int i = 0; i < 300; ++i) t.retire(c, t.alloc_version(c, 16));  // past kLimboBatch
  };
  TxnContext* a = t.begin_at(0);
  retire_batch(a);
  EXPECT_TRUE(t.finish(a));  // no tick at hand: the caller must take one, and the batch waits
  EXPECT_EQ(a->limbo.size(), 300u);
  TxnContext* b = t.begin_at(1);
  retire_batch(b);
  clock.works = false;  // a log that cannot take it (halted): nothing freed, nothing ticked
  EXPECT_FALSE(t.finish(b, &tick));
  EXPECT_EQ(b->limbo.size(), 300u);
  EXPECT_EQ(clock.taken, 0);
  clock.works = true;
  TxnContext* c = t.begin_at(2);
  retire_batch(c);
  const std::uint64_t before = t.clock().load();
  EXPECT_FALSE(t.finish(c, &tick));
  EXPECT_EQ(clock.taken, 1);
  EXPECT_EQ(t.clock().load(), before + 1);
  EXPECT_TRUE(c->limbo.empty());  // freed by the finish that retired it
  EXPECT_EQ(c->retired.load(), 0u);
  // The tick passed the other two batches' clocks as well: their contexts' own releases free them.
  t.release_limbo(a);
  t.release_limbo(b);
  EXPECT_TRUE(a->limbo.empty());
  EXPECT_TRUE(b->limbo.empty());
  EXPECT_EQ(a->versions_live.load() + b->versions_live.load() + c->versions_live.load(), 0);
}

TEST(TxnTable, ReservedContextsAreOnlyTakenExplicitly) {
  TxnTable t(2, 1, 100);
  TxnContext* shared = t.begin();
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->index, 2u);   // the shared range follows the reserved one
  EXPECT_EQ(t.begin(), nullptr);  // reserved contexts are not handed to begin()
  TxnContext* slot1 = t.begin_at(1);
  EXPECT_EQ(slot1->index, 1u);
  EXPECT_NE(slot1->xid.load(), 0u);
  (void)t.finish(slot1);
  (void)t.finish(shared);
}

}  // namespace
}  // namespace braid::mvcc
