// A worker's scheduling policy (docs/internals/execution.md): which transactions it admits into
// free slots, in which order it resumes the open ones, and what it does when a slot starts or stops
// waiting or finishes. The worker loop (engine/worker.cc) owns the slots and their states and asks
// the policy; a policy owns no transaction and never resumes one.
//
// Adding a policy: a file in src/sched/ named after it that defines a Policy and its factory,
// a value of braid::SchedulerPolicy, and a line in registry.cc. Nothing else changes.
//
// Cost: order_round() is one virtual call per round, on_launch() and on_finish() one per
// transaction; on_wait() only when a slot leaves or re-enters the resumable states (disk or
// durability waits), never on a memory suspension, which is every operation's.
#pragma once

#include <braid/options.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "sched/slot_state.h"

namespace braid::sched {

class Policy {
 public:
  virtual ~Policy() = default;

  virtual SchedulerPolicy kind() const = 0;

  // How many slots (0..n-1) the policy may fill when the mode opens `capacity` transactions
  // at once (the batch size; 1 in the sequential modes). The worker caps it at its slots.
  virtual std::uint32_t slots(std::uint32_t capacity) const { return capacity; }

  // Admission: how many transactions may be open once the worker has filled free slots, given
  // `live` open now and the mode's `capacity`. A value at or below `live` admits nothing.
  virtual std::uint32_t admit_target(std::uint32_t live, std::uint32_t capacity) = 0;

  // Slot `slot` received a new transaction.
  virtual void on_launch(std::uint32_t slot) { (void)slot; }

  // Which slots run this round: writes them to `order`, in order, and answers how many, or
  // kSlotOrder for every slot in slot order (round-robin over the open slots). The worker
  // skips slots that are free or not resumable, so `order` may name any slot; a slot left out
  // is not resumed this round.
  static constexpr std::uint32_t kSlotOrder = ~std::uint32_t{0};
  // `sites`: where each suspended slot resumes (sched/site.h); kept current only for a policy
  // that answers uses_sites().
  virtual bool uses_sites() const { return false; }
  virtual std::uint32_t order_round(std::span<std::uint32_t> order,
                                    std::span<const SlotState> states,
                                    std::span<const std::uint32_t> sites) {
    (void)order;
    (void)states;
    (void)sites;
    return kSlotOrder;
  }

  // Whether the worker resumes a slot parked on a storage read so that the transaction itself
  // looks whether the read is back (and parks again if not): what a scheduler that knows
  // nothing of I/O does (MosaicDB §4.2's starting point). Otherwise such a slot is skipped
  // until the worker saw its read complete.
  virtual bool resumes_parked_io() const { return false; }

  // Slot `slot` entered `now` from a resumable state (kParkedIo, kWaitingDurable), or returned
  // to kRunnable from one.
  virtual void on_wait(std::uint32_t slot, SlotState now) {
    (void)slot;
    (void)now;
  }

  // Slot `slot`'s transaction ended (committed, aborted, or failed); the slot is free.
  virtual void on_finish(std::uint32_t slot) { (void)slot; }

  // The most rounds in a row a resumable slot the policy was offered went unresumed (0 for
  // the policies that resume every resumable candidate every round; `team` bounds it by
  // ExecOptions::team_wait).
  virtual std::uint32_t max_passed_over() const { return 0; }
  // Teams resumed so far and the transactions resumed in them (`team`; 0 otherwise).
  virtual std::uint64_t teams() const { return 0; }
  virtual std::uint64_t team_members() const { return 0; }
};

// The registry (registry.cc): every policy by kind and by the name the benchmarks and the
// documentation use.
struct PolicyInfo {
  SchedulerPolicy kind;
  std::string_view name;
  std::unique_ptr<Policy> (*make)(const ExecOptions& exec, std::uint32_t slots);
};
std::span<const PolicyInfo> policies();
const PolicyInfo& policy_info(SchedulerPolicy kind);
// Null when no policy has that name.
const PolicyInfo* find_policy(std::string_view name);

// The factories, one per policy file. `slots`: the worker's slot count (Options::
// slots_per_worker), which every slot the policy hears of is below and `states` spans: a
// policy sizes its per-slot arrays here, once, never when a slot launches or a round runs.
std::unique_ptr<Policy> make_batch(const ExecOptions& exec, std::uint32_t slots);
std::unique_ptr<Policy> make_pipeline(const ExecOptions& exec, std::uint32_t slots);
std::unique_ptr<Policy> make_storage_batch(const ExecOptions& exec, std::uint32_t slots);
std::unique_ptr<Policy> make_dual_queue(const ExecOptions& exec, std::uint32_t slots);
std::unique_ptr<Policy> make_team(const ExecOptions& exec, std::uint32_t slots);

}  // namespace braid::sched
