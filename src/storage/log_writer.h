// One redo log (a worker's, or the application threads' shared one): double-buffered group
// commit into segment files (MosaicDB §3: parallel logging, one log per worker).
//
// A committing transaction reserves room in the active buffer and copies its record in; the
// owner submits the active buffer as one block whenever no block is in flight (and, with a
// flush delay, once the oldest record waited that long or the buffer is past its size
// threshold), then keeps appending into the other buffer while the device works. At most one
// block is in flight per log, so after a crash only the log's last block can be torn: a bad
// block followed by a good one is corruption in the middle, not a torn tail.
//
// Durability is published as `safe()`: every record of this log with a commit timestamp at or
// below it is on disk (kAllDurable: all of them, and the next one will take a timestamp above
// the clock's value when it registers). A transaction with commit timestamp c is acknowledged
// once min(clock read first, safe() of every log) >= c, so a crash can never leave an
// acknowledged commit behind a hole in the commit order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/file_system.h"
#include "storage/log_format.h"
#include "util/vmem.h"

namespace braid::storage {

enum class SyncMethod : std::uint8_t {
  kFdatasync,  // buffered pwrite, then fdatasync (linked in io_uring)
  kDsync,      // buffered pwrite with RWF_DSYNC
  kDirect,     // O_DIRECT pwrite of 4 KiB-padded blocks, then fdatasync
};

struct LogConfig {
  std::string dir;
  std::uint64_t generation = 0;
  std::uint32_t log = 0;
  std::uint32_t buffer_bytes = 4u << 20;  // each of the two buffers
  std::uint64_t segment_bytes = 128u << 20;
  SyncMethod sync = SyncMethod::kFdatasync;
  std::uint32_t flush_bytes = 0;     // submit early once the active buffer holds this much
  std::uint64_t flush_delay_ns = 0;  // ... or its oldest record waited this long (0: at once)
  // The durable clock, stamped into every block as `acked` (null: 0). See log_format.h.
  std::function<std::uint64_t()> acked;
  // A fresh database-wide file number for the next segment (null: the previous one + 1).
  // Segments and checkpoint files share one number space, so a cold entry's file field names
  // one file for the life of the database.
  std::function<std::uint64_t()> new_file;
  // Told of every segment created (its number and path) before any record in it is placed:
  // the cold store's file table.
  std::function<void(std::uint64_t, const std::string&)> created;
  // Told of every segment deleted by retire_before.
  std::function<void(std::uint64_t)> retired;
};

class LogWriter {
 public:
  static constexpr std::uint64_t kAllDurable = ~std::uint64_t{0};

  LogWriter(FileSystem* fs, std::unique_ptr<IoQueue> queue, LogConfig config,
            const std::atomic<std::uint64_t>* clock);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Allocates the buffers and creates the first segment (synchronously, directory synced).
  Status open(std::uint64_t first_segment);

  // The largest transaction record (TxnHeader included) a block can hold.
  std::uint32_t max_record_bytes() const { return capacity_ - kBlockHeaderBytes; }

  // Makes room for a record of `bytes` in the active buffer, flushing and waiting for the
  // block in flight if it must. Then registers the commit about to take a timestamp (see
  // safe()). Error: the log failed (the engine halts).
  Status prepare(std::uint32_t bytes);
  // Copies a record of `bytes` (as passed to prepare) in; returns where to write it.
  char* append(std::uint32_t bytes, std::uint64_t cts);
  // Where the bytes at `p` (inside the record append() just answered) will be on disk: the
  // active buffer's segment and file offset are fixed when it becomes active, so a version
  // learns its record's address at commit (the cold store's eviction needs it).
  struct Address {
    std::uint64_t segment;
    std::uint64_t offset;
  };
  Address address_of(const char* p) const {
    return {block_segment_, block_offset_ + static_cast<std::uint64_t>(p - buffers_[active_])};
  }

  // Completes finished I/O and submits the next block when the policy says so; with `wait`,
  // blocks for the block in flight first. `force`: submit whatever is buffered now (the
  // worker has nothing else to do). Error: the log failed.
  Status poll(bool wait, bool force);
  // After the database halted (another log failed): only completes the block in flight, so
  // the log goes idle and its buffer is no longer the kernel's; submits nothing new.
  void reap_after_halt();

  std::uint64_t safe() const { return safe_.load(std::memory_order_seq_cst); }
  bool idle() const { return !in_flight_ && used_[active_] == 0; }
  bool in_flight() const { return in_flight_; }
  const Status& failure() const { return failure_; }

