#include "engine/durability.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <shared_mutex>
#include <thread>

#include "engine/cold_store.h"
#include "engine/table.h"
#include "mvcc/chain_walk.h"
#include "mvcc/txn.h"
#include "storage/cold_address.h"
#include "storage/index_file.h"
#include "storage/log_format.h"
#include "storage/node_segment.h"
#include "storage/sort_run.h"
#include "util/assert.h"
#include "util/progress.h"
#include "util/stall.h"

namespace braid::engine {

namespace {

storage::SyncMethod sync_method(LogSync s) {
  switch (s) {
    case LogSync::kFdatasync:
      return storage::SyncMethod::kFdatasync;
    case LogSync::kDsync:
      return storage::SyncMethod::kDsync;
    case LogSync::kDirect:
      return storage::SyncMethod::kDirect;
  }
  return storage::SyncMethod::kFdatasync;
}

// Replays records into the engine's tables (single-threaded, before the workers start).
// Under a memory budget a record is installed as its address, not its value (MosaicDB §2.1):
// an open costs time in proportion to the index and stays within the budget.
class EngineApplier final : public storage::Applier {
 public:
  EngineApplier(RecoverySink* sink, bool cold, std::vector<std::uint64_t>* run_files,
                std::string* runs, std::vector<std::pair<std::uint64_t, std::uint64_t>>* runs_at,
                std::vector<Durability::PendingIndex>* pending)
      : pending_(pending),
        sink_(sink),
        cold_(cold),
        run_files_(run_files),
        runs_(runs),
        runs_at_(runs_at) {}
  bool adopts_runs() const override { return sink_->adopts_runs(); }
  Status adopt_runs(storage::CheckpointInfo* taken) override {
    const storage::CheckpointInfo& info = *taken;
    runs_at_->reserve(info.run_count);
    std::size_t at = 0;
    for (std::uint64_t i = 0; i < info.run_count; ++i) {
      const std::size_t entry = at;
      const std::uint64_t address = storage::next_run(info.runs, &at).run.address;
      run_files_->push_back(storage::cold(address).segment);
      runs_at_->emplace_back(address, entry);
    }
    std::sort(runs_at_->begin(), runs_at_->end());
    std::sort(run_files_->begin(), run_files_->end());
    run_files_->erase(std::unique(run_files_->begin(), run_files_->end()), run_files_->end());
    run_files_->shrink_to_fit();
    Status s = sink_->recover_runs(info, *run_files_);
    // Kept for carrying runs over, without a copy: ~30 bytes a run.
    *runs_ = std::move(taken->runs);
    return s;
  }
  Status put(std::uint32_t table, std::string_view key, std::string_view value, std::uint64_t cts,
             std::uint64_t address) override {
    ++writes;
    note_tail(table, key);
    return sink_->recover_write(table, key, value, false, cts, cold_ ? address : 0, fresh_);
  }
  Status remove(std::uint32_t table, std::string_view key, std::uint64_t cts) override {
    ++writes;
    note_tail(table, key);
    return sink_->recover_write(table, key, {}, true, cts, 0, false);
  }
  void stored_indexes(const std::vector<storage::StoredIndex>& indexes) override {
    for (const storage::StoredIndex& si : indexes) {
      pending_->push_back({si, {}});
      tail_keys_.emplace(si.desc.table, std::vector<std::string>());
    }
  }
  // The stored indexes with the keys the log tail wrote in their tables.
  void finish_pending() {
    for (auto& [table, keys] : tail_keys_) {
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    }
    for (Durability::PendingIndex& p : *pending_) p.tail_keys = tail_keys_[p.stored.desc.table];
    tail_keys_.clear();
  }
  Status ref(std::uint32_t table, std::string_view key, std::uint64_t entry) override {
    ++writes;
    return sink_->recover_write(table, key, {}, false, 0, entry, fresh_);
  }
  void checkpoint_applied() override { fresh_ = false; }
  std::uint64_t writes = 0;

