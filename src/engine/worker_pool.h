// The workers of a database, one thread per core (engine/worker.h), and how the public handle
// reaches them: starting and stopping them, submit() (one transaction function queued to a
// worker), run() (a generator per worker, drained with given ExecOptions), their statistics,
// and the flusher thread of DurabilityOptions::flusher_thread. The pool registers itself with
// the engine as its Executor, so the engine can wake a worker without including the workers.
#pragma once

#include <braid/database.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/database_impl.h"

namespace braid::engine {

class Worker;

class WorkerPool final : public Executor {
 public:
  // Starts Options::workers workers over `db` (opened, recovered), and the flusher thread when
  // the options ask for one.
  explicit WorkerPool(DatabaseImpl* db);
  // Lets queued and running transactions finish, then stops the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The public handle over an opened engine: starts its workers. (Database::open does this; so
  // do tests that open the engine themselves, with a simulated file system.)
  static std::unique_ptr<Database> wrap(std::unique_ptr<DatabaseImpl> impl);
  // Returns once every worker of `db` sleeps with nothing to do, for white-box checks that need
  // the tables to hold still (a tree's invariants): a worker that finished a run or a
  // submitted transaction goes on to reclaim removed keys and sweep before it sleeps. Nothing
  // may hand the workers work meanwhile. False, after saying which worker, if one is still
  // awake after `bound`.
  static bool settle(Database& db,
                     std::chrono::milliseconds bound = std::chrono::milliseconds(10000));

  Result<Pending> submit(TxnFunction fn, const SubmitOptions& options);
  Status run(std::span<TxnGenerator* const> generators, const ExecOptions& exec);
  ExecStats exec_stats() const;

  void wake(std::uint32_t i) override;
  void wake_if_sleeping(std::uint32_t i) override;
  bool on_worker_thread() const override;

 private:
  // DurabilityOptions::flusher_thread: the background thread's loop over the workers' logs.
  void flusher_main();

  DatabaseImpl* db_;
  const Options& options_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<std::uint32_t> next_worker_{0};
  std::mutex run_mutex_;  // one Database::run at a time
  std::atomic<std::uint32_t> run_remaining_{0};
  std::thread flusher_;
  std::atomic<bool> flusher_stop_{false};
};

}  // namespace braid::engine
