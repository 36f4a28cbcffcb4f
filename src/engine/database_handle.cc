// The public Database handle: the engine (engine/database_impl.h) and its workers
// (engine/worker_pool.h), opened and closed together; every call forwards to one of them.
#include "engine/worker_pool.h"

#include <braid/database.h>

namespace braid {

Database::Database(std::unique_ptr<engine::DatabaseImpl> impl,
                   std::unique_ptr<engine::WorkerPool> workers)
    : impl_(std::move(impl)), workers_(std::move(workers)) {}

Database::~Database() {
  // Application threads' transactions end first, then the workers drain and stop, then the
  // engine closes its logs.
  impl_->close_external();
  workers_.reset();
  impl_.reset();
}

Result<std::unique_ptr<Database>> Database::open(const Options& options) {
  Result<std::unique_ptr<engine::DatabaseImpl>> impl = engine::DatabaseImpl::open(options);
  if (!impl.is_ok()) return impl.status();
  return engine::WorkerPool::wrap(std::move(impl).value());
}

Result<Table*> Database::create_table(std::string_view name) { return impl_->create_table(name); }
Result<Table*> Database::open_table(std::string_view name) { return impl_->open_table(name); }
Result<Index*> Database::create_index(Table& table, std::string_view name, SecondaryKeyFn key_fn) {
  return impl_->create_index(table, name, std::move(key_fn), IndexOptions{});
}

Result<Index*> Database::create_index(Table& table, std::string_view name, SecondaryKeyFn key_fn,
                                      const IndexOptions& options) {
  return impl_->create_index(table, name, std::move(key_fn), options);
}
Result<Transaction> Database::begin(const TxnOptions& txn) { return impl_->begin(txn); }
Result<Pending> Database::submit(TxnFunction fn, const SubmitOptions& options) {
  return workers_->submit(std::move(fn), options);
}
Status Database::execute(TxnFunction fn, const SubmitOptions& options) {
  if (Status s = impl_->refuse_on_worker("Database::execute()"); !s.is_ok()) return s;
  Result<Pending> p = workers_->submit(std::move(fn), options);
  if (!p.is_ok()) return p.status();
  return p->wait();
}
Status Database::checkpoint() { return impl_->checkpoint(); }
Status Database::bulk_load(Table& table, BulkSource next, const BulkLoadOptions& options) {
  return impl_->bulk_load(&table, next, options);
}
Status Database::set_cache_reads(Table& table, bool cache) {
  if (table.owner() != impl_.get()) {
    return Status::invalid_argument("set_cache_reads: table '" + table.name() +
                                    "' belongs to another database");
  }
  table.set_cache_reads(cache);
  return Status::ok();
}
DurabilityStats Database::durability_stats() const { return impl_->durability_stats(); }
Status Database::run(std::span<TxnGenerator* const> generators, const ExecOptions& exec) {
  return workers_->run(generators, exec);
}
ExecStats Database::exec_stats() const { return workers_->exec_stats(); }
DatabaseStats Database::stats() const { return impl_->stats(); }
const Options& Database::options() const { return impl_->options(); }

}  // namespace braid
