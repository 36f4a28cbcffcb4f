// A worker slot's transaction as the operations, the Tx handle and the worker share it, and a
// request for one (Database::submit). The worker owns and fills these (engine/worker.h); the
// operations (engine/access.h) see them without seeing the worker.
#pragma once

#include <braid/tx.h>

#include <atomic>
#include <coroutine>
#include <cstdint>

#include "engine/op_env.h"

namespace braid::engine {
class ColdPort;
struct ColdLoad;
class DatabaseImpl;
class Worker;
}  // namespace braid::engine

namespace braid::detail {

// A worker slot's transaction. Not movable: awaiters and the Tx handle point at it.
struct TxState {
  TxState() { tx.state_ = this; }
  TxState(const TxState&) = delete;
  TxState& operator=(const TxState&) = delete;
  // The slot behind a Tx handle (the engine's own transaction bodies, e.g. a morsel's).
  static TxState* of(Tx& tx) { return tx.state_; }

  engine::DatabaseImpl* db = nullptr;
  engine::Worker* worker = nullptr;
  // The worker as the operations see it: where a cold read is handed over (cold_store.h), and
  // its ExecOptions::force_suspend (every suspension taken, for tests' interleavings).
  engine::ColdPort* port = nullptr;
  const bool* force_suspend = nullptr;
  std::uint32_t slot = 0;           // the worker's slot index
  mvcc::TxnContext* ctx = nullptr;  // null once the transaction ended
  std::coroutine_handle<> resume;   // where the scheduler resumes this transaction next
  // The code it resumes in (sched::site; the worker's per-slot array, which the policy reads).
  std::uint32_t* site = nullptr;
  Tx tx;
  bool conflicted = false;  // ended by a Conflict
  std::uint32_t ops = 0;    // operations started, counted in kAuto only (its work measure)
  // An explicit `co_await tx.commit()` waiting for durability: the scheduler does not resume
  // the slot until the durable clock reaches this timestamp (0: not waiting).
  std::uint64_t wait_cts = 0;
  bool wait_failed = false;  // the engine halted while it waited
  Status failure;            // a write that failed the transaction (its commit aborts)
  bool touched = false;      // an operation was started (Tx::configure comes before)
  // Options a generator gave (Tx::configure) before the worker began the transaction.
  TxnOptions txn;
  bool configured = false;
  // Cold reads the parked slot waits for (a multi_get's children may wait on several): the
  // worker makes the slot runnable once any of them is back.
  static constexpr std::uint32_t kMaxIoWaits = 17;
  engine::ColdLoad* io_wait[kMaxIoWaits] = {};
  std::uint32_t io_waits = 0;
  // What this slot's operations take (engine/access.h). Every field but ctx is fixed for the
  // slot's life (set by the Worker); ctx equals `ctx` while the transaction is active (set in
  // Worker::launch; after the end `ctx` is null and no operation passes the checks). Kept
  // whole so that handing it to an operation copies settled memory: built field by field just
  // before each call, its copy into the call's argument area (two 32-byte loads) would read back
  // eight-byte stores still in the store buffer, which cannot forward them: a stall on every
  // operation.
  engine::OpEnv env{};
};
// The commit's answer for a transaction a failed write failed.
Status failed_commit(const Status& failure);

struct Request {
  TxnFunction fn;
  std::uint32_t retries = 0;
  TxnOptions txn;
  Status status;
  std::atomic<std::uint32_t> done{0};
  std::uint64_t cts = 0;               // commit timestamp (0: no writes)
  std::atomic<std::uint32_t> refs{2};  // the Pending handle and the worker
  void release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

}  // namespace braid::detail
