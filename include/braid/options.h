// Database options. Everything the engine bounds is bounded here; there are no global flags.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace braid {

// How workers run transactions (docs/internals/execution.md). All modes run the same transaction
// code and the same index and version logic; they differ only in what happens before a likely cache
// miss.
enum class ExecMode : std::uint8_t {
  kSequential,   // one transaction at a time, plain function calls, no prefetch: the baseline
  kPrefetch,     // sequential plus prefetch hints (the papers' "ERMIA" baseline)
  kNested,       // interleaved; every function on the access path is its own coroutine
  kInterleaved,  // interleaved; one flattened coroutine per operation (CoroBase's two-level)
  kAuto,         // measures online whether suspending pays, and picks mode and batch size
};

// What the schedulers do with a transaction waiting for a storage read (the cold store) is what
// tells them apart once records live on disk (MosaicDB §4.2-4.3; docs/architecture.md).
enum class SchedulerPolicy : std::uint8_t {
  kBatch,         // CoroBase Algorithm 1: admit a batch, round-robin until all of it finished; a
                  // transaction parked on a read is resumed to find out whether the read is back
  kPipeline,      // admit a new transaction as soon as a slot frees; skips slots parked on reads
  kStorageBatch,  // batch admission, but a slot parked on a read is skipped by checking the
                  // read's status, not resumed (MosaicDB Fig. 5a)
  kDualQueue,     // MosaicDB Algorithm 1: a hot queue of `batch` memory-bound transactions, a cold
                  // queue of `cold_slots` storage-bound ones checked every `cold_check_every` hot
                  // completions (or when no hot one can run), and a staging area between them
  kTeam,          // STEPS: admission as `team_admission`; the open transactions are resumed in
                  // teams of those suspended at the same code (operation x table x step), one
                  // team back-to-back, so the code the first loads into L1-I serves the rest
};

// Names of the modes and schedulers, as braid-bench and the documentation spell them
// ("sequential", "interleaved", "batch", "pipeline", ...): one mapping for every tool and
// configuration file. parse_* answer false for a name that is none of them.
std::string_view to_string(ExecMode mode);
std::string_view to_string(SchedulerPolicy scheduler);
bool parse_exec_mode(std::string_view name, ExecMode* out);
bool parse_scheduler(std::string_view name, SchedulerPolicy* out);
// Every name, in declaration order.
std::vector<std::string> exec_mode_names();
std::vector<std::string> scheduler_names();

// How ExecMode::kInterleaved reaches storage (MosaicDB §4.1, Fig. 11). kNested (selective
// nesting, the default): the memory path is one flattened coroutine per operation and a cold
// read runs in a nested coroutine, whose cost is paid only on a miss. kFlattened: the storage
// path too is inlined into the operation's coroutine. (ExecMode::kNested nests everything.)
enum class StoragePath : std::uint8_t { kNested, kFlattened };

