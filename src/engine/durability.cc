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
  EngineApplier(RecoverySink* sink, bool cold) : sink_(sink), cold_(cold) {}
  Status put(std::uint32_t table, std::string_view key, std::string_view value, std::uint64_t cts,
             std::uint64_t address) override {
    ++writes;
    return sink_->recover_write(table, key, value, false, cts, cold_ ? address : 0);
  }
  Status remove(std::uint32_t table, std::string_view key, std::uint64_t cts) override {
    ++writes;
    return sink_->recover_write(table, key, {}, true, cts, 0);
  }
  Status ref(std::uint32_t table, std::string_view key, std::uint64_t entry) override {
    ++writes;
    return sink_->recover_write(table, key, {}, false, 0, entry);
  }
  std::uint64_t writes = 0;

 private:
  RecoverySink* sink_;
  const bool cold_;
};

}  // namespace

// A running checkpoint: a snapshot transaction walking every table in key order.
//
// What it writes per record (DESIGN §5, the log is the database): a hot version's value; a
// cold record in a checkpoint part as a reference (its part stays); a cold record in a log
// segment as its value, read back without installing it (so log segments always go once a
// checkpoint covers them: they are mostly dead records, parts mostly live ones). Once a chunk
// is written, every version whose value it holds learns that address as its `home`, and every
// cold entry it copied is moved there (Fixup), so the files they named can go.
struct Durability::Fixup {
  std::atomic<std::uint64_t>* slot;  // a copied cold entry: moved from `old` to the new address
  std::uint64_t old;
  mvcc::Version* version;  // or a version whose home becomes the new address
  bool done;
};

struct Durability::Ckpt {
  std::unique_ptr<storage::CheckpointWriter> writer;
  mvcc::TxnContext* ctx = nullptr;
  std::uint64_t ticket = 0;
  std::uint64_t cts = 0;
  std::uint64_t seq = 0;
  std::vector<storage::LogStart> starts;
  std::uint32_t table = 0;
  std::uint32_t tables = 0;
  std::string from;
  index::LeafBatch batch;
  std::size_t pos = 0;
  bool batch_loaded = false;
  bool scanning = true;
  // Fixups by cookie: cookie c is fixups[c - first_cookie]; the done prefix is dropped.
  std::deque<Fixup> fixups;
  std::uint64_t first_cookie = 1;
  std::vector<std::uint64_t> keep;                   // files a fixup could not move everyone out of
  std::map<std::uint64_t, std::uint64_t> ref_bytes;  // per older part: bytes referred to
};

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
  EngineApplier apply(deps_.sink, options_.memory_budget_bytes != 0);
  const storage::RecoveryMode mode = options_.recovery == RecoveryMode::kSalvage
                                         ? storage::RecoveryMode::kSalvage
                                         : storage::RecoveryMode::kStrict;
  if (Status s = storage::recover(*fs_, dir_, deps_.txns->clock_now(), catalog_.generation, apply,
                                  mode, &recovery_, options_.progress);
      !s.is_ok()) {
    return s;
  }
  recovered_writes_ = apply.writes;
  generation_ = recovery_.generation;
  checkpoint_seq_ = recovery_.checkpoint_seq;
  last_checkpoint_cts_.store(recovery_.checkpoint_cts, std::memory_order_relaxed);
  auto& clock = deps_.txns->clock();
  clock.store(std::max(recovery_.cutoff, clock.load()), std::memory_order_seq_cst);
  storage::FileTable* files = &deps_.cold->files();
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
    // A worker's ring carries its log's block and sync, the checkpoint's chunks and up to 64
    // cold reads (Worker::issue_cold).
    Result<std::unique_ptr<storage::IoQueue>> q = fs_->make_queue(i < options_.workers ? 96 : 8);
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

// ---- Checkpoints --------------------------------------------------------------------------------

std::uint64_t Durability::log_bytes_total() const {
  std::uint64_t n = 0;
  for (const auto& log : logs_) n += log->appended_bytes();
  return n;
}

std::uint64_t Durability::request_checkpoint() {
  return ckpt_requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
}

std::uint64_t Durability::checkpoint_progress() const {
  return util::progress_of(
      ckpt_scanned_.load(std::memory_order_relaxed),
      ckpt_done_.load(std::memory_order_relaxed) + ckpt_written_.load(std::memory_order_relaxed));
}

