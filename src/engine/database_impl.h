// The engine behind the public Database and Transaction handles.
//
// The record-access path (docs/architecture.md): key → index descent → OID → OID-array entry →
// version chain, newest first, to the first version visible to the reader's snapshot. Writes
// install a new head by CAS over a visible committed head (first-updater-wins) and prune below it.
#pragma once

#include <braid/database.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/durability.h"
#include "engine/table.h"
#include "index/chunk_pool.h"
#include "mvcc/protocol.h"
#include "mvcc/txn.h"
#include "storage/file_system.h"
#include "util/cpu_cache.h"
#include "util/stall.h"

namespace braid::detail {
struct OpState;
}  // namespace braid::detail

namespace braid::engine {

using mvcc::WriteKind;

// The result of an index lookup the caller already did (so a write need not repeat it).
struct LookupHint {
  bool found = false;
  std::uint64_t oid = 0;
  // The leaf the lookup ended on, at the version it validated (BTree::insert_if_absent's `at`),
  // and the slot it found the key in (BTree::set_value_hint).
  index::LeafRead leaf{};
  unsigned slot = 0;
};

// A primary leaf that names its record by the cold address `named` (leaf_value) instead of an
// OID: the record takes an OID first (docs/internals/index-paging.md, decision 4), a fresh one
// holding the address, swapped into the leaf under the leaf's lock (BTree::replace); then the
// key is looked up again, so *hint (found, OID, leaf read and slot) comes from a lookup that
// saw the OID, as the caller's SSN and insert-at-leaf need. Not found: the key went
// meanwhile. A read of the record follows as for any cold entry. Synchronous (the record's own
// read, which follows, is the latency that matters); bounded by ColdStore::kMaxMissRounds.
Status promote(Table& table, std::string_view key, std::uint64_t named, LookupHint* hint);

// A finished primary lookup of `key` as a hint, its record promoted first when the leaf names
// it by address. Copied out so the stepper (key and fences, hundreds of bytes) need not live on
// in a coroutine frame across the suspensions that follow.
inline Status hint_of(Table& table, std::string_view key, const index::Lookup& lookup,
                      LookupHint* hint) {
  const std::uint64_t named = lookup.value();
  *hint = LookupHint{lookup.found(), leaf_value::oid_or_zero(named), lookup.leaf_read(),
                     lookup.leaf_slot()};
  if (hint->found && !leaf_value::names_oid(named)) [[unlikely]] {
    return promote(table, key, named, hint);
  }
  return Status::ok();
}

class Durability;
class ColdStore;
class NodeSegments;

// The threads that run the engine's transactions (the worker pool, engine/worker_pool.h) as
// the engine itself needs them: it wakes worker 0 when work for it arrives by another path
// than its queue (a checkpoint request, an application thread's asynchronous log block, the
// end of a bulk load), and refuses a blocking call made on one of them. The engine never
// includes the workers; the pool registers itself here.
class Executor {
 public:
  // Rings worker `i`'s doorbell.
  virtual void wake(std::uint32_t i) = 0;
  // The same, only if it sleeps (cheap: after the caller published what its idle check reads).
  virtual void wake_if_sleeping(std::uint32_t i) = 0;
  // Whether the calling thread is one of this engine's workers.
  virtual bool on_worker_thread() const = 0;

 protected:
  ~Executor() = default;
};

// The engine: tables and indexes, the MVCC protocol over its transaction contexts, the write
// and commit paths, durability and the cold store. Its transactions run on application threads
// (Transaction) and on the workers (engine/worker.h), which call into it; it runs none itself.
class DatabaseImpl final : public TableSource, public RecoverySink {
 public:
  // Opens the engine (recovering a directory), without workers: engine/worker_pool.h starts
  // them and builds the public handle. `fs`: the file system for a database with a directory
  // (tests pass a simulated one); null picks the real one per Options::durability.io.
  static Result<std::unique_ptr<DatabaseImpl>> open(
      const Options& options, std::shared_ptr<storage::FileSystem> fs = nullptr);
  ~DatabaseImpl();
  // Application threads' transactions still open are aborted, and their handles answer
  // "database closed" from here on (Transaction::usable). Idempotent; the closing handle calls
  // it before the workers stop.
  void close_external();
  // The worker pool registers itself (null: it stopped).
  void set_executor(Executor* executor) { executor_ = executor; }

