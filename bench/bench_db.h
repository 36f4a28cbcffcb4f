// Database options shared by the sub-commands that run the engine (ycsb, tpcc).
#pragma once

#include <braid/database.h>
#include <braid/options.h>

#include <cstdint>
#include <memory>
#include <string>

#include "flags.h"
#include "report.h"

namespace braid::bench {

// --dir / --commit / --log-sync / --checkpoint-mib / --prefault-mib / --prefault-index-mib /
// --l2-kib / --memory-budget-mib / --reserve-gib.
struct DbFlags {
  std::string dir;          // database directory ("": in memory)
  std::string commit;       // durable | async
  std::string log_sync;     // fdatasync | dsync | direct
  std::string log_flusher;  // none | thread (DurabilityOptions::flusher_thread)
  std::uint64_t checkpoint_mib = 1024;
  std::uint64_t checkpoint_part_kib = Options{}.durability.checkpoint_part_bytes >> 10;
  std::uint64_t prefault_mib = 0;        // Options::prefault_version_bytes, in MiB
  std::uint64_t prefault_index_mib = 0;  // Options::prefault_index_bytes, in MiB
  std::uint64_t l2_kib = 0;              // Options::l2_cache_bytes, in KiB (0: the machine's)
  std::uint64_t reserve_gib = 0;         // Options::max_version_bytes, in GiB (0: the default)
  std::uint64_t memory_budget_mib = 0;   // Options::memory_budget_bytes, in MiB (0: none)
  // Under a budget: 0 the index stays in memory, 1 leaves page (Options::page_index_leaves),
  // 2 inner nodes too (Options::page_index_inner).
  std::uint32_t page_index = 2;
  bool page_index_asked = false;        // --page-index 1 or 2 given: it needs a budget
  std::uint32_t scan_read_ahead = 16;   // Options::scan_read_ahead
  std::uint32_t scan_extent_kib = 128;  // Options::scan_extent_bytes, in KiB
  std::string sq_poll_cpu = "off";      // off | a CPU (DurabilityOptions::sq_poll_cpu)

  static DbFlags parse(Flags& flags);
};

// The engine options of a benchmark run: `threads` workers with room for `batch` open
// transactions and for kAuto's candidates (up to 16), the prefault, and, with --dir, a fresh
// database directory (an existing one would already hold the benchmark's keys; its parents are
// created), or with `existing` the database an earlier run left there. Returns an error
// message for the usage text, or "" after filling `options`.
std::string bench_options(std::uint32_t threads, std::uint32_t batch, const DbFlags& db,
                          Options* options, bool existing = false);

// Opens the benchmark's database; on failure prints why (to stderr) and answers null.
std::unique_ptr<Database> open_bench_db(const Options& options);

// The cold store's figures over one run (between two stats() snapshots).
struct ColdFigures {
  // Of the records the run's operations reached (DatabaseStats::record_accesses), the share
  // found in memory: a miss is a cold read led or joined. 1 when nothing was reached.
  double hit_ratio = 1;
  // Of the index leaves the workers' operations reached (leaves on storage: --page-index), the
  // share found in memory: 1 - loads / visits (ExecStats::index_leaf_visits); 1 with no leaf
  // out. Set by with_leaves().
  double leaf_hit_ratio = 1;
  // The same for the inner nodes below the roots (--page-index 2): 1 - inner loads / visits.
  double inner_hit_ratio = 1;
  double cold_reads_per_s = 0;    // storage reads (an extent of neighbouring records is one)
  double cold_records_per_s = 0;  // records those reads brought back
  double cold_read_bytes_per_s = 0;
  double io_depth = 0;  // mean storage reads in flight (Little's law: total wait / run time)
  std::uint64_t evictions = 0;
  static ColdFigures of(const DatabaseStats& before, const DatabaseStats& after, double seconds);
  // `exec`: the workers' counters over the same interval (exec_delta).
  void with_leaves(const DatabaseStats& before, const DatabaseStats& after, const ExecStats& exec);
};

// Why transactions aborted over one run (between two stats() snapshots): first-updater-wins
// conflicts, SSN's exclusion window, phantom validation. The JSON gets each count and its rate
// per attempted transaction.
struct AbortCauses {
  std::uint64_t write_conflicts = 0;
  std::uint64_t ssn = 0;
  std::uint64_t phantom = 0;
  static AbortCauses of(const DatabaseStats& before, const DatabaseStats& after);
  void add_to(JsonObject& o, std::uint64_t attempts) const;
};

}  // namespace braid::bench
