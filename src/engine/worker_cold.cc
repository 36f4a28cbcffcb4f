// A worker as the cold store's port (engine/cold_store.h): the reads its transactions lead go
// through its ring's kColdRead channel, at most 64 in flight; the loop completes them and makes
// the slots parked on them runnable; and between rounds it sweeps for eviction under a budget.
#include "engine/worker.h"

#include <cerrno>

#include "util/assert.h"

namespace braid::engine {

// ---- The cold store
// ------------------------------------------------------------------------------

void Worker::submit(ColdLoad* load) {
  BRAID_ASSERT(cold_queue_ != nullptr);
  cold_backlog_.push_back(load);
  issue_cold();
}

void Worker::park(detail::TxState* tx, ColdLoad* load) {
  BRAID_ASSERT(tx->io_waits < detail::TxState::kMaxIoWaits);
  tx->io_wait[tx->io_waits++] = load;
  if (states_[tx->slot] != sched::SlotState::kParkedIo) {
    set_state(tx->slot, sched::SlotState::kParkedIo);
    ++parked_io_;
  }
}

void Worker::poll() {
  // The channel's poll reaps the ring itself when nothing of ours is buffered yet.
  if (cold_queue_ == nullptr) return;
  storage::IoCompletion done[16];
  for (;;) {
    const std::size_t n = cold_queue_->poll(done, 16, false);
    for (std::size_t k = 0; k < n; ++k) {
      // The tag names the load and its generation; a load is reused only after its read
      // completed, so a tag that does not match is a bug, not a late completion.
      ColdLoad* l = cold_->load_at(static_cast<std::uint32_t>(done[k].user >> 32));
      BRAID_ASSERT(l->generation == static_cast<std::uint32_t>(done[k].user));
      cold_->complete(l, done[k].result);
    }
    if (n < 16) break;
  }
}

void Worker::service_cold() {
  // Nothing in flight or waiting: nothing to complete (service_log reaped the ring already).
  const bool reading =
      cold_queue_ != nullptr && (cold_queue_->in_flight() != 0 || !cold_backlog_.empty());
  if (reading) {
    poll();
    issue_cold();
  }
  if (parked_io_ != 0) wake_io_slots();
  if (reading || parked_io_ != 0) {
    // Parked slots may wait on reads other threads lead: any completion is progress.
    cold_watch_.turn(cold_->completed_reads(), [&] {
      return "worker " + std::to_string(index_) + ": " +
             std::to_string(cold_queue_ != nullptr ? cold_queue_->in_flight() : 0) +
             " reads in flight, " + std::to_string(cold_backlog_.size()) + " waiting to issue, " +
             std::to_string(parked_io_) + " transactions parked on reads; " +
             std::to_string(cold_->completed_reads()) + " reads completed in all";
    });
  } else {
    cold_watch_.reset();
  }
  if (cold_->budget() == 0) return;
  if (cold_->over_budget()) {
    mvcc::TxnContext* ctx = db_->txns().begin_at(evict_ctx_);
    (void)cold_->sweep(ctx, 256);
    // Frees what earlier sweeps evicted once the horizon passed it.
    db_->finish_txn(ctx, index_);
  } else if (mvcc::TxnContext& ctx = db_->txns().at(evict_ctx_); !ctx.limbo.empty()) {
    // Under budget no sweep runs to free the last one's versions: without this they stayed
    // allocated (and counted live) until memory next went over budget. A release may scan
    // every context's pin: once in 64 rounds while transactions run, every time when none do.
    if (live_ == 0 || (++limbo_polls_ & 63) == 0) db_->txns().release_limbo(&ctx);
  }
}

void Worker::issue_cold() {
  // Bounded in flight: what does not fit waits here (each load is issued once).
  constexpr std::uint32_t kMaxColdInFlight = 64;
  std::size_t issued = 0;
  for (; issued < cold_backlog_.size() && cold_queue_->in_flight() < kMaxColdInFlight; ++issued) {
    ColdLoad* l = cold_backlog_[issued];
    storage::IoRequest r;
    if (!cold_->prepare(l, &r)) continue;  // failed and completed
    r.user = (std::uint64_t{l->index} << 32) | l->generation;
    if (Status s = cold_queue_->submit(r); !s.is_ok()) {
      // A full ring (the log's requests share it) is not the read's failure: it waits for
      // our reads in flight to make room. With none in flight the ring refuses for good.
      if (cold_queue_->in_flight() > 0) break;
      cold_->complete(l, -EIO);
    }
  }
  cold_backlog_.erase(cold_backlog_.begin(),
                      cold_backlog_.begin() + static_cast<std::ptrdiff_t>(issued));
}

void Worker::wake_io_slots() {
  for (std::uint32_t i = 0; i < options_.slots_per_worker && parked_io_ != 0; ++i) {
    if (states_[i] != sched::SlotState::kParkedIo) continue;
    detail::TxState& st = slots_[i].state;
    bool ready = false;
    for (std::uint32_t k = 0; k < st.io_waits && !ready; ++k) ready = !st.io_wait[k]->pending();
    if (!ready) continue;
    unpark_io(i);
  }
}

void Worker::unpark_io(std::uint32_t i) {
  BRAID_DASSERT(states_[i] == sched::SlotState::kParkedIo);
  slots_[i].state.io_waits = 0;
  set_state(i, sched::SlotState::kRunnable);
  --parked_io_;
}

}  // namespace braid::engine
