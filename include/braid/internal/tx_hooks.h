// Internal to the coroutine API: the state of one operation in flight and the hooks through
// which tx.h's awaiters reach the engine (src/engine/tx_glue.cc). Not part of the API: names
// here change without notice; include <braid/tx.h>.
#pragma once

#include <braid/database.h>
#include <braid/task.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace braid {

struct GetResult;  // multi_get's per-key outcome (tx.h)

namespace detail {
struct TxState;  // the worker's slot (src/engine/worker.h)

struct OpState {
  enum class Kind : std::uint8_t {
    kGet,
    kInsert,
    kUpdate,
    kPut,
    kRemove,
    kScan,
    kMultiGet,
    kIndexScan,
  };
  Kind kind = Kind::kGet;
  ScanOrder order = ScanOrder::kForward;
  Table* table = nullptr;
  Index* index = nullptr;  // kIndexScan
  bool exact = false;      // kIndexScan: entries whose secondary key equals `key`
  std::string_view key;    // get/write key; scan begin
  std::string_view value;  // write value; scan end
  std::size_t limit = 0;
  ScanCallback callback;
  std::span<const std::string_view> keys;
  std::span<GetResult> results;
  // Forced suspension in a mode that runs operations inline: the operation runs after the
  // yield, in await_resume, so its effect and its outcome reach the body at the same moment.
  bool deferred = false;
  // Outcome.
  Status status;
  std::string_view view;
  // The operation's coroutine in the interleaved modes (destroyed with the awaiter, so a
  // transaction destroyed while suspended inside an operation frees the operation too).
  Task<void> task;
};

// True when the operation finished without suspending (its outcome is in `op`).
bool op_ready(TxState* tx, OpState* op);
// Called when op_ready answered false: the handle to transfer control to.
std::coroutine_handle<> op_suspend(TxState* tx, OpState* op, std::coroutine_handle<> awaiter);
void op_run_deferred(TxState* tx, OpState* op);
Status commit_now(TxState* tx);
// After commit_now: true when the commit must wait for durability in the scheduler.
bool commit_waits(TxState* tx);
// The commit's final outcome after the wait (IOError when the engine halted meanwhile).
Status commit_outcome(TxState* tx, Status committed);
// Leaves `h` as the transaction's resume point (the scheduler resumes it after the others).
void park(TxState* tx, std::coroutine_handle<> h);
// An operation answered an error: a write that failed (InvalidArgument, Busy, IOError) fails
// the transaction, whose commit then aborts it.
void op_failed(TxState* tx, const OpState& op);
}  // namespace detail

}  // namespace braid