struct ExecOptions {
  ExecMode mode = ExecMode::kInterleaved;
  SchedulerPolicy scheduler = SchedulerPolicy::kBatch;
  // Transactions a worker interleaves (at least 1; capped at slots_per_worker). The sequential
  // modes run one at a time.
  std::uint32_t batch = 8;
  // kDualQueue: the cold queue's size (storage-bound transactions parked on reads) and how many
  // hot transactions finish between two looks at it (MosaicDB §6.2: 8 / 16, every 8). The hot
  // queue is `batch`. Under kAuto, which picks the hot queue's size, the cold queue keeps the
  // ratio cold_slots / batch. batch + cold_slots is capped at slots_per_worker.
  std::uint32_t cold_slots = 16;
  std::uint32_t cold_check_every = 8;
  // kTeam (STEPS, Harizopoulos & Ailamaki, CIDR 2005): which policy admits
  // transactions and decides which may run (any but kTeam); at most `team_size` transactions
  // form one team, and a round resumes whole teams, largest first, until it resumed
  // `team_size` (so each still has that many others to hide its prefetch behind); a
  // transaction passed over `team_wait` rounds in a row runs in the next one whatever its
  // team. With batch <= team_size every round resumes every open transaction, grouped.
  SchedulerPolicy team_admission = SchedulerPolicy::kPipeline;
  std::uint32_t team_size = 8;
  std::uint32_t team_wait = 2;
  StoragePath storage_path = StoragePath::kNested;
  // A worker's cold reads wait to be issued together: up to `read_batch` go to the kernel with
  // one entry (on a virtual machine one doorbell, an exit to the hypervisor, which can cost more
  // worker time than the rest of the read), the oldest waiting at most `read_window_us`, and
  // none once the worker has nothing else to run. A storage-bound transaction gives up a little
  // latency, which the scheduler hides anyway, for worker time memory-bound ones get
  // (docs/results.md, "Reads issued together"). read_batch 1: each read at once. Sequential
  // modes wait for their own read, so it goes at once.
  std::uint32_t read_batch = 8;
  std::uint32_t read_window_us = 200;
  // Debug switches for tests: suspend at every awaiter even where the mode would not (the
  // transaction yields to the scheduler after each operation), and resume the open transactions
  // in a seeded random order instead of round-robin.
  bool force_suspend = false;
  bool shuffle_resume = false;
  std::uint64_t seed = 1;
  // Charge the workers' time to the stages of the storage path (ExecStats::storage_stage_ns):
  // two clock reads per stage entered, so off unless asked for.
  bool profile_storage = false;
};

// When a commit is acknowledged (docs/internals/durability.md).
enum class CommitMode : std::uint8_t {
  kDurable,  // only once its log record, and every earlier commit's, is on disk
  kAsync,    // at once; the log reaches the disk within one group commit (lost on a crash)
};

// How a log block is made durable (docs/internals/durability.md; docs/results.md compares them).
enum class LogSync : std::uint8_t {
  kFdatasync,  // buffered write, then fdatasync (one linked io_uring request)
  kDsync,      // buffered write with RWF_DSYNC
  kDirect,     // O_DIRECT write of 4 KiB-padded blocks, then fdatasync
};

// The I/O backend of the log and checkpoint writes.
enum class IoMode : std::uint8_t {
  kAuto,   // io_uring when the kernel allows it; otherwise synchronous writes (said on stderr)
  kUring,  // io_uring, or Database::open fails with IOError
  kSync,   // synchronous pwrite/fdatasync on the worker
};

// What Database::open does with a damaged directory (docs/internals/durability.md).
enum class RecoveryMode : std::uint8_t {
  // A missing or damaged file that held durable commits fails the open with Corruption,
  // naming the file and offset. Only a torn final block that no later durable write vouches
  // for (a group commit in flight at a crash, never acknowledged) is taken as a log's end.
  kStrict,
  // Opens the longest whole prefix of the commit order that can be read and reports what was
  // lost (DurabilityStats::recovery_problems). A writable open then makes that state the
  // database: the damaged files are replaced by a new checkpoint and deleted.
  kSalvage,
};

