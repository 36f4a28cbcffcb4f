#include "bench_db.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace braid::bench {

DbFlags DbFlags::parse(Flags& flags) {
  DbFlags d;
  d.dir = flags.str("dir", "");
  d.commit = flags.choice("commit", "durable", {"durable", "async"});
  d.log_sync = flags.choice("log-sync", "fdatasync", {"fdatasync", "dsync", "direct"});
  d.log_flusher = flags.choice("log-flusher", "none", {"none", "thread"});
  d.checkpoint_mib = flags.u64("checkpoint-mib", 1024, 0, std::uint64_t{1} << 30);
  d.checkpoint_part_kib = flags.u64("checkpoint-part-kib", d.checkpoint_part_kib, 0, 256 << 10);
  d.prefault_mib = flags.u64("prefault-mib", 0, 0, std::uint64_t{1} << 20);  // max_version_bytes
  d.prefault_index_mib = flags.u64("prefault-index-mib", 0, 0, std::uint64_t{1} << 20);
  d.l2_kib = flags.u64("l2-kib", 0, 0, std::uint64_t{1} << 20);
  d.memory_budget_mib = flags.u64("memory-budget-mib", 0, 0, std::uint64_t{1} << 30);
  const Options defaults;
  const std::uint64_t paged_default =
      !defaults.page_index_leaves ? 0 : (defaults.page_index_inner ? 2 : 1);
  d.page_index = static_cast<std::uint32_t>(flags.u64("page-index", paged_default, 0, 2));
  d.page_index_asked = flags.has("page-index") && d.page_index != 0;
  d.reserve_gib = flags.u64("reserve-gib", 0, 0, std::uint64_t{1} << 20);
  d.scan_read_ahead = static_cast<std::uint32_t>(
      flags.u64("scan-read-ahead", Options{}.scan_read_ahead, 0, kMaxScanReadAhead));
  d.scan_extent_kib = static_cast<std::uint32_t>(flags.u64(
      "scan-extent-kib", Options{}.scan_extent_bytes >> 10, 0, kMaxScanExtentBytes >> 10));
  d.sq_poll_cpu = flags.str("sq-poll-cpu", "off");
  return d;
}

std::string bench_options(std::uint32_t threads, std::uint32_t batch, const DbFlags& db,
                          Options* options, bool existing) {
  options->workers = threads;
  options->slots_per_worker = std::max<std::uint32_t>(batch, 16);
  options->external_transactions = std::max<std::uint32_t>(threads, 4);
  options->exec.batch = batch;
  options->prefault_version_bytes = db.prefault_mib << 20;
  options->prefault_index_bytes = db.prefault_index_mib << 20;
  options->l2_cache_bytes = db.l2_kib << 10;
  options->scan_read_ahead = db.scan_read_ahead;
  if (db.scan_extent_kib % 4 != 0) {
    return "--scan-extent-kib takes a multiple of 4 (whole blocks), not " +
           std::to_string(db.scan_extent_kib);
  }
  options->scan_extent_bytes = db.scan_extent_kib << 10;
  if (db.reserve_gib != 0) {
    // Valgrind maps tens of GiB, not the engine's terabyte of versions and 32 GiB per table's
    // OIDs: scripts/profile-ops.sh runs with a small reservation.
    options->max_version_bytes = db.reserve_gib << 30;
    options->max_records_per_table =
        std::min<std::uint64_t>(options->max_records_per_table, (db.reserve_gib << 30) / 8);
  }
  if (db.sq_poll_cpu != "off") {
    const std::string& c = db.sq_poll_cpu;
    if (c.empty() || c.size() > 4 || c.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(c) >= CPU_SETSIZE) {
      return "--sq-poll-cpu takes off or a CPU number below " + std::to_string(CPU_SETSIZE) +
             ", not '" + c + "'";
    }
    if (db.dir.empty()) return "--sq-poll-cpu needs --dir (an in-memory database does no I/O)";
    options->durability.sq_poll_cpu = std::stoi(c);
  }
  if (db.page_index_asked && db.memory_budget_mib == 0) {
    return "--page-index " + std::to_string(db.page_index) +
           " needs --memory-budget-mib (the index leaves memory only under a budget)";
  }
  if (db.dir.empty()) {
    if (db.log_flusher == "thread") {
      return "--log-flusher needs --dir (an in-memory database logs nothing)";
    }
    if (db.memory_budget_mib != 0) {
      return "--memory-budget-mib needs --dir (evicted records are read back from it)";
    }
    return "";
  }
  options->memory_budget_bytes = db.memory_budget_mib << 20;
  options->page_index_leaves = db.page_index >= 1;
  options->page_index_inner = db.page_index >= 2;
  std::error_code ec;
  if (existing) {
    if (!std::filesystem::exists(std::filesystem::path(db.dir) / "CATALOG", ec)) {
      return "--dir " + db.dir + " holds no database (no CATALOG file) for --load existing";
    }
    options->create_if_missing = false;
  } else if (std::filesystem::exists(db.dir, ec) && !std::filesystem::is_empty(db.dir, ec)) {
    return "--dir " + db.dir + " exists and is not empty; give a new path";
  }
  const std::filesystem::path parent = std::filesystem::path(db.dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  options->directory = db.dir;
  options->durability.commit = db.commit == "async" ? CommitMode::kAsync : CommitMode::kDurable;
  options->durability.sync = db.log_sync == "dsync"    ? LogSync::kDsync
                             : db.log_sync == "direct" ? LogSync::kDirect
                                                       : LogSync::kFdatasync;
  options->durability.checkpoint_log_bytes = db.checkpoint_mib << 20;
  if (db.checkpoint_part_kib != 0 && db.checkpoint_part_kib < 4) {
    return "--checkpoint-part-kib takes 0 (parts as large as log segments) or at least 4";
  }
  options->durability.checkpoint_part_bytes = db.checkpoint_part_kib << 10;
  options->durability.flusher_thread = db.log_flusher == "thread";
  return "";
}

std::unique_ptr<Database> open_bench_db(const Options& given) {
  Options options = given;
  // The engine's long phases (a bulk load's checkpoint, for one) on the progress line.
  if (!options.progress && tools::ProgressLine::on_stderr().enabled()) {
    options.progress = tools::ProgressLine::on_stderr().sink();
  }
  Result<std::unique_ptr<Database>> opened = Database::open(options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "braid-bench: cannot open database: %s\n",
                 opened.status().to_string().c_str());
    return nullptr;
  }
  return std::move(opened).value();
}

