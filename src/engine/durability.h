// Durability of a database with a directory (docs/internals/durability.md; MosaicDB §3, §5):
// the catalog, one
// redo log per worker plus one for application-thread commits, recovery at open, checkpoints
// written by worker 0 as a system transaction, and the halt after a failed log write.
//
// Acknowledgement rule. A commit with timestamp c is acknowledged (kDurable) once
// durable_clock() >= c: the clock, read first, and every log's safe() bound are at or past c,
// so every transaction that could precede c in the commit order is on disk too. Workers check
// that number for their waiting commits between scheduler rounds; nothing is resumed to ask.
//
// Halt. Any failed log write or sync halts the engine for good (fsyncgate: after a failed
// fdatasync the kernel may have dropped the dirty pages, so no later sync can be trusted to
// cover them). Waiting commits then fail with IOError, new commits with writes are refused,
// and nothing is acknowledged again; reopening the database recovers from the log.
#pragma once

#include <braid/database.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint_run.h"
#include "storage/checkpoint.h"
#include "storage/file_system.h"
#include "storage/io_ring.h"
#include "storage/log_writer.h"
#include "storage/recovery.h"
#include "util/stall.h"

namespace braid::mvcc {
class Protocol;
class TxnTable;
}  // namespace braid::mvcc

namespace braid {
class Table;
}  // namespace braid

namespace braid::engine {

class ColdStore;
class TableSource;

// Where recovery replays records: the engine implements it. `cold` != 0: install that cold
// entry (the record's address) instead of a version of `value`.
class RecoverySink {
 public:
  // `fresh`: the key is known to be new (a checkpoint's record), so no lookup is needed first.
  virtual Status recover_write(std::uint32_t table, std::string_view key, std::string_view value,
                               bool tombstone, std::uint64_t cts, std::uint64_t cold,
                               bool fresh) = 0;
  // Whether the tables' trees can be built over a checkpoint's runs (index-paging.md, decision
  // 6), and building them: `files`, the parts the runs lie in, sorted.
  virtual bool adopts_runs() const = 0;
  virtual Status recover_runs(const storage::CheckpointInfo& info,
                              const std::vector<std::uint64_t>& files) = 0;

 protected:
  ~RecoverySink() = default;
};

class Durability {
 public:
  // What durability works with, all owned by the engine and outliving it: recovery's sink, and
  // what a checkpoint reads — the tables (its source), under a snapshot taken in transaction
  // context `checkpoint_context`, through the MVCC protocol and the cold store.
  struct Deps {
    RecoverySink* sink;
    const TableSource* tables;
    mvcc::TxnTable* txns;
    const mvcc::Protocol* protocol;
    ColdStore* cold;
    util::StallMonitor* stalls;
    std::uint32_t checkpoint_context;
  };
  Durability(Deps deps, const Options& options, std::shared_ptr<storage::FileSystem> fs);
  ~Durability();
  Durability(const Durability&) = delete;
  Durability& operator=(const Durability&) = delete;

  // Directory, lock and catalog (the engine creates the tables it names).
  Status open_directory(std::vector<storage::CatalogEntry>* catalog);
  // Recovery, the checkpoint that seals it, and the logs of the new generation.
  Status recover_and_open_logs();

  storage::FileSystem& fs() { return *fs_; }
  const std::string& dir() const { return dir_; }
  bool durable_commits() const { return options_.durability.commit == CommitMode::kDurable; }

  // The log of worker i; the application threads' log is log(workers).
  // Null in a read-only database (it has no logs).
  storage::LogWriter* log(std::uint32_t i) { return i < logs_.size() ? logs_[i].get() : nullptr; }
  // Worker i's I/O ring (its log's and, for worker 0, the checkpoints' requests); null in a
  // read-only database. The ring outlives the worker thread: closing drives the logs after the
  // workers stopped, so the durability layer keeps it and the worker reaps it.
  storage::IoRing* ring(std::uint32_t i) { return i < rings_.size() ? rings_[i].get() : nullptr; }
  std::mutex& external_mutex() { return external_mutex_; }

