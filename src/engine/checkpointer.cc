// Checkpoints (worker 0, as a system transaction: a bounded step per loop), and the gate that
// keeps them apart from bulk loads (every checkpoint holds all of a load or none of it) and
// from index builds (which read cold records where the checkpoint found them).
#include "engine/durability.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <shared_mutex>
#include <thread>

#include "engine/cold_store.h"
#include "engine/table.h"
#include "mvcc/chain_walk.h"
#include "storage/log_format.h"
#include "util/assert.h"
#include "util/progress.h"

namespace braid::engine {

std::uint64_t Durability::log_bytes_total() const {
  std::uint64_t n = 0;
  for (const auto& log : logs_) n += log->appended_bytes();
  return n;
}

std::uint64_t Durability::request_checkpoint() {
  return ckpt_requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
}

std::uint64_t Durability::checkpoint_progress() const {
  // What reached the device, not keys scanned: a scan runs ahead of its writes by only two
  // chunks, and a checkpoint that waits for the logs to roll, then scans, then waits for its
  // writes on a stuck disk is one stall, not two.
  return util::progress_of(ckpt_done_.load(std::memory_order_relaxed),
                           ckpt_written_.load(std::memory_order_relaxed));
}

std::string Durability::describe_checkpoint(std::uint64_t ticket) const {
  return "checkpoint ticket " + std::to_string(ticket) + ", requested " +
         std::to_string(ckpt_requested_.load(std::memory_order_relaxed)) + ", done " +
         std::to_string(ckpt_done_.load(std::memory_order_relaxed)) +
         "; running: " + (ckpt_active_.load(std::memory_order_relaxed) ? "yes" : "no") +
         ", keys scanned " + std::to_string(ckpt_scanned_.load(std::memory_order_relaxed)) +
         " of " + std::to_string(ckpt_keys_.load(std::memory_order_relaxed)) +
         ", records written " + std::to_string(ckpt_written_.load(std::memory_order_relaxed)) +
         "; holds (bulk loads, index builds) " +
         std::to_string(checkpoint_holds_.load(std::memory_order_relaxed)) +
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

void Durability::update_checkpoint_due() {
  const DurabilityOptions& d = options_.durability;
  std::uint64_t due = UINT64_MAX;
  if (d.checkpoint_log_bytes != 0) {
    std::uint64_t growth = d.checkpoint_log_bytes;
    if (d.checkpoint_log_percent != 0) {
      growth = std::min(growth, std::max(d.checkpoint_log_min_bytes,
                                         ckpt_live_bytes_ / 100 * d.checkpoint_log_percent));
    }
    due = ckpt_log_bytes_at_last_ + growth;
  }
  ckpt_due_at_.store(due, std::memory_order_relaxed);
}

bool Durability::checkpoint_due() const {
  return log_bytes_total() >= ckpt_due_at_.load(std::memory_order_relaxed);
}

bool Durability::checkpoint_pending() const {
  if (ckpt_ != nullptr) return true;
  // Either kind waits for the holds; each hold's end wakes worker 0.
  if (checkpoint_holds_.load(std::memory_order_acquire) != 0) return false;
  // Requested, or due by the logs' growth: worker 0 stays awake to start it, even when only
  // application threads commit (they wake it: DatabaseImpl::commit_external).
  return ckpt_requested_.load(std::memory_order_acquire) >
             ckpt_done_.load(std::memory_order_acquire) ||
         (!halted() && checkpoint_due());
}

Status Durability::hold_checkpoints() {
  checkpoint_holds_.fetch_add(1, std::memory_order_seq_cst);
  util::StallWatch watch(deps_.stalls, "checkpoint hold");
  while (ckpt_active_.load(std::memory_order_seq_cst)) {
    if (halted()) {
      release_checkpoints();
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

void Durability::release_checkpoints() {
  BRAID_ASSERT(checkpoint_holds_.load(std::memory_order_relaxed) > 0);
  checkpoint_holds_.fetch_sub(1, std::memory_order_seq_cst);
}

Status Durability::start_checkpoint() {
  BRAID_ASSERT(ckpt_ == nullptr);
  auto c = std::make_unique<CheckpointRun>();
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
  for (std::uint32_t t = 0; t < c->tables; ++t) {
    Table* table = deps_.tables->table_at(t);
    keys += table->oids().allocated() + table->named_by_address();
  }
  ckpt_keys_.store(keys, std::memory_order_relaxed);
  ckpt_scanned_.store(0, std::memory_order_relaxed);
  storage::CkptHeader h{storage::kFormatVersion, c->tables, c->seq, c->cts, generation_, 0, 0};
  storage::CheckpointConfig config = part_config();
  if (options_.memory_budget_bytes == 0)
    config.part_target = options_.durability.checkpoint_part_bytes;
  // Where the index pages, the checkpoint's runs are its leaves on storage (index-paging.md,
  // decision 6): one run per leaf the scan reads.
  config.runs = deps_.cold->pages_index();
  // The list's size: the last one's, or for the first, a run per leaf with a short key
  // (reserved pages never written cost nothing; a list that doubles holds 1.5 to 3 times its
  // size while it copies).
  config.runs_reserve = last_run_list_bytes_;
  if (config.runs && config.runs_reserve == 0) {
    std::size_t leaves = 0;
    for (std::uint32_t t = 0; t < c->tables; ++t) {
      Table* table = deps_.tables->table_at(t);
      if (table != nullptr) leaves += table->index().node_count() + table->index().stored_leaves();
    }
    config.runs_reserve = leaves * (sizeof(storage::CkptRun) + 24);
  }
  storage::FileTable* files = &deps_.cold->files();
  config.created = [this, files](std::uint64_t n, const std::string& path) {
    files->add(n, path);
    // Not referred to before its checkpoint is durable: a failed one's parts may never be.
    parts_[n] = {1, 0};
    unowned_files_.emplace(n, path.substr(dir_.size() + 1));
  };
  config.written = [this](std::uint64_t cookie, std::uint64_t address) { fix(cookie, address); };
  config.chunk_written = [this](std::uint32_t records) {
    ckpt_written_.fetch_add(records, std::memory_order_relaxed);
  };
  c->writer = std::make_unique<storage::CheckpointWriter>(fs_.get(), ckpt_queue_.get(), h,
                                                          c->starts, std::move(config));
  // Leaves still on storage as the runs the open adopted are carried over unread.
  if (carry_ok_ && !adopted_at_.empty() && c->writer->lists_runs()) {
    const auto carries = [](void* self, std::uint64_t address) {
      return static_cast<const Durability*>(self)->adopted_run(address) != nullptr;
    };
    c->images.carry_by(carries, this);
    c->ahead_images.carry_by(carries, this);
  }
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
  update_checkpoint_due();
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

std::uint64_t Durability::add_fixup(const CheckpointFixup& f) {
  CheckpointRun& c = *ckpt_;
  c.fixups.push_back(f);
  return c.first_cookie + c.fixups.size() - 1;
}

void Durability::fix(std::uint64_t cookie, std::uint64_t address) {
  CheckpointRun& c = *ckpt_;
  BRAID_ASSERT(cookie >= c.first_cookie);
  CheckpointFixup& f = c.fixups[cookie - c.first_cookie];
  if (f.version != nullptr) {
    // Versions the checkpoint saw are not freed before it ends (its snapshot holds the horizon).
    std::atomic_ref<std::uint64_t>(f.version->home).store(address, std::memory_order_relaxed);
  } else if (f.slot == nullptr) {
    // A leaf's value moves as an entry would; it fails when the record took an OID meanwhile
    // (promote: the entry then holds the old address) or the leaf could not be read in.
    const index::Outcome moved =
        address == 0 ? index::Outcome::kNo : f.table->index().replace(f.key, f.old, address);
    if (moved.failed()) (void)index::take_load_failure();
    if (!moved) c.keep.push_back(mvcc::entry::cold(f.old).segment);
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

namespace {
// How long a due checkpoint waits for the logs to roll (checkpoint_step): a busy log rolls
// with its next group commit, after the sync in flight. A log that misses it keeps its segment,
// a whole checkpoint interval of log, until the next checkpoint ends; a later start costs only
// the log written meanwhile. A group commit's sync shares the device with the checkpoint's
// own part syncs, so tens of milliseconds must be allowed (DurabilityStats counts misses).
constexpr std::chrono::milliseconds kRollWait{100};
}  // namespace

Status Durability::pass_parts() {
  CheckpointRun& c = *ckpt_;
  // Under a budget an eviction may point a record into any part until the run ends (the
  // gate's noting covers only the end); at open the previous checkpoint is another
  // generation's, whose logs the manifest could not name.
  if (!last_ckpt_.known || !open_ || options_.memory_budget_bytes != 0 ||
      options_.durability.checkpoint_part_bytes == 0) {
    return Status::ok();
  }
  // Until the whole checkpoint's manifest is on its way (it replaces this one).
  if (!c.writer->before_manifest()) return Status::ok();
  // A manifest under way vouches that every commit up to its snapshot is in the logs (they
  // replay from the previous checkpoint's start, and the new parts already hold the state at
  // the snapshot for the keys before the frontier): not before that is durable.
  if (durable_clock() < c.cts) return Status::ok();
  const std::size_t durable = c.writer->durable_parts();
  if (durable <= c.passed) return Status::ok();
  c.passed = durable;
  const std::uint32_t table = c.writer->part_last_table(durable - 1);
  const std::string& key = c.writer->part_last_key(durable - 1);
  LastCheckpoint next;
  next.known = true;
  next.base = last_ckpt_.base;
  next.base.parts.clear();
  std::vector<std::uint64_t> passed;
  for (std::size_t i = 0; i < last_ckpt_.base.parts.size(); ++i) {
    const storage::CkptPart& p = last_ckpt_.base.parts[i];
    const std::uint32_t t = last_ckpt_.last_table[i];
    // Wholly before the frontier: every key it holds is in the durable new parts (or was
    // removed before the snapshot). And no reference of this run, no cold entry a fixup could
    // not move, names it: without a budget nothing else can point into it.
    const bool before = t < table || (t == table && last_ckpt_.last_key[i].compare(key) <= 0);
    if (before && c.ref_bytes.count(p.file) == 0 && c.writer->live().count(p.file) == 0 &&
        std::find(c.keep.begin(), c.keep.end(), p.file) == c.keep.end()) {
      passed.push_back(p.file);
      continue;
    }
    next.base.parts.push_back(p);
    next.last_table.push_back(t);
    next.last_key.push_back(last_ckpt_.last_key[i]);
  }
  if (passed.empty()) return Status::ok();
  if (Status s = c.writer->write_under_way(durable, next.base); !s.is_ok()) return s;
  last_ckpt_ = std::move(next);
  for (std::uint64_t file : passed) {
    // A failed unlink leaves a file the next open finds unneeded.
    const auto it = unowned_files_.find(file);
    if (it != unowned_files_.end()) {
      (void)fs_->remove(dir_ + "/" + it->second);
      unowned_files_.erase(it);
    }
    deps_.cold->files().forget(file);
    parts_.erase(file);
    parts_passed_.fetch_add(1, std::memory_order_relaxed);
  }
  return Status::ok();
}

Result<bool> Durability::advance_checkpoint(bool wait, std::uint32_t budget) {
  CheckpointRun& c = *ckpt_;
  const std::uint32_t step = budget;
  if (Status s = pass_parts(); !s.is_ok()) return s;
  const bool homes = options_.memory_budget_bytes != 0;  // only eviction reads them
  while (c.scanning && budget > 0) {
    if (!wait && !c.writer->ready()) return false;
    if (!c.batch_loaded) {
      if (c.table >= c.tables) {
        c.scanning = false;
        break;
      }
      if (c.upcoming_loaded) {
        std::swap(c.batch, c.upcoming);
        c.upcoming_loaded = false;
      } else if (!deps_.tables->table_at(c.table)->index().scan_leaf(c.from, false, {}, {}, false,
                                                                     &c.batch, &c.images)) {
        // A leaf on storage could not be read: this checkpoint fails (one that skipped the
        // leaf's keys would lose them).
        return index::take_load_failure("checkpoint");
      }
      c.batch_loaded = true;
      c.writer->start_run();
      if (c.batch.carried != 0) {
        if (Status s = carry(c.batch.carried); !s.is_ok()) return s;
      }
      if (c.staged_batches > 0) --c.staged_batches;
      c.pos = 0;
    }
    if (c.bulk_running) {
      if (!c.bulk->step(*ckpt_read_queue_, wait)) return false;
      c.bulk_running = false;
      if (!c.bulk->status().is_ok()) return c.bulk->status();
    }
    Table* t = deps_.tables->table_at(c.table);
    // Once OIDs are reused, the records of a leaf sit anywhere in the OID array and the
    // version heap: two dependent DRAM misses per record, which a checkpoint of a churning
    // table pays for every live record. A pipeline hides them: the slot kSlotAhead records
    // ahead, the newest version (both of its lines) kVersionAhead ahead once its slot arrived.
    // Positions past this leaf's end are the next leaf's, read in advance (`upcoming`).
    constexpr std::size_t kSlotAhead = 16;
    constexpr std::size_t kVersionAhead = 8;
    const std::size_t n = c.batch.entries.size();
    auto load_upcoming = [&] {
      if (c.upcoming_loaded || !c.batch.has_next || c.pos + kSlotAhead < n) return;
      // A read ahead that fails is dropped: the leaf is read again in its turn, which fails the
      // checkpoint if it fails again.
      if (!t->index().scan_leaf(c.batch.next, false, {}, {}, false, &c.upcoming, &c.images)) {
        (void)index::take_load_failure();
        return;
      }
      c.upcoming_loaded = true;
    };
    load_upcoming();
    // Null past the leaves scanned, and for a record its leaf names by address (no entry).
    auto oid_at = [&](std::size_t i) -> const std::atomic<std::uint64_t>* {
      std::uint64_t named;
      if (i < n) {
        named = c.batch.entries[i].value;
      } else if (c.upcoming_loaded && i - n < c.upcoming.entries.size()) {
        named = c.upcoming.entries[i - n].value;
      } else {
        return nullptr;
      }
      return t->slot_named(named);
    };
    auto prefetch_version = [&](std::size_t i) {
      const std::atomic<std::uint64_t>* ahead = oid_at(i);
      if (ahead == nullptr) return;
      const std::uint64_t a = ahead->load(std::memory_order_relaxed);
      if (!mvcc::entry::is_hot(a)) return;
      const char* v = reinterpret_cast<const char*>(mvcc::entry::hot(a));
      __builtin_prefetch(v, 0, 3);
      __builtin_prefetch(v + 64, 0, 3);  // a value of more than 24 bytes reaches the next line
    };
    for (std::size_t i = c.pos; i < c.pos + kSlotAhead; ++i) {
      if (const auto* slot = oid_at(i)) __builtin_prefetch(slot, 0, 3);
    }
    for (std::size_t i = c.pos + 1; i < c.pos + kVersionAhead; ++i) prefetch_version(i);
    for (; c.pos < n && budget > 0; ++c.pos, --budget) {
      load_upcoming();
      if (const auto* slot = oid_at(c.pos + kSlotAhead)) __builtin_prefetch(slot, 0, 3);
      prefetch_version(c.pos + kVersionAhead);
      const auto& e = c.batch.entries[c.pos];
      // A record its leaf names by address has no entry: the leaf's value is its cold word.
      std::atomic<std::uint64_t>* slot = t->slot_named(e.value);
      std::uint64_t entry = slot != nullptr ? slot->load(std::memory_order_acquire) : e.value;
      const std::string_view key = c.batch.key(e);
      if (mvcc::entry::is_moved(entry)) [[unlikely]] {
        // Demoted since the leaf was copied: its leaf names it by address now, and skipping it
        // would leave it out of the checkpoint.
        if (Status s = t->reread_moved(key, &slot, &entry); !s.is_ok()) return s;
      }
      if (mvcc::entry::is_cold(entry)) {
        // Evicted: its version is seen by every snapshot, ours included.
        const mvcc::entry::ColdAddress a = mvcc::entry::cold(entry);
        if (referable(a.segment)) {
          if (Status s = c.writer->add_ref(t->id(), key, entry); !s.is_ok()) return s;
          c.ref_bytes[a.segment] += a.size;
          continue;
        }
        std::string alone;
        std::string_view value;
        std::uint64_t cts = 0;
        if (const auto it = c.staged.find(entry); it != c.staged.end()) {
          value = std::string_view(c.staged_values).substr(it->second.off, it->second.len);
          cts = it->second.cts;
        } else if (c.staged_batches == 0) {
          if (Status s = stage_reads(t); !s.is_ok()) return s;
          break;  // this record again once the reads are back
        } else {
          if (Status s = deps_.cold->read_value(entry, t->id(), key, &alone, &cts); !s.is_ok()) {
            return s;
          }
          value = alone;
        }
        const std::uint64_t cookie =
            slot != nullptr ? add_fixup({slot, entry, nullptr, false})
                            : add_fixup({nullptr, entry, nullptr, false, t, std::string(key)});
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
  if (!c.indexes_done) {
    // Index entries are small: a step takes many more of them than of records.
    Result<bool> done = write_indexes(wait ? ~0u : step * 16);
    if (!done.is_ok()) return done.status();
    if (!*done) return false;
  }
  return c.writer->finish(wait);
}

Result<bool> Durability::write_indexes(std::uint32_t budget) {
  CheckpointRun& c = *ckpt_;
  BRAID_ASSERT(!c.scanning);
  // Each index's entries as its tree holds them now, after the snapshot: every entry the
  // snapshot's state needs is there (a stale one goes only past the horizon, which our
  // snapshot holds), and later ones are harmless (readers filter them; an open derives the
  // log tail's keys again). Leaf by leaf, between transactions.
  while (c.index_table < c.tables) {
    Table* t = deps_.tables->table_at(c.index_table);
    if (t == nullptr || c.index_slot >= t->index_count()) {
      ++c.index_table;
      c.index_slot = 0;
      continue;
    }
    Index* sec = t->secondary(c.index_slot);
    if (sec->key_version() == 0) {
      ++c.index_slot;
      continue;
    }
    if (!c.index_file.is_open()) {
      const std::uint64_t n = deps_.cold->files().allocate();
      unowned_files_.emplace(n, storage::index_file_name(n));  // goes unless a manifest keeps it
      if (Status s = c.index_file.open(fs_.get(), dir_, n); !s.is_ok()) return s;
      c.index_from.clear();
    }
    if (budget == 0) return false;
    // Leaves on storage are read through their images, as the records' scan reads them.
    if (!sec->tree().scan_leaf(c.index_from, false, {}, {}, false, &c.batch, &c.index_images)) {
      // This checkpoint fails: one that skipped the leaf's entries would attach without them.
      return index::take_load_failure("checkpoint of index '" + sec->name() + "'");
    }
    for (const auto& e : c.batch.entries) {
      if (Status s = c.index_file.add(c.batch.key(e), Index::secondary_len_of(e.value));
          !s.is_ok()) {
        return s;
      }
    }
    budget -= std::min<std::uint32_t>(budget, static_cast<std::uint32_t>(c.batch.entries.size()));
    if (c.batch.has_next) {
      c.index_from = c.batch.next;
      continue;
    }
    if (Status s = c.index_file.finish(); !s.is_ok()) return s;
    storage::StoredIndex si;
    si.desc = {t->id(),
               static_cast<std::uint32_t>(sec->name().size()),
               sec->key_version(),
               c.index_file.number(),
               c.index_file.entries(),
               0,
               0};
    si.name = sec->name();
    c.keep.push_back(si.desc.file);
    c.stored.push_back(std::move(si));
    ++c.index_slot;
  }
  // Stored indexes no create_index took yet are carried while their table has not been
  // written since the open: the log tail's keys, which the open's checkpoint no longer
  // replays, go into a dirty file of their own (with those of an earlier dirty file).
  std::lock_guard<std::mutex> g(pending_mutex_);
  for (auto it = pending_indexes_.begin(); it != pending_indexes_.end();) {
    Table* t = deps_.tables->table_at(it->stored.desc.table);
    if (t == nullptr || t->written()) {
      it = pending_indexes_.erase(it);
      continue;
    }
    storage::CkptIndex& d = it->stored.desc;
    if (!it->tail_keys.empty()) {
      std::vector<std::string> keys = std::move(it->tail_keys);
      it->tail_keys.clear();
      if (d.dirty_file != 0) {
        Status s = storage::read_index_file(fs_.get(), dir_, d.dirty_file, d.dirty_entries,
                                            [&](std::string_view key, std::size_t) {
                                              keys.emplace_back(key);
                                              return Status::ok();
                                            });
        if (!s.is_ok()) return s;
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      }
      storage::IndexFileWriter w;
      const std::uint64_t n = deps_.cold->files().allocate();
      unowned_files_.emplace(n, storage::index_file_name(n));
      if (Status s = w.open(fs_.get(), dir_, n); !s.is_ok()) return s;
      for (const std::string& k : keys) {
        if (Status s = w.add(k, 0); !s.is_ok()) return s;
      }
      if (Status s = w.finish(); !s.is_ok()) return s;
      d.dirty_file = n;
      d.dirty_entries = w.entries();
    }
    c.keep.push_back(d.file);
    if (d.dirty_file != 0) c.keep.push_back(d.dirty_file);
    c.stored.push_back(it->stored);
    ++it;
  }
  c.writer->set_indexes(std::move(c.stored));
  c.indexes_done = true;
  return true;
}

std::vector<storage::StoredIndex> Durability::stored_indexes() {
  std::lock_guard<std::mutex> g(pending_mutex_);
  std::vector<storage::StoredIndex> out;
  out.reserve(pending_indexes_.size());
  for (const PendingIndex& p : pending_indexes_) out.push_back(p.stored);
  return out;
}

bool Durability::take_stored_index(std::uint32_t table, std::string_view name, PendingIndex* out) {
  std::lock_guard<std::mutex> g(pending_mutex_);
  for (auto it = pending_indexes_.begin(); it != pending_indexes_.end(); ++it) {
    if (it->stored.desc.table != table || it->stored.name != name) continue;
    Table* t = deps_.tables->table_at(table);
    const bool usable = t != nullptr && !t->written();
    if (usable) *out = std::move(*it);
    pending_indexes_.erase(it);
    return usable;
  }
  return false;
}

const std::pair<std::uint64_t, std::uint64_t>* Durability::adopted_run(
    std::uint64_t address) const {
  const auto it = std::lower_bound(adopted_at_.begin(), adopted_at_.end(),
                                   std::pair<std::uint64_t, std::uint64_t>{address, 0});
  return it != adopted_at_.end() && it->first == address ? &*it : nullptr;
}

Status Durability::carry(std::uint64_t address) {
  CheckpointRun& c = *ckpt_;
  const auto* at = adopted_run(address);
  BRAID_ASSERT(at != nullptr);  // the scan carries only adopted runs (start_checkpoint)
  std::size_t off = at->second;
  const storage::RunView v = storage::next_run(adopted_runs_, &off);
  if (v.run.table != deps_.tables->table_at(c.table)->id()) {
    return Status::corruption("checkpoint: table " + deps_.tables->table_at(c.table)->name() +
                              " names a run of table " + std::to_string(v.run.table));
  }
  std::vector<std::uint64_t> refs(v.run.ref_files);
  if (!refs.empty()) std::memcpy(refs.data(), v.ref_files, refs.size() * sizeof(std::uint64_t));
  if (Status s = c.writer->carry_run(v.run.table, v.key, address, v.run.records, refs);
      !s.is_ok()) {
    return s;
  }
  // Live bytes of its part, for the rule that picks what is referred to (referable).
  c.ref_bytes[storage::cold(address).segment] += storage::cold(address).size;
  ckpt_scanned_.fetch_add(v.run.records, std::memory_order_relaxed);
  return Status::ok();
}

bool Durability::referable(std::uint64_t file) const {
  // Referred to while its part was at least half live at the last checkpoint; copied out of a
  // sparser one, which then goes (the cleaner: parts stay mostly live).
  const auto part = parts_.find(file);
  return part != parts_.end() && part->second.live * 2 >= part->second.bytes;
}

Status Durability::stage_reads(Table* t) {
  CheckpointRun& c = *ckpt_;
  BRAID_ASSERT(!c.bulk_running);
  c.bulk_refs.clear();
  c.staged.clear();
  c.staged_values.clear();
  std::uint64_t bytes = 0;  // of the records collected: what staging their values holds
  auto collect = [&](const index::LeafBatch& batch, std::size_t from) {
    for (std::size_t i = from; i < batch.entries.size(); ++i) {
      const auto& be = batch.entries[i];
      const std::uint64_t e = t->entry_named(be.value);
      if (!mvcc::entry::is_cold(e) || referable(mvcc::entry::cold(e).segment)) continue;
      bytes += mvcc::entry::cold(e).size;
      c.bulk_refs.push_back({e, ColdStore::key_hash(batch.key(be))});
    }
  };
  collect(c.batch, c.pos);
  c.staged_batches = 1;
  // The leaves after this one, while they add to the read: a leaf laid out in file order
  // holds one or two extents, and reading one leaf at a time would leave the device idle.
  bool more = c.batch.has_next;
  std::string from = c.batch.next;
  while (more && c.staged_batches < kStageLeaves && c.bulk_refs.size() < kStageRecords &&
         bytes < kStageBytes) {
    if (!t->index().scan_leaf(from, false, {}, {}, false, &c.ahead, &c.ahead_images)) {
      (void)index::take_load_failure();  // staged no further; read again in its turn
      break;
    }
    collect(c.ahead, 0);
    ++c.staged_batches;
    more = c.ahead.has_next;
    from = c.ahead.next;
  }
  if (c.bulk == nullptr) {
    // Extents of up to 256 KiB: a leaf's records are a few blocks when they lie together.
    c.bulk = std::make_unique<BulkRead>(
        deps_.cold, ColdStore::BulkOptions{kCheckpointReads, 256u << 10, 16u << 10});
  }
  c.bulk->start(&c.bulk_refs, t->id(),
                [&c](const ColdStore::BulkRecord& r, const storage::RecordView& rv) {
                  c.staged[r.entry] = {rv.cts, static_cast<std::uint32_t>(c.staged_values.size()),
                                       static_cast<std::uint32_t>(rv.value.size())};
                  c.staged_values.append(rv.value);
                  return Status::ok();
                });
  c.bulk_running = true;
  return Status::ok();
}

void Durability::cancel_checkpoint_reads() {
  CheckpointRun& c = *ckpt_;
  if (!c.bulk_running) return;
  c.bulk->cancel();
  while (!c.bulk->step(*ckpt_read_queue_, true)) {
  }
  c.bulk_running = false;
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
  CheckpointRun& c = *ckpt_;
  // Runs could not be listed after some were carried: the next checkpoints read those leaves.
  if (s.code() == Code::kBusy && carry_ok_) {
    carry_ok_ = false;
    std::string().swap(adopted_runs_);
    std::vector<std::pair<std::uint64_t, std::uint64_t>>().swap(adopted_at_);
    deps_.cold->set_held_bytes(0);
  }
  cancel_checkpoint_reads();  // a failed run may leave reads in flight into its buffers
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
    last_run_list_bytes_ = c.writer->run_list_bytes();
    last_checkpoint_cts_.store(c.cts, std::memory_order_relaxed);
    checkpoints_.fetch_add(1, std::memory_order_relaxed);
    // Durable now: the files no cold record needs go — log segments before its starts (and the
    // older slot, whose starts they were, can no longer be continued; recovery detects that by
    // name), older parts — but for those its references, evictions made meanwhile and the
    // records loaded back meanwhile still name.
    keep.insert(keep.end(), c.keep.begin(), c.keep.end());
    keep.insert(keep.end(), run_files_.begin(), run_files_.end());
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
    last_ckpt_ = {};
    last_ckpt_.known = true;
    last_ckpt_.base = {c.seq,
                       c.cts,
                       c.starts,
                       c.writer->parts(),
                       {c.writer->live().begin(), c.writer->live().end()}};
    for (std::size_t i = 0; i < c.writer->parts().size(); ++i) {
      last_ckpt_.last_table.push_back(c.writer->part_last_table(i));
      last_ckpt_.last_key.push_back(c.writer->part_last_key(i));
    }
    ckpt_live_bytes_ = 0;
    for (const auto& [number, part] : parts_) ckpt_live_bytes_ += part.live;
    update_checkpoint_due();
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
    if (!asked && !checkpoint_due()) return false;
    // Every log rolls first, so that this checkpoint's start opens a segment of each and its
    // end deletes everything the logs held before: the directory keeps one checkpoint and the
    // log since it (rolled at the end instead, the segment holding the start stayed, a third
    // more). Each log rolls with its next block, an idle one at its next poll, the
    // application threads' at worker 0's next visit (drive_external); one with little in its
    // segment drops the request (LogWriter::roll_if_idle). Bounded: past the deadline the
    // checkpoint starts anyway. Not "running" meanwhile: a worker with nothing else to do may
    // stop or sleep (an asked checkpoint keeps worker 0 awake: Worker::idle).
    if (!ckpt_rolling_) {
      for (const auto& log : logs_) log->request_roll();
      ckpt_rolling_ = true;
      ckpt_roll_deadline_ = std::chrono::steady_clock::now() + kRollWait;
      return false;
    }
    bool rolling = false;
    for (const auto& log : logs_) rolling = rolling || log->roll_requested();
    if (rolling && std::chrono::steady_clock::now() < ckpt_roll_deadline_) return false;
    if (rolling) roll_misses_.fetch_add(1, std::memory_order_relaxed);
    ckpt_rolling_ = false;
    ckpt_active_.store(true, std::memory_order_seq_cst);
    if (checkpoint_holds_.load(std::memory_order_seq_cst) != 0) {
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

}  // namespace braid::engine
