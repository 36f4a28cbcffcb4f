// The public handles: argument checks, then the engine.
#include <braid/database.h>

#include "engine/database_impl.h"

namespace braid {

namespace {
Status not_active() {
  return Status::invalid_argument("transaction is not active (committed or aborted)");
}
}  // namespace

Transaction::Transaction(Transaction&& other) noexcept : db_(other.db_), ctx_(other.ctx_) {
  other.ctx_ = nullptr;
}

Transaction& Transaction::operator=(Transaction&& other) noexcept {
  if (this != &other) {
    abort();
    db_ = other.db_;
    ctx_ = other.ctx_;
    other.ctx_ = nullptr;
  }
  return *this;
}

Transaction::~Transaction() { abort(); }

std::uint64_t Transaction::snapshot() const { return ctx_ != nullptr ? ctx_->snapshot : 0; }

Result<std::string_view> Transaction::get(Table& table, std::string_view key) {
  if (ctx_ == nullptr) return not_active();
  if (Status s = engine::check_key(key); !s.is_ok()) return s;
  return db_->get(ctx_, table, key);
}

Status Transaction::get(Table& table, std::string_view key, std::string* value) {
  Result<std::string_view> r = get(table, key);
  if (!r.is_ok()) return r.status();
  value->assign(r->data(), r->size());
  return Status::ok();
}

namespace {
// The one path of every write: argument checks, the engine, and ending the transaction on
// Conflict (under first-updater-wins it can no longer commit).
Status write(engine::DatabaseImpl* db, mvcc::TxnContext* ctx, Transaction* tx, Table& table,
             std::string_view key, std::string_view value, engine::WriteKind kind) {
  if (ctx == nullptr) return not_active();
  if (Status s = engine::check_key(key); !s.is_ok()) return s;
  if (Status s = engine::check_value(value); !s.is_ok()) return s;
  Status s = db->write(ctx, table, key, value, kind);
  if (s == Code::kConflict) tx->abort();
  return s;
}
}  // namespace

Status Transaction::insert(Table& table, std::string_view key, std::string_view value) {
  return write(db_, ctx_, this, table, key, value, engine::WriteKind::kInsert);
}

Status Transaction::update(Table& table, std::string_view key, std::string_view value) {
  return write(db_, ctx_, this, table, key, value, engine::WriteKind::kUpdate);
}

Status Transaction::put(Table& table, std::string_view key, std::string_view value) {
  return write(db_, ctx_, this, table, key, value, engine::WriteKind::kPut);
}

Status Transaction::remove(Table& table, std::string_view key) {
  return write(db_, ctx_, this, table, key, {}, engine::WriteKind::kRemove);
}

Status Transaction::scan(Table& table, std::string_view begin, std::string_view end,
                         std::size_t limit, ScanCallback callback, ScanOrder order) {
  if (ctx_ == nullptr) return not_active();
  if (begin.size() > kMaxKeyBytes || end.size() > kMaxKeyBytes) {
    return Status::invalid_argument("scan bound longer than " + std::to_string(kMaxKeyBytes) +
                                    " bytes");
  }
  if (ctx_->in_scan) return Status::invalid_argument("scan called from a scan callback");
  ctx_->in_scan = true;
  Status s = db_->scan(ctx_, table, begin, end, limit, callback, order);
  ctx_->in_scan = false;
  return s;
}

Status Transaction::commit() {
  if (ctx_ == nullptr) return not_active();
  if (ctx_->in_scan) return Status::invalid_argument("commit called from a scan callback");
  mvcc::TxnContext* ctx = ctx_;
  ctx_ = nullptr;
  return db_->commit(ctx);
}

void Transaction::abort() {
  if (ctx_ == nullptr) return;
  mvcc::TxnContext* ctx = ctx_;
  ctx_ = nullptr;
  db_->abort(ctx);
}

// ---- Database -----------------------------------------------------------------------------------

Database::Database(std::unique_ptr<engine::DatabaseImpl> impl) : impl_(std::move(impl)) {}
Database::~Database() = default;

Result<std::unique_ptr<Database>> Database::open(const Options& options) {
  Result<std::unique_ptr<engine::DatabaseImpl>> impl = engine::DatabaseImpl::open(options);
  if (!impl.is_ok()) return impl.status();
  return std::unique_ptr<Database>(new Database(std::move(impl).value()));
}

Result<Table*> Database::create_table(std::string_view name) { return impl_->create_table(name); }
Result<Table*> Database::open_table(std::string_view name) { return impl_->open_table(name); }
Result<Transaction> Database::begin() { return impl_->begin(); }
DatabaseStats Database::stats() const { return impl_->stats(); }
const Options& Database::options() const { return impl_->options(); }

}  // namespace braid
