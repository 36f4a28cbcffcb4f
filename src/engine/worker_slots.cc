// A worker's slots: admission (the policy's target, retries due, the queue or the generator),
// a transaction's launch, one scheduler round, and its finish (commit or abort, the durable
// wait, the requester's answer).
#include "engine/worker.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <utility>

#include "engine/access.h"
#include "util/assert.h"

namespace braid::engine {

bool Worker::admit() {
  const std::uint32_t cap = capacity();
  const std::uint32_t slots = std::min(policy_->slots(cap), options_.slots_per_worker);
  std::uint32_t target = std::min(policy_->admit_target(live_, cap), slots);
  if (durable_) {
    // Backpressure: every open transaction may end up in the ring of commits waiting for the
    // disk, so open at most as many as it has free places (a stalled disk must not overflow it).
    target = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(target, waiters_.size() - waiter_count_));
  }
  bool any = false;
  for (std::uint32_t i = 0; i < slots && live_ < target; ++i) {
    if (open(i)) continue;
    if (!fill(slots_[i])) break;
    any = true;
  }
  return any;
}

bool Worker::take_due_retry(Slot& slot) {
  const auto now = std::chrono::steady_clock::now();
  std::size_t best = retries_.size();
  for (std::size_t i = 0; i < retries_.size(); ++i) {
    if (retries_[i].due <= now &&
        (best == retries_.size() || retries_[i].due < retries_[best].due)) {
      best = i;
    }
  }
  if (best == retries_.size()) return false;
  const RetryWait w = retries_[best];
  retries_[best] = retries_.back();
  retries_.pop_back();
  slot.request = w.request;
  slot.attempts = w.attempts;
  launch(slot, w.request->fn(slot.state.tx));
  return true;
}

bool Worker::fill(Slot& slot) {
  // Retries first: they were admitted before anything still in the queue.
  if (!retries_.empty() && take_due_retry(slot)) return true;
  if (detail::Request* r = queue_.pop(); r != nullptr) {
    slot.request = r;
    slot.attempts = 0;
    launch(slot, r->fn(slot.state.tx));
    return true;
  }
  if (generator_ == nullptr || generator_done_) return false;
  Task<Status> task;
  if (!generator_->next(slot.state.tx, &task)) {
    generator_done_ = true;
    return false;
  }
  BRAID_ASSERT(task.valid());
  slot.request = nullptr;
  ++generator_live_;
  launch(slot, std::move(task));
  return true;
}

void Worker::launch(Slot& slot, Task<Status> task) {
  const auto i = static_cast<std::uint32_t>(&slot - slots_.get());
  slot.state.ctx = db_->txns().begin_at(index_ * options_.slots_per_worker + i);
  slot.state.env.ctx = slot.state.ctx;
  db_->configure(slot.state.ctx, slot.request != nullptr ? slot.request->txn
                                 : slot.state.configured ? slot.state.txn
                                                         : TxnOptions{});
  slot.state.configured = false;
  slot.state.touched = false;
  slot.state.conflicted = false;
  slot.state.ops = 0;
  slot.state.wait_cts = 0;
  slot.state.wait_failed = false;
  slot.state.failure = Status::ok();
  slot.state.io_waits = 0;
  slot.state.resume = task.handle();
  sites_[i] = sched::kSiteStart;
  slot.task = std::move(task);
  set_state(i, sched::SlotState::kRunnable);
  if (slot.request == nullptr) {
    slot.started = finish_now_fresh_ ? finish_now_ : std::chrono::steady_clock::now();
  }
  ++live_;
  policy_->on_launch(i);
}

void Worker::round() {
  check_slots();
  const std::uint32_t n = options_.slots_per_worker;
  std::uint32_t count = policy_->order_round(order_, states_, sites_);
  bool ordered = count != sched::Policy::kSlotOrder;
  if (!ordered) count = n;
  BRAID_DASSERT(count <= n);
  if (exec_.shuffle_resume) {  // the debug switch shuffles whatever order the policy chose
    if (!ordered) std::iota(order_.begin(), order_.end(), 0u);
    for (std::uint32_t i = count; i > 1; --i) {
      std::swap(order_[i - 1], order_[shuffle_rng_.uniform(i)]);
    }
    ordered = true;
  }
  std::uint32_t seen = 0;
  const std::uint32_t live = live_;
  for (std::uint32_t k = 0; k < count && seen < live; ++k) {
    const std::uint32_t i = ordered ? order_[k] : k;
    if (!open(i)) continue;
    ++seen;
    if (!sched::resumable(states_[i])) {
      // Waits for the disk (service_log and service_cold wake it), unless the policy lets
      // the transaction look at its read itself.
      if (states_[i] != sched::SlotState::kParkedIo || !resume_parked_io_) continue;
      unpark_io(i);
      ++io_checks_;
    }
    Slot& slot = slots_[i];
    ++resumes_;
    finish_now_fresh_ = false;
    slot.state.resume.resume();
    if (slot.task.done()) {
      finish(slot);
    } else if (states_[i] == sched::SlotState::kRunnable) {
      set_state(i, sched::SlotState::kParkedMemory);
    }
  }
}

