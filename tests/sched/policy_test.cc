// The scheduling policies' contracts, without a worker: admission per policy, the registry's
// names, and the slot state machine's edges.
#include <gtest/gtest.h>

#include "sched/policy.h"
#include "sched/slot_state.h"

#include <algorithm>
#include <string>
#include <vector>

namespace braid::sched {
namespace {

TEST(Policy, BatchAdmitsOnlyIntoAnEmptyWorker) {
  const auto p = make_batch(ExecOptions{});
  EXPECT_EQ(p->kind(), SchedulerPolicy::kBatch);
  EXPECT_EQ(p->admit_target(0, 8), 8u);
  for (std::uint32_t live = 1; live <= 8; ++live) EXPECT_LE(p->admit_target(live, 8), live);
}

TEST(Policy, PipelineRefillsEveryFreeSlot) {
  const auto p = make_pipeline(ExecOptions{});
  EXPECT_EQ(p->kind(), SchedulerPolicy::kPipeline);
  for (std::uint32_t live = 0; live <= 8; ++live) EXPECT_EQ(p->admit_target(live, 8), 8u);
  EXPECT_EQ(p->admit_target(0, 1), 1u);  // the sequential modes
}

TEST(Policy, OnlyBatchResumesASlotParkedOnARead) {
  EXPECT_TRUE(make_batch(ExecOptions{})->resumes_parked_io());
  EXPECT_FALSE(make_storage_batch(ExecOptions{})->resumes_parked_io());
  EXPECT_FALSE(make_pipeline(ExecOptions{})->resumes_parked_io());
  EXPECT_FALSE(make_dual_queue(ExecOptions{})->resumes_parked_io());
  const auto sb = make_storage_batch(ExecOptions{});
  EXPECT_EQ(sb->kind(), SchedulerPolicy::kStorageBatch);
  EXPECT_EQ(sb->admit_target(0, 8), 8u);
  for (std::uint32_t live = 1; live <= 8; ++live) EXPECT_LE(sb->admit_target(live, 8), live);
}

// A worker's view for the dual-queue tests: slot states the test moves as a worker would, and
// the order the policy asks for.
struct DualQueueRig {
  explicit DualQueueRig(ExecOptions e = {}) : p(make_dual_queue(e)) {}
  void launch(std::uint32_t slot) {
    states[slot] = SlotState::kRunnable;
    p->on_launch(slot);
  }
  void set(std::uint32_t slot, SlotState s) {
    const SlotState from = states[slot];
    states[slot] = s;
    if (waiting(from) || waiting(s)) p->on_wait(slot, s);
  }
  void finish(std::uint32_t slot) {
    states[slot] = SlotState::kFree;
    p->on_finish(slot);
  }
  std::vector<std::uint32_t> order() {
    std::uint32_t buf[64];
    const std::uint32_t n = p->order_round(buf, states);
    return {buf, buf + (n == Policy::kSlotOrder ? 0 : n)};
  }
  std::unique_ptr<Policy> p;
  std::vector<SlotState> states = std::vector<SlotState>(64, SlotState::kFree);
};

bool has(const std::vector<std::uint32_t>& v, std::uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(DualQueue, SlotsAreTheHotQueueAndTheColdQueue) {
  const auto p = make_dual_queue(ExecOptions{});  // batch 8, cold_slots 16
  EXPECT_EQ(p->kind(), SchedulerPolicy::kDualQueue);
  EXPECT_EQ(p->slots(8), 24u);
  EXPECT_EQ(p->slots(16), 48u);  // kAuto's larger hot queue keeps the 8:16 ratio
  EXPECT_EQ(p->slots(1), 1u);    // sequential modes: synchronous reads, no cold queue
  ExecOptions e;
  e.batch = 4;
  e.cold_slots = 32;
  EXPECT_EQ(make_dual_queue(e)->slots(4), 36u);
}

TEST(DualQueue, AReadMovesATransactionToTheColdQueueAndItsHotPlaceRefills) {
  DualQueueRig r;
  EXPECT_EQ(r.p->admit_target(0, 8), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) r.launch(i);
  EXPECT_LE(r.p->admit_target(8, 8), 8u);  // hot queue full: nothing new
  r.set(3, SlotState::kParkedIo);
  EXPECT_EQ(r.p->admit_target(8, 8), 9u);  // slot 3 left the hot queue: one more may start
  r.launch(8);
  std::vector<std::uint32_t> o = r.order();
  EXPECT_FALSE(has(o, 3));  // the cold queue is not looked at while hot work runs
  EXPECT_TRUE(has(o, 8));
  // The read came back: still not resumed until the check is due.
  r.set(3, SlotState::kRunnable);
  EXPECT_FALSE(has(r.order(), 3));
  r.launch(9);  // keeps a hot transaction runnable throughout
  for (std::uint32_t i : {0u, 1u, 2u, 4u, 5u, 6u, 7u}) r.finish(i);
  EXPECT_FALSE(has(r.order(), 3));  // 7 hot completions: not yet
  r.finish(8);
  o = r.order();  // the 8th (cold_check_every): the cold queue's ready members run
  EXPECT_TRUE(has(o, 3));
  EXPECT_FALSE(has(r.order(), 3)) << "looked at again before the next interval";
}

TEST(DualQueue, TheColdQueueIsLookedAtWhenNoHotTransactionCanRun) {
  DualQueueRig r;
  (void)r.p->admit_target(0, 8);
  r.launch(0);
  r.launch(1);
  r.set(0, SlotState::kParkedIo);
  r.set(0, SlotState::kRunnable);
  EXPECT_FALSE(has(r.order(), 0));  // slot 1 can run
  r.set(1, SlotState::kParkedIo);   // now nothing hot can
  EXPECT_TRUE(has(r.order(), 0));
}

TEST(DualQueue, AColdTransactionTurnedMemoryBoundIsStagedAheadOfNewOnes) {
  DualQueueRig r;
  (void)r.p->admit_target(0, 8);
  r.launch(0);
  r.set(0, SlotState::kParkedIo);  // -> cold
  for (std::uint32_t i = 1; i <= 8; ++i) r.launch(i);
  EXPECT_LE(r.p->admit_target(9, 8), 9u);  // hot full (8), cold 1
  r.set(0, SlotState::kRunnable);
  for (std::uint32_t i = 1; i <= 8; ++i) r.set(i, SlotState::kParkedIo);  // -> cold too
  ASSERT_TRUE(has(r.order(), 0));  // no hot work: the cold queue is checked
  // Resumed, slot 0 suspended at a memory access: memory-bound again, but the hot queue
  // has room (every hot transaction moved to cold), so it goes straight back to hot.
  r.set(0, SlotState::kParkedMemory);
  EXPECT_TRUE(has(r.order(), 0));
  // Fill the hot queue; then a cold member that turns memory-bound must wait in staging, and
  // while it waits no new transaction is admitted.
  for (std::uint32_t i = 9; i < 16; ++i) r.launch(i);
  EXPECT_LE(r.p->admit_target(16, 8), 16u);  // hot full
  r.set(1, SlotState::kRunnable);
  r.set(1, SlotState::kParkedMemory);  // as if resumed by a cold check
  std::vector<std::uint32_t> o = r.order();
  EXPECT_FALSE(has(o, 1)) << "staged, not run";
  r.finish(9);
  EXPECT_LE(r.p->admit_target(15, 8), 15u) << "the staged transaction takes the free hot place";
  EXPECT_TRUE(has(r.order(), 1));
}

TEST(DualQueue, AFullColdQueueLeavesTheTransactionParkedInTheHotQueueUntilThereIsRoom) {
  ExecOptions e;
  e.batch = 4;
  e.cold_slots = 1;
  DualQueueRig r(e);
  (void)r.p->admit_target(0, 4);
  for (std::uint32_t i = 0; i < 4; ++i) r.launch(i);
  r.set(0, SlotState::kParkedIo);          // -> cold (full now)
  EXPECT_EQ(r.p->admit_target(4, 4), 5u);  // its hot place refills
  r.launch(4);
  r.set(1, SlotState::kParkedIo);          // cold full: stays hot
  EXPECT_LE(r.p->admit_target(5, 4), 5u);  // ... and keeps its hot place
  r.set(0, SlotState::kRunnable);
  r.finish(0);      // the cold member ended: room
  (void)r.order();  // slot 1 moves over
  EXPECT_EQ(r.p->admit_target(4, 4), 5u);
}

TEST(Policy, RegistryNamesEveryPolicyOnce) {
  for (const PolicyInfo& info : policies()) {
    EXPECT_EQ(&policy_info(info.kind), &info);
    EXPECT_EQ(find_policy(info.name), &info) << info.name;
    EXPECT_EQ(info.make(ExecOptions{})->kind(), info.kind) << info.name;
  }
  EXPECT_EQ(policies().size(), 4u);
  EXPECT_EQ(find_policy("batch")->kind, SchedulerPolicy::kBatch);
  EXPECT_EQ(find_policy("pipeline")->kind, SchedulerPolicy::kPipeline);
  EXPECT_EQ(find_policy("Batch"), nullptr);
  EXPECT_EQ(find_policy(""), nullptr);
}

TEST(SlotState, OnlyTheDocumentedEdgesExist) {
  using S = SlotState;
  const S all[] = {S::kFree, S::kRunnable, S::kParkedMemory, S::kParkedIo, S::kWaitingDurable};
  int edges = 0;
  for (S from : all) {
    for (S to : all) edges += valid_transition(from, to) ? 1 : 0;
  }
  // free->runnable; runnable, parked-memory -> free, parked-memory, parked-io, waiting-durable;
  // parked-io, waiting-durable -> runnable.
  EXPECT_EQ(edges, 1 + 2 * 4 + 2);
  EXPECT_TRUE(valid_transition(S::kFree, S::kRunnable));
  EXPECT_FALSE(valid_transition(S::kFree, S::kParkedMemory));
  EXPECT_FALSE(valid_transition(S::kWaitingDurable, S::kFree));  // never freed while it waits
  EXPECT_FALSE(valid_transition(S::kParkedIo, S::kParkedMemory));
  EXPECT_FALSE(valid_transition(S::kWaitingDurable, S::kParkedIo));
  EXPECT_TRUE(valid_transition(S::kParkedIo, S::kRunnable));
  for (S s : all) {
    EXPECT_EQ(resumable(s), s == S::kRunnable || s == S::kParkedMemory) << slot_state_name(s);
    EXPECT_EQ(waiting(s), s == S::kParkedIo || s == S::kWaitingDurable) << slot_state_name(s);
  }
}

}  // namespace
}  // namespace braid::sched

namespace braid {
namespace {

TEST(Names, EveryModeAndSchedulerRoundTrips) {
  const std::vector<std::string> modes = exec_mode_names();
  EXPECT_EQ(modes.size(), 5u);
  for (const std::string& n : modes) {
    ExecMode m{};
    ASSERT_TRUE(parse_exec_mode(n, &m)) << n;
    EXPECT_EQ(to_string(m), n);
  }
  EXPECT_EQ(to_string(ExecMode::kInterleaved), "interleaved");
  for (const std::string& n : scheduler_names()) {
    SchedulerPolicy p{};
    ASSERT_TRUE(parse_scheduler(n, &p)) << n;
    EXPECT_EQ(to_string(p), n);
  }
  ExecMode m = ExecMode::kNested;
  EXPECT_FALSE(parse_exec_mode("plain", &m));  // braid-bench's own loop, not an engine mode
  EXPECT_FALSE(parse_exec_mode("", &m));
  EXPECT_EQ(m, ExecMode::kNested);  // untouched on failure
  SchedulerPolicy p = SchedulerPolicy::kPipeline;
  EXPECT_FALSE(parse_scheduler("team", &p));  // not registered (yet)
  EXPECT_EQ(p, SchedulerPolicy::kPipeline);
  EXPECT_EQ(to_string(static_cast<ExecMode>(9)), "?");
}

}  // namespace
}  // namespace braid
