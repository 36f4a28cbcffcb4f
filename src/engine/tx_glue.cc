// The awaiter glue of coroutine transactions (include/braid/tx.h's detail:: hooks): an
// operation's checks, its dispatch to the mode's execution (plain calls, a flattened or a
// nested coroutine, a forced yield), and the commit's hand-off to the worker.
#include "engine/worker.h"

#include <braid/tx.h>

#include <string>

#include "engine/access.h"
#include "engine/checks.h"
#include "util/assert.h"

namespace braid::engine {

void abort_tx(detail::TxState* tx) {
  if (tx->ctx == nullptr) return;
  tx->worker->abort(tx->ctx);
  tx->ctx = nullptr;
  tx->conflicted = true;
}

}  // namespace braid::engine

namespace braid::detail {

namespace {
// What the slot's operations take (TxState::env, kept whole; worker.h says why).
const engine::OpEnv& env_of(TxState* tx) {
  BRAID_DASSERT(tx->env.ctx == tx->ctx);
  return tx->env;
}

// The operation run as plain calls (Sequential and Prefetch modes, and kAuto's sequential
// stretches), with the transaction's bookkeeping.
void run_inline(TxState* tx, OpState* op, ExecMode mode) {
  if (mode == ExecMode::kPrefetch) {
    engine::plain::run<engine::Prefetch>(env_of(tx), op);
  } else {
    engine::plain::run<engine::Sequential>(env_of(tx), op);
  }
}

bool refuse(TxState* tx, OpState* op) {
  Status s = engine::check_call(tx->db, tx->ctx, *op);
  if (s.is_ok()) return false;
  op->status = std::move(s);
  return true;
}
}  // namespace

bool op_ready(TxState* tx, OpState* op) {
  tx->touched = true;
  if (refuse(tx, op)) return true;
  engine::Worker* w = tx->worker;
  w->note_op(tx, *op);
  const ExecMode mode = w->op_mode();
  switch (mode) {
    case ExecMode::kInterleaved:
      op->task = w->flat_storage() ? engine::coro::run<engine::FlatStorage>(env_of(tx), op)
                                   : engine::coro::run<engine::Flat>(env_of(tx), op);
      return false;
    case ExecMode::kNested:
      op->task = engine::coro::run<engine::Nested>(env_of(tx), op);
      return false;
    case ExecMode::kSequential:
    case ExecMode::kPrefetch:
    case ExecMode::kAuto:
      if (w->force_suspend()) {
        op->deferred = true;  // yield first, run in await_resume
        return false;
      }
      run_inline(tx, op, mode);
      return true;
  }
  return true;
}

std::coroutine_handle<> op_suspend(TxState* tx, OpState* op, std::coroutine_handle<> awaiter) {
  if (op->task.valid()) {
    op->task.handle().promise().continuation = awaiter;
    return op->task.handle();  // symmetric transfer into the operation
  }
  BRAID_DASSERT(op->deferred);
  tx->resume = awaiter;  // forced yield before an inline operation
  ++*tx->worker->suspend_counter();
  ++*tx->site;
  return std::noop_coroutine();
}

void op_run_deferred(TxState* tx, OpState* op) {
  op->deferred = false;
  // Other transactions ran meanwhile: this one may have been ended, so check again.
  if (refuse(tx, op)) return;
  run_inline(tx, op, tx->worker->op_mode());
}

void park(TxState* tx, std::coroutine_handle<> h) { tx->resume = h; }

Status failed_commit(const Status& failure) {
  return Status(failure.code(), "transaction aborted: a write failed earlier (" +
                                    std::string(failure.message()) + ")");
}

void op_failed(TxState* tx, const OpState& op) {
  using Kind = OpState::Kind;
  const bool write = op.kind == Kind::kInsert || op.kind == Kind::kUpdate ||
                     op.kind == Kind::kPut || op.kind == Kind::kRemove;
  const Code c = op.status.code();
  if (write && tx->failure.is_ok() &&
      (c == Code::kInvalidArgument || c == Code::kBusy || c == Code::kIOError)) {
    tx->failure = Status(c, op.status.message());
  }
}

Status commit_now(TxState* tx) {
  if (tx->ctx == nullptr) {
    return tx->conflicted ? Status(Code::kConflict)
                          : Status::invalid_argument("transaction is not active");
  }
  if (tx->ctx->in_scan) return Status::invalid_argument("commit called from a scan callback");
  if (!tx->failure.is_ok()) {
    tx->worker->abort(tx->ctx);
    tx->ctx = nullptr;
    return failed_commit(tx->failure);
  }
  mvcc::TxnContext* ctx = tx->ctx;
  tx->ctx = nullptr;
  const std::uint64_t snapshot = ctx->snapshot;
  std::uint64_t cts = 0;
  Status s = tx->worker->commit(ctx, &cts);
  if (s.is_ok() && cts != 0) tx->worker->park_commit(tx, cts);
  if (s.is_ok() && cts == 0) {
    if (const std::uint64_t wait = tx->worker->read_only_wait(snapshot); wait != 0) {
      tx->worker->park_commit(tx, wait);
    }
  }
  return s;
}

bool commit_waits(TxState* tx) { return tx->wait_cts != 0; }

Status commit_outcome(TxState* tx, Status committed) {
  if (tx->wait_failed) {
    tx->wait_failed = false;
    return tx->db->durability()->halt_status();
  }
  return committed;
}

}  // namespace braid::detail