  // See the acknowledgement rule above.
  std::uint64_t durable_clock() const;
  // A number that moves whenever the durable clock does or any log completes a block: what
  // a wait on the durable clock watches for progress (util/stall.h).
  std::uint64_t durable_progress() const { return durable_progress(durable_clock()); }
  std::uint64_t durable_progress(std::uint64_t durable) const;
  // The durable clock's state for a stall report: the clocks, and per log its safe bound and
  // whether a block is in flight.
  std::string describe_durable(std::uint64_t target) const;
  // An application thread's wait for durable_clock() >= target (`what` names it in a stall
  // report). IOError once halted.
  Status wait_durable(std::uint64_t target, const char* what);
  // The application threads' log after the caller (holding external_mutex()) appended to it,
  // whatever it appended (a commit, a refused commit's empty record, a tick). `durable`:
  // returns once everything in it is on disk; otherwise once its block is submitted, and
  // worker 0 reaps it and submits what follows (external_pending). Nothing of the engine's
  // drives this log under kDurable, so every appender settles it before releasing the mutex:
  // a record left in its buffer would hold the durable clock below its timestamp for good.
  Status settle_external(bool durable);

  bool halted() const { return halted_.load(std::memory_order_acquire); }
  Status halt_status() const;
  void halt(const Status& why);

  // Catalog: persists the table list (under the engine's catalog lock).
  Status persist_catalog(const std::vector<storage::CatalogEntry>& entries);
  const storage::RecoveryReport& recovery() const { return recovery_; }

  // ---- Checkpoints (worker 0) ----
  // Asks for a checkpoint; Database::checkpoint waits for `done` to pass the returned number.
  std::uint64_t request_checkpoint();
  Status wait_checkpoint(std::uint64_t ticket);
  // What a wait on checkpoints watches for progress (keys scanned, records written,
  // checkpoints done), and its state for a stall report.
  std::uint64_t checkpoint_progress() const;
  std::string describe_checkpoint(std::uint64_t ticket) const;
  // Worker 0, each loop: starts a checkpoint when asked or when the logs grew past
  // Options::durability.checkpoint_log_bytes, and advances a running one by a bounded step.
  // True while one is running (the worker is not idle).
  bool checkpoint_step(std::uint32_t worker_index);
  // Every worker, each loop: deletes its closed segments a finished checkpoint covers (worker 0
  // also those of the application threads' log, when its mutex is free).
  void retire_segments(std::uint32_t log);
  bool checkpoint_pending() const;
  // The logs grew enough since the last checkpoint's start for the next one (any thread).
  bool checkpoint_due() const;
  // Asynchronous commits only: the application threads' log holds records not yet durable,
  // and worker 0 stays awake to drive it (such a commit does not wait for its block; a
  // durable one drives the log itself until its block is on disk).
  bool external_pending() const {
    return !durable_commits() && logs_.size() > options_.workers &&
           logs_[options_.workers]->safe() != storage::LogWriter::kAllDurable;
  }

  // A checkpoint released segments of the application threads' log that worker 0 has not
  // retired yet (it retires them when their mutex is free): worker 0 stays awake until it has,
  // or an idle store keeps them until its next commit (not once halted: nothing is retired
  // then). Worker 0's thread only.
  bool external_retire_pending() const {
    return logs_.size() > options_.workers && !halted() &&
           retire_epoch_.load(std::memory_order_acquire) != retired_epoch_[options_.workers];
  }

  // ---- Checkpoint holds (bulk loads and index builds, on application threads) ----
  // No checkpoint starts while a hold lasts: every checkpoint holds all of a bulk load or none
  // of it, and an index build reads cold records where it found them (a checkpoint may copy
  // them and delete the part). hold_checkpoints waits for a running one to end (IOError once
  // halted). Pair each successful call with release_checkpoints, then wake worker 0.
  Status hold_checkpoints();
  // The load's parts, durable: the next checkpoint counts them as wholly live, so it refers to
  // their records instead of copying them, and deletes them only when they thin out.
  void adopt_parts(const std::vector<storage::CkptPart>& parts);
  void release_checkpoints();
  // Where parts go, how big, and their numbers (checkpoints and bulk loads alike); the writer
  // adds its own callbacks.
  storage::CheckpointConfig part_config();
  std::uint64_t generation() const { return generation_; }

  void add_stats(DurabilityStats* out) const;

