#include "engine/database_impl.h"

#include <braid/tx.h>

#include <sched.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "engine/checks.h"
#include "engine/cold_store.h"
#include "engine/durability.h"
#include "engine/op_env.h"
#include "storage/log_format.h"
#include "util/assert.h"
#include "util/bits.h"

namespace braid::engine {

using mvcc::TxnContext;
using mvcc::Version;
namespace entry = mvcc::entry;
namespace cstate = mvcc::cstate;

using mvcc::kMaxWriteRetries;

Status DatabaseImpl::refuse_on_worker(const char* what) const {
  if (executor_ == nullptr || !executor_->on_worker_thread()) return Status::ok();
  return Status::invalid_argument(
      std::string(what) +
      " called on one of the database's worker threads (from a transaction body): it would "
      "wait for the worker it runs on. Use the Tx handle's operations, or submit() without "
      "waiting");
}

// ---- Opening ------------------------------------------------------------------------------------

DatabaseImpl::DatabaseImpl(const Options& options)
    : options_(options),
      stalls_(options.stall_timeout_ms, options.on_stall),
      // Reserved contexts beyond the workers' slots: the checkpoint's snapshot, and one per
      // worker for its eviction sweeps.
      txns_(options.workers * options.slots_per_worker + 1 + options.workers,
            options.external_transactions, options.max_txn_writes),
      protocol_(&txns_, options.max_version_bytes, options.max_txn_reads, options.debug_faults) {
  tables_.reserve(options.max_tables);
  protocol_.set_stall_monitor(&stalls_);
}

void DatabaseImpl::close_external() {
  open_->store(false, std::memory_order_release);
  for (std::uint32_t i = first_shared_context(); i < txns_.size(); ++i) {
    TxnContext& c = txns_.at(i);
    if (c.in_use.load(std::memory_order_acquire) && c.state.load() == cstate::kActive) {
      abort_external(&c);
    }
  }
}

DatabaseImpl::~DatabaseImpl() {
  BRAID_ASSERT(executor_ == nullptr);  // the workers stopped first
  close_external();
  durability_.reset();
  check_invariants();
  // Tables first: their chains hold versions; then the transaction table frees limbo.
  for (auto& t : tables_) {
    for (std::uint64_t oid = 0; oid < t->oids().allocated(); ++oid) {
      free_chain(&txns_.at(0), t->oids().entry(oid).load(std::memory_order_relaxed));
    }
  }
  tables_.clear();
}

void DatabaseImpl::check_invariants() {
#if defined(BRAID_DEBUG_CHECKS)
  for (const auto& t : tables_) {
    const std::size_t keys = t->index().check_invariants();
    BRAID_ASSERT(keys <= t->oids().allocated());
    std::size_t live = 0;
    t->index().for_each([&](std::string_view, std::uint64_t oid) {
      BRAID_ASSERT(oid < t->oids().allocated());
      // A key names a chain (a deleted record keeps its tombstone until pruned) or a cold
      // record's address.
      const std::uint64_t e = t->oids().entry(oid).load();
      live += mvcc::entry::is_cold(e) || mvcc::Protocol::check_chain(e) != 0 ? 1 : 0;
    });
    BRAID_ASSERT(live == keys);
    for (std::uint32_t i = 0; i < t->index_count(); ++i) {
      (void)t->secondary(i)->tree().check_invariants();
    }
  }
#endif
}

Result<std::unique_ptr<DatabaseImpl>> DatabaseImpl::open(const Options& o,
                                                         std::shared_ptr<storage::FileSystem> fs) {
  if (o.workers == 0 || o.workers > 1024) {
    return Status::invalid_argument("Options::workers must be 1..1024");
  }
  if (o.slots_per_worker == 0 || o.slots_per_worker > 4096) {
    return Status::invalid_argument("Options::slots_per_worker must be 1..4096");
  }
  if (o.external_transactions > 4096) {
    return Status::invalid_argument("Options::external_transactions must be 0..4096");
  }
  if (std::uint64_t{o.workers} * o.slots_per_worker + o.external_transactions + 1 >= (1u << 16)) {
    return Status::invalid_argument(
        "Options::workers * slots_per_worker + external_transactions must be below 65535");
  }
  if (o.stall_timeout_ms > 3'600'000) {
    return Status::invalid_argument("Options::stall_timeout_ms must be 0 (off)..3600000");
  }
  const DurabilityOptions& d = o.durability;
  if (d.log_buffer_bytes < (16u << 10) || d.log_buffer_bytes > (1u << 30)) {
    return Status::invalid_argument("Options::durability.log_buffer_bytes must be 16 KiB..1 GiB");
  }
  if (d.log_segment_bytes < (std::uint64_t{64} << 10) || d.log_segment_bytes < d.log_buffer_bytes) {
    return Status::invalid_argument(
        "Options::durability.log_segment_bytes must be at least 64 KiB and the log buffer size");
  }
  if (d.flusher_thread && (d.flusher_interval_us == 0 || d.flusher_interval_us > 1'000'000)) {
    return Status::invalid_argument(
        "Options::durability.flusher_interval_us must be 1..1000000 with a flusher thread");
  }
  if (d.sq_poll_cpu < -1 || d.sq_poll_cpu >= CPU_SETSIZE) {
    return Status::invalid_argument("Options::durability.sq_poll_cpu must be -1 (off) or 0.." +
                                    std::to_string(CPU_SETSIZE - 1));
  }
  if (d.sq_poll_cpu >= 0) {
    if (d.io == IoMode::kSync) {
      return Status::invalid_argument(
          "Options::durability.sq_poll_cpu needs io_uring (IoMode kAuto or kUring), not kSync");
    }
    if (d.sq_poll_idle_ms == 0 || d.sq_poll_idle_ms > 60'000) {
      return Status::invalid_argument(
          "Options::durability.sq_poll_idle_ms must be 1..60000 with sq_poll_cpu set");
    }
  }
  if (d.max_commit_waiters == 0 || d.max_commit_waiters > (1u << 24)) {
    return Status::invalid_argument("Options::durability.max_commit_waiters must be 1..2^24");
  }
  if (o.exec.batch == 0) return Status::invalid_argument("Options::exec.batch must be at least 1");
  if (Status s = check_exec(o.exec, "Options::exec: "); !s.is_ok()) return s;
  if (static_cast<std::uint32_t>(d.commit) > static_cast<std::uint32_t>(CommitMode::kAsync)) {
    return Status::invalid_argument("Options::durability.commit " +
                                    std::to_string(static_cast<int>(d.commit)) +
                                    " is not a CommitMode");
  }
  if (static_cast<std::uint32_t>(d.sync) > static_cast<std::uint32_t>(LogSync::kDirect)) {
    return Status::invalid_argument("Options::durability.sync " +
                                    std::to_string(static_cast<int>(d.sync)) + " is not a LogSync");
  }
  if (static_cast<std::uint32_t>(d.io) > static_cast<std::uint32_t>(IoMode::kSync)) {
    return Status::invalid_argument("Options::durability.io " +
                                    std::to_string(static_cast<int>(d.io)) + " is not an IoMode");
  }
  if (static_cast<std::uint32_t>(o.recovery) > static_cast<std::uint32_t>(RecoveryMode::kSalvage)) {
    return Status::invalid_argument("Options::recovery " +
                                    std::to_string(static_cast<int>(o.recovery)) +
                                    " is not a RecoveryMode");
  }
  if (o.submit_queue_depth < 2 || o.submit_queue_depth > (1u << 20)) {
    return Status::invalid_argument("Options::submit_queue_depth must be 2..2^20");
  }
  if (o.max_version_bytes < (std::uint64_t{4} << 20)) {
    return Status::invalid_argument("Options::max_version_bytes must be at least 4 MiB");
  }
  if (o.prefault_version_bytes > o.max_version_bytes) {
    return Status::invalid_argument(
        "Options::prefault_version_bytes (" + std::to_string(o.prefault_version_bytes) +
        ") exceeds Options::max_version_bytes (" + std::to_string(o.max_version_bytes) + ")");
  }
  if (o.prefault_index_bytes > (std::uint64_t{1} << 40)) {
    return Status::invalid_argument("Options::prefault_index_bytes (" +
                                    std::to_string(o.prefault_index_bytes) +
                                    ") must be at most 2^40");
  }
  if (o.l2_cache_bytes != 0 &&
      (o.l2_cache_bytes < (std::uint64_t{64} << 10) || o.l2_cache_bytes > (std::uint64_t{1} << 30))) {
    return Status::invalid_argument("Options::l2_cache_bytes (" +
                                    std::to_string(o.l2_cache_bytes) +
                                    ") must be 0 (the machine's) or 64 KiB..1 GiB");
  }
  if (o.max_tables == 0 || o.max_tables > 65536) {
    return Status::invalid_argument("Options::max_tables must be 1..65536");
  }
  if (o.max_records_per_table == 0 || o.max_records_per_table > (std::uint64_t{1} << 40)) {
    return Status::invalid_argument("Options::max_records_per_table must be 1..2^40");
  }
  if (o.max_txn_writes == 0) {
    return Status::invalid_argument("Options::max_txn_writes must be at least 1");
  }
#if !defined(BRAID_DEBUG_CHECKS)
  if (o.debug_faults.any()) {
    return Status::invalid_argument(
        "Options::debug_faults needs a build with BRAID_DEBUG_CHECKS (the test builds)");
  }
#endif
  if (o.max_txn_reads == 0) {
    return Status::invalid_argument("Options::max_txn_reads must be at least 1");
  }
  if (static_cast<std::uint32_t>(o.isolation) >
      static_cast<std::uint32_t>(Isolation::kSerializable)) {
    return Status::invalid_argument("Options::isolation " +
                                    std::to_string(static_cast<int>(o.isolation)) +
                                    " is not an Isolation");
  }
  if (o.read_only && o.directory.empty()) {
    return Status::invalid_argument("Options::read_only needs Options::directory");
  }
  if (o.memory_budget_bytes != 0) {
    // Evicted records are read back from the log: there must be one.
    if (o.directory.empty()) {
      return Status::invalid_argument(
          "Options::memory_budget_bytes needs Options::directory (evicted records are read back "
          "from the log)");
    }
    if (d.log_segment_bytes > mvcc::entry::kMaxColdOffset) {
      return Status::invalid_argument(
          "Options::durability.log_segment_bytes must be at most 256 MiB with a memory budget (a "
          "cold entry addresses 256 MiB of a segment)");
    }
  }
  std::unique_ptr<DatabaseImpl> db(new DatabaseImpl(o));
  if (Status s = db->txns_.init_heap(o.max_version_bytes, o.huge_pages, o.prefault_version_bytes);
      !s.is_ok()) {
    return s;
  }
  if (Status s = db->index_pool_.init(o.prefault_index_bytes, o.huge_pages); !s.is_ok()) return s;
  if (!o.directory.empty()) {
    Status s = db->open_durable(std::move(fs));
    if (!s.is_ok()) return s;
  }
  db->check_invariants();
  return db;
}

Status DatabaseImpl::open_durable(std::shared_ptr<storage::FileSystem> fs) {
  if (fs == nullptr) {
    const IoMode io = options_.durability.io;
    std::string why;
    bool uring = false;
    if (io != IoMode::kSync) {
      uring = storage::probe_io_uring(&why);
      if (!uring && io == IoMode::kUring) {
        return Status::io_error("io_uring is not available here (" + why +
                                "); set Options::durability.io to kAuto or kSync to use "
                                "synchronous log writes");
      }
      if (!uring && options_.durability.sq_poll_cpu >= 0) {
        return Status::io_error("io_uring is not available here (" + why +
                                "); Options::durability.sq_poll_cpu needs it");
      }
      if (!uring) {
        std::fprintf(stderr,
                     "braid: io_uring is not available (%s); the log falls back to synchronous "
                     "writes on the workers\n",
                     why.c_str());
      }
    }
    storage::SubmitPoll poll;
    poll.cpu = options_.durability.sq_poll_cpu;
    poll.idle_ms = options_.durability.sq_poll_idle_ms;
    fs = storage::make_posix_file_system(uring, poll);
  }
  // Loads in flight at once: one per transaction context, and a multi_get's fan-out on each.
  const std::uint32_t loads = txns_.size() + options_.workers * kMultiGetWidth;
  cold_ = std::make_unique<ColdStore>(ColdStore::Deps{this, &txns_, &protocol_, &stalls_}, fs,
                                      loads, options_.memory_budget_bytes);
  durability_ = std::make_unique<Durability>(
      Durability::Deps{this, this, &txns_, &protocol_, cold_.get(), &stalls_, checkpoint_context()},
      options_, std::move(fs));
  cold_->set_durable_clock([d = durability_.get()] { return d->durable_clock(); });
  std::vector<storage::CatalogEntry> catalog;
  if (Status s = durability_->open_directory(&catalog); !s.is_ok()) return s;
  for (const storage::CatalogEntry& e : catalog) {
    if (e.name.empty() || e.name.size() > kMaxTableNameBytes || by_name_.count(e.name) != 0 ||
        tables_.size() >= options_.max_tables) {
      return Status::corruption("catalog of '" + options_.directory + "' names table '" + e.name +
                                "', which cannot be created (duplicate, bad name, or more than "
                                "Options::max_tables)");
    }
    if (add_table(e.name) == nullptr) {
      return Status::io_error("cannot reserve the OID array of table '" + e.name + "'");
    }
  }
  // A read-only database logs nothing, ticks included (it writes no version either).
  txns_.set_logged_ticks(!options_.read_only);
  txns_.set_cooling(options_.memory_budget_bytes != 0);
  return durability_->recover_and_open_logs();
}

Table* DatabaseImpl::add_table(std::string_view name) {
  auto t = std::make_unique<Table>(this, static_cast<std::uint32_t>(tables_.size()),
                                   std::string(name), l2_cache_bytes(), &index_pool_);
  if (!t->oids().init(options_.max_records_per_table, options_.huge_pages).is_ok()) return nullptr;
  Table* raw = t.get();
  tables_.push_back(std::move(t));
  by_name_.emplace(std::string(name), raw);
  return raw;
}

void DatabaseImpl::free_chain(TxnContext* ctx, std::uint64_t e) {
  if (!entry::is_hot(e)) return;
  for (Version* v = entry::hot(e); v != nullptr;) {
    Version* next = v->next.load(std::memory_order_relaxed);
    txns_.free_version(ctx, v);
    v = next;
  }
}

std::uint32_t DatabaseImpl::table_count() const {
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  return static_cast<std::uint32_t>(tables_.size());
}

Table* DatabaseImpl::table_at(std::uint32_t id) const {
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  return id < tables_.size() ? tables_[id].get() : nullptr;
}

Status DatabaseImpl::recover_write(std::uint32_t table, std::string_view key,
                                   std::string_view value, bool tombstone, std::uint64_t cts,
                                   std::uint64_t cold) {
  Table* t = table < tables_.size() ? tables_[table].get() : nullptr;
  if (t == nullptr) {
    return Status::corruption("recovery: a record names table " + std::to_string(table) +
                              ", which the catalog does not have");
  }
  TxnContext* ctx = &txns_.at(checkpoint_context());
  std::uint64_t oid = 0;
  const bool found = t->index().lookup(key, &oid);
  if (tombstone) {
    if (!found) return Status::ok();
    const bool removed = t->index().remove(key, oid);
    BRAID_ASSERT(removed);
    auto& slot = t->oids().entry(oid);
    free_chain(ctx, slot.load(std::memory_order_relaxed));
    slot.store(entry::kEmpty, std::memory_order_relaxed);
    return Status::ok();
  }
  // A cold entry keeps only the record's address: recovery under a memory budget reads no
  // value (MosaicDB §2.1).
  std::uint64_t e = cold;
  if (e == 0) {
    t->note_value_size(value.size());
    Version* v = protocol_.make_version(ctx, value, false);
    if (v == nullptr) {
      return Status::io_error(
          "version memory exhausted during recovery (Options::max_version_bytes = " +
          std::to_string(options_.max_version_bytes) + ")");
    }
    v->stamp.store(cts, std::memory_order_relaxed);
    e = entry::from_version(v);
  }
  BRAID_ASSERT(entry::is_cold(e) == (cold != 0));
  if (found) {
    auto& slot = t->oids().entry(oid);
    free_chain(ctx, slot.load(std::memory_order_relaxed));
    slot.store(e, std::memory_order_relaxed);
    return Status::ok();
  }
  Result<std::uint64_t> fresh = t->oids().allocate();
  if (!fresh.is_ok()) {
    free_chain(ctx, e);
    return fresh.status();
  }
  t->oids().entry(*fresh).store(e, std::memory_order_relaxed);
  std::uint64_t existing;
  const bool inserted = t->index().insert_if_absent(key, *fresh, &existing);
  BRAID_ASSERT(inserted);
  return Status::ok();
}

// ---- Catalog ------------------------------------------------------------------------------------

Result<Table*> DatabaseImpl::create_table(std::string_view name) {
  if (name.empty() || name.size() > kMaxTableNameBytes) {
    return Status::invalid_argument("table name must be 1.." + std::to_string(kMaxTableNameBytes) +
                                    " bytes");
  }
  if (options_.read_only) {
    return Status::invalid_argument("create_table: the database was opened read-only");
  }
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  if (by_name_.count(std::string(name)) != 0) {
    return Status::duplicate("table '" + std::string(name) + "' exists");
  }
  if (tables_.size() >= options_.max_tables) {
    return Status::busy(
        "table limit reached (Options::max_tables = " + std::to_string(options_.max_tables) + ")");
  }
  if (durability_ != nullptr) {
    // The table exists once the catalog naming it is durable.
    std::vector<storage::CatalogEntry> entries;
    for (const auto& t : tables_) entries.push_back({t->id(), t->name()});
    entries.push_back({static_cast<std::uint32_t>(tables_.size()), std::string(name)});
    if (Status s = durability_->persist_catalog(entries); !s.is_ok()) return s;
  }
  Table* raw = add_table(name);
  if (raw == nullptr) {
    return Status::io_error("cannot reserve the OID array of table '" + std::string(name) + "'");
  }
  return raw;
}

Result<Table*> DatabaseImpl::open_table(std::string_view name) {
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return Status::not_found("no table named '" + std::string(name) + "'");
  return it->second;
}

Result<Transaction> DatabaseImpl::begin(const TxnOptions& txn) {
  if (Status s = refuse_on_worker("Database::begin()"); !s.is_ok()) return s;
  if (Status s = check_txn(txn, "begin: "); !s.is_ok()) return s;
  TxnContext* ctx = txns_.begin();
  if (ctx == nullptr) {
    return Status::busy("all " + std::to_string(options_.external_transactions) +
                        " application-thread transactions are open "
                        "(Options::external_transactions)");
  }
  configure(ctx, txn);
  return Transaction(this, ctx, open_);
}

void DatabaseImpl::configure(TxnContext* ctx, const TxnOptions& txn) const {
  const Isolation i = txn.override_isolation ? txn.isolation : options_.isolation;
  ctx->serializable = i == Isolation::kSerializable;
  ctx->read_only = txn.read_only;
}

DatabaseStats DatabaseImpl::stats() const {
  DatabaseStats s;
  std::int64_t live = 0;
  std::int64_t bytes = 0;
  for (std::uint32_t i = 0; i < txns_.size(); ++i) {
    const TxnContext& c = txns_.at(i);
    live += c.versions_live.load(std::memory_order_relaxed);
    bytes += c.version_bytes_live.load(std::memory_order_relaxed);
    s.commits += c.commits.load(std::memory_order_relaxed);
    s.aborts += c.aborts.load(std::memory_order_relaxed);
    s.pruned_versions += c.pruned.load(std::memory_order_relaxed);
    // The engine's own contexts (a checkpoint in progress spans rounds) are not transactions
    // anyone opened.
    const bool system = i >= checkpoint_context() && i < first_shared_context();
    if (!system && c.in_use.load(std::memory_order_relaxed)) ++s.open_transactions;
    s.retired_versions += c.retired.load(std::memory_order_relaxed);
    s.write_conflicts += c.write_conflicts.load(std::memory_order_relaxed);
    s.ssn_aborts += c.ssn_aborts.load(std::memory_order_relaxed);
    s.phantom_aborts += c.phantom_aborts.load(std::memory_order_relaxed);
    s.serializable_commits += c.serializable_commits.load(std::memory_order_relaxed);
  }
  s.live_versions = static_cast<std::uint64_t>(live);
  s.live_version_bytes = static_cast<std::uint64_t>(bytes);
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  for (const auto& t : tables_) s.index_nodes += t->index().node_count();
  s.commit_clock = txns_.clock_now();
  s.stalls = stalls_.stalls();
  if (cold_ != nullptr) cold_->add_stats(&s);
  return s;
}

// ---- Writes -------------------------------------------------------------------------------------

Status DatabaseImpl::write(TxnContext* ctx, Table& table, std::string_view key,
                           std::string_view value, WriteKind kind, const LookupHint* hint) {
  if (options_.read_only) [[unlikely]] {
    return Status::invalid_argument("the database was opened read-only (Options::read_only)");
  }
  if (table.loading()) [[unlikely]] {
    return Status::busy("table '" + table.name() + "' is being bulk-loaded (Database::bulk_load)");
  }
  if (ctx->writes.size() >= txns_.max_writes()) {
    return Status::busy("transaction write set is full (Options::max_txn_writes = " +
                        std::to_string(txns_.max_writes()) + ")");
  }
  if (kind != WriteKind::kRemove) table.note_value_size(value.size());
  // A removal needs no entry: the tombstone hides the record from every index read.
  if (kind == WriteKind::kRemove || table.index_count() == 0) {
    std::uint64_t oid;
    const Version* prev;
    return write_primary(ctx, table, key, value, kind, hint, &oid, &prev);
  }
  SecondaryKeys keys;
  if (Status s = derive_secondary(table, key, value, &keys); !s.is_ok()) return s;
  std::uint64_t oid = 0;
  const Version* prev = nullptr;
  Status s = write_primary(ctx, table, key, value, kind, hint, &oid, &prev);
  if (s.is_ok()) add_secondary(ctx, table, key, oid, keys, prev);
  return s;
}

Status DatabaseImpl::write_primary(TxnContext* ctx, Table& table, std::string_view key,
                                   std::string_view value, WriteKind kind, const LookupHint* hint,
                                   std::uint64_t* oid_out, const Version** prev) {
  *prev = nullptr;
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    std::uint64_t oid = 0;
    bool found;
    if (attempt == 0 && hint != nullptr) {
      found = hint->found;
      oid = hint->oid;
    } else {
      found = table.index().lookup(key, &oid);
    }
    if (!found && ctx->serializable && (kind == WriteKind::kUpdate || kind == WriteKind::kRemove)) {
      // NotFound is a read of absence: keep the leaf that answered it (phantoms).
      index::Lookup l(table.index(), key);
      l.run(false);
      found = l.found();
      oid = l.value();
      if (!found) {
        if (Status s = protocol_.ssn_read_leaf(ctx, l.leaf_read()); !s.is_ok()) return s;
      }
    }
    if (!found) {
      if (kind == WriteKind::kUpdate || kind == WriteKind::kRemove) return Code::kNotFound;
      // A new record: publish the version in a fresh OID, then the key in the index.
      Result<std::uint64_t> fresh = table.oids().allocate();
      if (!fresh.is_ok()) return fresh.status();
      Version* v = protocol_.make_version(ctx, value, false);
      if (v == nullptr) return protocol_.out_of_version_memory();
      auto& slot = table.oids().entry(*fresh);
      protocol_.install_fresh(slot, v);
      std::uint64_t existing;
      index::LeafChange change;
      if (table.index().insert_if_absent(key, *fresh, &existing,
                                         ctx->serializable ? &change : nullptr,
                                         attempt == 0 && hint != nullptr ? &hint->leaf : nullptr,
                                         txns_.hint_of(v))) {
        if (ctx->serializable) protocol_.ssn_note_insert(ctx, change);
        protocol_.add_write(ctx, &table, &slot, *fresh, v, key, true);
        *oid_out = *fresh;
        return Status::ok();
      }
      // Lost a race with a concurrent insert of the same key: no index names the OID, but the
      // cold store's sweep walks OID arrays directly and may be reading the version now, so it
      // is retired, not freed (the OID itself stays unused).
      slot.store(entry::kEmpty, std::memory_order_release);
      txns_.retire(ctx, v);
      oid = existing;
    }
    Status status;
    const mvcc::Install r = protocol_.install(ctx, &table, table.oids().entry(oid), oid, key, value,
                                              kind, &status, prev);
    if (r == mvcc::Install::kDone) {
      // Our version heads the chain now (ours until we end): the leaf's value hint names it,
      // for get_op to fetch beside the entry. Only through the lookup's own leaf and slot.
      if (status.is_ok() && attempt == 0 && hint != nullptr && hint->found) {
        const std::uint64_t e = table.oids().entry(oid).load(std::memory_order_relaxed);
        if (entry::is_hot(e)) {
          table.index().set_value_hint(hint->leaf, hint->slot, txns_.hint_of(entry::hot(e)));
        }
      }
      *oid_out = oid;
      return status;
    }
    if (r == mvcc::Install::kCold) {
      // Evicted since the operation looked (the coroutine modes fetched it already, so this
      // is a narrow race there): read it back synchronously and write again.
      std::uint64_t e;
      if (Status s = cold_->fetch_sync(ColdPort::current(), ctx, &table.oids().entry(oid),
                                       table.id(), key, &e);
          !s.is_ok()) {
        return s;
      }
    }
  }
  return Status::busy("write retried too often");
}

