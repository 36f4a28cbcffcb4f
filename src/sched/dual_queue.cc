// `dual-queue` (MosaicDB §4.3, Algorithm 1, Fig. 5c): memory-bound and storage-bound
// transactions in separate queues, so reads in flight neither hold a batch back (`batch`) nor
// crowd memory-bound transactions out of the slots (`pipeline`).
//
// The queues are sets of the worker's slots, not places a transaction moves between: a
// transaction never leaves its slot (its awaiters point into it), only its membership changes.
//   hot      at most `capacity` (ExecOptions::batch, or kAuto's choice) transactions, resumed
//            round-robin every round; new transactions enter here, and only when no
//            transaction waits in staging.
//   cold     at most cold_for(capacity) transactions. A hot transaction that parks on a read
//            moves here, and its hot place is refilled at once. The worker looks at the cold
//            queue only every `cold_check_every` hot completions, or when no hot transaction
//            can run, and resumes the members whose read is back (their I/O status is the
//            slot state: none is resumed to ask).
//   staging  a cold member that, resumed, suspended at a memory access rather than a read (it
//            turned memory-bound again) waits here for a hot place; staging is served before
//            any new admission (MosaicDB: "prioritize transactions from it").
// One deviation from the paper: when the cold queue is full, MosaicDB aborts a hot
// transaction that turns storage-bound. Here it stays in the hot queue, parked and skipped
// like in `pipeline`, and moves to the cold queue when a place frees: an abort would throw
// away its work and its read. Every open transaction is a member of one queue, and new ones
// are admitted only when hot has room and staging is empty, so hot + cold + staging never
// exceeds capacity + cold_for(capacity) = slots(capacity).
#include <algorithm>
#include <vector>

#include "sched/policy.h"
#include "util/assert.h"

namespace braid::sched {
namespace {

class DualQueue final : public Policy {
 public:
  DualQueue(const ExecOptions& e, std::uint32_t slots)
      : ratio_cold_(e.cold_slots),
        ratio_hot_(std::max<std::uint32_t>(e.batch, 1)),
        every_(std::max<std::uint32_t>(e.cold_check_every, 1)),
        member_(slots, Queue::kNone),
        cold_ready_(slots) {}

  SchedulerPolicy kind() const override { return SchedulerPolicy::kDualQueue; }

  std::uint32_t slots(std::uint32_t capacity) const override {
    return capacity + cold_for(capacity);
  }

  std::uint32_t admit_target(std::uint32_t live, std::uint32_t capacity) override {
    hot_cap_ = capacity;
    cold_cap_ = cold_for(capacity);
    promote(nullptr, nullptr);
    if (staging_ != 0 || hot_ >= hot_cap_) return 0;
    return live + (hot_cap_ - hot_);
  }

  void on_launch(std::uint32_t slot) override {
    BRAID_ASSERT(slot < member_.size());
    BRAID_DASSERT(member_[slot] == Queue::kNone);
    member_[slot] = Queue::kHot;
    ++hot_;
  }

  void on_wait(std::uint32_t slot, SlotState now) override {
    BRAID_DASSERT(slot < member_.size());
    if (now == SlotState::kParkedIo && member_[slot] == Queue::kHot && cold_ < cold_cap_) {
      move(slot, Queue::kCold);
    }
  }