  // ---- Stored secondary indexes (storage/index_file.h) ----
  // An index the recovered checkpoint stores and no create_index has attached yet: its
  // descriptor, and the keys the log tail wrote in its table (their entries are derived again
  // at attach; the open's checkpoint writes them into the descriptor's dirty file).
  struct PendingIndex {
    storage::StoredIndex stored;
    std::vector<std::string> tail_keys;  // sorted, unique
  };
  // Takes table `table`'s stored index `name` (false: none, or voided because the table was
  // written since the open). Any thread, under the engine's catalog lock, with checkpoints held.
  bool take_stored_index(std::uint32_t table, std::string_view name, PendingIndex* out);
  // The stored indexes not taken yet (braid check reads their files).
  std::vector<storage::StoredIndex> stored_indexes();

 private:
  // The checkpoint's phase after its scan: each secondary index with a key version written to
  // a file of its own, the pending ones carried; false until done (bounded steps).
  Result<bool> write_indexes(std::uint32_t budget);
  Status write_checkpoint_sync(std::uint64_t generation);
  std::uint64_t add_fixup(const CheckpointFixup& f);
  void fix(std::uint64_t cookie, std::uint64_t address);
  // Whether a cold record in `file` is referred to rather than copied.
  bool referable(std::uint64_t file) const;
  // Starts reading the records that must be copied out of log segments, from the batch's
  // position on and in the leaves after it (CheckpointRun::Staged).
  Status stage_reads(Table* t);
  // Ends the batch's reads in flight, if any (a run that fails).
  void cancel_checkpoint_reads();
  // Reads a checkpoint keeps in flight on worker 0's ring (IoRing::kCheckpointRead).
  static constexpr std::uint32_t kCheckpointReads = 16;
  // How far one staging looks ahead: leaves, records to copy and their bytes (the values it
  // holds until the scan takes them; one leaf's are staged whatever their size).
  static constexpr std::uint32_t kStageLeaves = 64;
  static constexpr std::size_t kStageRecords = 4096;
  static constexpr std::uint64_t kStageBytes = std::uint64_t{4} << 20;
  // Deletes the numbered files not owned by a log writer (older generations' segments,
  // checkpoint parts) that `keep` (sorted) does not name.
  Status delete_unneeded(const std::vector<std::uint64_t>& keep);
  Status start_checkpoint();
  Result<bool> advance_checkpoint(bool wait, std::uint32_t budget);
  // Once another part of the running checkpoint is durable: the previous checkpoint's parts
  // that hold only records before it, and that nothing refers to, go, after a manifest of the
  // checkpoint under way that no longer names them is durable.
  Status pass_parts();
  void end_checkpoint(const Status& s);
  // Worker 0, each loop: reaps and submits the application threads' log when it holds
  // records not yet durable, and retires its segments (without waiting for its mutex).
  void drive_external();

  std::uint64_t log_bytes_total() const;

  const Deps deps_;
  const Options options_;
  std::string dir_;
  std::shared_ptr<storage::FileSystem> fs_;
  std::uint64_t generation_ = 0;
  std::uint64_t checkpoint_seq_ = 0;
  storage::Catalog catalog_;
  // Destroyed explicitly in ~Durability, logs and checkpoint channel before their rings.
  std::vector<std::unique_ptr<storage::IoRing>> rings_;  // one per worker
  std::vector<std::unique_ptr<storage::LogWriter>> logs_;
  std::mutex external_mutex_;

  bool open_ = false;  // recover_and_open_logs completed: the logs are ours to close
  std::atomic<bool> halted_{false};
  mutable std::mutex halt_mutex_;
  Status halt_status_;