std::string Durability::describe_checkpoint(std::uint64_t ticket) const {
  return "checkpoint ticket " + std::to_string(ticket) + ", requested " +
         std::to_string(ckpt_requested_.load(std::memory_order_relaxed)) + ", done " +
         std::to_string(ckpt_done_.load(std::memory_order_relaxed)) +
         "; running: " + (ckpt_active_.load(std::memory_order_relaxed) ? "yes" : "no") +
         ", keys scanned " + std::to_string(ckpt_scanned_.load(std::memory_order_relaxed)) +
         " of " + std::to_string(ckpt_keys_.load(std::memory_order_relaxed)) +
         ", records written " + std::to_string(ckpt_written_.load(std::memory_order_relaxed)) +
         "; bulk loads running " + std::to_string(bulk_loads_.load(std::memory_order_relaxed)) +
         (halted() ? "; halted" : "");
}

Status Durability::wait_checkpoint(std::uint64_t ticket) {
  util::ProgressMeter meter(options_.progress, "checkpoint", "keys",
                            ckpt_keys_.load(std::memory_order_relaxed));
  util::StallWatch watch(deps_.stalls, "checkpoint");
  while (ckpt_done_.load(std::memory_order_acquire) < ticket) {
    if (halted()) return halt_status();
    watch.turn(checkpoint_progress(), [&] { return describe_checkpoint(ticket); });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (meter.enabled()) {
      // Worker 0 may not have started ours yet (then these are the previous one's figures).
      meter.set_total(ckpt_keys_.load(std::memory_order_relaxed));
      meter.update(ckpt_scanned_.load(std::memory_order_relaxed));
    }
  }
  Status s;
  {
    std::lock_guard<std::mutex> g(ckpt_mutex_);
    if (!ckpt_last_status_.is_ok())
      s = Status(ckpt_last_status_.code(), ckpt_last_status_.message());
  }
  if (s.is_ok()) meter.finish();  // not under the mutex: the sink is the caller's code
  return s;
}

bool Durability::checkpoint_pending() const {
  if (ckpt_ != nullptr) return true;
  // A requested checkpoint waits for the bulk loads; each load's end wakes worker 0.
  return bulk_loads_.load(std::memory_order_acquire) == 0 &&
         ckpt_requested_.load(std::memory_order_acquire) >
             ckpt_done_.load(std::memory_order_acquire);
}