void Worker::check_slots() const {
#if defined(BRAID_DEBUG_CHECKS)
  std::uint32_t open_slots = 0, durable_waits = 0;
  for (std::uint32_t i = 0; i < options_.slots_per_worker; ++i) {
    open_slots += open(i) ? 1 : 0;
    durable_waits += states_[i] == sched::SlotState::kWaitingDurable ? 1 : 0;
    BRAID_ASSERT((states_[i] == sched::SlotState::kWaitingDurable) ==
                 (slots_[i].state.wait_cts != 0));
  }
  BRAID_ASSERT(open_slots == live_);
  BRAID_ASSERT(durable_waits == waiting_slots_);
  std::uint32_t io = 0;
  for (std::uint32_t i = 0; i < options_.slots_per_worker; ++i) {
    io += states_[i] == sched::SlotState::kParkedIo ? 1 : 0;
    BRAID_ASSERT((states_[i] == sched::SlotState::kParkedIo) == (slots_[i].state.io_waits != 0));
  }
  BRAID_ASSERT(io == parked_io_);
#endif
}

void Worker::finish(Slot& slot) {
  Status s = slot.task.take_result();
  slot.task.reset();  // frees the transaction's frame (and nothing else is left inside it)
  detail::TxState& st = slot.state;
  std::uint64_t cts = 0;
  std::uint64_t read_wait = 0;
  if (st.ctx != nullptr) {
    const std::uint64_t snapshot = st.ctx->snapshot;
    if (s.is_ok() && !st.failure.is_ok()) {
      abort(st.ctx);  // a write failed: all or nothing (see Database's "Failed writes")
      s = detail::failed_commit(st.failure);
    } else if (s.is_ok()) {
      s = commit(st.ctx, &cts);
      if (s.is_ok() && cts == 0) read_wait = read_only_wait(snapshot);
    } else {
      abort(st.ctx);
    }
    st.ctx = nullptr;
  } else if (st.conflicted && s.is_ok()) {
    s = Status(Code::kConflict);  // the body ignored a Conflict; the transaction did not commit
  }
  st.configured = false;  // a Tx::configure after the body ended configures nothing
  ++transactions_;
  if (exec_.mode == ExecMode::kAuto) {
    tuner_.on_finished(s.code() != Code::kConflict, st.ops);
    op_mode_ = tuner_.batch() == 1 ? ExecMode::kSequential : ExecMode::kInterleaved;
  }
  --live_;
  const auto index = static_cast<std::uint32_t>(&slot - slots_.get());
  set_state(index, sched::SlotState::kFree);
  policy_->on_finish(index);
  const auto now = std::chrono::steady_clock::now();
  finish_now_ = now;
  finish_now_fresh_ = true;
  if (slot.request != nullptr) {
    detail::Request* r = slot.request;
    if (s == Code::kConflict && slot.attempts < r->retries) {
      ++slot.attempts;
      if (retries_.size() == retries_.capacity()) {
        launch(slot, r->fn(st.tx));  // the backoff list is full: run again at once
        return;
      }
      // Exponential backoff with jitter, 1 us doubling to kRetryBackoffCapUs: long enough,
      // after a few attempts, to outlast a preempted writer's time slice.
      retry_rng_ ^= retry_rng_ << 13;
      retry_rng_ ^= retry_rng_ >> 7;
      retry_rng_ ^= retry_rng_ << 17;
      const std::uint64_t cap = std::min<std::uint64_t>(
          std::uint64_t{1} << std::min(slot.attempts, 10u), kRetryBackoffCapUs);
      const std::uint64_t us = cap / 2 + retry_rng_ % (cap / 2 + 1);
      retries_.push_back({r, slot.attempts, now + std::chrono::microseconds(us)});
      slot.request = nullptr;
      return;
    }
    slot.request = nullptr;
    r->cts = cts;
    if (s.is_ok() && cts != 0 && durable_) {
      // The slot is free for the next transaction; the acknowledgement waits in the ring.
      push_waiter({cts, r, now, now});
      return;
    }
    if (read_wait != 0) {
      push_waiter({read_wait, r, now, now});
      return;
    }
    complete(r, std::move(s), now, now, false, now);
    return;
  }
  if (s.is_ok() && cts != 0 && durable_) {
    push_waiter({cts, nullptr, slot.started, now});
    return;
  }
  if (read_wait != 0) {
    push_waiter({read_wait, nullptr, slot.started, now});
    return;
  }
  complete(nullptr, std::move(s), slot.started, now, cts != 0 && log_ != nullptr, now);
}

void Worker::complete(detail::Request* r, Status s, std::chrono::steady_clock::time_point started,
                      std::chrono::steady_clock::time_point committed, bool report_commit,
                      std::chrono::steady_clock::time_point now) {
  if (r != nullptr) {
    r->status = std::move(s);
    r->done.store(1, std::memory_order_release);
    r->done.notify_all();
    r->release();
    return;
  }
  --generator_live_;
  if (report_commit) {
    generator_->committed(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - committed).count()));
  }
  generator_->finished(
      s, static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(now - started).count()));
}

}  // namespace braid::engine
