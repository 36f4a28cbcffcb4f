// The embedded database: tables, transactions, and their operations.
//
// Concurrency model. Any number of application threads may run transactions at once; a
// Transaction handle may move between threads but must not be used by two threads at the same
// time. Isolation is snapshot isolation with first-updater-wins: a transaction reads the state as
// of its begin, and a write to a record that another transaction changed since (or is changing)
// fails with Conflict, which also aborts the transaction.
//
// Lifetime rules. A Table* lives as long as its Database and is valid only with it (a Table* of
// another Database answers InvalidArgument). A view returned by get() or passed to a scan
// callback points into engine memory and stays valid until the transaction commits or aborts.
// A Transaction still open when its Database is destroyed is aborted then; every later call on
// it answers InvalidArgument ("database closed"), and destroying it does nothing.
//
// Failed writes. A write that fails with InvalidArgument, Busy or IOError (a bad key or value,
// a full write set, version memory exhausted) fails the whole transaction: its other writes
// stay staged but commit() aborts it and answers that error (all or nothing). NotFound and
// Duplicate are outcomes, not failures; Conflict aborts at once.
#pragma once

#include <braid/key.h>
#include <braid/options.h>
#include <braid/status.h>
#include <braid/task.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace braid {

class Table;
class Index;
class Database;
class Transaction;
class Tx;
class TxnGenerator;
namespace detail {
struct Request;
}  // namespace detail
namespace mvcc {
struct TxnContext;
}  // namespace mvcc
namespace engine {
class DatabaseImpl;
class WorkerPool;
}  // namespace engine

// A non-owning reference to a callable, so a scan callback costs no allocation.
template <typename Fn>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  FunctionRef() = default;  // empty: must be assigned before it is called
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_ = nullptr;
  R (*call_)(void*, Args...) = nullptr;
};

enum class ScanOrder : std::uint8_t { kForward, kReverse };

// Called once per visible record in key order; return false to stop the scan early.
using ScanCallback = FunctionRef<bool(std::string_view key, std::string_view value)>;

class Transaction {
 public:
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&& other) noexcept;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // Aborts the transaction if it is still active.
  ~Transaction();

  // The newest value of `key` visible to this transaction (its own writes included). The view
  // stays valid until commit or abort. NotFound when absent or removed.
  [[nodiscard]] Result<std::string_view> get(Table& table, std::string_view key);
  // As above, copying the value into `*value`.
  [[nodiscard]] Status get(Table& table, std::string_view key, std::string* value);
  // Creates `key`; Duplicate when a visible record exists.
  [[nodiscard]] Status insert(Table& table, std::string_view key, std::string_view value);
  // Replaces the value of an existing record; NotFound when absent.
  [[nodiscard]] Status update(Table& table, std::string_view key, std::string_view value);
  // Upsert.
  [[nodiscard]] Status put(Table& table, std::string_view key, std::string_view value);
  // Removes an existing record; NotFound when absent.
  [[nodiscard]] Status remove(Table& table, std::string_view key);
  // Visits the visible records whose keys lie in [begin, end), in the given order, at most
  // `limit` of them (0: no limit). An empty `end` means no upper bound. An operation or commit
  // of this transaction called from the callback answers InvalidArgument (as Tx's do).
  [[nodiscard]] Status scan(Table& table, std::string_view begin, std::string_view end,
                            std::size_t limit, ScanCallback callback,
                            ScanOrder order = ScanOrder::kForward);

  // Secondary-index reads (see Database::create_index). scan_index visits the records whose
  // index entries lie in [begin, end) (bounds compare against the secondary key followed by the
  // primary key); lookup_index visits the records whose secondary key equals `secondary_key`.
  // The callback receives each record's primary key and visible value.
  [[nodiscard]] Status scan_index(Index& index, std::string_view begin, std::string_view end,
                                  std::size_t limit, ScanCallback callback,
                                  ScanOrder order = ScanOrder::kForward);
  [[nodiscard]] Status lookup_index(Index& index, std::string_view secondary_key, std::size_t limit,
                                    ScanCallback callback, ScanOrder order = ScanOrder::kForward);

  // Makes the writes visible atomically. After Conflict the transaction is aborted.
  [[nodiscard]] Status commit();
  // Discards the writes. Idempotent.
  void abort();
  // After a successful commit(): its timestamp (0 for a transaction without writes).
  std::uint64_t commit_timestamp() const { return commit_ts_; }

  bool is_active() const { return ctx_ != nullptr && open_ != nullptr && open_->load(); }
  // The snapshot this transaction reads (a commit-clock value).
  std::uint64_t snapshot() const;

 private:
  friend class engine::DatabaseImpl;
  Transaction(engine::DatabaseImpl* db, mvcc::TxnContext* ctx,
              std::shared_ptr<std::atomic<bool>> open)
      : db_(db), ctx_(ctx), open_(std::move(open)) {}
  // OK, or why the transaction cannot go on (not active, its database closed).
  Status usable() const;
  Status write(Table& table, std::string_view key, std::string_view value, int kind);

  engine::DatabaseImpl* db_ = nullptr;
  mvcc::TxnContext* ctx_ = nullptr;          // null once committed or aborted
  std::shared_ptr<std::atomic<bool>> open_;  // the database's: false once it closed
  Status failed_;                            // the write that failed the transaction
  std::uint64_t commit_ts_ = 0;
};

