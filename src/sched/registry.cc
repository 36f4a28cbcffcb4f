#include <array>

#include "sched/policy.h"
#include "util/assert.h"

namespace braid::sched {
namespace {

// Indexed by SchedulerPolicy.
constexpr std::array<PolicyInfo, 5> kPolicies = {{
    {SchedulerPolicy::kBatch, "batch", &make_batch},                         // CoroBase Algorithm 1
    {SchedulerPolicy::kPipeline, "pipeline", &make_pipeline},                // refill as slots free
    {SchedulerPolicy::kStorageBatch, "storage-batch", &make_storage_batch},  // MosaicDB 5a
    {SchedulerPolicy::kDualQueue, "dual-queue", &make_dual_queue},           // MosaicDB Algorithm 1
    {SchedulerPolicy::kTeam, "team", &make_team},                            // STEPS
}};

}  // namespace

std::span<const PolicyInfo> policies() { return kPolicies; }

const PolicyInfo& policy_info(SchedulerPolicy kind) {
  const auto i = static_cast<std::size_t>(kind);
  BRAID_ASSERT(i < kPolicies.size());
  BRAID_ASSERT(kPolicies[i].kind == kind);
  return kPolicies[i];
}

const PolicyInfo* find_policy(std::string_view name) {
  for (const PolicyInfo& p : kPolicies) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace braid::sched