// ---- Commit and abort ---------------------------------------------------------------------------

namespace {
// The redo record of a transaction (storage/log_format.h): its newest version of each record.
std::uint32_t record_bytes(const TxnContext* ctx) {
  std::uint64_t n = storage::kTxnHeaderBytes;
  for (const mvcc::WriteEntry& w : ctx->writes) {
    n += storage::record_size(w.key_len, w.version->tombstone() ? 0 : w.version->size);
  }
  return n > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(n);
}

// Also tells each version where its record will be on disk (its cold address, or 0 when the
// record is too big for one): eviction turns the entry into that address.
// A timestamp spent without writes (a reclamation tick, a refused serializable commit): an
// empty transaction record, since recovery reads a gap in the timestamps as the end of the log.
void append_empty_record(storage::LogWriter& w, std::uint64_t cts) {
  const storage::TxnHeader h{cts, 0, 0};
  std::memcpy(w.append(storage::kTxnHeaderBytes, cts), &h, sizeof h);
}

void encode_record(const TxnContext* ctx, std::uint64_t cts, std::uint32_t bytes,
                   const storage::LogWriter& log, char* out) {
  const storage::TxnHeader h{cts, bytes - storage::kTxnHeaderBytes,
                             static_cast<std::uint32_t>(ctx->writes.size())};
  std::memcpy(out, &h, sizeof h);
  char* p = out + sizeof h;
  for (std::size_t i = 0; i < ctx->writes.size(); ++i) {
    const mvcc::WriteEntry& w = ctx->writes[i];
    const bool tomb = w.version->tombstone();
    const std::string_view key(ctx->staged_keys.data() + w.key_off, w.key_len);
    const std::string_view value = tomb ? std::string_view() : w.version->value();
    const std::uint32_t size =
        storage::encode_record(p, tomb ? storage::WriteOp::kRemove : storage::WriteOp::kPut,
                               w.table->id(), key, value, cts);
    const storage::LogWriter::Address at = log.address_of(p);
    // The version is visible already (the timestamp was published first), so a running
    // checkpoint may have written it and moved `home` to its copy (Durability::fix): then
    // that stays, since the checkpoint may delete the segment this record lies in. Before
    // either write the word still holds the write-set index (version.h).
    std::uint64_t unset = i;
    const std::uint64_t address = storage::cold_word(at.segment, at.offset, size);
    if (!std::atomic_ref<std::uint64_t>(w.version->home)
             .compare_exchange_strong(unset, address, std::memory_order_relaxed)) {
      BRAID_DASSERT(entry::is_cold(unset));  // the checkpoint's copy
    }
    p += size;
  }
  BRAID_ASSERT(p == out + bytes);
}
}  // namespace

