// A worker as the cold store's port (engine/cold_store.h): the reads its transactions lead go to
// its ColdReader, which the loop services once per round; the worker parks the transactions
// that wait on them and makes them runnable once their reads are back; and between rounds it
// sweeps for eviction under a budget.
#include "engine/worker.h"

#include "util/assert.h"

namespace braid::engine {

void Worker::submit(ColdLoad* load) {
  BRAID_ASSERT(reader_ != nullptr);
  reader_->submit(load);
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
  if (reader_ != nullptr) reader_->service(true);
}

void Worker::service_cold() {
  // Shared leaf reads of this worker's that another worker's transaction let go last: their
  // buffers are this thread's to give back (ColdStore::take_released).
  if (reader_ != nullptr) reader_->collect_released();
  // Nothing in flight or waiting: nothing to complete (service_log reaped the ring already).
  const bool reading = reader_ != nullptr && reader_->busy();
  if (reading) reader_->service(live_ == waiting_slots_ + parked_io_);
  // A parked slot becomes ready only when a read completes, here or on another thread: with
  // no completion since the last pass there is nothing to find, and the pass (a look at every
  // slot) would cost each round as much as a read's own completion.
  if (parked_io_ != 0) {
    const std::uint64_t done = cold_->completed_reads();
    if (done != woken_at_) {
      woken_at_ = done;
      wake_io_slots();
    }
  }
  if (reading || parked_io_ != 0) {
    // Parked slots may wait on reads other threads lead: any completion is progress.
    cold_watch_.turn(cold_->completed_reads(), [&] {
      return "worker " + std::to_string(index_) + ": " +
             std::to_string(reader_ != nullptr ? reader_->in_flight() : 0) + " reads in flight, " +
             std::to_string(reader_ != nullptr ? reader_->waiting() : 0) + " waiting to issue, " +
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

void Worker::wake_io_slots() {
  const StageScope stage(Stage::kWake);
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