struct DatabaseStats {
  std::uint64_t commits = 0;
  std::uint64_t aborts = 0;
  std::uint64_t live_versions = 0;  // versions allocated and not yet freed
  std::uint64_t live_version_bytes = 0;
  // The memory the version heap holds (what it carved, less the pages it gave back), and the
  // pages it gave back to the system so far: its free objects' pages go back once they
  // outgrow a quarter of what it holds (a load under a budget, a table emptied by removals).
  std::uint64_t version_heap_bytes = 0;
  std::uint64_t version_bytes_released = 0;
  std::uint64_t retired_versions = 0;  // unlinked, waiting for their epoch to pass
  std::uint64_t pruned_versions = 0;   // cut from chains because no snapshot can see them
  std::uint64_t index_nodes = 0;       // in the primary and secondary B+-trees
  std::uint64_t index_nodes_free = 0;  // left their tree by merges, kept for its later splits
  // Under a memory budget with Options::page_index_leaves, index leaves go to storage too
  // (docs/internals/index.md, "Leaves on storage"), the primary trees' and the secondary
  // trees': leaves there now, and evictions and loads of leaves so far; of them, the
  // secondary trees' leaves there now and their evictions.
  std::uint64_t index_leaves_stored = 0;
  std::uint64_t index_leaf_evictions = 0;
  std::uint64_t index_leaf_loads = 0;
  std::uint64_t secondary_leaves_stored = 0;
  std::uint64_t secondary_leaf_evictions = 0;
  // Of those loads, the ones read through a worker's ring while the operation was suspended
  // (gets, writes and scans in the coroutine modes); the rest were read synchronously by the
  // thread that met the leaf (the plain modes, application threads, workers without a ring).
  std::uint64_t index_leaf_loads_async = 0;
  // With Options::page_index_inner, inner nodes (never a root) whose children are all on
  // storage go there too: those there now, and their evictions and loads so far. The leaves'
  // figures above count leaves only.
  std::uint64_t index_inner_nodes_stored = 0;
  std::uint64_t index_inner_evictions = 0;
  std::uint64_t index_inner_loads = 0;
  // Misses on a leaf that waited for the read another transaction (on any worker or
  // application thread) had issued for it, instead of reading it again.
  std::uint64_t index_leaf_read_joins = 0;
  // Secondary indexes (Database::create_index with IndexOptions::key_version): attached to
  // their stored entries after an open, or built by reading their table; the entries the
  // attaches took from storage.
  std::uint64_t indexes_attached = 0;
  std::uint64_t indexes_built = 0;
  std::uint64_t index_entries_attached = 0;
  // Builds where the index pages sort their entries before they fill the tree
  // (Options::index_build_sort_bytes): the sorted runs they wrote to the directory, merges'
  // runs included (0 while every build's entries fit the sort's memory).
  std::uint64_t index_sort_runs = 0;
  // Leaves that an attach or a sorted build sent to storage while it filled its tree, before
  // the index was published (the leaves' hand takes the rest's share afterwards).
  std::uint64_t index_leaves_shed = 0;
  // Sweeps of the leaves' hand whose images could not be written (a full disk): those leaves
  // stayed in memory, so memory can run past the budget while this grows.
  std::uint64_t index_leaf_write_errors = 0;
  // Memory of evicted leaves' frames given back to the system so far, in bytes.
  std::uint64_t index_frame_bytes_released = 0;
  // The memory each share holds now: the index's node frames (in the trees, and free ones not
  // given back) and the OID arrays (their pages up to the highest OID, less those given back);
  // with version_heap_bytes, the engine's data in memory. The budget counts live versions;
  // where the index pages (Options::page_index_leaves) it counts every share here too: a
  // paging tree's frames (its nodes and the free frames it keeps for loads), the secondary
  // trees' frames, the OID arrays' pages and the run list below.
  std::uint64_t index_frame_bytes = 0;
  std::uint64_t oid_bytes = 0;
  // The list of runs an open over a checkpoint's runs adopted (Options::page_index_leaves under
  // a budget), kept while checkpoints carry those runs over. Where the index pages, the
  // budget counts the trees' nodes and this list too.
  std::uint64_t index_run_list_bytes = 0;
  // Records: the live ones and inserts in flight (OIDs in use, less removals waiting for
  // reclamation and OIDs waiting to be given back, plus the records named by address).
  // Exact while no reclamation runs; while it does, an OID given back during the call may be
  // missed.
  std::uint64_t records = 0;
  // Records on storage whose index leaf names them by their address and that hold no OID
  // (under a memory budget, in tables without secondary indexes).
  std::uint64_t records_named_by_address = 0;
  // Records that went cold while named by an OID and whose leaf the index's hand then made
  // name them by address, giving the OID back (Options::page_index_leaves under a budget).
  std::uint64_t records_demoted = 0;
  std::uint64_t tombstones_pending = 0;  // committed removals not reclaimed yet
  std::uint64_t records_reclaimed = 0;   // removed records whose key, versions and OID went
  std::uint64_t oids_free = 0;           // OIDs given back, allocatable again
  // Secondary-index entries left stale by removals and key-changing updates: queued, waiting
  // until no snapshot can need them, and removed.
  std::uint64_t stale_entries_pending = 0;
  std::uint64_t stale_entries_removed = 0;
  // Workers' and applications' (not the checkpoint's or eviction's contexts, nor one lent to
  // another thread to reclaim its queues).
  std::uint64_t open_transactions = 0;
  std::uint64_t commit_clock = 0;
  // The cold store (Options::memory_budget_bytes), and what the budget counts now: live
  // versions, and where the index pages every share of index_frame_bytes, oid_bytes and
  // index_run_list_bytes too (0 without a budget). Eviction keeps it near the budget; it stays
  // above only by what no hand can give back (inner nodes, the run list, OIDs of hot records,
  // a secondary tree while create_index builds it from its table).
  std::uint64_t memory_budget_bytes = 0;
  std::uint64_t memory_budget_counted_bytes = 0;
  std::uint64_t cold_reads = 0;  // records read back from storage
  // Storage reads that brought them: neighbouring records a scan meets are read together, as
  // one extent (so cold_reads / cold_read_ios is the records per read), and the bytes they
  // transferred. A read that never started (its file would not open) is an error, not a read.
  std::uint64_t cold_read_ios = 0;
  std::uint64_t cold_read_bytes = 0;
  std::uint64_t cold_read_joins = 0;  // misses that waited for a read already in flight
  // Records the ended transactions' operations reached, on any thread: a key of a get, a write
  // or a multi_get, an index entry a scan passed (a row it returned, or one it skipped as not
  // visible). The records' hit ratio over an interval: 1 - (cold_reads + cold_read_joins) /
  // record_accesses (misses are reads led or joined; a scan's records taken from its own
  // extents count as read back).
  std::uint64_t record_accesses = 0;
  std::uint64_t cold_read_errors =
      0;                         // reads that failed (I/O error or a record that did not verify)
  std::uint64_t evictions = 0;   // records turned back into cold entries
  std::uint64_t read_drops = 0;  // records read and let go at once (set_cache_reads false)
  std::uint64_t cold_read_wait_ns = 0;  // sum over reads of the time each was in flight
  // Why transactions aborted (beside those their code aborted): first-updater-wins write
  // conflicts, serializable transactions SSN refused at commit, and serializable transactions
  // whose scanned index leaves changed before they committed (phantoms).
  std::uint64_t write_conflicts = 0;
  std::uint64_t ssn_aborts = 0;
  std::uint64_t phantom_aborts = 0;
  std::uint64_t serializable_commits = 0;
  // Waits reported as stalled (Options::stall_timeout_ms): each one waited that long without
  // the thing it waits on moving.
  std::uint64_t stalls = 0;
};

