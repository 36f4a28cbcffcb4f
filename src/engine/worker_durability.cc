// A worker's side of durability (Durability's acknowledgement rule): it drives its log and
// reaps its I/O ring once per loop, acknowledges the commits the disk caught up with (the
// waiter ring, and slots parked in an explicit durable commit), fails them when the engine
// halts, and on worker 0 advances checkpoints.
#include "engine/worker.h"

#include <algorithm>
#include <string>
#include <thread>

#include "util/assert.h"

namespace braid::engine {

void Worker::push_waiter(const Waiter& w) {
  BRAID_ASSERT(waiter_count_ < waiters_.size());  // admit() stops at a full ring
  waiters_[(waiter_head_ + waiter_count_++) % waiters_.size()] = w;
  ++commit_waits_;
}

void Worker::wait_for_disk() {
  if (flusher_mode_) {  // the flusher drives the log: let it, and look again
    held_->unlock();
    std::this_thread::yield();
    held_->lock();
    return;
  }
  // Our own block in flight: block on it. Otherwise another log holds the durable clock back;
  // its worker flushes it, so give the core away meanwhile.
  if (log_->in_flight()) {
    (void)log_->poll(true, false);  // a failure is picked up by the next service_log
  } else {
    std::this_thread::yield();
  }
}

void Worker::acknowledge(std::uint64_t durable) {
  while (waiter_count_ != 0) {
    Waiter& w = waiters_[waiter_head_];
    if (w.cts > durable) break;
    const Waiter done = w;
    waiter_head_ = (waiter_head_ + 1) % waiters_.size();
    --waiter_count_;
    complete(done.request, Status::ok(), done.started, done.committed, true,
             std::chrono::steady_clock::now());
  }
  if (waiting_slots_ == 0) return;
  for (std::uint32_t i = 0; i < options_.slots_per_worker; ++i) {
    detail::TxState& st = slots_[i].state;
    if (states_[i] == sched::SlotState::kWaitingDurable && st.wait_cts <= durable) {
      st.wait_cts = 0;
      set_state(i, sched::SlotState::kRunnable);
      --waiting_slots_;
    }
  }
}

void Worker::fail_waiters(const Status& why) {
  while (waiter_count_ != 0) {
    const Waiter done = waiters_[waiter_head_];
    waiter_head_ = (waiter_head_ + 1) % waiters_.size();
    --waiter_count_;
    complete(done.request, Status(why.code(), why.message()), done.started, done.committed, false,
             std::chrono::steady_clock::now());
  }
  for (std::uint32_t i = 0; i < options_.slots_per_worker && waiting_slots_ != 0; ++i) {
    detail::TxState& st = slots_[i].state;
    if (states_[i] == sched::SlotState::kWaitingDurable) {
      st.wait_cts = 0;
      st.wait_failed = true;
      set_state(i, sched::SlotState::kRunnable);
      --waiting_slots_;
    }
  }
}

void Worker::service_log(std::uint32_t runnable) {
  // One pass over the ring: the completions of the log's and the checkpoint's requests go to
  // their channels, where the log and the checkpoint pick them up below.
  // With a flusher thread, it reaps the ring and submits the log (flusher_pass).
  if (ring_ != nullptr && !flusher_mode_) (void)ring_->reap();
  if (!durability_->halted() && !flusher_mode_) {
    if (Status s = log_->poll(false, runnable == 0); !s.is_ok()) durability_->halt(s);
  }
  if (durability_->halted()) {
    // Halted by another log's failure (an application thread's, or the one worker 0 drives):
    // this log's block in flight still completes, or the worker would never be idle again.
    if (!flusher_mode_) log_->reap_after_halt();
    if (waiter_count_ != 0 || waiting_slots_ != 0) fail_waiters(durability_->halt_status());
    if (index_ == 0) checkpointing_ = durability_->checkpoint_step(0);
    return;
  }
  durability_->retire_segments(index_);
  if (index_ == 0) checkpointing_ = durability_->checkpoint_step(0);
  if (waiter_count_ == 0 && waiting_slots_ == 0) {
    durable_watch_.reset();
    return;
  }
  const std::uint64_t durable = durability_->durable_clock();
  acknowledge(durable);
  if (waiter_count_ == 0 && waiting_slots_ == 0) {
    durable_watch_.reset();
    return;
  }
  durable_watch_.turn(durability_->durable_progress(durable), [&] {
    return "worker " + std::to_string(index_) + ": " + std::to_string(waiter_count_) +
           " commits and " + std::to_string(waiting_slots_) + " parked slots " +
           durability_->describe_durable(oldest_waiting_cts());
  });
}

std::uint64_t Worker::oldest_waiting_cts() const {
  std::uint64_t oldest = waiter_count_ != 0 ? waiters_[waiter_head_].cts : ~std::uint64_t{0};
  for (std::uint32_t i = 0; i < options_.slots_per_worker && waiting_slots_ != 0; ++i) {
    if (states_[i] == sched::SlotState::kWaitingDurable) {
      oldest = std::min(oldest, slots_[i].state.wait_cts);
    }
  }
  return oldest;
}

}  // namespace braid::engine