Status DatabaseImpl::serialization_failure() {
  return Status(Code::kConflict,
                "serialization failure: the transaction's dependencies could close a cycle "
                "(Isolation::kSerializable); retry it");
}

Status DatabaseImpl::commit(TxnContext* ctx, std::uint32_t log, std::uint64_t* cts_out) {
  std::uint64_t cts = 0;
  if (!ctx->writes.empty()) {
    storage::LogWriter* w = durability_ != nullptr ? durability_->log(log) : nullptr;
    std::uint32_t bytes = 0;
    if (w != nullptr) {
      if (durability_->halted()) {
        abort(ctx, log);
        return durability_->halt_status();
      }
      bytes = record_bytes(ctx);
      if (bytes > w->max_record_bytes()) {
        abort(ctx, log);
        return Status::busy("transaction's redo record is " + std::to_string(bytes) +
                            " bytes; the log buffer holds " +
                            std::to_string(w->max_record_bytes()) +
                            " (Options::durability.log_buffer_bytes)");
      }
      // Room in the log before the timestamp: the precommit window stays a few instructions.
      if (Status s = w->prepare(bytes); !s.is_ok()) {
        durability_->halt(s);
        abort(ctx, log);
        return durability_->halt_status();
      }
    }
    if (ctx->serializable) {
      if (!protocol_.ssn_commit(ctx, &cts)) {
        // The timestamp is spent: it is logged all the same.
        if (w != nullptr) append_empty_record(*w, cts);
        abort(ctx, log);
        return serialization_failure();
      }
    } else {
      cts = protocol_.publish_commit(ctx);
    }
    // Our versions stay allocated until finish (this context pins the reclamation epoch).
    if (w != nullptr) encode_record(ctx, cts, bytes, *w, w->append(bytes, cts));
  } else if (ctx->serializable && !protocol_.ssn_commit_read_only(ctx)) {
    abort(ctx, log);
    return serialization_failure();
  }
  mvcc::add_own(ctx->commits, 1);
  finish_txn(ctx, log);
  if (cts_out != nullptr) *cts_out = cts;
  return Status::ok();
}