  Result<Table*> create_table(std::string_view name);
  Result<Table*> open_table(std::string_view name);
  Result<Index*> create_index(Table& table, std::string_view name, SecondaryKeyFn key_fn,
                              const IndexOptions& options);
  // create_index's work, under a checkpoint hold.
  Result<Index*> build_index(Table& table, std::string_view name, SecondaryKeyFn key_fn,
                             const IndexOptions& options);
  // An attach's work (build_index): `sec` takes the stored entries as hints, and `visit`
  // (build_index's per-record step) each key written since they were taken; *attached
  // counts the entries taken from storage.
  Status attach_entries(Table& table, Index* sec, const Durability::PendingIndex& stored,
                        const std::function<void(std::string_view, std::uint64_t)>& visit,
                        std::uint64_t* attached);
  // After the `inserted`th insert into `tree`, which is filled in key order and not yet
  // published: where the index pages under a budget, evicts the leaves behind the last insert
  // when the tree holds more than its share (the constants below). A full disk keeps the
  // leaves (counted as the hand's write errors): the fill goes on in memory, as the hand would.
  void shed_unpublished(index::BTree& tree, std::uint64_t inserted, std::string* hand,
                        std::size_t* evicted);
  // A sorted build's memory bound (Options::index_build_sort_bytes).
  std::size_t build_sort_bytes() const;
  Result<Transaction> begin(const TxnOptions& txn = {});
  // Applies a transaction's options (isolation, read-only) to its fresh context.
  void configure(mvcc::TxnContext* ctx, const TxnOptions& txn) const;
  // Moves a transaction that has not read anything yet back to an older snapshot, which a
  // transaction the caller holds open keeps alive (its pin is at or below it): the morsels of
  // one scan read one state (Database::scan_morsels).
  void share_snapshot(mvcc::TxnContext* ctx, std::uint64_t snapshot) const;
  // The Conflict of a transaction SSN refused at commit.
  static Status serialization_failure();
  DatabaseStats stats() const;
  const Options& options() const { return options_; }
  // Whether a primary leaf of `table` may name a record by its cold address instead of an OID
  // (docs/internals/index-paging.md, decision 4). Only under a budget (without one nothing
  // leaves memory, and the scans skip the check), and only in a table without secondary
  // indexes: their entries name OIDs, so create_index gives every such record one first.
  bool names_by_address(const Table& table) const {
    return options_.memory_budget_bytes != 0 && table.index_count() == 0;
  }
  // Whether a reader may meet a primary leaf naming a record by address: in any table under a
  // budget, since an index attached after an open (create_index) finds the open's addresses.
  bool leaves_may_name_addresses() const { return options_.memory_budget_bytes != 0; }
  // Options::l2_cache_bytes, or the machine's L2 when it is 0: what each tree is sized against.
  std::size_t l2_cache_bytes() const {
    return options_.l2_cache_bytes != 0 ? static_cast<std::size_t>(options_.l2_cache_bytes)
                                        : util::l2_cache_bytes();
  }
  mvcc::TxnTable& txns() { return txns_; }

  // Writes of an active transaction (reads go through access.h). With a hint, the first
  // attempt uses the caller's lookup instead of repeating it.
  Status write(mvcc::TxnContext* ctx, Table& table, std::string_view key, std::string_view value,
               WriteKind kind, const LookupHint* hint = nullptr);
  // Commits; with a directory, the redo record goes to log `log` (a worker's index, or
  // external_log() under the durability's external mutex). *cts: the commit timestamp (0 for
  // a transaction without writes). Not durable yet: see Durability's acknowledgement rule.
  Status commit(mvcc::TxnContext* ctx, std::uint32_t log, std::uint64_t* cts);
  void abort(mvcc::TxnContext* ctx, std::uint32_t log);
  std::uint32_t external_log() const { return options_.workers; }
  Durability* durability() { return durability_.get(); }
  // The cold store: null without a directory.
  ColdStore* cold() { return cold_.get(); }
  // Thread-per-transaction commit: logs, and under CommitMode::kDurable waits for the disk.
  Status commit_external(mvcc::TxnContext* ctx, std::uint64_t* cts);
  void abort_external(mvcc::TxnContext* ctx);
  Status checkpoint();
  Status bulk_load(Table* table, BulkSource next, const BulkLoadOptions& options);
  DurabilityStats durability_stats() const;

