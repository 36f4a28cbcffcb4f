// Options checked once, at open: every bound Options names, with the message that names it.
#include "engine/checks.h"

#include <sched.h>

#include <string>

#include "storage/cold_address.h"

namespace braid::engine {

Status check_options(const Options& o) {
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
  if (d.checkpoint_part_bytes != 0 && (d.checkpoint_part_bytes < (std::uint64_t{4} << 10) ||
                                       d.checkpoint_part_bytes > storage::kMaxColdOffset)) {
    return Status::invalid_argument(
        "Options::durability.checkpoint_part_bytes must be 0 (off) or 4 KiB..256 MiB");
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
  if (o.l2_cache_bytes != 0 && (o.l2_cache_bytes < (std::uint64_t{64} << 10) ||
                                o.l2_cache_bytes > (std::uint64_t{1} << 30))) {
    return Status::invalid_argument("Options::l2_cache_bytes (" + std::to_string(o.l2_cache_bytes) +
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
  if (o.scan_read_ahead > kMaxScanReadAhead) {
    return Status::invalid_argument("Options::scan_read_ahead must be at most " +
                                    std::to_string(kMaxScanReadAhead) + " (it is " +
                                    std::to_string(o.scan_read_ahead) + ")");
  }
  if (o.scan_extent_bytes % 4096 != 0 || o.scan_extent_bytes > kMaxScanExtentBytes) {
    return Status::invalid_argument("Options::scan_extent_bytes must be a multiple of 4096 up to " +
                                    std::to_string(kMaxScanExtentBytes) + " (it is " +
                                    std::to_string(o.scan_extent_bytes) + ")");
  }
  if (o.index_build_sort_bytes != 0 &&
      (o.index_build_sort_bytes < (4u << 10) || o.index_build_sort_bytes > (1u << 30))) {
    return Status::invalid_argument(
        "Options::index_build_sort_bytes must be 0 or 4 KiB..1 GiB (it is " +
        std::to_string(o.index_build_sort_bytes) + ")");
  }
  if (o.memory_budget_bytes != 0) {
    // Evicted records are read back from the log: there must be one.
    if (o.directory.empty()) {
      return Status::invalid_argument(
          "Options::memory_budget_bytes needs Options::directory (evicted records are read back "
          "from the log)");
    }
    if (d.log_segment_bytes > storage::kMaxColdOffset) {
      return Status::invalid_argument(
          "Options::durability.log_segment_bytes must be at most 256 MiB with a memory budget (a "
          "cold entry addresses 256 MiB of a segment)");
    }
  }
  return Status::ok();
}

}  // namespace braid::engine
