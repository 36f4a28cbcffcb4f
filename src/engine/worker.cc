#include "engine/worker.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <numeric>
#include <string>
#include <thread>

#include "engine/access.h"
#include "engine/checks.h"
#include "runtime/cpu.h"
#include "runtime/run_delay.h"
#include "util/assert.h"

namespace braid::engine {

// ---- Worker -------------------------------------------------------------------------------------

Worker::Worker(DatabaseImpl* db, std::uint32_t index, const Options& options)
    : db_(db),
      index_(index),
      options_(options),
      slots_(std::make_unique<Slot[]>(options.slots_per_worker)),
      frames_(std::size_t{256} << 20, options.huge_pages),
      queue_(std::bit_ceil(std::size_t{options.submit_queue_depth})),
      durable_watch_(db->stall_monitor(), "worker commit acknowledgement"),
      cold_watch_(db->stall_monitor(), "cold read") {
  sites_.assign(options.slots_per_worker, sched::kSiteStart);  // never resized: slots point in
  for (std::uint32_t i = 0; i < options.slots_per_worker; ++i) {
    slots_[i].state.db = db;
    slots_[i].state.worker = this;
    slots_[i].state.port = this;
    slots_[i].state.force_suspend = &exec_.force_suspend;
    slots_[i].state.slot = i;
    slots_[i].state.site = &sites_[i];
    slots_[i].state.env =
        OpEnv{db, nullptr, &slots_[i].state, &slots_[i].state.resume, &suspends_, &sites_[i]};
  }
  states_.assign(options.slots_per_worker, sched::SlotState::kFree);
  order_.resize(options.slots_per_worker);
  tuner_.reset(options.slots_per_worker, sched::AutoTuner::Clock::now());
  apply_exec(options.exec);
  durability_ = db->durability();
  if (durability_ != nullptr) {
    log_ = durability_->log(index);
    ring_ = durability_->ring(index);
    durable_ = durability_->durable_commits();
    waiters_.resize(options.durability.max_commit_waiters);
    flusher_mode_ = options.durability.flusher_thread && log_ != nullptr;
  }
  retries_.reserve(std::size_t{options.slots_per_worker} + options.submit_queue_depth);
  retry_rng_ = (options.exec.seed ^ (std::uint64_t{index} << 32)) | 1;
  cold_ = db->cold();
  if (cold_ != nullptr && ring_ != nullptr) {
    reader_ = std::make_unique<ColdReader>(
        cold_, ring_->channel(storage::IoRing::kColdRead),
        std::size_t{options.slots_per_worker} * detail::TxState::kMaxIoWaits);
    reader_->configure(exec_.read_batch, std::chrono::microseconds(exec_.read_window_us));
    reader_->configure_extents(options.scan_extent_bytes);
  }
  evict_ctx_ = db->eviction_context(index);
}

Worker::~Worker() {
  stop();
  BRAID_ASSERT(live_ == 0);
}

void Worker::start() {
  thread_ = std::thread([this] { main(); });
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  ring();
  thread_.join();
}

void Worker::ring() {
  doorbell_.fetch_add(1, std::memory_order_seq_cst);
  doorbell_.notify_one();
}

bool Worker::enqueue(detail::Request* r) {
  if (!queue_.push(r)) return false;
  wake_if_sleeping();
  return true;
}

void Worker::post_run(TxnGenerator* generator, const ExecOptions& exec,
                      std::atomic<std::uint32_t>* remaining) {
  BRAID_ASSERT(!run_posted_.load(std::memory_order_acquire));
  posted_generator_ = generator;
  posted_exec_ = exec;
  posted_remaining_ = remaining;
  run_posted_.store(true, std::memory_order_seq_cst);
  ring();
}

static_assert(kMaxReadBatch <= ColdReader::kMaxInFlight, "a batch is issued at once");

void Worker::apply_exec(const ExecOptions& exec) {
  exec_ = exec;
  exec_.batch = std::clamp<std::uint32_t>(exec.batch, 1, options_.slots_per_worker);
  // Only between runs, with every slot free: a policy's per-slot bookkeeping starts empty.
  const bool team_changed =
      exec_.scheduler == SchedulerPolicy::kTeam &&
      (exec_.team_admission != policy_exec_.team_admission ||
       exec_.team_size != policy_exec_.team_size || exec_.team_wait != policy_exec_.team_wait);
  if (policy_ == nullptr || policy_->kind() != exec_.scheduler || team_changed) {
    BRAID_ASSERT(live_ == 0);
    if (policy_ != nullptr) {
      old_teams_ += policy_->teams();
      old_team_members_ += policy_->team_members();
      old_max_passed_ = std::max(old_max_passed_, policy_->max_passed_over());
    }
    policy_ = sched::policy_info(exec_.scheduler).make(exec_, options_.slots_per_worker);
    policy_exec_ = exec_;
  }
  resume_parked_io_ = policy_->resumes_parked_io();
  sites_wanted_ = policy_->uses_sites();
  // The tuner belongs to the worker, not to a run: a run in kAuto continues from the last
  // decision (the workload may change at any moment anyway, and a stretch bounds how long the
  // tuner takes to notice). Restarting cold cost every short run its first explorations, much
  // of them spent in candidates far slower than the winner.
  if (exec_.mode == ExecMode::kAuto) tuner_.resume(sched::AutoTuner::Clock::now());
  shuffle_rng_ = util::Rng(exec.seed * 0x9e3779b97f4a7c15ull + index_ + 1);
  op_mode_ = exec_.mode == ExecMode::kAuto
                 ? (tuner_.batch() == 1 ? ExecMode::kSequential : ExecMode::kInterleaved)
                 : exec_.mode;
  if (reader_ != nullptr) {
    reader_->configure(exec_.read_batch, std::chrono::microseconds(exec_.read_window_us));
  }
  // The profile belongs to the worker's thread; the constructor's call leaves it to main().
  if (current() == this) stages_.set_on(exec_.profile_storage);
}

void Worker::take_posted_run() {
  if (!run_posted_.load(std::memory_order_acquire) || generator_ != nullptr) return;
  generator_ = posted_generator_;
  remaining_ = posted_remaining_;
  generator_done_ = false;
  generator_live_ = 0;
  apply_exec(posted_exec_);
  run_posted_.store(false, std::memory_order_release);
}

std::uint32_t Worker::capacity() const {
  // Forced suspension exercises interleaving in every mode, so it opens the whole batch.
  if (exec_.force_suspend) return exec_.batch;
  switch (exec_.mode) {
    case ExecMode::kSequential:
    case ExecMode::kPrefetch:
      return 1;
    case ExecMode::kAuto:
      return tuner_.batch();
    case ExecMode::kNested:
    case ExecMode::kInterleaved:
      return exec_.batch;
  }
  return 1;
}

bool Worker::idle() const {
  // With a flusher thread the log is its business, not a reason to stay awake.
  return live_ == 0 && queue_.empty_hint() && retries_.empty() &&
         (generator_ == nullptr || generator_done_) &&
         !run_posted_.load(std::memory_order_acquire) && waiter_count_ == 0 &&
         (log_ == nullptr || flusher_mode_ || log_->idle() || !log_->failure().is_ok()) &&
         !checkpointing_ &&
         (index_ != 0 || durability_ == nullptr ||
          (!durability_->checkpoint_pending() && !durability_->external_pending() &&
           !durability_->external_retire_pending()));
}

namespace {
thread_local Worker* tls_current = nullptr;
}  // namespace

Worker* Worker::current() { return tls_current; }

void Worker::lend_log(std::unique_lock<std::mutex>* held) {
  held->unlock();
  while (flusher_wants_.load(std::memory_order_acquire)) std::this_thread::yield();
  held->lock();
}

bool Worker::flusher_pass() {
  // A running worker lends the log at the top of its next loop; a sleeping one holds nothing.
  flusher_wants_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> g(log_mutex_);
  flusher_wants_.store(false, std::memory_order_release);
  if (ring_ != nullptr) (void)ring_->reap();
  if (!durability_->halted()) {
    if (Status s = log_->poll(false, false); !s.is_ok()) durability_->halt(s);
  } else {
    log_->reap_after_halt();  // as Worker::service_log: the block in flight still completes
  }
  const bool busy = !log_->idle() && log_->failure().is_ok();
  // Commits the disk caught up with are the worker's to acknowledge: wake it if it sleeps.
  if (waiter_count_ != 0 || waiting_slots_ != 0) ring();
  return busy;
}

void Worker::reclaim_while_idle() {
  // No transaction open: the slots' contexts are free, and their queues of removed records
  // would wait for the next run (engine/reclaim.cc). A transaction end in each works on them.
  const std::uint32_t base = index_ * options_.slots_per_worker;
  for (std::uint32_t i = 0; i < options_.slots_per_worker; ++i) {
    if (db_->txns().at(base + i).reclaim_work.load(std::memory_order_relaxed) == 0) continue;
    db_->finish_txn(db_->txns().begin_at(base + i), index_);
  }
  db_->help_reclaim(index_);
}

void Worker::main() {
  tls_current = this;
  ColdPort::set_current(this);
  if (options_.pin_workers) (void)runtime::pin_current_thread(index_);
  runtime::FrameAllocator::set_current(&frames_);
  stages_.set_on(exec_.profile_storage);
  // kAuto's windows discount the time this thread waits preempted (opened on it, for it).
  const runtime::RunDelay run_delay;
  tuner_.set_wait_source(&run_delay);
  std::unique_lock<std::mutex> held(log_mutex_, std::defer_lock);
  if (flusher_mode_) {
    held.lock();
    held_ = &held;
  }
  for (;;) {
    if (flusher_mode_ && flusher_wants_.load(std::memory_order_acquire)) {
      lend_log(&held);
      finish_now_fresh_ = false;  // the flusher held the log: time went by
    }
    take_posted_run();
    admit();
    finish_now_fresh_ = false;  // only the admission right after a round reuses its clock
    if (log_ != nullptr) service_log(live_ - waiting_slots_ - parked_io_);
    if (cold_ != nullptr) service_cold();
    if (live_ != 0) {
      if (live_ == waiting_slots_) {
        // Every open transaction waits for the disk: wait with it.
        wait_for_disk();
        continue;
      }
      round();
      continue;
    }
    if (waiter_count_ != 0) {  // nothing admitted: the ring is full or there is no more work
      wait_for_disk();
      continue;
    }
    if (generator_ != nullptr && generator_done_ && generator_live_ == 0) {
      // The run is over: report it and return to the database's default options.
      std::atomic<std::uint32_t>* remaining = remaining_;
      generator_ = nullptr;
      remaining_ = nullptr;
      // Reported after the run, when exec_ is the default again: keep what the tuner chose.
      last_auto_choice_ = exec_.mode == ExecMode::kAuto ? tuner_.choice() : 0;
      apply_exec(options_.exec);
      publish_stats();
      remaining->fetch_sub(1, std::memory_order_acq_rel);
      remaining->notify_all();
      continue;
    }
    if (!idle()) continue;
    reclaim_while_idle();
    publish_stats();
    if (stop_.load(std::memory_order_seq_cst)) break;
    const std::uint32_t seen = doorbell_.load(std::memory_order_seq_cst);
    sleeping_.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (idle() && !stop_.load(std::memory_order_seq_cst)) {
      if (flusher_mode_) held.unlock();  // the flusher may drive the log meanwhile
      asleep_.store(true, std::memory_order_seq_cst);
      doorbell_.wait(seen);
      asleep_.store(false, std::memory_order_seq_cst);
      if (flusher_mode_) held.lock();
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }
  held_ = nullptr;
  stages_.set_on(false);
  publish_stats();
  tuner_.set_wait_source(nullptr);
  runtime::FrameAllocator::set_current(nullptr);
}

}  // namespace braid::engine
