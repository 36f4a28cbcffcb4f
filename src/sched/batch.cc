// `batch` (CoroBase Algorithm 1): admit a batch into empty slots only when every slot is empty,
// then resume its transactions round-robin until all of them finished. A long transaction holds
// its whole batch back; `pipeline` is the answer to that.
#include "sched/policy.h"

namespace braid::sched {
namespace {

class Batch final : public Policy {
 public:
  SchedulerPolicy kind() const override { return SchedulerPolicy::kBatch; }
  std::uint32_t admit_target(std::uint32_t live, std::uint32_t capacity) const override {
    return live == 0 ? capacity : 0;
  }
};

}  // namespace

std::unique_ptr<Policy> make_batch() { return std::make_unique<Batch>(); }

}  // namespace braid::sched