void ColdFigures::with_leaves(const DatabaseStats& before, const DatabaseStats& after,
                              const ExecStats& exec) {
  const auto ratio = [](std::uint64_t loads, std::uint64_t visits) {
    return 1 - std::min(1.0, static_cast<double>(loads) / static_cast<double>(visits));
  };
  if (exec.index_leaf_visits != 0) {
    leaf_hit_ratio =
        ratio(after.index_leaf_loads - before.index_leaf_loads, exec.index_leaf_visits);
  }
  if (exec.index_inner_visits != 0) {
    inner_hit_ratio =
        ratio(after.index_inner_loads - before.index_inner_loads, exec.index_inner_visits);
  }
}

ColdFigures ColdFigures::of(const DatabaseStats& before, const DatabaseStats& after,
                            double seconds) {
  ColdFigures f;
  const std::uint64_t accesses = after.record_accesses - before.record_accesses;
  const std::uint64_t reads = after.cold_reads - before.cold_reads;
  const std::uint64_t misses = reads + (after.cold_read_joins - before.cold_read_joins);
  if (accesses > 0) {
    f.hit_ratio = 1 - std::min(1.0, static_cast<double>(misses) / static_cast<double>(accesses));
  }
  if (seconds > 0) {
    f.cold_reads_per_s = static_cast<double>(after.cold_read_ios - before.cold_read_ios) / seconds;
    f.cold_records_per_s = static_cast<double>(reads) / seconds;
    f.cold_read_bytes_per_s =
        static_cast<double>(after.cold_read_bytes - before.cold_read_bytes) / seconds;
    f.io_depth =
        static_cast<double>(after.cold_read_wait_ns - before.cold_read_wait_ns) / (seconds * 1e9);
  }
  f.evictions = after.evictions - before.evictions;
  return f;
}

AbortCauses AbortCauses::of(const DatabaseStats& before, const DatabaseStats& after) {
  return {after.write_conflicts - before.write_conflicts, after.ssn_aborts - before.ssn_aborts,
          after.phantom_aborts - before.phantom_aborts};
}

void AbortCauses::add_to(JsonObject& o, std::uint64_t attempts) const {
  const auto rate = [&](std::uint64_t n) {
    return attempts > 0 ? static_cast<double>(n) / static_cast<double>(attempts) : 0.0;
  };
  o.add("aborts_write_conflict", write_conflicts).add("aborts_ssn", ssn);
  o.add("aborts_phantom", phantom);
  o.add("abort_rate_write_conflict", rate(write_conflicts)).add("abort_rate_ssn", rate(ssn));
  o.add("abort_rate_phantom", rate(phantom));
}

}  // namespace braid::bench