void DatabaseImpl::finish_txn(TxnContext* ctx, std::uint32_t log) {
  struct Arg {
    DatabaseImpl* db;
    std::uint32_t log;
  } arg{this, log};
  const mvcc::TxnTable::LoggedTick tick{
      [](void* a) {
        auto* p = static_cast<Arg*>(a);
        return p->db->logged_tick(p->log) != 0;
      },
      &arg};
  [[maybe_unused]] const bool wants_tick = txns_.finish(ctx, &tick);
  BRAID_DASSERT(!wants_tick);
}

std::uint64_t DatabaseImpl::logged_tick(std::uint32_t log) {
  // Reclamation needs the clock to move; in a durable database every timestamp is logged (an
  // empty transaction record), or recovery would read the gap as the end of the log.
  storage::LogWriter* w = durability_->log(log);
  if (durability_->halted() || !w->prepare(storage::kTxnHeaderBytes).is_ok()) return 0;
  const std::uint64_t cts = txns_.clock().fetch_add(1, std::memory_order_seq_cst) + 1;
  append_empty_record(*w, cts);
  // The caller holds the application threads' log's mutex; the tick goes to disk before it
  // is released (a bulk load's timestamp must be durable before its parts refer to it).
  if (log == external_log() && !durability_->settle_external(true).is_ok()) return 0;
  return cts;
}