struct DurabilityOptions {
  CommitMode commit = CommitMode::kDurable;
  LogSync sync = LogSync::kFdatasync;
  IoMode io = IoMode::kAuto;
  // Each log has two buffers of this size; one transaction's redo record must fit in one.
  std::uint32_t log_buffer_bytes = 4u << 20;
  // A log segment file is closed and a new one started past this size.
  std::uint64_t log_segment_bytes = std::uint64_t{128} << 20;
  // Group commit: a worker submits its buffer as soon as no block is in flight, unless a delay
  // is set, in which case it waits until the oldest record waited that long, the buffer holds
  // flush_bytes (0: no size threshold), or the worker has nothing else to run.
  std::uint64_t flush_delay_us = 0;
  std::uint32_t flush_bytes = 0;
  // Worker 0 writes a checkpoint after the logs grew by this much (0: only Database::checkpoint
  // and recovery write checkpoints). Bounds recovery time.
  std::uint64_t checkpoint_log_bytes = std::uint64_t{1} << 30;
  // ... or, sooner, once they grew by this percentage of what the newest checkpoint holds
  // (0: off), but by at least checkpoint_log_min_bytes. Bounds the directory by the live
  // data: a constant live set under churn (keys inserted and removed) keeps about its newest
  // checkpoint, a part or two of the one being written (checkpoint_part_bytes) and this share
  // of log. After each checkpoint every log starts a new segment, so the next checkpoint frees
  // all the log written before it. Application threads' commits count too: one that finds a
  // checkpoint due wakes worker 0, which writes it.
  std::uint32_t checkpoint_log_percent = 50;
  std::uint64_t checkpoint_log_min_bytes = std::uint64_t{16} << 20;
  // A checkpoint writes parts of about this size (at least 4 KiB; 0: as large as log
  // segments). Each part is synced as soon as it is written, and once one is durable, a
  // manifest of the checkpoint under way lets the previous checkpoint's parts that hold only
  // keys before it go: the directory holds one checkpoint and a part or two, not two
  // checkpoints. Each such manifest costs two directory syncs and a file sync. Without a
  // memory budget only: under one, evictions may point into any part until the checkpoint
  // ends, and the previous checkpoint stays whole until then.
  std::uint64_t checkpoint_part_bytes = std::uint64_t{8} << 20;
  // Committed transactions one worker may hold waiting for durability; past it the worker
  // admits no new transaction until acknowledgements drain.
  std::uint32_t max_commit_waiters = 1u << 14;
  // A baseline to measure against, not a recommendation (MosaicDB §5, Fig. 10): a dedicated flusher
  // thread, as most engines have, submits every worker's log blocks and reaps their I/O, and
  // the workers only append records and acknowledge commits from the durable clock. The
  // thread competes with the workers for the cores (oversubscription). It checks the logs
  // every flusher_interval_us while a block is in flight or buffered, and sleeps 4x that while
  // they are idle. Default: no background thread; each worker drives its own log.
  bool flusher_thread = false;
  std::uint32_t flusher_interval_us = 20;
  // Kernel-side submission (io_uring SQPOLL): one kernel thread, pinned to CPU sq_poll_cpu,
  // takes every worker's I/O requests (cold reads, log blocks, checkpoint chunks) from their
  // rings, so a worker hands a request over by writing shared memory instead of entering the
  // kernel. On a virtual machine each submission is otherwise a doorbell write and a VM exit on
  // the worker's core, a large part of a cold read's CPU cost there. The thread spins while
  // requests keep coming and sleeps
  // after sq_poll_idle_ms without one. It takes a core: give it one no worker is pinned to.
  // -1: off (the default, no background thread). Needs io_uring (IoMode kAuto or kUring).
  std::int32_t sq_poll_cpu = -1;
  std::uint32_t sq_poll_idle_ms = 50;
};

// Isolation of a transaction (docs/architecture.md, "Serializable isolation").
//   kSnapshot      snapshot isolation with first-updater-wins: a transaction reads the state
//                  as of its begin; write skew (G2-item) and its predicate forms can commit.
//   kSerializable  the Serial Safety Net (SSN, Wang et al., VLDB J. 2017) over the same
//                  snapshots: each transaction tracks the versions it read, and at commit
//                  aborts with Conflict when its dependencies could close a cycle, so every
//                  committed history of serializable transactions is serializable. Scans and
//                  lookups that found nothing also validate the index leaves they read, so a
//                  concurrent insert into the range cannot go unnoticed (phantoms).
// The guarantee covers serializable transactions among themselves: a snapshot-isolation
// transaction that runs beside them may still form a cycle with them.
enum class Isolation : std::uint8_t { kSnapshot, kSerializable };
std::string_view to_string(Isolation isolation);
bool parse_isolation(std::string_view name, Isolation* out);  // "si" / "ssn" and the long names

// Per-transaction choices, given at begin (Database::begin, SubmitOptions::txn, Tx::configure).
struct TxnOptions {
  // Overrides Options::isolation for this transaction when set.
  bool override_isolation = false;
  Isolation isolation = Isolation::kSnapshot;
  // A declared read-only transaction: every write answers InvalidArgument. Under kSerializable
  // it commits without taking a timestamp, serialized just after the newest commit it saw.
  bool read_only = false;