  // Asks the log to start a new segment with its next block if the open one holds at least
  // a 32nd of segment_bytes, and to drop the request otherwise (any thread; the owner acts
  // on it, and roll_requested() turns false once it did). A checkpoint asks before it
  // starts, so that its start opens a segment in every log and every segment before it can
  // go once it is durable.
  void request_roll() { roll_requested_.store(true, std::memory_order_relaxed); }
  bool roll_requested() const { return roll_requested_.load(std::memory_order_relaxed); }
  // The owner's side of a requested roll for a log with nothing buffered or in flight, which
  // has no next block to roll with: the segment closes now, or the request is dropped if the
  // segment is too small (poll does this too). Error: the log failed.
  Status roll_if_idle();

  // Deletes the closed segments numbered below `segment` (a durable checkpoint's start) except
  // those in `keep` (sorted: files cold records still live in; a later call may delete them).
  std::uint32_t retire_before(std::uint64_t segment, const std::vector<std::uint64_t>& keep = {});

  // Where the log continues now: the open segment and its first block. Any thread; a record
  // whose timestamp is taken after this call lands in that segment or a later one.
  struct Position {
    std::uint64_t segment;
    std::uint64_t block;
  };
  Position position() const;

  // A clean close: once idle, writes the kClose block (synchronously, synced), after which the
  // log takes no more records. Nothing to do after a failure.
  Status close();

  // Readable from any thread.
  struct Counters {
    std::uint64_t bytes = 0;    // block bytes written
    std::uint64_t submits = 0;  // blocks submitted (flushes + the one in flight, if any)
    std::uint64_t flushes = 0;  // blocks made durable (one sync each)
    std::uint64_t segments = 0;
    std::uint64_t retired = 0;
  };
  Counters counters() const {
    return {bytes_.load(std::memory_order_relaxed), submits_.load(std::memory_order_relaxed),
            flushes_.load(std::memory_order_relaxed), segments_.load(std::memory_order_relaxed),
            retired_.load(std::memory_order_relaxed)};
  }
  std::uint64_t appended_bytes() const { return appended_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Closed {
    std::string path;
    std::uint64_t segment;
  };
  // Creates segment `seq` (header durable, directory synced) and makes it the open one.
  Status open_segment(std::uint64_t seq);
  // Closes the open segment for the next (number `next`): the next one is created first, then
  // the old one gets its kNext block, so a kNext block always names a segment that exists
  // durably.
  Status roll_segment(std::uint64_t next);
  // Fixes where the buffer that just became active will be written: after the block in flight
  // in the open segment, or at the start of a new one when a full buffer might not fit there.
  void place_active_block();
  std::uint64_t allocate_segment();
  // Writes the header of the block in `buf` (payload already there) and its checksum.
  void stamp_block(char* buf, std::uint32_t payload, std::uint32_t padded, std::uint64_t seq,
                   std::uint32_t txns, BlockKind kind) const;
  // Writes a block without records synchronously at offset_ of the open file, and syncs it.
  Status write_marker(BlockKind kind, std::uint64_t seq, std::uint64_t next_segment);
  Status submit_active();
  Status submit_pending();
  Status complete(std::int64_t result);
  void fail(Status s);

  FileSystem* fs_;
  std::unique_ptr<IoQueue> queue_;
  LogConfig config_;
  const std::atomic<std::uint64_t>* clock_;
  std::uint32_t capacity_ = 0;
  std::uint32_t align_ = kRecordAlign;
  // The buffers' memory: mapped, not touched, so a log costs memory only as far as its blocks
  // have reached (a read-mostly database never pays for its logs' full buffers).
  util::VirtualArena arenas_[2];
  char* buffers_[2] = {nullptr, nullptr};
  std::uint32_t used_[2] = {0, 0};  // payload bytes (after the block header)
  std::uint32_t txns_[2] = {0, 0};
  std::uint64_t last_cts_ = 0;  // timestamps strictly increase within a log
  int active_ = 0;
  std::chrono::steady_clock::time_point first_append_{};

  FileId file_ = -1;
  std::string path_;
  std::uint64_t segment_ = 0;
  std::uint64_t offset_ = 0;  // where the next block goes
  std::uint64_t next_block_ = 1;
  // The active buffer's block: its segment and file offset (fixed at activation), and whether
  // that segment is a new one the submit must roll to.
  std::uint64_t block_segment_ = 0;
  std::uint64_t block_offset_ = 0;
  bool block_rolls_ = false;
  std::atomic<bool> roll_requested_{false};
  bool closed_cleanly_ = false;
  mutable std::mutex position_mutex_;
  Position position_{0, 1};
  std::vector<Closed> closed_;

  bool in_flight_ = false;
  IoRequest request_;  // the block in flight (advanced past short writes)
  std::uint64_t submit_clock_ = 0;
  Status failure_;
  std::atomic<std::uint64_t> appended_bytes_{0};
  std::atomic<std::uint64_t> bytes_{0}, submits_{0}, flushes_{0}, segments_{0}, retired_{0};
  alignas(64) std::atomic<std::uint64_t> safe_{kAllDurable};
};

}  // namespace braid::storage