// Durability of a database with a directory (all zero for an in-memory one).
struct DurabilityStats {
  bool enabled = false;
  std::string io_backend;  // "posix+io_uring", "posix+sync", "sim"
  CommitMode commit = CommitMode::kDurable;
  std::uint64_t log_bytes = 0;    // log block bytes written since open
  std::uint64_t log_flushes = 0;  // group commits made durable (one sync each)
  std::uint64_t log_segments = 0;
  std::uint64_t checkpoints = 0;
  std::uint64_t last_checkpoint_cts = 0;
  // Parts of the previous checkpoint deleted while the next one was still being written
  // (DurabilityOptions::checkpoint_part_bytes).
  std::uint64_t checkpoint_parts_passed = 0;
  // Checkpoints that started before every log had rolled to a new segment: each such log
  // keeps its segment, and all the log in it, until the next checkpoint ends.
  std::uint64_t checkpoint_roll_misses = 0;
  std::uint64_t durable_clock = 0;  // every commit at or below it is on disk
  std::uint64_t generation = 0;     // log generation (one per recovery that replayed a log)
  bool halted = false;
  std::string halt_reason;
  // What opening the database recovered.
  double recovery_seconds = 0;
  std::uint64_t recovered_checkpoint_records = 0;
  // Runs in the checkpoint's run list (one per index leaf it wrote, where the index pages:
  // Options::page_index_leaves), each checked against the records it names.
  std::uint64_t recovered_checkpoint_runs = 0;
  bool recovered_checkpoint_under_way = false;  // a checkpoint's manifest written mid-way
  std::uint64_t recovered_transactions = 0;
  std::uint64_t recovered_writes = 0;
  std::uint64_t recovery_log_bytes = 0;
  std::uint64_t recovery_dropped_transactions = 0;  // durable but after the first hole
  std::uint32_t recovery_torn_tails = 0;
  std::uint32_t recovery_checkpoint_fallbacks = 0;
  std::uint32_t recovery_clean_logs = 0;       // logs that ended in their close block
  std::uint64_t recovery_cutoff = 0;           // the newest commit timestamp recovered
  std::uint64_t recovery_acked = 0;            // the highest durable clock the logs record
  std::vector<std::string> recovery_torn;      // where each torn log tail starts
  std::vector<std::string> recovery_problems;  // damage found (RecoveryMode::kSalvage: lost)
};

