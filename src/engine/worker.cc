#include "engine/worker.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <numeric>
#include <string>
#include <thread>

#include "engine/access.h"
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
    slots_[i].state.env = OpEnv{db, nullptr, &slots_[i].state, &slots_[i].state.resume,
                                &suspends_, &sites_[i]};
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
    cold_queue_ = ring_->channel(storage::IoRing::kColdRead);
    cold_backlog_.reserve(std::size_t{options.slots_per_worker} * detail::TxState::kMaxIoWaits);
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
  // tuner takes to notice). Restarting cold cost every short run its first explorations, a
  // quarter of them spent in sequential at 0.5x in TPC-CR.
  if (exec_.mode == ExecMode::kAuto) tuner_.resume(sched::AutoTuner::Clock::now());
  shuffle_rng_ = util::Rng(exec.seed * 0x9e3779b97f4a7c15ull + index_ + 1);
  op_mode_ = exec_.mode == ExecMode::kAuto
                 ? (tuner_.batch() == 1 ? ExecMode::kSequential : ExecMode::kInterleaved)
                 : exec_.mode;
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
          (!durability_->checkpoint_pending() && !durability_->external_pending()));
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
  }
  const bool busy = !log_->idle() && log_->failure().is_ok();
  // Commits the disk caught up with are the worker's to acknowledge: wake it if it sleeps.
  if (waiter_count_ != 0 || waiting_slots_ != 0) ring();
  return busy;
}

void Worker::main() {
  tls_current = this;
  ColdPort::set_current(this);
  if (options_.pin_workers) (void)runtime::pin_current_thread(index_);
  runtime::FrameAllocator::set_current(&frames_);
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
    publish_stats();
    if (stop_.load(std::memory_order_seq_cst)) break;
    const std::uint32_t seen = doorbell_.load(std::memory_order_seq_cst);
    sleeping_.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (idle() && !stop_.load(std::memory_order_seq_cst)) {
      if (flusher_mode_) held.unlock();  // the flusher may drive the log meanwhile
      doorbell_.wait(seen);
      if (flusher_mode_) held.lock();
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }
  held_ = nullptr;
  publish_stats();
  tuner_.set_wait_source(nullptr);
  runtime::FrameAllocator::set_current(nullptr);
}

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

void Worker::publish_stats() {
  const runtime::FrameCounters& f = frames_.counters();
  published_.transactions.store(transactions_, std::memory_order_relaxed);
  published_.resumes.store(resumes_, std::memory_order_relaxed);
  published_.suspends.store(suspends_, std::memory_order_relaxed);
  published_.frames_allocated.store(f.allocated, std::memory_order_relaxed);
  published_.frames_freed.store(f.freed, std::memory_order_relaxed);
  published_.heap_fallbacks.store(f.heap_fallbacks, std::memory_order_relaxed);
  published_.auto_decisions.store(tuner_.decisions(), std::memory_order_relaxed);
  published_.auto_batch.store(exec_.mode == ExecMode::kAuto ? tuner_.choice() : last_auto_choice_,
                              std::memory_order_relaxed);
  published_.commit_waits.store(commit_waits_, std::memory_order_relaxed);
  published_.io_checks.store(io_checks_, std::memory_order_relaxed);
  const index::ContentionCounters& c = index::thread_contention();  // this worker's thread
  published_.index_restarts.store(c.restarts, std::memory_order_relaxed);
  published_.index_backoff_ns.store(c.backoff_ns, std::memory_order_relaxed);
  published_.teams.store(old_teams_ + policy_->teams(), std::memory_order_relaxed);
  published_.team_members.store(old_team_members_ + policy_->team_members(),
                                std::memory_order_relaxed);
  published_.max_passed_over.store(std::max(old_max_passed_, policy_->max_passed_over()),
                                   std::memory_order_relaxed);
}

void Worker::add_stats(ExecStats* out) const {
  out->transactions += published_.transactions.load(std::memory_order_relaxed);
  out->resumes += published_.resumes.load(std::memory_order_relaxed);
  out->suspends += published_.suspends.load(std::memory_order_relaxed);
  out->frames_allocated += published_.frames_allocated.load(std::memory_order_relaxed);
  out->frames_freed += published_.frames_freed.load(std::memory_order_relaxed);
  out->frame_heap_fallbacks += published_.heap_fallbacks.load(std::memory_order_relaxed);
  out->auto_decisions += published_.auto_decisions.load(std::memory_order_relaxed);
  out->commit_waits += published_.commit_waits.load(std::memory_order_relaxed);
  out->io_checks += published_.io_checks.load(std::memory_order_relaxed);
  out->index_restarts += published_.index_restarts.load(std::memory_order_relaxed);
  out->teams += published_.teams.load(std::memory_order_relaxed);
  out->team_members += published_.team_members.load(std::memory_order_relaxed);
  out->max_passed_over =
      std::max(out->max_passed_over, published_.max_passed_over.load(std::memory_order_relaxed));
  out->index_backoff_ns += published_.index_backoff_ns.load(std::memory_order_relaxed);
  out->auto_batch =
      std::max(out->auto_batch, published_.auto_batch.load(std::memory_order_relaxed));
}

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