  // Checkpoint state (worker 0 only, except the atomics and the ticket mutex).
  std::unique_ptr<CheckpointRun> ckpt_;
  std::unique_ptr<storage::IoQueue> ckpt_queue_;       // worker 0's ring, checkpoint channel
  std::unique_ptr<storage::IoQueue> ckpt_read_queue_;  // and its checkpoint-read channel
  std::uint64_t ckpt_log_bytes_at_last_ = 0;
  // Worker 0's: a checkpoint due waits for the logs to roll first (checkpoint_step), until
  // this deadline at most.
  bool ckpt_rolling_ = false;
  std::chrono::steady_clock::time_point ckpt_roll_deadline_{};
  std::uint64_t ckpt_live_bytes_ = 0;  // what the newest checkpoint holds (its parts' live bytes)
  // The logs' total at which the next checkpoint is due (DurabilityOptions' triggers), set by
  // worker 0 whenever a checkpoint starts or ends; read by any thread.
  std::atomic<std::uint64_t> ckpt_due_at_{UINT64_MAX};
  void update_checkpoint_due();
  std::atomic<std::uint64_t> ckpt_requested_{0};
  std::atomic<std::uint64_t> ckpt_done_{0};
  std::atomic<std::uint64_t> checkpoints_{0};
  std::atomic<std::uint64_t> last_checkpoint_cts_{0};
  // The running checkpoint's keys scanned and the keys it may scan (the tables' OIDs at its
  // start), for the progress of whoever waits for it.
  std::atomic<std::uint64_t> ckpt_scanned_{0};
  std::atomic<std::uint64_t> ckpt_keys_{0};
  std::atomic<std::uint64_t> ckpt_written_{0};  // records whose chunk was written, in all
  // Bulk loads against checkpoints (Dekker: each side announces itself, then looks at the
  // other, both sequentially consistent, so at least one of them backs off).
  std::atomic<std::uint32_t> checkpoint_holds_{0};
  std::atomic<bool> ckpt_active_{false};
  std::mutex adopted_mutex_;
  std::vector<storage::CkptPart> adopted_;  // drained by the next start_checkpoint
  mutable std::mutex ckpt_mutex_;
  Status ckpt_last_status_;
  // Per log: the start segment of the newest durable checkpoint (segments below it may go
  // unless `retire_keep_` names them), published under the mutex with a new epoch; each log's
  // owner retires when it sees a newer epoch.
  std::mutex retire_mutex_;
  std::vector<std::uint64_t> retire_before_;
  std::shared_ptr<const std::vector<std::uint64_t>> retire_keep_;
  std::atomic<std::uint64_t> retire_epoch_{0};
  std::vector<std::uint64_t> retired_epoch_;  // per log, its owner's
  // Worker 0's: numbered files no log writer owns (older generations' segments, checkpoint
  // parts), the parts among them, and the newest checkpoint's needed files.
  std::map<std::uint64_t, std::string> unowned_files_;
  struct PartUse {
    std::uint64_t bytes;  // the part's size
    std::uint64_t live;   // bytes of it the newest checkpoint referred to (or wrote)
  };
  std::map<std::uint64_t, PartUse> parts_;
  std::vector<std::uint64_t> last_live_;
  // Stored indexes not attached yet (take_stored_index), under pending_mutex_ (the catalog's
  // thread takes them, worker 0's checkpoints carry them).
  std::mutex pending_mutex_;
  std::vector<PendingIndex> pending_indexes_;
  // Whether the open's checkpoint has written the pending indexes' tail keys.
  bool pending_tails_written_ = false;
  // The newest durable checkpoint as a manifest under way names it, and the last record of
  // each of its parts: known once this process wrote one (the open's, then worker 0's), all
  // in the current generation.
  struct LastCheckpoint {
    bool known = false;
    storage::CheckpointBase base;
    std::vector<std::uint32_t> last_table;  // per part of base.parts
    std::vector<std::string> last_key;
  };
  LastCheckpoint last_ckpt_;
  std::atomic<std::uint64_t> parts_passed_{0};
  std::atomic<std::uint64_t> roll_misses_{0};  // checkpoints started before every log rolled

  storage::RecoveryReport recovery_;
  std::uint64_t recovered_writes_ = 0;
  // The parts an open's trees name runs in (adopt_runs), sorted: they stay while the engine
  // runs, whatever later checkpoints refer to, since a leaf never loaded still lives there.
  std::vector<std::uint64_t> run_files_;
  // The run list the open adopted, and its entries' offsets by run address (sorted): a
  // checkpoint carries a leaf still on storage as one of these runs over as it is
  // (index-paging.md, decision 6). `carry_ok_` falls once a checkpoint could not list runs
  // after carrying some (a record too big for any run): later ones read such leaves instead.
  std::string adopted_runs_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> adopted_at_;
  bool carry_ok_ = true;
  // The size of the last run list written or adopted: the next checkpoint reserves it.
  std::size_t last_run_list_bytes_ = 0;
  // The adopted run at `address`, if any.
  const std::pair<std::uint64_t, std::uint64_t>* adopted_run(std::uint64_t address) const;
  Status carry(std::uint64_t address);
  std::string io_name_;
};

}  // namespace braid::engine