// Per-worker execution counters, summed.
struct ExecStats {
  std::uint64_t transactions = 0;  // run to the end by workers (committed or aborted)
  std::uint64_t resumes = 0;       // scheduler resumptions of suspended transactions
  std::uint64_t suspends = 0;      // operation suspensions before a likely miss
  std::uint64_t frames_allocated = 0;
  std::uint64_t frames_freed = 0;
  std::uint64_t frame_heap_fallbacks = 0;  // frames too large for a size class
  std::uint64_t auto_decisions = 0;        // ExecMode::kAuto re-decisions
  std::uint32_t auto_batch = 0;            // kAuto's last decision (1: sequential)
  std::uint64_t commit_waits = 0;          // commits that waited for durability
  // Resumes of a transaction parked on a storage read to let it look whether the read is
  // back (SchedulerPolicy::kBatch only; the other policies check the read's status instead).
  std::uint64_t io_checks = 0;
  // Index contention on the workers: descents restarted because a node on the path was locked
  // or changed, and the time spent backing off before retrying.
  std::uint64_t index_restarts = 0;
  std::uint64_t index_backoff_ns = 0;
  // Under a budget with leaves on storage (Options::page_index_leaves): leaves the workers'
  // operations reached, the visit after each load included. With the loads in DatabaseStats
  // (index_leaf_loads), the leaves' hit ratio over an interval: 1 - loads / visits.
  std::uint64_t index_leaf_visits = 0;
  // The same for inner nodes other than a root (Options::page_index_inner): with
  // DatabaseStats::index_inner_loads, their hit ratio, 1 - inner loads / inner visits.
  std::uint64_t index_inner_visits = 0;
  // SchedulerPolicy::kTeam: teams resumed, and the transactions resumed in them (their ratio
  // is the mean team size; STEPS Table 4), and the most rounds in a row a resumable
  // transaction was passed over (at most ExecOptions::team_wait; 0 under the other policies).
  std::uint64_t teams = 0;
  std::uint64_t team_members = 0;
  std::uint32_t max_passed_over = 0;
  // The storage path of the workers: cold reads they issued and the kernel entries that issued
  // them, the completion passes that found some back, and the reads those passes completed
  // (the ratios: reads per submission, reads per reap). Of the reads issued, those that went
  // into the worker's registered buffers (pinned once, not per read; 0 where the backend or the
  // locked-memory limit allows none).
  std::uint64_t cold_reads_issued = 0;
  std::uint64_t cold_reads_registered = 0;
  std::uint64_t cold_read_submissions = 0;
  std::uint64_t cold_reaps = 0;
  std::uint64_t cold_reads_reaped = 0;
  // With ExecOptions::profile_storage: the workers' wall time in each stage of the storage path,
  // in ns, each stage exclusive of those inside it; the figures add up to the time the profile
  // was on. In order: other (outside the storage path), submit (request prepared and handed to
  // the kernel), reap (completion passes, less the completions), complete (verify, decode,
  // version built and installed), load table (joining or leading a load, letting it go), drop
  // (an uncached record turned cold again), wake (parked transactions made runnable), sync wait
  // (a sequential mode's spin on its read). storage_stage_name() names them.
  static constexpr int kStorageStages = 8;
  std::uint64_t storage_stage_ns[kStorageStages] = {};
};

