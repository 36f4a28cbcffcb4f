// `pipeline`: refill a slot as soon as its transaction finishes, so the worker keeps `batch`
// transactions open whatever their lengths (MosaicDB §4.2's pipelined scheduler, single queue).
// Reclamation epochs are per transaction, not per batch, so a slot may start a new transaction
// while its neighbours are still open. A slot parked on a storage read is skipped until the
// read is back; nothing reserves slots for memory-bound transactions, so with cold reads in
// the mix storage-bound ones can fill the pipeline (MosaicDB Fig. 5b; `dual-queue` answers it).
#include "sched/policy.h"

namespace braid::sched {
namespace {

class Pipeline final : public Policy {
 public:
  SchedulerPolicy kind() const override { return SchedulerPolicy::kPipeline; }
  std::uint32_t admit_target(std::uint32_t live, std::uint32_t capacity) override {
    (void)live;
    return capacity;
  }
};

}  // namespace

std::unique_ptr<Policy> make_pipeline(const ExecOptions&, std::uint32_t) {
  return std::make_unique<Pipeline>();
}

}  // namespace braid::sched