  // Recovery and checkpoints (single-threaded at open; checkpoints read under a snapshot).
  // `cold` != 0: install that cold entry instead of a version of `value`.
  Status recover_write(std::uint32_t table, std::string_view key, std::string_view value,
                       bool tombstone, std::uint64_t cts, std::uint64_t cold, bool fresh) override;
  // Whether a leaf on storage at `address` is a checkpoint's run (not a node image).
  bool names_run(std::uint64_t address) const;
  // Where the index pages (node_segments_), an open builds each tree over the checkpoint's runs.
  bool adopts_runs() const override { return node_segments_ != nullptr; }
  Status recover_runs(const storage::CheckpointInfo& info,
                      const std::vector<std::uint64_t>& files) override;
  std::uint32_t table_count() const override;
  Table* table_at(std::uint32_t id) const override;
  std::uint32_t checkpoint_context() const { return options_.workers * options_.slots_per_worker; }
  // Worker i's eviction sweeps run as tiny system transactions in this context: pinned while
  // they read versions (another sweep may evict and free one under an unpinned reader), and
  // its limbo holds what they evict until the horizon passes.
  std::uint32_t eviction_context(std::uint32_t worker) const {
    return checkpoint_context() + 1 + worker;
  }
  // Application threads' contexts start here; the engine's own (checkpoint, eviction) end here.
  std::uint32_t first_shared_context() const { return eviction_context(options_.workers); }
  // Ends a transaction's context (after its commit or abort, or a system transaction's work):
  // frees what the horizon allows, and logs a tick on `log` when reclamation asks for one.
  void finish_txn(mvcc::TxnContext* ctx, std::uint32_t log);
  // Ends a context the engine began for its own work on an application thread (create_index's
  // stale entries and its sweeps): on the application threads' log, under its mutex.
  void finish_own_txn(mvcc::TxnContext* ctx);
  // Reclamation of removed records (reclaim.cc). queue_tombs: at commit, the transaction's
  // removals join its context's queue. reclaim_records: at a transaction's end, before its
  // context is let go, reclaims what the horizon and the durable clock allow (bounded) and
  // gives back the OIDs whose epoch has passed.
  void queue_tombs(mvcc::TxnContext* ctx, std::uint64_t cts);
  void reclaim_records(mvcc::TxnContext* ctx);
  // Works on the queues of free application-thread contexts (a few per call), ending each
  // such borrowed context through `log` as finish_txn does.
  void help_reclaim(std::uint32_t log);
  // Takes and logs a timestamp (on the application threads' log, under its mutex: on disk when
  // it returns). 0: halted, or no room in the log.
  std::uint64_t logged_tick(std::uint32_t log);

  // Blocking calls made from a transaction body (which would wait for the very worker they run
  // on) answer InvalidArgument instead of hanging: worker threads know their worker
  // (Worker::current).
  Status refuse_on_worker(const char* what) const;

  // The MVCC protocol over this database's contexts (src/mvcc/protocol.h).
  const mvcc::Protocol& protocol() const { return protocol_; }
  mvcc::Protocol& protocol() { return protocol_; }
  // Where every bounded wait reports a stall (Options::stall_timeout_ms).
  util::StallMonitor* stall_monitor() { return &stalls_; }