 private:
  // A write of the log tail in a table with a stored index: its entries are derived again
  // when the index is attached (the stored ones are as of the checkpoint).
  void note_tail(std::uint32_t table, std::string_view key) {
    if (fresh_ || tail_keys_.empty()) return;
    const auto it = tail_keys_.find(table);
    if (it != tail_keys_.end()) it->second.emplace_back(key);
  }
  std::vector<Durability::PendingIndex>* pending_;
  std::map<std::uint32_t, std::vector<std::string>> tail_keys_;
  RecoverySink* sink_;
  const bool cold_;
  std::vector<std::uint64_t>* run_files_;
  std::string* runs_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>>* runs_at_;
  bool fresh_ = true;  // the checkpoint's records: each key new
};

}  // namespace

Durability::Durability(Deps deps, const Options& options, std::shared_ptr<storage::FileSystem> fs)
    : deps_(deps), options_(options), dir_(options.directory), fs_(std::move(fs)) {
  io_name_ = fs_->name();
}

Durability::~Durability() {
  if (ckpt_ != nullptr) end_checkpoint(Status::io_error("database closed during a checkpoint"));
  // A clean close leaves nothing buffered (async commits included); the workers are gone, so
  // this thread may drive their logs.
  // Only an open that completed writes anything here: a failed one left no log to close.
  bool flushed = open_ && !halted();
  for (auto& log : logs_) {
    while (!log->idle() && log->failure().is_ok()) {
      if (!log->poll(true, true).is_ok()) break;
    }
    flushed = flushed && log->idle() && log->failure().is_ok();
  }
  // Then every log ends in its close block, stamped with the final durable clock: a later
  // recovery knows that everything up to it existed, whichever files go missing.
  for (auto& log : logs_) {
    if (flushed) flushed = log->close().is_ok();
  }
  // Logs first: their destructors wait for the block in flight.
  logs_.clear();
  ckpt_queue_.reset();
  ckpt_read_queue_.reset();
  rings_.clear();
}

Status Durability::open_directory(std::vector<storage::CatalogEntry>* catalog) {
  const bool ro = options_.read_only;
  if (Status s = fs_->open_dir(dir_, options_.create_if_missing && !ro); !s.is_ok()) return s;
  if (Status s = fs_->lock_dir(dir_, !ro); !s.is_ok()) return s;
  bool present = false;
  if (Status s = storage::read_catalog(*fs_, dir_, &catalog_, &present); !s.is_ok()) return s;
  *catalog = catalog_.tables;
  if (!present && ro) {
    return Status::invalid_argument("'" + dir_ +
                                    "' is not a BraidDB database (it has no CATALOG file)");
  }
  if (ro) return Status::ok();
  if (!present) {
    // Without a catalog there must be nothing else of a database here.
    std::vector<std::string> names;
    if (Status s = fs_->list(dir_, &names); !s.is_ok()) return s;
    for (const std::string& n : names) {
      storage::LogName ln{};
      if (storage::parse_log_file_name(n, &ln) || n.rfind("CHECKPOINT-", 0) == 0) {
        return Status::corruption("'" + dir_ + "' holds " + n + " but no CATALOG file");
      }
    }
    // A new database: its (empty) catalog is what marks the directory as one.
    if (Status s = storage::write_catalog(*fs_, dir_, catalog_); !s.is_ok()) return s;
  }
  return Status::ok();
}

Status Durability::persist_catalog(const std::vector<storage::CatalogEntry>& entries) {
  storage::Catalog next = catalog_;
  next.tables = entries;
  if (Status s = storage::write_catalog(*fs_, dir_, next); !s.is_ok()) return s;
  catalog_ = std::move(next);
  return Status::ok();
}

Status Durability::recover_and_open_logs() {
  storage::FileTable* files = &deps_.cold->files();
  if (!options_.read_only) {
    // The replay may send leaves to new node segments (under a budget, DatabaseImpl::
    // recover_write): their numbers must lie above every file present, and the segments of an
    // earlier open, which nothing names (docs/internals/index-paging.md), go first.
    std::vector<std::string> names;
    if (Status s = fs_->list(dir_, &names); !s.is_ok()) return s;
    for (const std::string& name : names) {
      storage::LogName ln{};
      std::uint64_t n = 0;
      if (storage::parse_log_file_name(name, &ln)) {
        files->reserve_through(ln.segment);
      } else if (storage::parse_part_file_name(name, &n) ||
                 storage::parse_index_file_name(name, &n)) {
        files->reserve_through(n);
      } else if (storage::parse_node_segment_name(name, &n) ||
                 storage::parse_sort_run_file_name(name, &n)) {
        // A sorted run is a build's only while it runs (storage/sort_run.h): one found here
        // was left by a crash.
        files->reserve_through(n);
        if (Status s = fs_->remove(dir_ + "/" + name); !s.is_ok()) return s;
      }
    }
  }
  EngineApplier apply(deps_.sink, options_.memory_budget_bytes != 0, &run_files_, &adopted_runs_,
                      &adopted_at_, &pending_indexes_);
  const storage::RecoveryMode mode = options_.recovery == RecoveryMode::kSalvage
                                         ? storage::RecoveryMode::kSalvage
                                         : storage::RecoveryMode::kStrict;
  if (Status s = storage::recover(*fs_, dir_, deps_.txns->clock_now(), catalog_.generation, apply,
                                  mode, &recovery_, options_.progress);
      !s.is_ok()) {
    return s;
  }
  apply.finish_pending();
  last_run_list_bytes_ = adopted_runs_.size();
  // The adopted run list is the index's memory, counted in the budget while it is kept.
  if (!adopted_at_.empty()) {
    deps_.cold->set_held_bytes(adopted_runs_.capacity() +
                               adopted_at_.capacity() * sizeof(adopted_at_[0]));
  }
  // Adopted runs applied no record one by one.
  recovered_writes_ =
      apply.writes + (recovery_.checkpoint_adopted ? recovery_.checkpoint_records : 0);
  generation_ = recovery_.generation;
  checkpoint_seq_ = recovery_.checkpoint_seq;
  last_checkpoint_cts_.store(recovery_.checkpoint_cts, std::memory_order_relaxed);
  auto& clock = deps_.txns->clock();
  clock.store(std::max(recovery_.cutoff, clock.load()), std::memory_order_seq_cst);
  // Cold entries may point into any numbered file present until the open's checkpoint says
  // which ones it still needs.
  for (const auto& [number, name] : recovery_.numbered_files) {
    files->add(number, dir_ + "/" + name);
    unowned_files_.emplace(number, name);
    std::uint64_t part = 0;
    // A part found at open counts as whole until the open's checkpoint measures it.
    if (storage::parse_part_file_name(name, &part)) parts_[number] = {1, 1};
  }
  if (options_.read_only) return Status::ok();

  // Seal the recovered state in a new generation, above every generation present, so that no
  // file of an older open can be mistaken for one of ours. The order makes every crash point
  // recoverable and every file that must exist known:
  //   1. the new logs, each a segment with its header durable (a crash here leaves segments
  //      without blocks, which the next recovery ignores);
  //   2. the checkpoint that names them as its continuation, then the catalog's generation
  //      (from here on a checkpoint of an older generation is not enough);
  //   3. only then the old files go, so records past the cutoff can never be replayed.
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t generation = recovery_.max_generation + 1;
  // File numbers are database-wide and never reused: the new logs' start above every file
  // present.
  files->reserve_through(recovery_.max_file);
  const std::uint32_t n = options_.workers + 1;
  retired_epoch_.assign(n, 0);
  retire_before_.assign(n, 0);
  retire_keep_ = std::make_shared<const std::vector<std::uint64_t>>();
  for (std::uint32_t i = 0; i < n; ++i) {
    storage::LogConfig c;
    c.dir = dir_;
    c.generation = generation;
    c.log = i;
    c.buffer_bytes = options_.durability.log_buffer_bytes;
    c.segment_bytes = options_.durability.log_segment_bytes;
    c.sync = sync_method(options_.durability.sync);
    c.flush_bytes = options_.durability.flush_bytes;
    c.flush_delay_ns = options_.durability.flush_delay_us * 1000;
    c.acked = [this] { return durable_clock(); };
    c.new_file = [files] { return files->allocate(); };
    c.created = [files](std::uint64_t n, const std::string& path) { files->add(n, path); };
    c.retired = [files](std::uint64_t n) { files->forget(n); };
    // Worker i's log goes through worker i's ring; the application threads' log (i ==
    // workers) is driven by whichever thread commits, so it keeps a queue of its own.
    std::unique_ptr<storage::IoQueue> queue;
    // A worker's ring carries its log's block and sync, the checkpoint's chunks and reads
    // (kCheckpointReads) and up to 64 cold reads (ColdReader::kMaxInFlight).
    Result<std::unique_ptr<storage::IoQueue>> q = fs_->make_queue(i < options_.workers ? 112 : 8);
    if (!q.is_ok()) return q.status();
    if (i < options_.workers) {
      rings_.push_back(std::make_unique<storage::IoRing>(std::move(*q)));
      queue = rings_.back()->channel(storage::IoRing::kLog);
    } else {
      queue = std::move(*q);
    }
    auto log = std::make_unique<storage::LogWriter>(fs_.get(), std::move(queue), c, &clock);
    if (Status s = log->open(files->allocate()); !s.is_ok()) return s;
    logs_.push_back(std::move(log));
  }
  ckpt_queue_ = rings_.front()->channel(storage::IoRing::kCheckpoint);
  ckpt_read_queue_ = rings_.front()->channel(storage::IoRing::kCheckpointRead);
  if (Status s = write_checkpoint_sync(generation); !s.is_ok()) return s;
  storage::Catalog sealed = catalog_;
  sealed.generation = generation;
  if (Status s = storage::write_catalog(*fs_, dir_, sealed); !s.is_ok()) return s;
  catalog_ = std::move(sealed);
  // The old generation's files go, but for those the checkpoint's references need.
  if (Status s = delete_unneeded(last_live_); !s.is_ok()) return s;
  if (Status s = fs_->sync_dir(dir_); !s.is_ok()) return s;
  open_ = true;
  recovery_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::ok();
}

std::uint64_t Durability::durable_clock() const {
  std::uint64_t d = deps_.txns->clock().load(std::memory_order_seq_cst);
  for (const auto& log : logs_) d = std::min(d, log->safe());
  return d;
}

std::uint64_t Durability::durable_progress(std::uint64_t durable) const {
  std::uint64_t flushes = 0;
  for (const auto& log : logs_) flushes += log->counters().flushes;
  return util::progress_of(durable, flushes);
}

std::string Durability::describe_durable(std::uint64_t target) const {
  std::string out = "waiting for durable clock >= " + std::to_string(target) + "; durable clock " +
                    std::to_string(durable_clock()) + ", commit clock " +
                    std::to_string(deps_.txns->clock_now()) + "; logs:";
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    const storage::LogWriter::Counters c = logs_[i]->counters();
    const std::uint64_t safe = logs_[i]->safe();
    out += i < options_.workers ? " worker " + std::to_string(i) : std::string(" application");
    out += " (safe ";
    out += safe == storage::LogWriter::kAllDurable ? std::string("all") : std::to_string(safe);
    out += c.submits > c.flushes ? ", a block in flight)" : ", nothing in flight)";
  }
  if (halted()) out += "; halted";
  return out;
}

