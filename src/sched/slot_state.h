// The states of a worker's transaction slot, and the transitions between them. Every change of
// state goes through transition(), which asserts that the edge exists: a slot is never resumed
// while it waits for durability, and never freed while a commit or a read waits in it.
//
//   kFree --launch--> kRunnable --resume--> kParkedMemory --resume--> ... --done--> kFree
//   kRunnable/kParkedMemory --durable commit--> kWaitingDurable --disk caught up--> kRunnable
//   kRunnable/kParkedMemory --cold read issued--> kParkedIo --read completed--> kRunnable
//   kParkedIo --a policy that resumes parked reads (batch) asks--> kRunnable
//
// kParkedIo is entered by the cold store's reads: the storage-aware policies check
// the slot's I/O status and resume the transaction only once the read is back (MosaicDB §4.2);
// `batch` knows nothing of I/O and resumes it to let the transaction look (sched/policy.h,
// resumes_parked_io), and the transaction parks again while its read is pending.
#pragma once

#include <cstdint>

#include "util/assert.h"
#include "util/enum_names.h"

namespace braid::sched {

enum class SlotState : std::uint8_t {
  kFree,            // no transaction
  kRunnable,        // launched or woken, not yet resumed
  kParkedMemory,    // suspended at a prefetch (or a forced yield): resume in the next round
  kParkedIo,        // waiting for a storage read: not resumable until it completes
  kWaitingDurable,  // an explicit commit waiting for the durable clock: not resumable
};

inline constexpr const char* kSlotStateNames[] = {"free", "runnable", "parked-memory", "parked-io",
                                                  "waiting-durable"};
static_assert(util::names_every(kSlotStateNames, SlotState::kWaitingDurable));

constexpr const char* slot_state_name(SlotState s) {
  return util::enum_name(s, kSlotStateNames, "?");
}

// A slot the scheduler may resume now.
constexpr bool resumable(SlotState s) {
  return s == SlotState::kRunnable || s == SlotState::kParkedMemory;
}

// A slot waiting for something outside the worker (the disk): not resumable, and not free.
constexpr bool waiting(SlotState s) {
  return s == SlotState::kParkedIo || s == SlotState::kWaitingDurable;
}

constexpr bool valid_transition(SlotState from, SlotState to) {
  switch (to) {
    case SlotState::kRunnable:  // launched into a free slot, or woken from a wait
      return from == SlotState::kFree || from == SlotState::kParkedIo ||
             from == SlotState::kWaitingDurable;
    // Every other state is entered only by the transaction that ran last: it finished (or was
    // never started), suspended on memory, issued a read, or committed durably.
    case SlotState::kFree:
    case SlotState::kParkedMemory:
    case SlotState::kParkedIo:
    case SlotState::kWaitingDurable:
      return resumable(from);
  }
  return false;
}

// Moves *state to `to`; the edge must exist (debug tier: this is on every resume).
inline void transition(SlotState* state, SlotState to) {
  BRAID_DASSERT(valid_transition(*state, to));
  *state = to;
}

}  // namespace braid::sched