 private:
  // A write's secondary keys, derived before the write changes anything (secondary.cc).
  struct SecondaryKeys {
    std::uint32_t count = 0;
    bool present[kMaxIndexesPerTable] = {};
    Key keys[kMaxIndexesPerTable];
  };
  Status derive_secondary(Table& table, std::string_view key, std::string_view value,
                          SecondaryKeys* out);
  // After the write installed `value` for `oid`: adds the entries the new version needs
  // (`prev`: the version it replaced, whose entries exist already) and stages the entries of
  // `prev` that the new version does not derive as stale. IOError or Corruption when an entry's
  // leaf is on storage and cannot be read in (a paging tree): the transaction is then marked
  // to abort at its commit (TxnContext::failed_write), since its record is installed already.
  [[nodiscard]] Status add_secondary(mvcc::TxnContext* ctx, Table& table, std::string_view key,
                                     std::uint64_t oid, const SecondaryKeys& keys,
                                     const mvcc::Version* prev);
  void remove_secondary_adds(mvcc::TxnContext* ctx);
  // Stages the entry secondary ‖ key → oid as stale (mvcc::StaleEntry); stage_stale_of stages
  // every entry `prev` derives (a removal's).
  void stage_stale(mvcc::TxnContext* ctx, Index* sec, std::string_view secondary,
                   std::string_view key, std::uint64_t oid);
  void stage_stale_of(mvcc::TxnContext* ctx, Table& table, std::string_view key, std::uint64_t oid,
                      const mvcc::Version* prev);
  // At commit: the staged stale entries join the queue with the timestamp. At abort: dropped.
  void seal_stale(mvcc::TxnContext* ctx, std::uint64_t cts);
  void drop_staged_stale(mvcc::TxnContext* ctx);
  // Removes the queued stale entries no snapshot needs any more (reclaim.cc), bounded.
  void reclaim_stale(mvcc::TxnContext* ctx);
  enum class StaleOutcome : std::uint8_t { kRemoved, kKept, kRetry };
  StaleOutcome reclaim_stale_entry(const mvcc::StaleEntry& s, std::string_view entry_key,
                                   std::uint64_t horizon);
  void reclaim_tombs(mvcc::TxnContext* ctx);
  void note_reclaim_work(mvcc::TxnContext* ctx);
  // finish_txn without reclamation: the clock tick reclamation may want, and the context's end.
  void end_context(mvcc::TxnContext* ctx, std::uint32_t log);
  // Transaction ends between two visits of help_reclaim, per context.
  static constexpr std::uint32_t kHelpEvery = 64;
  // kDropped: the record was written again since (or is gone); kRetry: a write on the
  // tombstone may still abort, so the tomb must be asked again later.
  enum class TombOutcome : std::uint8_t { kReclaimed, kDropped, kRetry };
  TombOutcome reclaim_tomb(mvcc::TxnContext* ctx, const mvcc::Tomb& t);
  void release_oids(mvcc::TxnContext* ctx);
  Status write_primary(mvcc::TxnContext* ctx, Table& table, std::string_view key,
                       std::string_view value, WriteKind kind, const LookupHint* hint,
                       std::uint64_t* oid, const mvcc::Version** prev);

  explicit DatabaseImpl(const Options& options);
  Status open_durable(std::shared_ptr<storage::FileSystem> fs);
  Table* add_table(std::string_view name);
  // Frees a whole version chain; only where no reader can hold it (closing, recovery).
  void free_chain(mvcc::TxnContext* ctx, std::uint64_t entry);
  // Debug tier (BRAID_DEBUG_CHECKS), with no transaction open: every tree's structural
  // invariants, every primary key naming a live chain, every chain ordered. Run after open
  // (recovery included) and before close, so every test that opens a database runs it.
  void check_invariants();
  // Wakes worker 0 (if there are workers), when work for it came by another path.
  void wake_worker0(bool only_if_sleeping) {
    if (executor_ == nullptr) return;
    if (only_if_sleeping) {
      executor_->wake_if_sleeping(0);
    } else {
      executor_->wake(0);
    }
  }

