#include "engine/worker_pool.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "engine/checks.h"
#include "engine/worker.h"

namespace braid::engine {

WorkerPool::WorkerPool(DatabaseImpl* db) : db_(db), options_(db->options()) {
  workers_.reserve(options_.workers);
  for (std::uint32_t i = 0; i < options_.workers; ++i) {
    workers_.push_back(std::make_unique<Worker>(db_, i, options_));
  }
  for (auto& w : workers_) w->start();
  db_->set_executor(this);
  if (options_.durability.flusher_thread && db_->durability() != nullptr &&
      db_->durability()->log(0) != nullptr) {
    flusher_ = std::thread([this] { flusher_main(); });
  }
}

WorkerPool::~WorkerPool() {
  // Workers finish what they hold first, which may wait for the flusher to make it durable.
  for (auto& w : workers_) w->stop();
  if (flusher_.joinable()) {
    flusher_stop_.store(true, std::memory_order_release);
    flusher_.join();
  }
  db_->set_executor(nullptr);
  workers_.clear();
}

std::unique_ptr<Database> WorkerPool::wrap(std::unique_ptr<DatabaseImpl> impl) {
  auto pool = std::make_unique<WorkerPool>(impl.get());
  return std::unique_ptr<Database>(new Database(std::move(impl), std::move(pool)));
}

bool WorkerPool::settle(Database& db, std::chrono::milliseconds bound) {
  const WorkerPool* pool = db.workers_.get();
  if (pool == nullptr) return true;
  const auto until = std::chrono::steady_clock::now() + bound;
  for (std::size_t i = 0; i < pool->workers_.size(); ++i) {
    while (!pool->workers_[i]->asleep()) {
      if (std::chrono::steady_clock::now() >= until) {
        std::fprintf(stderr, "WorkerPool::settle: worker %zu still awake after %lld ms\n", i,
                     static_cast<long long>(bound.count()));
        return false;
      }
      std::this_thread::yield();
    }
  }
  return true;
}

void WorkerPool::wake(std::uint32_t i) { workers_[i]->wake(); }
void WorkerPool::wake_if_sleeping(std::uint32_t i) { workers_[i]->wake_if_sleeping(); }
bool WorkerPool::on_worker_thread() const {
  const Worker* w = Worker::current();
  return w != nullptr && w->db() == db_;
}

void WorkerPool::flusher_main() {
  // What a group-commit thread does: look at every log, submit, reap, nap. Its naps are what
  // a flusher costs in commit latency, its wake-ups what it costs the workers' cores.
  const auto interval = std::chrono::microseconds(options_.durability.flusher_interval_us);
  while (!flusher_stop_.load(std::memory_order_acquire)) {
    bool busy = false;
    for (auto& w : workers_) busy = w->flusher_pass() || busy;
    std::this_thread::sleep_for(busy ? interval : 4 * interval);
  }
}

Result<Pending> WorkerPool::submit(TxnFunction fn, const SubmitOptions& so) {
  if (!fn) return Status::invalid_argument("submit: empty transaction function");
  if (Status s = check_txn(so.txn, "submit: "); !s.is_ok()) return s;
  if (so.worker >= static_cast<std::int32_t>(workers_.size()) || so.worker < -1) {
    return Status::invalid_argument("submit: no worker " + std::to_string(so.worker));
  }
  const std::uint32_t w =
      so.worker >= 0 ? static_cast<std::uint32_t>(so.worker)
                     : next_worker_.fetch_add(1, std::memory_order_relaxed) % options_.workers;
  auto* r = new detail::Request;
  r->fn = std::move(fn);
  r->retries = so.conflict_retries;
  r->txn = so.txn;
  if (!workers_[w]->enqueue(r)) {
    delete r;
    return Status::busy("worker " + std::to_string(w) + " submit queue is full (" +
                        std::to_string(options_.submit_queue_depth) + " waiting)");
  }
  return Pending(r);
}

Status WorkerPool::run(std::span<TxnGenerator* const> generators, const ExecOptions& exec) {
  if (Status s = db_->refuse_on_worker("Database::run()"); !s.is_ok()) return s;
  if (Status s = check_exec(exec, "run: "); !s.is_ok()) return s;
  if (generators.size() > workers_.size()) {
    return Status::invalid_argument("run: " + std::to_string(generators.size()) +
                                    " generators for " + std::to_string(workers_.size()) +
                                    " workers");
  }
  if (exec.batch == 0 || exec.batch > options_.slots_per_worker) {
    return Status::invalid_argument("run: batch must be 1.." +
                                    std::to_string(options_.slots_per_worker) +
                                    " (Options::slots_per_worker)");
  }
  std::unique_lock<std::mutex> guard(run_mutex_, std::try_to_lock);
  if (!guard.owns_lock()) return Status::busy("another Database::run is in progress");
  // A member, not a local: a worker touches it (notify) after its final decrement, which may
  // be after this function saw zero and returned.
  std::atomic<std::uint32_t>& remaining = run_remaining_;
  std::uint32_t n = 0;
  for (TxnGenerator* g : generators) n += g != nullptr ? 1 : 0;
  remaining.store(n, std::memory_order_release);
  for (std::size_t i = 0; i < generators.size(); ++i) {
    if (generators[i] != nullptr) workers_[i]->post_run(generators[i], exec, &remaining);
  }
  for (std::uint32_t left = remaining.load(std::memory_order_acquire); left != 0;
       left = remaining.load(std::memory_order_acquire)) {
    remaining.wait(left);
  }
  return Status::ok();
}

ExecStats WorkerPool::exec_stats() const {
  ExecStats s;
  for (const auto& w : workers_) w->add_stats(&s);
  return s;
}

}  // namespace braid::engine