Status Durability::wait_durable(std::uint64_t target, const char* what) {
  util::StallWatch watch(deps_.stalls, what);
  while (durable_clock() < target) {
    if (halted()) return halt_status();
    watch.turn(durable_progress(), [&] { return describe_durable(target); });
    std::this_thread::yield();
  }
  return Status::ok();
}

Status Durability::settle_external(bool durable) {
  storage::LogWriter* w = log(options_.workers);
  if (w == nullptr) return Status::ok();  // read-only database: no logs
  util::StallWatch watch(deps_.stalls, "application log flush");
  // Under kAsync one waiting poll: it submits our block once the one in flight is back (the
  // back-pressure of a log the device cannot keep up with); worker 0 drives the rest once the
  // caller woke it.
  bool once = !durable;
  while (w->safe() != storage::LogWriter::kAllDurable) {
    if (halted()) return halt_status();
    if (Status s = w->poll(true, true); !s.is_ok()) {
      halt(s);
      return halt_status();
    }
    if (once) break;
    watch.turn(w->counters().flushes, [&] { return describe_durable(w->safe()); });
  }
  return Status::ok();
}

Status Durability::halt_status() const {
  std::lock_guard<std::mutex> g(halt_mutex_);
  return halt_status_.is_ok() ? Status::io_error("the engine halted") : halt_status_;
}