  Options options_;
  util::StallMonitor stalls_;
  // Options::prefault_index_bytes: declared before the tables and indexes, so it outlives
  // their trees.
  index::ChunkPool index_pool_;
  // False once the database is closing: a Transaction that outlives it answers an error.
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(true);
  mvcc::TxnTable txns_;
  mvcc::Protocol protocol_;
  std::unique_ptr<ColdStore> cold_;  // with a directory; outlives the durability layer
  // Where index leaves go under a budget (with a writable directory): declared
  // before the tables, so it outlives their trees, and after the cold store, whose file table
  // it reads through.
  std::unique_ptr<NodeSegments> node_segments_;
  // The ids secondary trees carry in their node images: the top bit, which no table id reaches
  // (Options::max_tables is checked far below it), and the index's place in indexes_ below.
  static constexpr std::uint32_t kSecondaryTreeIds = std::uint32_t{1} << 31;
  // A tree filled in key order before it is published (an attach, or a sorted build) where the
  // index pages sends leaves out once it holds more than the budget's share below, looking
  // every kAttachShrinkEvery entries (shed_unpublished).
  static constexpr std::uint64_t kAttachShareDivisor = 4;
  static constexpr std::uint64_t kAttachShrinkEvery = 4096;
  // A sorted build's memory when Options::index_build_sort_bytes is 0: the budget over the
  // divisor, within the bounds.
  static constexpr std::uint64_t kBuildSortDivisor = 8;
  static constexpr std::uint64_t kBuildSortMinBytes = std::uint64_t{1} << 20;
  static constexpr std::uint64_t kBuildSortMaxBytes = std::uint64_t{64} << 20;
  // A build from the table reads the evicted records it meets in passes of at most this many
  // (their addresses wait in memory meanwhile, outside the budget): the budget over the
  // divisor in addresses, within the bounds; the upper bound without a budget.
  static constexpr std::uint64_t kColdPassDivisor = 16;
  static constexpr std::size_t kColdPassMin = std::size_t{1} << 12;
  static constexpr std::size_t kColdPassMax = std::size_t{1} << 20;
  std::size_t build_cold_pass() const;
  // A build from the table moves the leaves' hand every kBuildSweepEvery records it visits,
  // up to kBuildSweepMoves moves while over budget (build_index).
  static constexpr std::uint32_t kBuildSweepEvery = 256;
  static constexpr std::uint32_t kBuildSweepMoves = 64;
  // The replay's writes, how often its leaves' hand looks at the budget, and the most moves it
  // makes then (recover_write).
  static constexpr std::uint32_t kRecoverySweepEvery = 256;
  static constexpr std::uint32_t kRecoverySweepMoves = 64;
  // How often stats() reads the tables' OID counts again while reclamation moves them.
  static constexpr int kStatsRereads = 8;
  std::uint64_t recovered_writes_ = 0;
  std::unique_ptr<Durability> durability_;
  mutable std::mutex catalog_mutex_;
  // Reserved to Options::max_tables at open, so no push moves an element: table_at() reads an
  // element below tables_published_ without the catalog mutex (the eviction hand and the
  // budget's sample ask on a worker's path; a create_index holds the mutex for its build).
  std::vector<std::unique_ptr<Table>> tables_;
  std::atomic<std::uint32_t> tables_published_{0};
  std::unordered_map<std::string, Table*> by_name_;
  std::vector<std::unique_ptr<Index>> indexes_;
  std::unordered_map<std::string, Index*> index_by_name_;
  std::atomic<std::uint64_t> indexes_attached_{0};
  std::atomic<std::uint64_t> indexes_built_{0};
  std::atomic<std::uint64_t> index_entries_attached_{0};
  std::atomic<std::uint64_t> index_sort_runs_{0};
  std::atomic<std::uint64_t> index_leaves_shed_{0};
  Executor* executor_ = nullptr;
  std::atomic<std::uint32_t> help_cursor_{0};  // help_reclaim's round-robin
  // help_reclaim calls borrowing free application-thread contexts now: close_external waits
  // for them, so that it never takes a borrowed context for an open application transaction.
  std::atomic<std::uint32_t> helpers_{0};
};

}  // namespace braid::engine