// The name of ExecStats::storage_stage_ns[i] ("other", "submit", "reap", "complete",
// "load table", "drop", "wake", "sync wait"); "" out of range.
const char* storage_stage_name(int i);

// The secondary key of a record (see Database::create_index): fills `*out` and answers true, or
// answers false when the record has no entry in the index. Called on every write of the table
// (on the writing thread) and on index reads, so it must be cheap, pure and thread-safe.
using SecondaryKeyFn = std::function<bool(std::string_view key, std::string_view value, Key* out)>;

// How create_index treats an index stored by an earlier open (docs/internals/index-paging.md,
// "Secondary indexes"). An index created with key_version != 0 is stored by every checkpoint,
// under its name and that version; a later open's create_index with the same name and version
// attaches to the stored entries instead of reading the table (only the records written since
// they were taken are read). Bump the version whenever the key function changes what it
// derives: a stored index of another version is dropped and the index built again.
struct IndexOptions {
  // The caller's version of key_fn. 0: the index is not stored (built by every open).
  std::uint64_t key_version = 0;
  // Fail instead of building: NotFound when no index of that name is stored for the table (or
  // the table was written since the open, which voids it), InvalidArgument when the stored one
  // has another version.
  bool attach_only = false;
};

// A transaction body: called on a worker with the transaction's handle.
using TxnFunction = std::function<Task<Status>(Tx&)>;

// The handle of a submitted transaction.
class Pending {
 public:
  Pending() = default;
  Pending(Pending&& other) noexcept;
  Pending& operator=(Pending&& other) noexcept;
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  ~Pending();

  bool valid() const { return request_ != nullptr; }
  // True once the transaction committed or aborted.
  bool ready() const;
  // Blocks until then; the final Status (OK: committed, and durable under
  // CommitMode::kDurable).
  Status wait();
  // Once ready(): the commit timestamp the transaction took (0: none, or no writes). Set even
  // when the durability wait then failed (IOError after a halt): the commit happened in
  // memory, and whether it survives is up to recovery.
  std::uint64_t commit_timestamp() const;

 private:
  friend class engine::DatabaseImpl;
  friend class engine::WorkerPool;
  explicit Pending(detail::Request* r) : request_(r) {}
  detail::Request* request_ = nullptr;
};

struct SubmitOptions {
  // The worker to run on; -1 spreads submissions round-robin.
  std::int32_t worker = -1;
  // Re-runs of the transaction function after Conflict (0: report the first Conflict).
  std::uint32_t conflict_retries = 0;
  // Isolation and read-only declaration of the transaction (each re-run too).
  TxnOptions txn;
};

// One part of a morsel-driven scan (Database::scan_morsels): a key range [begin, end) of the
// table (empty `end`: no upper bound). The views stay valid until scan_morsels returns.
struct Morsel {
  std::string_view begin;
  std::string_view end;
  std::uint32_t index = 0;  // 0-based, in key order
  std::uint32_t count = 0;  // morsels in the scan
};