  static TxnOptions with(Isolation i, bool read_only = false) {
    TxnOptions o;
    o.override_isolation = true;
    o.isolation = i;
    o.read_only = read_only;
    return o;
  }
};

// Faults the engine commits on purpose, so the history checker (tests/history) can prove it
// catches each anomaly they cause. Honoured only by builds with BRAID_DEBUG_CHECKS (the test
// builds); elsewhere Database::open refuses them with InvalidArgument.
struct DebugFaults {
  // A write over a version committed after the writer's snapshot installs anyway instead of
  // answering Conflict (lost updates).
  bool no_first_updater_wins = false;
  // Reads see other transactions' uncommitted versions (aborted and intermediate reads).
  bool dirty_reads = false;
  // Serializable commits skip SSN's exclusion-window test (write skew commits).
  bool skip_ssn_test = false;
  // A serializable writer holds its verdict this long after taking its commit timestamp, so
  // readers of its versions and other certifications wait for it (the stall detector's test).
  std::uint32_t precommit_pause_ms = 0;
  bool any() const {
    return no_first_updater_wins || dirty_reads || skip_ssn_test || precommit_pause_ms != 0;
  }
};

// Where a long phase stands: `done` of `total` `unit`s (total is an upper bound that the phase
// may finish under; its last report has done == total).
struct ProgressReport {
  const char* phase;  // "recovery: checkpoint", "recovery: log", "checkpoint"
  const char* unit;   // "records", "bytes", "keys"
  std::uint64_t done;
  std::uint64_t total;
};

// A wait that stopped making progress (Options::stall_timeout_ms): which wait, how long its
// progress has stood still, and the state it waits on (clocks, logs, what is in flight).
struct StallReport {
  const char* wait;  // "durable commit", "read-only commit", "worker commit acknowledgement",
                     // "application log flush", "serializable certification", "cold read",
                     // "checkpoint", "bulk load admission"
  std::uint64_t stalled_ms;
  std::string detail;
};

struct Options {
  // Database directory. Empty: a purely in-memory database. When set, the directory is created if
  // missing (see create_if_missing), locked against a second process, recovered at open, and
  // every commit is logged there (see durability).
  std::string directory;
  bool create_if_missing = true;
  DurabilityOptions durability;
  RecoveryMode recovery = RecoveryMode::kStrict;
  // Recover into memory and write nothing to the directory (no log, no checkpoint, no catalog,
  // no LOCK file created): `braid check`. Writes, create_table and checkpoint() answer
  // InvalidArgument. Requires an existing database directory.
  bool read_only = false;

  // Worker threads, one per core, started by Database::open. Each owns slots_per_worker
  // transaction slots (its most interleaved transactions), with their contexts pre-allocated.
  std::uint32_t workers = 1;
  std::uint32_t slots_per_worker = 64;

  // Tables a database may hold.
  std::uint32_t max_tables = 256;

  // Transactions application threads may have open at once through Database::begin() (the
  // thread-per-transaction API), beside the workers' slots.
  std::uint32_t external_transactions = 64;

  // How the workers execute submitted transactions (Database::run may override it per run).
  ExecOptions exec;
  // Pin worker i to the i-th CPU of the process's affinity mask.
  bool pin_workers = true;
  // Requests waiting per worker for Database::submit before it answers Busy.
  std::uint32_t submit_queue_depth = 1024;

  // Records (OIDs) per table. The OID array is reserved virtually at this size (8 bytes each)
  // and backed only as it grows, so a large limit costs address space, not memory.
  std::uint64_t max_records_per_table = std::uint64_t{1} << 32;

  // Writes one transaction may stage before its operations answer Busy.
  std::uint32_t max_txn_writes = std::uint32_t{1} << 20;

