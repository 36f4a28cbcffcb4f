// Transactions as coroutines: the interface application code is written against.
//
//   braid::Task<braid::Status> transfer(braid::Tx& tx, braid::Table* t, std::string a,
//                                       std::string b) {
//     auto from = co_await tx.get(*t, a);
//     if (!from.is_ok()) co_return from.status();
//     ...
//     co_return co_await tx.update(*t, a, new_value);
//   }
//   db->execute([&](braid::Tx& tx) { return transfer(tx, t, "alice", "bob"); });
//
// The same code runs in every ExecMode: each operation is an awaitable that, in the sequential
// modes, does its work in await_ready and never suspends, and in the interleaved modes runs the
// operation's coroutine, which suspends before each likely cache miss so the worker can run
// other transactions meanwhile.
//
// When the transaction's Task finishes while the transaction is still active, the worker commits
// it if the Task returned OK and aborts it otherwise. Conflict (first-updater-wins) aborts the
// transaction at once; the operation reports it and later operations answer InvalidArgument.
//
// Lifetime: views returned by get/multi_get point into engine memory and stay valid until the
// transaction ends. Keys, values and callbacks passed to an operation must stay valid until the
// co_await finishes (temporaries in the co_await expression do).
#pragma once

#include <braid/database.h>
#include <braid/internal/tx_hooks.h>
#include <braid/task.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace braid {

// One key's outcome in multi_get: kOk with a value, or kNotFound.
struct GetResult {
  Code code = Code::kNotFound;
  std::string_view value;
  bool is_ok() const { return code == Code::kOk; }
};

template <typename R>
class [[nodiscard]] OpAwaiter {
 public:
  explicit OpAwaiter(detail::TxState* tx) : tx_(tx) {}
  OpAwaiter(OpAwaiter&&) noexcept = default;  // only before it is awaited
  OpAwaiter& operator=(OpAwaiter&&) = delete;

  bool await_ready() { return detail::op_ready(tx_, &op_); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) {
    return detail::op_suspend(tx_, &op_, h);
  }
  R await_resume() {
    if (op_.deferred) detail::op_run_deferred(tx_, &op_);
    op_.task.reset();
    if (!op_.status.is_ok()) [[unlikely]]
      detail::op_failed(tx_, op_);
    if constexpr (std::is_same_v<R, Result<std::string_view>>) {
      if (!op_.status.is_ok()) return std::move(op_.status);
      return op_.view;
    } else {
      return std::move(op_.status);
    }
  }
  detail::OpState& op() { return op_; }

 private:
  detail::TxState* tx_;
  detail::OpState op_;
};

class Tx {
 public:
  Tx() = default;
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;

  // As Transaction::get/insert/update/put/remove/scan, awaited.
  OpAwaiter<Result<std::string_view>> get(Table& table, std::string_view key) {
    return make<Result<std::string_view>>(detail::OpState::Kind::kGet, table, key, {});
  }
  OpAwaiter<Status> insert(Table& table, std::string_view key, std::string_view value) {
    return make<Status>(detail::OpState::Kind::kInsert, table, key, value);
  }
  OpAwaiter<Status> update(Table& table, std::string_view key, std::string_view value) {
    return make<Status>(detail::OpState::Kind::kUpdate, table, key, value);
  }
  OpAwaiter<Status> put(Table& table, std::string_view key, std::string_view value) {
    return make<Status>(detail::OpState::Kind::kPut, table, key, value);
  }
  OpAwaiter<Status> remove(Table& table, std::string_view key) {
    return make<Status>(detail::OpState::Kind::kRemove, table, key, {});
  }
  OpAwaiter<Status> scan(Table& table, std::string_view begin, std::string_view end,
                         std::size_t limit, ScanCallback callback,
                         ScanOrder order = ScanOrder::kForward) {
    OpAwaiter<Status> a = make<Status>(detail::OpState::Kind::kScan, table, begin, end);
    a.op().limit = limit;
    a.op().callback = callback;
    a.op().order = order;
    return a;
  }
  // As Transaction::scan_index / lookup_index, awaited.
  OpAwaiter<Status> scan_index(Index& index, std::string_view begin, std::string_view end,
                               std::size_t limit, ScanCallback callback,
                               ScanOrder order = ScanOrder::kForward) {
    return make_index_scan(index, begin, end, false, limit, callback, order);
  }
  OpAwaiter<Status> lookup_index(Index& index, std::string_view secondary_key, std::size_t limit,
                                 ScanCallback callback, ScanOrder order = ScanOrder::kForward) {
    return make_index_scan(index, secondary_key, {}, true, limit, callback, order);
  }
  // Reads keys.size() keys (results.size() must match), interleaving their index descents and
  // version-chain walks inside this transaction (CoroBase's CORO-MK); in the interleaved modes
  // the transaction also yields to the others between rounds (CoroBase's Hybrid). Per-key
  // outcomes land in `results`; the returned Status is non-OK only for bad arguments.
  OpAwaiter<Status> multi_get(Table& table, std::span<const std::string_view> keys,
                              std::span<GetResult> results) {
    OpAwaiter<Status> a = make<Status>(detail::OpState::Kind::kMultiGet, table, {}, {});
    a.op().keys = keys;
    a.op().results = results;
    return a;
  }

