// The scheduling policies' contracts, without a worker: admission per policy, the registry's
// names, and the slot state machine's edges.
#include <gtest/gtest.h>

#include "sched/policy.h"
#include "sched/slot_state.h"

#include <string>
#include <vector>

namespace braid::sched {
namespace {

TEST(Policy, BatchAdmitsOnlyIntoAnEmptyWorker) {
  const auto p = make_batch();
  EXPECT_EQ(p->kind(), SchedulerPolicy::kBatch);
  EXPECT_EQ(p->admit_target(0, 8), 8u);
  for (std::uint32_t live = 1; live <= 8; ++live) EXPECT_LE(p->admit_target(live, 8), live);
}

TEST(Policy, PipelineRefillsEveryFreeSlot) {
  const auto p = make_pipeline();
  EXPECT_EQ(p->kind(), SchedulerPolicy::kPipeline);
  for (std::uint32_t live = 0; live <= 8; ++live) EXPECT_EQ(p->admit_target(live, 8), 8u);
  EXPECT_EQ(p->admit_target(0, 1), 1u);  // the sequential modes
}

TEST(Policy, RegistryNamesEveryPolicyOnce) {
  for (const PolicyInfo& info : policies()) {
    EXPECT_EQ(&policy_info(info.kind), &info);
    EXPECT_EQ(find_policy(info.name), &info) << info.name;
    EXPECT_EQ(info.make()->kind(), info.kind) << info.name;
  }
  EXPECT_EQ(policies().size(), 2u);
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