  // The isolation of transactions that do not choose one (TxnOptions).
  Isolation isolation = Isolation::kSnapshot;
  // Versions (and index leaves) a serializable transaction may read before its reads answer
  // Busy: its read set is what SSN checks at commit (16 bytes each).
  std::uint32_t max_txn_reads = std::uint32_t{1} << 22;

  // Address space reserved for record versions (backed only as used).
  std::uint64_t max_version_bytes = std::uint64_t{1} << 40;
  // Version memory made resident at open (rounded up to 2 MiB), for a database expected to grow
  // to about that size. Otherwise memory is faulted in as versions first use it, on the worker
  // that allocates: the kernel zeroes each fresh 2 MiB page inside the transaction that touched
  // it (on this project's VM, first touch runs at ~0.5 GB/s: a 4 ms stall per huge page). 0:
  // none. At most max_version_bytes; open fails with IOError when the memory cannot be had.
  std::uint64_t prefault_version_bytes = 0;
  // Index node memory made resident at open (rounded up to 2 MiB), shared by every table's and
  // index's B+-tree: a tree takes its next 2 MiB chunk of nodes from it while any is left, so
  // the splits of a growing table do not fault in fresh pages inside transactions (on a host
  // that backs memory lazily, a fresh huge page stalls its transaction for milliseconds). 0:
  // none. At most 2^40;
  // open fails with IOError when the memory cannot be had.
  std::uint64_t prefault_index_bytes = 0;
  // The per-core cache the trees size their choices against: a tree whose nodes outgrow it
  // has the plain modes prefetch each node whole, and a level that fits a quarter of it is
  // stepped into without a suspension (docs/architecture.md). 0: the machine's L2, as sysconf
  // reports it. Set it where that answer is wrong for the machine the figures stand for:
  // valgrind reports 256 KiB (scripts/profile-ops.sh passes the host's). 0, or 64 KiB..1 GiB.
  std::uint64_t l2_cache_bytes = 0;

  // The cold store: memory the database keeps resident, in bytes (0: unlimited, every record
  // in memory): versions and, with page_index_leaves (the default), the index's nodes and OID
  // pages too. Past it, workers (and application threads at commit)
  // evict records whose newest version is committed, durable and seen by every snapshot:
  // the entry then holds the address of that version's log record, and the next access reads it
  // back. Needs a directory; evictable records are those whose log record is at most 64 KiB.
  // Any size is valid: one below what the open transactions touch evicts every record it may
  // as soon as it may (correct, and every access a cold read: the tests' setting).
  std::uint64_t memory_budget_bytes = 0;
  // Under a budget, index leaves leave memory too (docs/internals/index-paging.md): the
  // budget then counts the index beside the versions (every tree's node frames, the OID arrays'
  // pages), a second CLOCK hand writes leaves not used since its last pass to node segments in
  // the directory, and a descent that meets one reads it back (a worker's coroutines suspend
  // on the read; the plain modes and application threads read synchronously); cold records
  // give their OIDs back. Secondary trees' leaves go too, and inner nodes with
  // page_index_inner.
  // On by default, so that a budget bounds the whole database. Off, the budget bounds version
  // memory only and the index stays whole in memory beside it: a hot set kept with its index in
  // memory, as MosaicDB keeps it, holds more records under the same figure, but the process
  // grows past the budget by the index's size. Without a budget it has no effect.
  bool page_index_leaves = true;
  // Where leaves page, inner nodes page too: the hand takes an inner node (never a root) once
  // every child of it is on storage and no descent used it since its last pass, so whole cold
  // subtrees leave memory bottom-up, and a descent that meets one reads it back level by level
  // as it reads a leaf. Off, inner nodes stay in memory and count in the budget: about one
  // node in forty, which bounds how far a table can outgrow its budget (a database some 300
  // times its budget, of 100-byte records, fills the budget with inner nodes alone).
  bool page_index_inner = true;
  // Where leaves page, the memory a create_index that builds from the table (not an attach)
  // sorts its entries in: the entries are sorted first and the tree filled in key order, so
  // its leaves go out as it grows; past this bound a sorted run is written to a `sort-N` file
  // of the directory, and the runs are merged at the end (removed after; an open removes any
  // that a crash left). Taken beside the budget for the build's length, with one small read
  // buffer per run a merge reads (merges read a bounded number of runs at once). 0: an eighth
  // of the budget, between 1 MiB and 64 MiB; else 4 KiB..1 GiB.
  std::uint64_t index_build_sort_bytes = 0;
  // Cold records a scan reads ahead of the one it is at, in the coroutine modes on a worker:
  // their reads are issued together and complete while the scan goes on with the records
  // before them, which it still delivers in key order (Umbra's asynchronous scans). 0 or 1:
  // one read at a time, each awaited before the next is issued. At most kMaxScanReadAhead. The
  // window is refilled once half of it was read, its reads handed over together, so records
  // next to each other on storage are read as one extent (up to half the window's records per
  // read). The sequential modes and application threads read one at a time.
  std::uint32_t scan_read_ahead = 32;
  // The most bytes a scan reads at once when it reads cold records itself. From its first cold
  // record on, a scan looks a few index leaves ahead, groups the cold records there that lie
  // close together in one file (a bulk load or a checkpoint writes a key range contiguously)
  // into runs of at most this size, and reads each run with one read, a few runs ahead of
  // where it is; it takes the records from there, each block read once, with no load or
  // version per record (Umbra's scans read pages, not tuples). Records cached in memory
  // between two runs are not read. Only scans at a snapshot (not serializable) of a table that
  // does not cache reads (Database::set_cache_reads) read this way, in the coroutine modes on
  // a worker with scan_read_ahead above 1. 0: never; else a multiple of 4096 up to
  // kMaxScanExtentBytes. Each worker keeps up to kScanExtentsPerWorker buffers of this size,
  // allocated on first use.
  std::uint32_t scan_extent_bytes = 128u << 10;