Status Durability::begin_bulk_load() {
  bulk_loads_.fetch_add(1, std::memory_order_seq_cst);
  util::StallWatch watch(deps_.stalls, "bulk load admission");
  while (ckpt_active_.load(std::memory_order_seq_cst)) {
    if (halted()) {
      end_bulk_load();
      return halt_status();
    }
    watch.turn(checkpoint_progress(), [&] {
      return "waiting for the running checkpoint to end; " +
             describe_checkpoint(ckpt_requested_.load(std::memory_order_relaxed));
    });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Status::ok();
}

void Durability::adopt_parts(const std::vector<storage::CkptPart>& parts) {
  std::lock_guard<std::mutex> g(adopted_mutex_);
  adopted_.insert(adopted_.end(), parts.begin(), parts.end());
}

void Durability::end_bulk_load() {
  BRAID_ASSERT(bulk_loads_.load(std::memory_order_relaxed) > 0);
  bulk_loads_.fetch_sub(1, std::memory_order_seq_cst);
}

Status Durability::start_checkpoint() {
  BRAID_ASSERT(ckpt_ == nullptr);
  auto c = std::make_unique<Ckpt>();
  c->ticket = ckpt_requested_.load(std::memory_order_acquire);
  // Where each log continues, read before the snapshot: a record with a timestamp above the
  // snapshot is appended after this, so it lies at or past the position (log_writer.h).
  for (std::uint32_t i = 0; i < logs_.size(); ++i) {
    const storage::LogWriter::Position p = logs_[i]->position();
    c->starts.push_back({i, 0, p.segment, p.block});
  }
  c->ctx = deps_.txns->begin_at(deps_.checkpoint_context);
  c->cts = c->ctx->snapshot;
  c->seq = checkpoint_seq_ + 1;
  c->tables = deps_.tables->table_count();
  std::uint64_t keys = 0;
  for (std::uint32_t t = 0; t < c->tables; ++t) keys += deps_.tables->table_at(t)->oids().allocated();
  ckpt_keys_.store(keys, std::memory_order_relaxed);
  ckpt_scanned_.store(0, std::memory_order_relaxed);
  storage::CkptHeader h{storage::kFormatVersion, c->tables, c->seq, c->cts, generation_, 0, 0};
  storage::CheckpointConfig config = part_config();
  storage::FileTable* files = &deps_.cold->files();
  config.created = [this, files](std::uint64_t n, const std::string& path) {
    files->add(n, path);
    // Not referred to before its checkpoint is durable: a failed one's parts may never be.
    parts_[n] = {1, 0};
    unowned_files_.emplace(n, path.substr(dir_.size() + 1));
  };
  config.written = [this](std::uint64_t cookie, std::uint64_t address) {
    ckpt_written_.fetch_add(1, std::memory_order_relaxed);
    fix(cookie, address);
  };
  c->writer = std::make_unique<storage::CheckpointWriter>(fs_.get(), ckpt_queue_.get(), h,
                                                          c->starts, std::move(config));
  {
    // Finished bulk loads' parts: wholly live, like a part this checkpoint wrote.
    std::lock_guard<std::mutex> g(adopted_mutex_);
    for (const storage::CkptPart& p : adopted_) {
      parts_[p.file] = {p.bytes, p.bytes};
      unowned_files_.emplace(p.file, storage::part_file_name(p.file));
    }
    adopted_.clear();
  }
  ckpt_ = std::move(c);
  ckpt_log_bytes_at_last_ = log_bytes_total();
  // Evictions from here on are noted (ColdStore::gate).
  if (options_.memory_budget_bytes != 0) deps_.cold->start_noting();
  return Status::ok();
}

storage::CheckpointConfig Durability::part_config() {
  storage::CheckpointConfig config;
  config.dir = dir_;
  // Parts as big as log segments (at least two chunks), never past a cold address's reach.
  config.part_bytes = std::min<std::uint64_t>(
      std::max<std::uint64_t>(options_.durability.log_segment_bytes, std::uint64_t{2} << 20),
      mvcc::entry::kMaxColdOffset);
  storage::FileTable* files = &deps_.cold->files();
  config.new_file = [files] { return files->allocate(); };
  return config;
}

std::uint64_t Durability::add_fixup(const Fixup& f) {
  Ckpt& c = *ckpt_;
  c.fixups.push_back(f);
  return c.first_cookie + c.fixups.size() - 1;
}

void Durability::fix(std::uint64_t cookie, std::uint64_t address) {
  Ckpt& c = *ckpt_;
  BRAID_ASSERT(cookie >= c.first_cookie);
  Fixup& f = c.fixups[cookie - c.first_cookie];
  if (f.version != nullptr) {
    // Versions the checkpoint saw are not freed before it ends (its snapshot holds the horizon).
    std::atomic_ref<std::uint64_t>(f.version->home).store(address, std::memory_order_relaxed);
  } else {
    std::uint64_t expect = f.old;
    // No address (the copy cannot be named) leaves the entry as it is. The CAS fails when a
    // reader loaded the record meanwhile (its version's home is the old address) or a writer
    // replaced it. Either way the old file stays until a later checkpoint.
    if (address == 0 ||
        !f.slot->compare_exchange_strong(expect, address, std::memory_order_acq_rel)) {
      c.keep.push_back(mvcc::entry::cold(f.old).segment);
    }
  }
  f.done = true;
  while (!c.fixups.empty() && c.fixups.front().done) {
    c.fixups.pop_front();
    ++c.first_cookie;
  }
}

Result<bool> Durability::advance_checkpoint(bool wait, std::uint32_t budget) {
  Ckpt& c = *ckpt_;
  const bool homes = options_.memory_budget_bytes != 0;  // only eviction reads them
  while (c.scanning && budget > 0) {
    if (!wait && !c.writer->ready()) return false;
    if (!c.batch_loaded) {
      if (c.table >= c.tables) {
        c.scanning = false;
        break;
      }
      deps_.tables->table_at(c.table)->index().scan_leaf(c.from, false, {}, {}, false, &c.batch);
      c.batch_loaded = true;
      c.pos = 0;
    }
    Table* t = deps_.tables->table_at(c.table);
    for (; c.pos < c.batch.entries.size() && budget > 0; ++c.pos, --budget) {
      const auto& e = c.batch.entries[c.pos];
      auto& slot = t->oids().entry(e.value);
      const std::uint64_t entry = slot.load(std::memory_order_acquire);
      const std::string_view key = c.batch.key(e);
      if (mvcc::entry::is_cold(entry)) {
        // Evicted: its version is seen by every snapshot, ours included.
        const mvcc::entry::ColdAddress a = mvcc::entry::cold(entry);
        const auto part = parts_.find(a.segment);
        // Referred to while its part was at least half live at the last checkpoint; copied
        // out of a sparser one, which then goes (the cleaner: parts stay mostly live).
        if (part != parts_.end() && part->second.live * 2 >= part->second.bytes) {
          if (Status s = c.writer->add_ref(t->id(), key, entry); !s.is_ok()) return s;
          c.ref_bytes[a.segment] += a.size;
          continue;
        }
        std::string value;
        std::uint64_t cts = 0;
        if (Status s = deps_.cold->read_value(entry, t->id(), key, &value, &cts); !s.is_ok()) {
          return s;
        }
        const std::uint64_t cookie = add_fixup({&slot, entry, nullptr, false});
        // The copy keeps the record's own timestamp: the entry moves to it, and a reader whose
        // snapshot predates this checkpoint may load it and must still see it.
        Result<std::uint64_t> at = c.writer->add(t->id(), key, value, cts, cookie);
        if (!at.is_ok()) return at.status();
        if (*at == 0) fix(cookie, 0);  // no address: the entry and its file stay
        continue;
      }
      const mvcc::Version* v = mvcc::visible_version(deps_.protocol, c.ctx, entry);
      if (v == nullptr || v->tombstone()) continue;
      const std::uint64_t cookie =
          homes ? add_fixup({nullptr, 0, const_cast<mvcc::Version*>(v), false}) : 0;
      // Visible, so committed; but its owner may not have restamped it yet (commit_stamp_of).
      bool known = false;
      const std::uint64_t cts = deps_.protocol->commit_stamp_of(c.ctx, v, &known);
      BRAID_ASSERT(known);
      Result<std::uint64_t> at = c.writer->add(t->id(), key, v->value(), cts, cookie);
      if (!at.is_ok()) return at.status();
      if (cookie != 0 && *at == 0) fix(cookie, 0);  // no address: not evictable
    }
    if (c.pos < c.batch.entries.size()) break;
    ckpt_scanned_.fetch_add(c.batch.entries.size(), std::memory_order_relaxed);
    c.batch_loaded = false;
    if (c.batch.has_next) {
      c.from = c.batch.next;
    } else {
      ++c.table;
      c.from.clear();
    }
  }
  if (c.scanning) return false;
  return c.writer->finish(wait);
}

Status Durability::delete_unneeded(const std::vector<std::uint64_t>& keep) {
  Status first;
  for (auto it = unowned_files_.begin(); it != unowned_files_.end();) {
    if (std::binary_search(keep.begin(), keep.end(), it->first)) {
      ++it;
      continue;
    }
    // A failed unlink leaves a file the next open finds unneeded again.
    if (Status s = fs_->remove(dir_ + "/" + it->second); !s.is_ok() && first.is_ok()) first = s;
    deps_.cold->files().forget(it->first);
    parts_.erase(it->first);
    it = unowned_files_.erase(it);
  }
  return first;
}

void Durability::end_checkpoint(const Status& s) {
  Ckpt& c = *ckpt_;
  std::vector<std::uint64_t> keep;
  std::unique_lock<std::shared_mutex> gate;
  if (options_.memory_budget_bytes != 0) {
    // No sweep step runs from here to the deletions: each one before was noted or read the
    // homes the chunks rewrote.
    gate = std::unique_lock<std::shared_mutex>(deps_.cold->gate());
    keep = deps_.cold->stop_noting();
  }
  (void)deps_.txns->finish(c.ctx);  // read-only: nothing retired, no tick wanted
  if (s.is_ok()) {
    checkpoint_seq_ = c.seq;
    last_checkpoint_cts_.store(c.cts, std::memory_order_relaxed);
    checkpoints_.fetch_add(1, std::memory_order_relaxed);
    // Durable now: the files no cold record needs go — log segments before its starts (and the
    // older slot, whose starts they were, can no longer be continued; recovery detects that by
    // name), older parts — but for those its references, evictions made meanwhile and the
    // records loaded back meanwhile still name.
    keep.insert(keep.end(), c.keep.begin(), c.keep.end());
    keep.insert(keep.end(), c.writer->live().begin(), c.writer->live().end());
    for (const storage::CkptPart& p : c.writer->parts()) keep.push_back(p.file);
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    last_live_ = keep;
    for (auto& [number, part] : parts_) {
      const auto r = c.ref_bytes.find(number);
      part.live = r == c.ref_bytes.end() ? 0 : r->second;
    }
    for (const storage::CkptPart& p : c.writer->parts()) parts_[p.file] = {p.bytes, p.bytes};
    // At open the old generation goes only once the catalog names the new one.
    if (open_) (void)delete_unneeded(keep);
    {
      std::lock_guard<std::mutex> g(retire_mutex_);
      retire_keep_ = std::make_shared<const std::vector<std::uint64_t>>(keep);
      for (const storage::LogStart& st : c.starts) retire_before_[st.log] = st.segment;
    }
    retire_epoch_.fetch_add(1, std::memory_order_release);
  }
  const std::uint64_t ticket = c.ticket;
  ckpt_.reset();
  ckpt_active_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> g(ckpt_mutex_);
    ckpt_last_status_ = s.is_ok() ? Status::ok() : Status(s.code(), s.message());
  }
  if (ticket > ckpt_done_.load(std::memory_order_relaxed)) {
    ckpt_done_.store(ticket, std::memory_order_release);
  }
}