void Durability::halt(const Status& why) {
  std::lock_guard<std::mutex> g(halt_mutex_);
  if (halted_.load(std::memory_order_relaxed)) return;
  halt_status_ = Status::io_error("engine halted after a log I/O failure (" + why.to_string() +
                                  "); no commit is acknowledged any more, reopen the database "
                                  "to recover from the log");
  halted_.store(true, std::memory_order_release);
}

void Durability::retire_segments(std::uint32_t log) {
  const std::uint64_t epoch = retire_epoch_.load(std::memory_order_acquire);
  if (epoch == retired_epoch_[log]) return;
  retired_epoch_[log] = epoch;
  std::uint64_t before = 0;
  std::shared_ptr<const std::vector<std::uint64_t>> keep;
  {
    std::lock_guard<std::mutex> g(retire_mutex_);
    before = retire_before_[log];
    keep = retire_keep_;
  }
  logs_[log]->retire_before(before, *keep);
}

void Durability::drive_external() {
  const std::uint32_t ext = options_.workers;
  // An asynchronous commit of an application thread submits its block and returns; nobody
  // would reap that block (or submit what later commits appended) until the next application
  // commit, and the durable clock — which every log's safe() bounds — would stall: evictions
  // and acknowledgements on the workers with it. So worker 0 drives the log while it holds
  // records not yet durable.
  const bool pending = external_pending();
  const bool retire = retire_epoch_.load(std::memory_order_acquire) != retired_epoch_[ext];
  // A checkpoint asked every log to roll; an application log that went quiet (a load, then
  // work on the workers only) would keep its segment, and all it holds, for good. Worker 0
  // rolls it here; the next checkpoint's start then lies past it and it goes.
  const bool roll = logs_[ext]->roll_requested();
  if (!pending && !retire && !roll) return;
  // Application threads hold the mutex across a sync; worker 0 does not wait for it.
  std::unique_lock<std::mutex> g(external_mutex_, std::try_to_lock);
  if (!g.owns_lock()) return;
  if (pending) {
    if (Status s = logs_[ext]->poll(false, true); !s.is_ok()) halt(s);
  } else if (roll) {
    if (Status s = logs_[ext]->roll_if_idle(); !s.is_ok()) halt(s);
  }
  if (retire) retire_segments(ext);
}