struct MorselOptions {
  // How finely the range is cut: about this many morsels per worker (fewer for a small table;
  // the cuts are index separators, so morsels hold similar numbers of records). More morsels
  // balance the workers better; each costs a transaction. 1..kMaxMorselsPerWorker.
  std::uint32_t morsels_per_worker = 16;
  // Morsels in flight per worker at once (Umbra's I/O depth: each one a transaction whose
  // cold reads the worker overlaps with the others'). 1..kMaxMorselDepth, and at most the
  // worker's slots (Options::slots_per_worker). 0: kDefaultMorselDepth, or the worker's slots
  // if fewer. The default keeps a worker busy while a few morsels wait at once for the first
  // read of a cold stretch; in memory more morsels cost nothing measurable (docs/results.md,
  // "Sixteen morsels in flight").
  std::uint32_t io_depth = 0;
};
inline constexpr std::uint32_t kMaxMorselDepth = 64;
inline constexpr std::uint32_t kDefaultMorselDepth = 16;
inline constexpr std::uint32_t kMaxMorselsPerWorker = 4096;

// A morsel's body: called on a worker with a read-only transaction at the scan's snapshot and
// the morsel to process (by value: the Task runs after the call returns). It reads the morsel
// with tx.scan(table, morsel.begin, morsel.end, ...) and any other table (probes of an
// index-nested-loop join) and folds what it reads into state of its own, per worker
// (tx.worker()) so no two threads touch it; the caller merges the workers' states after
// scan_morsels returns.
using MorselFunction = std::function<Task<Status>(Tx& tx, Morsel morsel)>;

// A bulk load's records (Database::bulk_load), one per call: sets *key and *value and answers
// true, or answers false after the last. The views must stay valid until the next call.
using BulkSource = FunctionRef<bool(std::string_view* key, std::string_view* value)>;

struct BulkLoadOptions {
  // Keep records in memory while version memory is within Options::memory_budget_bytes (every
  // record without a budget), as if transactions had loaded them and eviction had run; false:
  // every record starts cold and is read back on its first access (a cold table).
  bool keep_in_memory = true;
  // How many records the source will give, when the caller knows (0: unknown). Under a budget
  // where the index pages, the load then keeps only as many versions as fit beside the index
  // the rest of the records will need, so the run that follows starts with the budget full
  // and no version evicted that a leaf had to make room for. Without it the load keeps
  // versions until the budget is reached, then lets them all go (the leaves come first). A
  // wrong count costs only warmth: too high keeps fewer versions, too low falls back to the
  // rule without it.
  std::uint64_t expected_records = 0;
};

class Database {
 public:
  // Opens (creating when allowed) a database. Errors: InvalidArgument for bad options, IOError
  // when the directory cannot be created or locked, Busy when another process holds it.
  static Result<std::unique_ptr<Database>> open(const Options& options);

  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Table names are 1..kMaxTableNameBytes bytes. create_table answers Duplicate for an existing
  // name, open_table NotFound for an unknown one. Creating tables is not transactional.
  [[nodiscard]] Result<Table*> create_table(std::string_view name);
  [[nodiscard]] Result<Table*> open_table(std::string_view name);

  // Secondary index over `table`: maps each record's secondary key (from `key_fn`) to the
  // record's OID, so a read through it lands on the same version chain as the primary key and
  // sees exactly what the transaction's snapshot sees. Keys need not be unique. The engine
  // maintains it transactionally: an insert, or an update that changes the secondary key, adds
  // an entry in the writing transaction (removed again if it aborts); entries left stale by
  // updates and removals are filtered at read time by re-deriving the key from the visible
  // version, and removed once no snapshot can need them. The secondary key plus the primary
  // key must fit in kMaxKeyBytes, or the write fails with InvalidArgument before it changes
  // anything. `key_fn` must be a pure function of its arguments (it is called again, on any
  // thread, whenever an entry is checked).
  //
  // A process creates its indexes after open. Without a key version (IndexOptions) the index
  // is built from the table; with one, a stored index of that name and version is attached
  // (IndexOptions), so call create_index before the open's first write to the table, which
  // voids the stored entries. Like create_table this is not transactional: call it while no
  // transaction writes the table. Busy past kMaxIndexesPerTable, and when older versions left
  // entries to clean up but every application-thread transaction is open; Duplicate for a
  // name in use; Corruption when a stored index's file is damaged (create it with another
  // key version to build it afresh).
  [[nodiscard]] Result<Index*> create_index(Table& table, std::string_view name,
                                            SecondaryKeyFn key_fn);
  [[nodiscard]] Result<Index*> create_index(Table& table, std::string_view name,
                                            SecondaryKeyFn key_fn, const IndexOptions& options);