Status Durability::write_checkpoint_sync(std::uint64_t generation) {
  const std::uint64_t keep = generation_;
  generation_ = generation;
  Status s = start_checkpoint();
  util::ProgressMeter meter(options_.progress, "checkpoint", "keys",
                            ckpt_keys_.load(std::memory_order_relaxed));
  while (s.is_ok()) {
    // In steps, only to report progress between them.
    Result<bool> done = advance_checkpoint(true, 1u << 16);
    meter.update(ckpt_scanned_.load(std::memory_order_relaxed));
    if (!done.is_ok()) {
      s = done.status();
      break;
    }
    if (*done) break;
  }
  if (s.is_ok()) meter.finish();
  end_checkpoint(s);
  if (!s.is_ok()) generation_ = keep;
  return s;
}

bool Durability::checkpoint_step(std::uint32_t worker_index) {
  BRAID_ASSERT(worker_index == 0);
  if (halted()) {
    if (ckpt_ != nullptr) end_checkpoint(halt_status());
    if (checkpoint_pending()) {
      std::lock_guard<std::mutex> g(ckpt_mutex_);
      ckpt_last_status_ = halt_status();
      ckpt_done_.store(ckpt_requested_.load(std::memory_order_acquire), std::memory_order_release);
    }
    return false;
  }
  drive_external();
  if (ckpt_ == nullptr) {
    const bool asked = ckpt_requested_.load(std::memory_order_acquire) >
                       ckpt_done_.load(std::memory_order_acquire);
    const std::uint64_t every = options_.durability.checkpoint_log_bytes;
    const bool grown = every != 0 && log_bytes_total() - ckpt_log_bytes_at_last_ >= every;
    if (!asked && !grown) return false;
    ckpt_active_.store(true, std::memory_order_seq_cst);
    if (bulk_loads_.load(std::memory_order_seq_cst) != 0) {
      ckpt_active_.store(false, std::memory_order_release);
      return false;
    }
    if (Status s = start_checkpoint(); !s.is_ok()) {
      end_checkpoint(s);
      return false;
    }
  }
  // A bounded step, so the worker's transactions keep running between steps.
  Result<bool> done = advance_checkpoint(false, 512);
  if (!done.is_ok()) {
    end_checkpoint(done.status());
    return false;
  }
  if (*done) end_checkpoint(Status::ok());
  return ckpt_ != nullptr;
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
  if (!pending && !retire) return;
  // Application threads hold the mutex across a sync; worker 0 does not wait for it.
  std::unique_lock<std::mutex> g(external_mutex_, std::try_to_lock);
  if (!g.owns_lock()) return;
  if (pending) {
    if (Status s = logs_[ext]->poll(false, true); !s.is_ok()) halt(s);
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