void Durability::add_stats(DurabilityStats* out) const {
  out->enabled = true;
  out->io_backend = io_name_;
  out->commit = options_.durability.commit;
  for (const auto& log : logs_) {
    const auto& c = log->counters();
    out->log_bytes += c.bytes;
    out->log_flushes += c.flushes;
    out->log_segments += c.segments - c.retired;
  }
  out->checkpoints = checkpoints_.load(std::memory_order_relaxed);
  out->last_checkpoint_cts = last_checkpoint_cts_.load(std::memory_order_relaxed);
  out->durable_clock = durable_clock();
  out->halted = halted();
  if (out->halted) out->halt_reason = halt_status().to_string();
  out->recovery_seconds = recovery_.seconds;
  out->recovered_checkpoint_records = recovery_.checkpoint_records;
  out->recovered_checkpoint_runs = recovery_.checkpoint_runs;
  out->recovered_checkpoint_under_way = recovery_.checkpoint_under_way;
  out->checkpoint_parts_passed = parts_passed_.load(std::memory_order_relaxed);
  out->checkpoint_roll_misses = roll_misses_.load(std::memory_order_relaxed);
  out->recovered_transactions = recovery_.txns_replayed;
  out->recovered_writes = recovered_writes_ - recovery_.checkpoint_records;
  out->recovery_log_bytes = recovery_.log_bytes;
  out->recovery_dropped_transactions = recovery_.txns_dropped;
  out->recovery_torn_tails = recovery_.torn_tails;
  out->recovery_checkpoint_fallbacks = recovery_.checkpoint_fallbacks;
  out->recovery_clean_logs = recovery_.clean_logs;
  out->recovery_cutoff = recovery_.cutoff;
  out->recovery_acked = recovery_.acked;
  out->recovery_torn = recovery_.torn;
  out->recovery_problems = recovery_.problems;
  out->generation = generation_;
}

}  // namespace braid::engine