  // Ask for transparent huge pages on the large arenas (OID arrays, index nodes, versions).
  // Falls back quietly when the kernel refuses. Where the index pages (page_index_leaves under
  // a budget) the OID arrays take 4 KiB pages regardless: the budget counts them by the page,
  // and a huge page per table would hold memory it does not see.
  bool huge_pages = true;

  // Progress of the phases that can take long (nullptr: none): at open, reading the checkpoint
  // and replaying the logs, then writing the checkpoint that seals the recovered state; and
  // Database::checkpoint(). Called on the thread that opened the database or asked for the
  // checkpoint (never on a worker), about every 100 ms while a phase runs and once at its end
  // with done == total, so a caller can draw a progress line (braid-bench and `braid check` do,
  // on a terminal). It must not call into the database.
  std::function<void(const ProgressReport&)> progress;

  // Every wait of an application thread or a worker — on the durable clock, a log flush, a
  // serializable certification, a cold read in flight, a checkpoint — watches what it waits
  // on. When that has not moved for this long, the wait is reported once (on_stall, and
  // DatabaseStats::stalls) and goes on waiting: a stall is named instead of spinning
  // silently. 0: never reported. At most one hour.
  std::uint32_t stall_timeout_ms = 5000;
  // Where stall reports go (called on the waiting thread; it must not call into the
  // database). Empty: one line on stderr.
  std::function<void(const StallReport&)> on_stall;

  // Test builds only (see DebugFaults).
  DebugFaults debug_faults;
};

// Limits of the data model (public so applications can check before calling).
inline constexpr std::size_t kMaxKeyBytes = 255;
inline constexpr std::size_t kMaxValueBytes = 64 * 1024;
inline constexpr std::size_t kMaxTableNameBytes = 128;
inline constexpr std::size_t kMaxIndexesPerTable = 8;
// Options::scan_read_ahead at most this: the fetches a scan keeps in flight live in its frame.
inline constexpr std::uint32_t kMaxScanReadAhead = 32;
// Options::scan_extent_bytes at most this; each worker holds at most kScanExtentsPerWorker.
inline constexpr std::uint32_t kMaxScanExtentBytes = 4u << 20;
inline constexpr std::uint32_t kScanExtentsPerWorker = 32;

}  // namespace braid
