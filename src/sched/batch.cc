// `batch` (CoroBase Algorithm 1) and `storage-batch` (MosaicDB §4.2, Fig. 5a): admit a batch into
// empty slots only when every slot is empty, then resume its transactions round-robin until all
// of them finished. A long transaction holds its whole batch back; `pipeline` is the answer.
//
// They differ only in a slot parked on a storage read. `batch` knows nothing of I/O: it resumes
// the transaction, which looks at its read and, still pending, suspends again — a resume and a
// suspension wasted per round per waiting slot. `storage-batch` checks the read's status from
// the scheduler (the worker's slot state, kept apart from the transaction as MosaicDB's
// per-slot I/O status array is) and resumes the slot only once the read is back. With cold
// transactions in the mix both degrade towards sequential: the batch waits for its slowest.
#include "sched/policy.h"

namespace braid::sched {
namespace {

class Batch final : public Policy {
 public:
  explicit Batch(bool storage_aware) : storage_aware_(storage_aware) {}
  SchedulerPolicy kind() const override {
    return storage_aware_ ? SchedulerPolicy::kStorageBatch : SchedulerPolicy::kBatch;
  }
  std::uint32_t admit_target(std::uint32_t live, std::uint32_t capacity) override {
    return live == 0 ? capacity : 0;
  }
  bool resumes_parked_io() const override { return !storage_aware_; }

 private:
  const bool storage_aware_;
};

}  // namespace

std::unique_ptr<Policy> make_batch(const ExecOptions&, std::uint32_t) {
  return std::make_unique<Batch>(false);
}
std::unique_ptr<Policy> make_storage_batch(const ExecOptions&, std::uint32_t) {
  return std::make_unique<Batch>(true);
}

}  // namespace braid::sched