void DatabaseImpl::abort(TxnContext* ctx, std::uint32_t log) {
  protocol_.abort_begin(ctx);
  // Secondary entries before the primary keys: once a fresh key leaves the primary index, an
  // insert of it may take a new OID, and must not find our entry (which names the old one).
  remove_secondary_adds(ctx);
  // Fresh keys leave the index before their entries are emptied: a writer that still finds
  // the OID then sees an empty entry and looks the key up again (Protocol::install).
  for (auto it = ctx->writes.rbegin(); it != ctx->writes.rend(); ++it) {
    if (!it->fresh) continue;
    const std::string_view key(ctx->staged_keys.data() + it->key_off, it->key_len);
    const bool removed = it->table->index().remove(key, it->oid);
    BRAID_ASSERT(removed);
  }
  protocol_.unlink_writes(ctx);
  mvcc::add_own(ctx->aborts, 1);
  finish_txn(ctx, log);
}

Status DatabaseImpl::commit_external(TxnContext* ctx, std::uint64_t* cts) {
  if (durability_ == nullptr) return commit(ctx, external_log(), cts);
  // Application threads evict too (workers do between rounds), so a workload that runs only
  // through Transaction stays within its budget; before the log's mutex, which others wait on.
  if (cold_->budget() != 0 && cold_->over_budget()) (void)cold_->sweep(ctx, 64);
  const bool durable = durability_->durable_commits() && durability_->log(external_log());
  // Read-only: acknowledged once its snapshot is durable (what it read survives a crash).
  const std::uint64_t snapshot = ctx->snapshot;
  const bool read_only = ctx->writes.empty();
  Status s;
  {
    // Application threads share one log, and the committing thread drives its I/O itself: no
    // thread of the engine's does so under kDurable. Whatever the outcome — a refused
    // serializable commit spent a timestamp too, logged as an empty record — the log is
    // settled before the mutex is released, or its safe bound, and with it the durable clock,
    // would stay below that timestamp until some later application commit.
    std::lock_guard<std::mutex> g(durability_->external_mutex());
    s = commit(ctx, external_log(), cts);
    if (Status e = durability_->settle_external(durable); !e.is_ok()) return e;
  }
  if (!durable) {
    // A block may still be in flight and nobody waits for it: worker 0 reaps it (and submits
    // what later commits append), so the durable clock moves without another application
    // commit.
    wake_worker0(true);
    return s;
  }
  if (!s.is_ok()) return s;
  // Every earlier commit must be on disk too (other logs; their workers flush them).
  const std::uint64_t target = read_only ? snapshot : *cts;
  return durability_->wait_durable(target, read_only ? "read-only commit" : "durable commit");
}

void DatabaseImpl::abort_external(TxnContext* ctx) {
  if (durability_ == nullptr) return abort(ctx, external_log());
  std::lock_guard<std::mutex> g(durability_->external_mutex());
  // An abort appends nothing but a reclamation tick, which logged_tick settles itself.
  abort(ctx, external_log());
}

Status DatabaseImpl::checkpoint() {
  if (Status s = refuse_on_worker("Database::checkpoint()"); !s.is_ok()) return s;
  if (durability_ == nullptr) {
    return Status::invalid_argument("checkpoint: the database has no directory (in-memory)");
  }
  if (options_.read_only) {
    return Status::invalid_argument("checkpoint: the database was opened read-only");
  }
  const std::uint64_t ticket = durability_->request_checkpoint();
  wake_worker0(false);
  return durability_->wait_checkpoint(ticket);
}

DurabilityStats DatabaseImpl::durability_stats() const {
  DurabilityStats s;
  if (durability_ != nullptr) durability_->add_stats(&s);
  return s;
}

}  // namespace braid::engine