  // Commits now; Conflict-free under first-updater-wins unless the transaction already ended.
  // Under CommitMode::kDurable the transaction then waits in its scheduler slot (the worker
  // runs the others) until the commit is on disk.
  struct [[nodiscard]] CommitAwaiter {
    detail::TxState* tx;
    Status status;
    bool await_ready() {
      status = detail::commit_now(tx);
      return !detail::commit_waits(tx);
    }
    void await_suspend(std::coroutine_handle<> h) const noexcept { detail::park(tx, h); }
    Status await_resume() { return detail::commit_outcome(tx, std::move(status)); }
  };
  CommitAwaiter commit() { return CommitAwaiter{state_, {}}; }
  // Lets the worker run its other open transactions before this one continues. A transaction
  // that waits for another on the same worker must yield in a loop, and needs an interleaving
  // mode (or ExecOptions::force_suspend) with batch >= 2, or it waits forever.
  struct [[nodiscard]] YieldAwaiter {
    detail::TxState* tx;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const noexcept { detail::park(tx, h); }
    void await_resume() const noexcept {}
  };
  YieldAwaiter yield() { return YieldAwaiter{state_}; }

  // Chooses the transaction's isolation and declares it read-only (TxnOptions), before its
  // first operation: from TxnGenerator::next (for the transaction it is about to return) or at
  // the start of the body. InvalidArgument after an operation.
  Status configure(const TxnOptions& options);
  void abort();
  bool is_active() const;
  std::uint64_t snapshot() const;
  // The worker running this transaction (0-based).
  std::uint32_t worker() const;

 private:
  friend struct detail::TxState;
  template <typename R>
  OpAwaiter<R> make(detail::OpState::Kind kind, Table& table, std::string_view key,
                    std::string_view value) {
    OpAwaiter<R> a(state_);
    a.op().kind = kind;
    a.op().table = &table;
    a.op().key = key;
    a.op().value = value;
    return a;
  }
  OpAwaiter<Status> make_index_scan(Index& index, std::string_view begin, std::string_view end,
                                    bool exact, std::size_t limit, ScanCallback callback,
                                    ScanOrder order);
  detail::TxState* state_ = nullptr;
};

// A per-worker source of transactions (benchmarks, loaders): Database::run calls next() on the
// worker's thread whenever a slot is free, until it answers false.
class TxnGenerator {
 public:
  virtual ~TxnGenerator() = default;
  // Produces the next transaction for `tx`, or false when this generator is done.
  virtual bool next(Tx& tx, Task<Status>* out) = 0;
  // The outcome of each produced transaction after it committed or aborted, with its latency
  // from admission to the end. A transaction admitted right after another one finished (no
  // transaction ran in between) is admitted at that finish's clock reading, so its latency
  // includes this generator's next() call.
  virtual void finished(const Status& status, std::uint64_t latency_ns) {
    (void)status;
    (void)latency_ns;
  }
  // In a database with a directory, for each committed transaction with writes (called before
  // finished): the time from the commit to its acknowledgement (the durability wait under
  // CommitMode::kDurable).
  virtual void committed(std::uint64_t commit_latency_ns) { (void)commit_latency_ns; }
};

}  // namespace braid
