// Opening and closing the engine: its construction, the durable directory's recovery (the
// engine is recovery's sink: recover_write), and the debug-tier invariant checks run at open and
// close.
#include "engine/database_impl.h"

#include <sched.h>

#include <cstdio>
#include <span>
#include <string>
#include <thread>

#include "engine/checks.h"
#include "engine/cold_store.h"
#include "engine/durability.h"
#include "engine/node_segments.h"
#include "engine/op_env.h"
#include "storage/log_format.h"
#include "util/assert.h"
#include "util/stall.h"
#include "util/vmem.h"

namespace braid::engine {

using mvcc::TxnContext;
using mvcc::Version;
namespace entry = mvcc::entry;
namespace cstate = mvcc::cstate;

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
  open_->store(false, std::memory_order_seq_cst);
  // A worker may be reclaiming in a free application context it borrowed (help_reclaim): that
  // context looks like an open transaction's. Such a borrow lasts one bounded reclamation
  // round; none starts after the store above.
  util::StallWatch watch(&stalls_, "close: reclamation in a borrowed context");
  for (std::uint32_t n; (n = helpers_.load(std::memory_order_acquire)) != 0;) {
    watch.turn(0, [n] { return std::to_string(n) + " help_reclaim call(s) running"; });
    std::this_thread::yield();
  }
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
  tables_published_.store(0, std::memory_order_release);
  tables_.clear();
}

