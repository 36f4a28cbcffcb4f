// Workers: one thread per core, each interleaving up to slots_per_worker transactions as
// coroutines (docs/internals/execution.md).
//
// A worker owns its transaction slots (each with a pre-allocated transaction context, so
// starting a transaction searches nothing), their states (sched/slot_state.h), its frame
// allocator, its submit queue and its log. Its loop (worker.cc) admits, resumes and finishes
// transactions as its scheduling policy (sched/policy.h: batch, pipeline) says. Reclamation
// epochs are per transaction (each context pins the clock), not per batch, so pipelining is
// safe. ExecMode::kAuto is resolved per transaction by the worker's AutoTuner
// (sched/auto_tuner.h).
#pragma once

#include <braid/tx.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/cold_store.h"
#include "engine/database_impl.h"
#include "engine/durability.h"
#include "engine/op_env.h"
#include "engine/stage_profile.h"
#include "engine/tx_state.h"
#include "runtime/frame_allocator.h"
#include "runtime/mpsc_queue.h"
#include "sched/auto_tuner.h"
#include "sched/policy.h"
#include "sched/site.h"
#include "sched/slot_state.h"
#include "util/random.h"
#include "util/stall.h"

namespace braid::engine {

class Worker final : public ColdPort {
 public:
  Worker(DatabaseImpl* db, std::uint32_t index, const Options& options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  // Lets queued and running transactions finish, then joins the thread.
  void stop();
  // Wakes the thread if it sleeps (work arrived by another path than the queue).
  void wake() { ring(); }
  // DurabilityOptions::flusher_thread: one pass of the flusher over this worker's log (reap its
  // ring, submit what the group-commit policy says). Takes the log from the worker at its next
  // loop (log_mutex_). True while the log has a block in flight or records buffered.
  bool flusher_pass();
  // Wakes the worker if it sleeps, after the caller published work its idle check reads.
  // Pairs with the fence after the worker's sleeping_ store and its re-check: either it sees
  // the work or we see it asleep and wake it.
  void wake_if_sleeping() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst)) ring();
  }

  // Any thread. False when the queue is full.
  bool enqueue(detail::Request* r);
  // Hands the worker a generator to drain with `exec`; when done it decrements *remaining.
  void post_run(TxnGenerator* generator, const ExecOptions& exec,
                std::atomic<std::uint32_t>* remaining);
  void add_stats(ExecStats* out) const;
  // Any thread: whether the worker waits for its doorbell with nothing to do (WorkerPool::settle).
  bool asleep() const { return asleep_.load(std::memory_order_seq_cst); }

  // ---- Worker thread only ----
  // The resolved mode of the next operation (kAuto resolved to kSequential or kInterleaved).
  ExecMode op_mode() const { return op_mode_; }
  bool force_suspend() const { return exec_.force_suspend; }
  bool flat_storage() const { return exec_.storage_path == StoragePath::kFlattened; }
  // An operation begins: its resume site (under a policy that reads sites) and kAuto's work
  // count (a multi_get is one operation per key).
  void note_op(detail::TxState* tx, const detail::OpState& op) {
    // Only a policy that reads sites pays for naming them (the suspensions still count in
    // runtime::Miss: an increment, cheaper than a test there).
    if (sites_wanted_) {
      *tx->site = sched::op_site(static_cast<std::uint32_t>(op.kind),
                                 op.kind == detail::OpState::Kind::kIndexScan
                                     ? static_cast<const void*>(op.index)
                                     : static_cast<const void*>(op.table));
    }
    if (exec_.mode != ExecMode::kAuto) return;
    const auto work = static_cast<std::uint32_t>(
        op.kind == detail::OpState::Kind::kMultiGet ? std::max<std::size_t>(op.keys.size(), 1) : 1);
    tx->ops += work;
    tuner_.on_ops(work);
  }
  std::uint64_t* suspend_counter() { return &suspends_; }
  std::uint32_t index() const { return index_; }
  // The commit path of coroutine transactions on this worker.
  Status commit(mvcc::TxnContext* ctx, std::uint64_t* cts) { return db_->commit(ctx, index_, cts); }
  void abort(mvcc::TxnContext* ctx) { db_->abort(ctx, index_); }
  bool waits_for_durability() const { return durable_; }
  // An explicit durable commit: the slot waits, parked, until the disk has `cts`.
  void park_commit(detail::TxState* tx, std::uint64_t cts) {
    if (!durable_) return;
    BRAID_DASSERT(cts != 0);
    tx->wait_cts = cts;
    set_state(tx->slot, sched::SlotState::kWaitingDurable);
    ++waiting_slots_;
    ++commit_waits_;
  }
  // ---- The cold store's port (engine/cold_store.h) ----
  // Issues the leader's read of `load` on this worker's ring (or queues it while the ring is
  // full); a read that cannot be issued fails the load. Nothing else: it runs inside the
  // transaction that missed.
  void submit(ColdLoad* load) override;
  // Parks the slot until `load` (or another load it waits on) is back.
  void park(detail::TxState* tx, ColdLoad* load) override;
  // Completes the cold reads that came back (also called by a synchronous miss that waits on a
  // load this worker leads).
  void poll() override;
  bool has_ring() const override { return reader_ != nullptr; }
  void plug() override {
    if (reader_ != nullptr) reader_->plug();
  }
  void unplug() override {
    if (reader_ != nullptr) reader_->unplug();
  }
  ColdLoad* read_extent(std::uint32_t segment, std::uint64_t start, std::uint32_t len,
                        bool ahead) override {
    BRAID_ASSERT(reader_ != nullptr);
    return reader_->read_extent(segment, start, len, ahead);
  }
  void flush_extents() override {
    BRAID_ASSERT(reader_ != nullptr);
    reader_->flush_extents();
  }
  void release_extent(ColdLoad* extent) override {
    BRAID_ASSERT(reader_ != nullptr);
    reader_->release_extent(extent);
  }
  ColdLoad* read_shared(std::uint32_t segment, std::uint64_t start, std::uint32_t len) override {
    BRAID_ASSERT(reader_ != nullptr);
    return reader_->read_shared(segment, start, len);
  }
  void release_shared(ColdLoad* extent) override {
    BRAID_ASSERT(reader_ != nullptr);
    reader_->release_shared(extent);
  }
  // The worker whose thread this is (null on other threads).
  static Worker* current();
  const DatabaseImpl* db() const { return db_; }

  // A read-only commit in a durable database waits until its snapshot is durable: it may have
  // read versions whose commits a crash would still lose (usually they are on disk already).
  // 0: no wait needed, else the timestamp to wait for.
  std::uint64_t read_only_wait(std::uint64_t snapshot) const {
    if (!durable_ || log_ == nullptr) return 0;
    return snapshot > durability_->durable_clock() ? snapshot : 0;
  }

 private:
  struct Slot {
    detail::TxState state;
    Task<Status> task;
    detail::Request* request = nullptr;  // null: from the generator
    std::uint32_t attempts = 0;
    std::chrono::steady_clock::time_point started;
  };

  bool open(std::uint32_t slot) const { return states_[slot] != sched::SlotState::kFree; }
  // Every change of a slot's state: the edge is checked, and the policy hears of the waits
  // (not of memory suspensions, which are every operation's).
  void set_state(std::uint32_t slot, sched::SlotState to) {
    const sched::SlotState from = states_[slot];
    sched::transition(&states_[slot], to);
    if (sched::waiting(from) || sched::waiting(to)) policy_->on_wait(slot, to);
  }
  // Debug tier: the counters agree with the slot states.
  void check_slots() const;

  void main();
  // Before sleeping: reclamation queued in this worker's slot contexts and in free shared ones.
  void reclaim_while_idle();
  void take_posted_run();
  void apply_exec(const ExecOptions& exec);
  std::uint32_t capacity() const;
  bool admit();
  bool fill(Slot& slot);
  void launch(Slot& slot, Task<Status> task);
  void round();
  void finish(Slot& slot);
  bool idle() const;
  void ring();
  void publish_stats();
  // Durability: drives this worker's log, acknowledges commits the disk caught up with, and
  // (worker 0) advances checkpoints. `runnable`: slots the scheduler could resume now.
  void service_log(std::uint32_t runnable);
  void acknowledge(std::uint64_t durable);
  // Nothing to run but commits waiting for the disk.
  void wait_for_disk();
  void fail_waiters(const Status& why);
  // `now`: the caller's reading of the clock (finish's own when nothing waited: a clock read is
  // a noticeable share of an in-cache transaction).
  void complete(detail::Request* request, Status s, std::chrono::steady_clock::time_point started,
                std::chrono::steady_clock::time_point committed, bool waited,
                std::chrono::steady_clock::time_point now);

  // A committed transaction waiting for durability outside its slot (the slot is free again).
  struct Waiter {
    std::uint64_t cts;
    detail::Request* request;  // null: from the generator
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point committed;
  };
  void push_waiter(const Waiter& w);

  DatabaseImpl* db_;
  const std::uint32_t index_;
  const Options options_;
  std::unique_ptr<Slot[]> slots_;
  std::vector<sched::SlotState> states_;  // per slot
  std::uint32_t live_ = 0;                // slots not kFree
  runtime::FrameAllocator frames_;
  runtime::BoundedQueue<detail::Request> queue_;
  std::thread thread_;

  // Execution options in force and what they resolve to.
  ExecOptions exec_;
  ExecMode op_mode_ = ExecMode::kSequential;
  std::unique_ptr<sched::Policy> policy_;
  sched::AutoTuner tuner_;
  std::uint32_t last_auto_choice_ = 0;  // the tuner's choice when the last posted run ended
  util::Rng shuffle_rng_{1};
  std::vector<std::uint32_t> order_;
  ExecOptions policy_exec_;           // what policy_ was made from
  std::vector<std::uint32_t> sites_;  // per slot: where it resumes (sched/site.h)
  bool sites_wanted_ = false;         // policy_->uses_sites(), cached for note_op

  // DurabilityOptions::flusher_thread: the worker holds log_mutex_ while it runs (its log and
  // ring are touched all over a round: commits, ticks, cold reads, checkpoints) and lends it
  // to the flusher at the top of a loop when flusher_wants_ is set, and while it sleeps.
  bool flusher_mode_ = false;
  std::mutex log_mutex_;
  std::atomic<bool> flusher_wants_{false};
  void lend_log(std::unique_lock<std::mutex>* held);
  std::unique_lock<std::mutex>* held_ = nullptr;  // the worker thread's lock, while it runs

  // Durability (null log: an in-memory database).
  Durability* durability_ = nullptr;
  storage::LogWriter* log_ = nullptr;
  storage::IoRing* ring_ = nullptr;  // this worker's I/O ring: reaped once per loop
  bool durable_ = false;
  // Submitted transactions that lost a conflict and will run again (SubmitOptions::
  // conflict_retries) once their backoff passed. Re-running at once would meet the same
  // uncommitted write again while its writer is suspended in another slot or preempted on
  // another core, and use up every retry in microseconds (seen: 100 retries exhausted with 2
  // workers and 3 application threads on 2 cores). The slot goes to other work meanwhile.
  struct RetryWait {
    detail::Request* request;
    std::uint32_t attempts;
    std::chrono::steady_clock::time_point due;
  };
  static constexpr std::uint32_t kRetryBackoffCapUs = 1000;
  std::vector<RetryWait> retries_;  // at most slots_per_worker + submit_queue_depth
  std::uint64_t retry_rng_ = 0;
  // A due retry into `slot`, earliest first; false when none is due.
  bool take_due_retry(Slot& slot);
  std::vector<Waiter> waiters_;  // ring of max_commit_waiters, in timestamp order
  std::size_t waiter_head_ = 0;
  std::size_t waiter_count_ = 0;
  std::uint32_t waiting_slots_ = 0;  // slots parked in an explicit durable commit
  // Commits waiting for the durable clock, and reads in flight or parked on: each watched
  // for progress (Options::stall_timeout_ms) while there are any.
  util::StallWatch durable_watch_;
  util::StallWatch cold_watch_;
  // The oldest commit timestamp a waiter or parked slot waits for (a stall report's target).
  std::uint64_t oldest_waiting_cts() const;
  bool checkpointing_ = false;
  std::uint64_t commit_waits_ = 0;
  // The cold store, and this worker's reads (through the ring's kColdRead channel; null
  // without a ring: then every read is synchronous).
  ColdStore* cold_ = nullptr;
  std::unique_ptr<ColdReader> reader_;
  std::uint32_t parked_io_ = 0;                 // slots in kParkedIo
  std::uint64_t woken_at_ = ~std::uint64_t{0};  // completed_reads() at the last wake pass
  std::uint32_t evict_ctx_ = 0;                 // DatabaseImpl::eviction_context of this worker
  std::uint32_t limbo_polls_ = 0;               // service_cold's calls under budget with a limbo
  // Each loop: completes returned reads, issues waiting ones, wakes slots, sweeps.
  void service_cold();
  void wake_io_slots();
  // kParkedIo -> kRunnable: the read is back, or the policy resumes the slot to look.
  void unpark_io(std::uint32_t slot);
  bool resume_parked_io_ = false;  // the policy's resumes_parked_io()
  std::uint64_t io_checks_ = 0;    // resumes of slots whose read may still be pending

  // The posted run (written by the poster before `run_posted_` is set).
  TxnGenerator* posted_generator_ = nullptr;
  ExecOptions posted_exec_;
  std::atomic<std::uint32_t>* posted_remaining_ = nullptr;
  std::atomic<bool> run_posted_{false};
  // The run in progress.
  TxnGenerator* generator_ = nullptr;
  std::atomic<std::uint32_t>* remaining_ = nullptr;
  bool generator_done_ = false;
  std::uint32_t generator_live_ = 0;
  // The clock as the last finish read it, valid (finish_now_fresh_) while no transaction has run
  // since: a generator transaction launched then starts at that reading instead of a clock read
  // of its own (a clock read is a noticeable share of an in-cache transaction); what the reuse
  // moves into the latency is the bookkeeping between the two
  // (commit accounting, admission, the generator's next()), never a transaction's run.
  std::chrono::steady_clock::time_point finish_now_;
  bool finish_now_fresh_ = false;

  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  // Set only around the doorbell wait itself: sleeping_ is set before the last idle check.
  std::atomic<bool> asleep_{false};
  std::atomic<std::uint32_t> doorbell_{0};

  // Counters: plain on the worker, published to the atomics for exec_stats().
  std::uint64_t transactions_ = 0;
  std::uint64_t resumes_ = 0;
  std::uint64_t suspends_ = 0;
  // What the policies replaced so far counted (a policy lives from one change of options to
  // the next): the published figures add the current policy's.
  std::uint64_t old_teams_ = 0, old_team_members_ = 0;
  std::uint32_t old_max_passed_ = 0;
  // ExecOptions::profile_storage: this worker's time by stage of the storage path.
  StageProfile stages_;
  struct Published {
    std::atomic<std::uint64_t> transactions{0}, resumes{0}, suspends{0}, frames_allocated{0},
        frames_freed{0}, heap_fallbacks{0}, auto_decisions{0}, commit_waits{0}, io_checks{0},
        index_restarts{0}, index_backoff_ns{0}, index_leaf_visits{0}, index_inner_visits{0},
        teams{0}, team_members{0}, cold_reads_issued{0}, cold_read_submissions{0}, cold_reaps{0},
        cold_reads_reaped{0}, cold_reads_registered{0};
    std::atomic<std::uint64_t> stage_ns[ExecStats::kStorageStages] = {};
    std::atomic<std::uint32_t> auto_batch{0}, max_passed_over{0};
  };
  Published published_;
};

}  // namespace braid::engine