  // Thread-per-transaction API: starts a transaction on the calling thread; Busy when all
  // Options::external_transactions are open. `txn` chooses its isolation and declares it
  // read-only (TxnOptions).
  [[nodiscard]] Result<Transaction> begin(const TxnOptions& txn = {});

  // Coroutine API (see <braid/tx.h>). submit() hands a transaction to a worker through its
  // lock-free queue and returns at once; Busy when the queue is full. execute() is the blocking
  // convenience form: submit and wait.
  [[nodiscard]] Result<Pending> submit(TxnFunction fn, const SubmitOptions& options = {});
  [[nodiscard]] Status execute(TxnFunction fn, const SubmitOptions& options = {});

  // Runs generators[i] on worker i (one per worker, null for none) with the given execution
  // options until every generator is exhausted; blocks the caller. Busy while another run is
  // in progress.
  [[nodiscard]] Status run(std::span<TxnGenerator* const> generators, const ExecOptions& exec);

  ExecStats exec_stats() const;

  // Morsel-driven analytics (Umbra §3, HyPer's morsels): splits [begin, end) of `table` (empty
  // `end`: no upper bound) into morsels and runs `fn` once per morsel on the workers, up to
  // MorselOptions::io_depth morsels in flight per worker, each a read-only transaction at one
  // snapshot common to all (taken at the call: the scan sees one consistent state, whatever
  // commits meanwhile). Blocks the caller until every morsel ran. OK when every morsel
  // answered OK; otherwise the first failure (morsels not yet started are skipped, those in
  // flight finish). InvalidArgument for bad options, a range with begin >= end, a table of
  // another database, or a call from a worker; Busy when every application-thread
  // transaction is open (the scan holds one to keep its snapshot's versions alive).
  [[nodiscard]] Status scan_morsels(Table& table, std::string_view begin, std::string_view end,
                                    const MorselOptions& options, MorselFunction fn);

  // Writes a checkpoint now (on worker 0, beside its transactions) and waits for it to be
  // durable; the log segments it covers are deleted. InvalidArgument for an in-memory
  // database.
  [[nodiscard]] Status checkpoint();

  // Loads a table straight to storage (docs/internals/cold-store.md): records are written into
  // checkpoint parts, not through the log, and the table's entries name them (cold) unless kept in
  // memory, so a table many times larger than memory loads in bounded memory, and checkpoints refer
  // to the parts instead of copying them. For a table created for it: InvalidArgument when the
  // table holds keys or has secondary indexes (create them after the load), or the database has no
  // directory or is read-only; Busy while another load fills it. Keys in any order; a key
  // given twice is Duplicate, an invalid key or value InvalidArgument (both name the record's
  // position). While it runs, writes to the table and create_index on it answer Busy and no
  // checkpoint starts; readers may read the table and see records as they are loaded (all with
  // one commit timestamp, taken at the start). It ends with a checkpoint: on OK every record is
  // durable, a crash before loses every one, and a load that fails removes what it added. Only
  // a transaction already writing the table when the load begins escapes the Busy: start a load
  // on a table nobody writes.
  [[nodiscard]] Status bulk_load(Table& table, BulkSource next,
                                 const BulkLoadOptions& options = {});
  // Whether records of `table` that a read (get, multi_get, scan) brings back from storage stay
  // in memory (the default) or turn cold again as soon as the reading transaction has them, so
  // every read of a cold record is an I/O: MosaicDB's uncached cold store (§6.2), for a table
  // read once in a long while, an analytical scan that should leave memory as it found it, or
  // a benchmark that needs a steady stream of reads. Records written stay in memory until
  // evicted; a scan stopped early keeps the few records it had read ahead. Not persistent: a
  // reopened table caches.
  // InvalidArgument for a table of another database.
  [[nodiscard]] Status set_cache_reads(Table& table, bool cache);
  DurabilityStats durability_stats() const;

  DatabaseStats stats() const;
  const Options& options() const;

 private:
  friend class engine::WorkerPool;
  Database(std::unique_ptr<engine::DatabaseImpl> impl, std::unique_ptr<engine::WorkerPool> workers);
  std::unique_ptr<engine::DatabaseImpl> impl_;   // the engine
  std::unique_ptr<engine::WorkerPool> workers_;  // its threads; stopped before it closes
};

}  // namespace braid