void DatabaseImpl::check_invariants() {
#if defined(BRAID_DEBUG_CHECKS)
  for (const auto& t : tables_) {
    const std::size_t keys = t->index().check_invariants();
    std::size_t live = 0;
    // The leaves in memory (check_invariants counts their keys): a check reads nothing in.
    (void)t->index().visit_bottom_up([&](const index::Node& n, std::span<const std::uint64_t>) {
      for (unsigned i = 0; n.level == 0 && i < n.count; ++i) {
        const std::uint64_t named = n.tails(n.count)[i].value;
        if (!leaf_value::names_oid(named)) {  // a record named by its cold address
          BRAID_ASSERT(mvcc::entry::is_cold(named));
          ++live;
          continue;
        }
        const std::uint64_t oid = leaf_value::oid(named);
        BRAID_ASSERT(oid < t->oids().allocated());
        // A key names a chain (a removed record keeps its tombstone until it is reclaimed) or
        // a cold record's address.
        const std::uint64_t e = t->oids().entry(oid).load();
        live += mvcc::entry::is_cold(e) || mvcc::Protocol::check_chain(e) != 0 ? 1 : 0;
      }
      return std::uint64_t{0};
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
  if (Status s = check_options(o); !s.is_ok()) return s;
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
  // Loads in flight at once: one per transaction context and a multi_get's fan-out on each
  // worker (the misses), and reads ahead beyond them: kScansAhead scans' worth per worker,
  // which the scans reading ahead at once share (morsels: several per worker). One scan's
  // worth capped a worker at about 15 reads in flight whatever the number of its scans.
  constexpr std::uint32_t kScansAhead = 4;
  const std::uint32_t misses = txns_.size() + options_.workers * kMultiGetWidth;
  const std::uint32_t loads = misses + options_.workers * kScansAhead * options_.scan_read_ahead;
  cold_ = std::make_unique<ColdStore>(ColdStore::Deps{this, &txns_, &protocol_, &stalls_}, fs,
                                      loads, options_.memory_budget_bytes);
  cold_->set_ahead_reserve(misses);
  // Leaves leave memory only under a budget. Their segments are numbered from the file table,
  // whose counter the open raises above every file present before anything can evict.
  if (options_.page_index_leaves && options_.memory_budget_bytes != 0 && !options_.read_only) {
    // As big as a log segment (what a cold address reaches, checked above), in whole blocks.
    const std::uint64_t bytes =
        options_.durability.log_segment_bytes / storage::kDirectAlign * storage::kDirectAlign;
    node_segments_ =
        std::make_unique<NodeSegments>(fs.get(), cold_.get(), options_.directory, bytes);
    cold_->set_pages_index(true);
    // The budget then holds the index first and versions come and go: the heap is mostly free,
    // and only 4 KiB pages of it ever come free whole.
    txns_.set_small_heap_releases(true);
  }
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
  // The replay's descents are not uses: the leaves' hand may take any leaf it rebuilt
  // (recover_write sweeps as it goes).
  for (const auto& t : tables_) t->index().set_marks_uses(false);
  Status s = durability_->recover_and_open_logs();
  for (const auto& t : tables_) t->index().set_marks_uses(true);
  // The manifest's image, the replay's buffers and the open's checkpoint are gone; under a
  // budget their pages must not stay with the process.
  if (options_.memory_budget_bytes != 0) util::trim_heap();
  return s;
}

void DatabaseImpl::free_chain(TxnContext* ctx, std::uint64_t e) {
  if (!entry::is_hot(e)) return;
  for (Version* v = entry::hot(e); v != nullptr;) {
    Version* next = v->next.load(std::memory_order_relaxed);
    txns_.free_version(ctx, v);
    v = next;
  }
}

namespace {

// An insert of a key recovery had found absent failed: only a checkpoint's records skip the
// lookup (`fresh`), so the checkpoint holds the key twice.
Status duplicate_in_checkpoint(const Table& t, bool fresh) {
  BRAID_ASSERT(fresh);  // a lookup said absent, and nothing else runs
  return Status::corruption("recovery: the checkpoint holds a key of table " + t.name() + " twice");
}

}  // namespace

bool DatabaseImpl::names_run(std::uint64_t address) const {
  return node_segments_ != nullptr && node_segments_->is_run(address);
}

Status DatabaseImpl::recover_runs(const storage::CheckpointInfo& info,
                                  const std::vector<std::uint64_t>& files) {
  BRAID_ASSERT(adopts_runs());
  node_segments_->set_run_files(files);
  // The log's replay loads leaves from them before the open lists the files it found.
  for (std::uint64_t f : files) {
    cold_->files().add(f, options_.directory + "/" + storage::part_file_name(f));
  }
  // Runs come in key order, table by table: each table's are one stretch of the list.
  std::vector<index::BTree::StoredLeaf> leaves;
  leaves.reserve(info.run_count);  // most are one table's: no copies as the list grows
  std::uint64_t records = 0;
  std::uint32_t table = 0;
  auto adopt = [&]() -> Status {
    if (leaves.empty()) return Status::ok();
    Table* t = tables_[table].get();
    // No secondary index exists yet at open: the leaves may name records by address.
    BRAID_ASSERT(names_by_address(*t));
    if (Status s = t->index().adopt_stored_leaves(leaves); !s.is_ok()) {
      return Status(s.code(), "recovery: table " + t->name() + ": " + std::string(s.message()));
    }
    t->note_named_by_address(static_cast<std::int64_t>(records));
    leaves.clear();
    records = 0;
    return Status::ok();
  };
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < info.run_count; ++i) {
    const storage::RunView v = storage::next_run(info.runs, &at);
    if (v.run.table >= tables_.size() || tables_[v.run.table] == nullptr) {
      return Status::corruption("recovery: a checkpoint run names table " +
                                std::to_string(v.run.table) + ", which the catalog does not have");
    }
    if (v.run.table != table) {
      if (Status s = adopt(); !s.is_ok()) return s;
      table = v.run.table;
    }
    leaves.push_back({v.key, v.run.address});
    records += v.run.records;
  }
  return adopt();
}

Status DatabaseImpl::recover_write(std::uint32_t table, std::string_view key,
                                   std::string_view value, bool tombstone, std::uint64_t cts,
                                   std::uint64_t cold, bool fresh) {
  Table* t = table < tables_.size() ? tables_[table].get() : nullptr;
  if (t == nullptr) {
    return Status::corruption("recovery: a record names table " + std::to_string(table) +
                              ", which the catalog does not have");
  }
  TxnContext* ctx = &txns_.at(checkpoint_context());
  BRAID_ASSERT(!fresh || !tombstone);
  // Under a budget the records come back as addresses and the index is what grows: its inserts,
  // and the log tail's lookups, which read leaves back. The leaves' hand keeps pace with the
  // replay, as with a bulk load, so an open stays within the budget instead of holding every
  // leaf until the workers' first sweeps. Nothing else runs: it may take several moves at once
  // (a lap's end waits kMinLapSweeps moves), bounded per check, and it samples the budget at
  // each check (a sample every 16th ask is too seldom at one ask per 256 writes).
  if (node_segments_ != nullptr && ++recovered_writes_ % kRecoverySweepEvery == 0) {
    (void)cold_->catch_up_index(kRecoverySweepEvery, kRecoverySweepMoves);
  }
  std::uint64_t named = 0;  // the leaf's value (leaf_value): the record's OID or its address
  // A checkpoint's key is new: its insert below is the one descent (a lookup first would
  // double the index work of an open, most of its time).
  const index::Outcome found = fresh ? index::Outcome::kNo : t->index().lookup(key, &named);
  if (found.failed()) return index::take_load_failure("recovery");
  // The leaf stopped naming `named`. Nothing else runs and no secondary index exists before
  // the application creates one: an OID goes back at once (no transaction can hold it).
  auto forget = [&](std::uint64_t was) {
    if (!leaf_value::names_oid(was)) {
      t->note_named_by_address(-1);
      return;
    }
    auto& slot = t->oids().entry(leaf_value::oid(was));
    free_chain(ctx, slot.load(std::memory_order_relaxed));
    slot.store(entry::kEmpty, std::memory_order_relaxed);
    t->oids().release(leaf_value::oid(was));
  };
  auto set_leaf = [&](std::uint64_t to) -> Status {
    const index::Outcome replaced = t->index().replace(key, named, to);
    if (replaced.failed()) return index::take_load_failure("recovery");
    BRAID_ASSERT(static_cast<bool>(replaced));
    forget(named);
    if (!leaf_value::names_oid(to)) t->note_named_by_address(1);
    return Status::ok();
  };
  if (tombstone) {
    if (!found) return Status::ok();
    const index::Outcome removed = t->index().remove(key, named);
    if (removed.failed()) return index::take_load_failure("recovery");
    BRAID_ASSERT(static_cast<bool>(removed));
    forget(named);
    return Status::ok();
  }
  // A cold entry keeps only the record's address: recovery under a memory budget reads no
  // value (MosaicDB §2.1), and the leaf names the record by that address, so an open under a
  // budget allocates no OID for it (docs/internals/index-paging.md, decision 4).
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
  const bool by_address = entry::is_cold(e) && names_by_address(*t);
  if (found && by_address) return set_leaf(e);
  if (found && leaf_value::names_oid(named)) {
    auto& slot = t->oids().entry(leaf_value::oid(named));
    free_chain(ctx, slot.load(std::memory_order_relaxed));
    slot.store(e, std::memory_order_relaxed);
    return Status::ok();
  }
  if (!found && by_address) {
    std::uint64_t existing;
    const index::Outcome inserted = t->index().insert_if_absent(key, e, &existing);
    if (inserted.failed()) return index::take_load_failure("recovery");
    if (!inserted) return duplicate_in_checkpoint(*t, fresh);
    t->note_named_by_address(1);
    return Status::ok();
  }
  Result<std::uint64_t> oid_new = t->oids().allocate();
  if (!oid_new.is_ok()) {
    free_chain(ctx, e);
    return oid_new.status();
  }
  t->oids().entry(*oid_new).store(e, std::memory_order_relaxed);
  // A leaf that named the record by address names its OID now: the record stays in memory
  // (a value without an address, or a table that may not name addresses).
  if (found) return set_leaf(leaf_value::of_oid(*oid_new));
  std::uint64_t existing;
  const index::Outcome inserted =
      t->index().insert_if_absent(key, leaf_value::of_oid(*oid_new), &existing);
  if (!inserted) {
    t->oids().entry(*oid_new).store(entry::kEmpty, std::memory_order_relaxed);
    t->oids().release(*oid_new);
    free_chain(ctx, e);
    if (inserted.failed()) return index::take_load_failure("recovery");
    return duplicate_in_checkpoint(*t, fresh);
  }
  return Status::ok();
}

}  // namespace braid::engine
