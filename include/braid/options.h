// Database options. Everything the engine bounds is bounded here; there are no global flags.
#pragma once

#include <cstdint>
#include <string>

namespace braid {

// How workers run transactions (DESIGN §3). All modes run the same transaction code and the same
// index and version logic; they differ only in what happens before a likely cache miss.
enum class ExecMode : std::uint8_t {
  kSequential,   // one transaction at a time, plain function calls, no prefetch: the baseline
  kPrefetch,     // sequential plus prefetch hints (the papers' "ERMIA" baseline)
  kNested,       // interleaved; every function on the access path is its own coroutine
  kInterleaved,  // interleaved; one flattened coroutine per operation (CoroBase's two-level)
  kAuto,         // measures online whether suspending pays, and picks mode and batch size
};

enum class SchedulerPolicy : std::uint8_t {
  kBatch,     // CoroBase Algorithm 1: admit a batch, round-robin until all of it finished
  kPipeline,  // admit a new transaction as soon as a slot frees
};

struct ExecOptions {
  ExecMode mode = ExecMode::kInterleaved;
  SchedulerPolicy scheduler = SchedulerPolicy::kBatch;
  // Transactions a worker interleaves (at least 1; capped at slots_per_worker). The sequential
  // modes run one at a time.
  std::uint32_t batch = 8;
  // Debug switches for tests: suspend at every awaiter even where the mode would not (the
  // transaction yields to the scheduler after each operation), and resume the open transactions
  // in a seeded random order instead of round-robin.
  bool force_suspend = false;
  bool shuffle_resume = false;
  std::uint64_t seed = 1;
};

struct Options {
  // Database directory. Empty: a purely in-memory database. When set, the directory is created if
  // missing (see create_if_missing) and locked against a second process opening it. The redo log
  // that makes it durable is not written yet (see docs/architecture.md, "Not yet built").
  std::string directory;
  bool create_if_missing = true;

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

  // Address space reserved for record versions (backed only as used).
  std::uint64_t max_version_bytes = std::uint64_t{1} << 40;

  // Ask for transparent huge pages on the large arenas (OID arrays, index nodes, versions).
  // Falls back quietly when the kernel refuses.
  bool huge_pages = true;
};

// Limits of the data model (public so applications can check before calling).
inline constexpr std::size_t kMaxKeyBytes = 255;
inline constexpr std::size_t kMaxValueBytes = 64 * 1024;
inline constexpr std::size_t kMaxTableNameBytes = 128;

}  // namespace braid
