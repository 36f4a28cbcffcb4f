// The public handles: argument checks, then the engine.
#include <braid/database.h>

#include <braid/tx.h>

#include "engine/access.h"
#include "engine/checks.h"
#include "engine/database_impl.h"

namespace braid {

namespace {
Status not_active() {
  return Status::invalid_argument("transaction is not active (committed or aborted)");
}
}  // namespace

Transaction::Transaction(Transaction&& other) noexcept
    : db_(other.db_),
      ctx_(other.ctx_),
      open_(std::move(other.open_)),
      failed_(std::move(other.failed_)),
      commit_ts_(other.commit_ts_) {
  other.ctx_ = nullptr;
}

Transaction& Transaction::operator=(Transaction&& other) noexcept {
  if (this != &other) {
    abort();
    db_ = other.db_;
    ctx_ = other.ctx_;
    open_ = std::move(other.open_);
    failed_ = std::move(other.failed_);
    commit_ts_ = other.commit_ts_;
    other.ctx_ = nullptr;
  }
  return *this;
}

Status Transaction::usable() const {
  if (ctx_ == nullptr) return not_active();
  if (open_ == nullptr || !open_->load(std::memory_order_acquire)) {
    return Status::invalid_argument(
        "database closed: the transaction was aborted when its Database was destroyed");
  }
  return Status::ok();
}

Transaction::~Transaction() { abort(); }

std::uint64_t Transaction::snapshot() const { return is_active() ? ctx_->snapshot : 0; }

namespace {
// The thread-per-transaction API runs the same operations as the workers, as plain calls.
void run_op(engine::DatabaseImpl* db, mvcc::TxnContext* ctx, detail::OpState* op) {
  engine::plain::run<engine::Sequential>(engine::OpEnv{db, ctx, nullptr, nullptr, nullptr, nullptr},
                                         op);
}
}  // namespace

Result<std::string_view> Transaction::get(Table& table, std::string_view key) {
  if (Status s = usable(); !s.is_ok()) return s;
  detail::OpState op;
  op.kind = detail::OpState::Kind::kGet;
  op.table = &table;
  op.key = key;
  if (Status s = engine::check_call(db_, ctx_, op); !s.is_ok()) return s;
  run_op(db_, ctx_, &op);
  if (!op.status.is_ok()) return std::move(op.status);
  return op.view;
}

Status Transaction::get(Table& table, std::string_view key, std::string* value) {
  Result<std::string_view> r = get(table, key);
  if (!r.is_ok()) return r.status();
  value->assign(r->data(), r->size());
  return Status::ok();
}

// The one path of every write: argument checks, the engine, and the transaction's fate: a
// Conflict ends it (under first-updater-wins it can no longer commit), a failure fails it (its
// commit then aborts: all or nothing).
Status Transaction::write(Table& table, std::string_view key, std::string_view value, int kind) {
  if (Status s = usable(); !s.is_ok()) return s;
  detail::OpState op;
  op.kind = static_cast<detail::OpState::Kind>(kind);
  op.table = &table;
  op.key = key;
  op.value = value;
  Status s = engine::check_call(db_, ctx_, op);
  if (s.is_ok()) {
    run_op(db_, ctx_, &op);
    s = std::move(op.status);
  }
  if (s == Code::kConflict) abort();
  if ((s == Code::kInvalidArgument || s == Code::kBusy || s == Code::kIOError) && failed_.is_ok()) {
    failed_ = Status(s.code(), s.message());
  }
  return s;
}

Status Transaction::insert(Table& table, std::string_view key, std::string_view value) {
  return write(table, key, value, static_cast<int>(detail::OpState::Kind::kInsert));
}

Status Transaction::update(Table& table, std::string_view key, std::string_view value) {
  return write(table, key, value, static_cast<int>(detail::OpState::Kind::kUpdate));
}

Status Transaction::put(Table& table, std::string_view key, std::string_view value) {
  return write(table, key, value, static_cast<int>(detail::OpState::Kind::kPut));
}

Status Transaction::remove(Table& table, std::string_view key) {
  return write(table, key, {}, static_cast<int>(detail::OpState::Kind::kRemove));
}

namespace {
// Table and index scans: argument checks, then the operation.
Status run_scan(engine::DatabaseImpl* db, mvcc::TxnContext* ctx, detail::OpState* op) {
  if (Status s = engine::check_call(db, ctx, *op); !s.is_ok()) return s;
  run_op(db, ctx, op);
  return std::move(op->status);
}
}  // namespace

Status Transaction::scan(Table& table, std::string_view begin, std::string_view end,
                         std::size_t limit, ScanCallback callback, ScanOrder order) {
  detail::OpState op;
  op.kind = detail::OpState::Kind::kScan;
  op.table = &table;
  op.key = begin;
  op.value = end;
  op.limit = limit;
  op.callback = callback;
  op.order = order;
  if (Status s = usable(); !s.is_ok()) return s;
  return run_scan(db_, ctx_, &op);
}

namespace {
void fill_index_scan(detail::OpState* op, Index& index, std::string_view begin,
                     std::string_view end, bool exact, std::size_t limit, ScanCallback callback,
                     ScanOrder order) {
  op->kind = detail::OpState::Kind::kIndexScan;
  op->index = &index;
  op->table = &index.table();
  op->key = begin;
  op->value = end;
  op->exact = exact;
  op->limit = limit;
  op->callback = callback;
  op->order = order;
}

Status index_scan(engine::DatabaseImpl* db, mvcc::TxnContext* ctx, Index& index,
                  std::string_view begin, std::string_view end, bool exact, std::size_t limit,
                  ScanCallback callback, ScanOrder order) {
  detail::OpState op;
  fill_index_scan(&op, index, begin, end, exact, limit, callback, order);
  return run_scan(db, ctx, &op);
}
}  // namespace

Status Transaction::scan_index(Index& index, std::string_view begin, std::string_view end,
                               std::size_t limit, ScanCallback callback, ScanOrder order) {
  if (Status s = usable(); !s.is_ok()) return s;
  return index_scan(db_, ctx_, index, begin, end, false, limit, callback, order);
}

Status Transaction::lookup_index(Index& index, std::string_view secondary_key, std::size_t limit,
                                 ScanCallback callback, ScanOrder order) {
  if (Status s = usable(); !s.is_ok()) return s;
  return index_scan(db_, ctx_, index, secondary_key, {}, true, limit, callback, order);
}

OpAwaiter<Status> Tx::make_index_scan(Index& index, std::string_view begin, std::string_view end,
                                      bool exact, std::size_t limit, ScanCallback callback,
                                      ScanOrder order) {
  OpAwaiter<Status> a(state_);
  fill_index_scan(&a.op(), index, begin, end, exact, limit, callback, order);
  return a;
}

Status Transaction::commit() {
  if (Status s = usable(); !s.is_ok()) return s;
  if (ctx_->in_scan) return Status::invalid_argument("commit called from a scan callback");
  if (!failed_.is_ok()) {
    abort();
    return detail::failed_commit(failed_);
  }
  mvcc::TxnContext* ctx = ctx_;
  ctx_ = nullptr;
  return db_->commit_external(ctx, &commit_ts_);
}

void Transaction::abort() {
  if (ctx_ == nullptr) return;
  mvcc::TxnContext* ctx = ctx_;
  ctx_ = nullptr;
  // After the database closed, it aborted this transaction itself.
  if (open_ != nullptr && open_->load(std::memory_order_acquire)) db_->abort_external(ctx);
}

}  // namespace braid