  std::uint32_t order_round(std::span<std::uint32_t> order, std::span<const SlotState> states,
                            std::span<const std::uint32_t>) override {
    BRAID_DASSERT(states.size() == member_.size());  // the slot count it was made for
    const std::size_t n = member_.size();
    // One pass over the slots, which runs every round: reclassify each by what it did since
    // the last round, list the hot queue's, and note the cold queue's that can run (listed
    // only when the cold queue is looked at). Places the pass frees go to staged transactions
    // after it.
    promote(nullptr, nullptr);
    // Liveness: hot transactions can keep running without finishing — each waiting for a
    // free cold load (ColdFetch's kBusy) that only cold members, done with their reads but
    // never resumed to release them, would give back. Seen as a hang of the tiny-budget stress
    // test (both workers sweeping, no transaction finishing). So the cold queue is also looked
    // at after kMaxRoundsWithoutCheck rounds without a look, whatever the hot queue does.
    if (++rounds_since_check_ >= kMaxRoundsWithoutCheck) check_cold_ = true;
    std::uint32_t count = 0;
    std::uint32_t cold_ready = 0;
    bool hot_runnable = false;
    for (std::size_t i = 0; i < n; ++i) {
      const auto slot = static_cast<std::uint32_t>(i);
      const Queue m = member_[i];
      const SlotState st = states[i];
      if (m == Queue::kHot) {
        if (st == SlotState::kParkedIo && cold_ < cold_cap_) {
          move(slot, Queue::kCold);  // parked while the cold queue was full; there is room now
          continue;
        }
        order[count++] = slot;
        hot_runnable = hot_runnable || resumable(st);
      } else if (m == Queue::kCold) {
        if (st == SlotState::kParkedMemory) {
          // Resumed, and suspended at memory: memory-bound again. Straight back to hot when
          // it has room and nobody is staged before it.
          if (staging_ == 0 && hot_ < hot_cap_) {
            move(slot, Queue::kHot);
            order[count++] = slot;
            hot_runnable = true;
          } else {
            move(slot, Queue::kStaging);
          }
        } else if (st == SlotState::kRunnable) {
          cold_ready_[cold_ready++] = slot;
        }
      }
    }
    if (staging_ != 0 && hot_ < hot_cap_) {
      const std::uint32_t before = count;
      promote(order.data(), &count);
      hot_runnable = hot_runnable || count != before;
    }
    if (check_cold_ || !hot_runnable) {
      check_cold_ = false;
      rounds_since_check_ = 0;
      for (std::uint32_t k = 0; k < cold_ready; ++k) order[count++] = cold_ready_[k];
    }
    return count;
  }

  void on_finish(std::uint32_t slot) override {
    BRAID_DASSERT(slot < member_.size());
    switch (member_[slot]) {
      case Queue::kHot:
        --hot_;
        if (++hot_done_ >= every_) {
          hot_done_ = 0;
          check_cold_ = true;
        }
        break;
      case Queue::kCold:
        --cold_;
        break;
      case Queue::kStaging:  // never resumed while staged, so it cannot finish there
      case Queue::kNone:
        BRAID_ASSERT(false);
    }
    member_[slot] = Queue::kNone;
  }

 private:
  enum class Queue : std::uint8_t { kNone, kHot, kCold, kStaging };

  // The cold queue for a hot queue of `capacity`: the configured ratio. None in the
  // sequential modes (capacity 1), whose reads are synchronous.
  std::uint32_t cold_for(std::uint32_t capacity) const {
    if (capacity <= 1 || ratio_cold_ == 0) return 0;
    return std::max<std::uint32_t>(1, capacity * ratio_cold_ / ratio_hot_);
  }

  std::uint32_t& count_of(Queue q) {
    switch (q) {
      case Queue::kHot:
        return hot_;
      case Queue::kCold:
        return cold_;
      case Queue::kStaging:
      case Queue::kNone:
        break;
    }
    return staging_;
  }

  void move(std::uint32_t slot, Queue to) {
    const Queue from = member_[slot];
    BRAID_DASSERT(from != Queue::kNone);
    BRAID_DASSERT(from != to);
    --count_of(from);
    ++count_of(to);
    member_[slot] = to;
  }

  // Staged transactions take hot places before any new transaction does. Each promoted one
  // is appended to `order` (at `*count`) when one is given.
  void promote(std::uint32_t* order, std::uint32_t* count) {
    for (std::size_t i = 0; i < member_.size() && staging_ != 0 && hot_ < hot_cap_; ++i) {
      if (member_[i] != Queue::kStaging) continue;
      move(static_cast<std::uint32_t>(i), Queue::kHot);
      if (order != nullptr) order[(*count)++] = static_cast<std::uint32_t>(i);
    }
  }

  const std::uint32_t ratio_cold_;
  const std::uint32_t ratio_hot_;
  const std::uint32_t every_;
  std::uint32_t hot_cap_ = 1;
  std::uint32_t cold_cap_ = 0;
  std::vector<Queue> member_;              // per slot
  std::vector<std::uint32_t> cold_ready_;  // order_round's scratch: runnable cold members
  std::uint32_t hot_ = 0, cold_ = 0, staging_ = 0;
  std::uint32_t hot_done_ = 0;  // hot completions since the cold queue was last looked at
  bool check_cold_ = false;
  static constexpr std::uint32_t kMaxRoundsWithoutCheck = 64;
  std::uint32_t rounds_since_check_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_dual_queue(const ExecOptions& exec, std::uint32_t slots) {
  return std::make_unique<DualQueue>(exec, slots);
}

}  // namespace braid::sched
