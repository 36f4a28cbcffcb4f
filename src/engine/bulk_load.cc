// Bulk loads straight to storage (docs/internals/cold-store.md; MosaicDB builds its cold table
// this way, §6.1).
//
// Records go into checkpoint parts (the log's record format, so each has an address a cold
// entry can name), not through the log and not through version memory, so a table many times
// its budget loads in the memory of its index (and of the OIDs of the records it keeps). A
// record kept in memory while version memory is within the budget takes an OID whose entry
// holds the version (its `home` set to the record's address once the chunk holding it is
// written, so eviction can let it go). A cold record takes an OID only in a table whose leaves
// may not name addresses (DatabaseImpl::names_by_address), and its entry is stored once the
// chunk is written; otherwise its key enters the index then, named by that address. Every record
// carries one commit timestamp, logged (an empty transaction record) before the first part is
// written, so recovery's dense timestamps hold.
//
// All or nothing on disk: no checkpoint starts while a load runs (Durability::hold_checkpoints),
// and the load ends with one that refers to every record of its parts; until that checkpoint
// is durable no manifest names the parts, so a crash loses the whole load and the next open
// deletes its files as unneeded. A load that fails removes its keys again, gives the OIDs it
// allocated back (after an epoch) and deletes its parts; writes to the table answer Busy
// meanwhile (Table::loading), so every OID from the load's first one on is the load's or a
// reader's promotion's.
#include "engine/database_impl.h"

#include <braid/database.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/checks.h"
#include "engine/cold_store.h"
#include "engine/durability.h"
#include "storage/checkpoint.h"
#include "util/assert.h"
#include "util/vmem.h"

namespace braid::engine {

namespace {

using mvcc::Version;
namespace entry = mvcc::entry;

// Records per context a kept version is allocated through: the context pins the reclamation
// horizon while it is open, so it is finished and begun again this often.
constexpr std::uint32_t kRecordsPerContext = 1024;
// Over budget, a load sweeps once per this many records, this many entries, and the leaves'
// hand makes up to kSweepMoves more moves (ColdStore::catch_up_index) while the tree alone
// holds more than the budget.
constexpr std::uint32_t kSweepEvery = 256;
constexpr std::uint32_t kSweepMoves = 64;
// Nodes the tree needs before its cost per record projects the index of a whole load (one in
// 64 off at most from a partial leaf).
constexpr std::size_t kMinPricingNodes = 64;
// Versions retired per context when the load drops what it kept.
constexpr std::uint32_t kDropsPerContext = 4096;

class BulkLoader {
 public:
  BulkLoader(DatabaseImpl* db, Table* table, const BulkLoadOptions& options)
      : db_(db), table_(table), options_(options), first_oid_(table->oids().allocated()) {}
  ~BulkLoader() { end_context(); }
  BulkLoader(const BulkLoader&) = delete;
  BulkLoader& operator=(const BulkLoader&) = delete;

  Status run(BulkSource next);
  // After a failed run: removes every key the load added and deletes its parts.
  void rollback();
  const std::vector<storage::CkptPart>& parts() const { return parts_; }

 private:
  // Cookies name what an address belongs to, told apart by their low two bits: a kept version
  // (its pointer, 16-byte aligned: 00), a cold record's OID (01), or a cold record whose key
  // waits to enter the index named by its address (11: its place in waiting_).
  static std::uint64_t version_cookie(Version* v) { return reinterpret_cast<std::uint64_t>(v); }
  static std::uint64_t oid_cookie(std::uint64_t oid) { return oid << 2 | 1; }
  static std::uint64_t waiting_cookie(std::uint64_t seq) { return seq << 2 | 3; }
  void written(std::uint64_t cookie, std::uint64_t address);
  // A cold record of a table whose leaves may name addresses (DatabaseImpl::names_by_address)
  // takes no OID: its key enters the index once its chunk is written, named by the address
  // (until then a reader finds no key, as it finds an empty entry otherwise). Keys in any
  // order, so a key given twice is found only then: *failure_ names the record.
  struct Waiting {
    std::string key;
    std::uint64_t n = 0;  // the record's position in the source
    bool done = false;
  };
  void enter(Waiting* w, std::uint64_t address);
  void pop_done();
  // A version of `value` with the load's timestamp, or null when no context is free (the
  // record then starts cold) or version memory is exhausted (*failure says so).
  Version* keep(std::string_view value, Status* failure);
  void end_context();
  // Evicts every version the load kept whose chunk is written (the load found that its records
  // do not fit the budget).
  void drop_kept();
  // The index bytes the records after the n-th will add, by the caller's count
  // (BulkLoadOptions::expected_records; 0 without one).
  std::uint64_t index_to_come(std::uint64_t n) const;

  DatabaseImpl* db_;
  Table* table_;
  const BulkLoadOptions options_;
  const std::uint64_t first_oid_;
  // The OIDs the load allocated, as runs [first, end): one run unless released OIDs were
  // reused or readers' promotions took some in between.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> own_oids_;
  std::uint64_t cts_ = 0;
  std::unique_ptr<storage::IoQueue> queue_;
  std::unique_ptr<storage::CheckpointWriter> writer_;
  std::vector<std::uint64_t> files_;  // every part created, for the rollback
  std::vector<storage::CkptPart> parts_;
  mvcc::TxnContext* ctx_ = nullptr;
  std::uint32_t ctx_records_ = 0;
  std::deque<Waiting> waiting_;     // in the order added; the written ones leave from the front
  std::uint64_t waiting_base_ = 0;  // the sequence number of waiting_.front()
  std::uint64_t waiting_next_ = 0;
  Status failure_;  // of a key entering the index from written()
};

void BulkLoader::written(std::uint64_t cookie, std::uint64_t address) {
  BRAID_DASSERT(entry::is_cold(address));
  if ((cookie & 3) == 3) {
    const std::uint64_t seq = cookie >> 2;
    BRAID_ASSERT(seq >= waiting_base_);
    BRAID_ASSERT(seq - waiting_base_ < waiting_.size());
    enter(&waiting_[seq - waiting_base_], address);
    pop_done();
    return;
  }
  if ((cookie & 3) == 1) {
    // Readable from here on: until now the entry was empty (a reader found no record).
    table_->oids().entry(cookie >> 2).store(address, std::memory_order_release);
    return;
  }
  // The version is alive: nothing evicts it before it has a home, and no writer may replace
  // it while the table is loading.
  Version* v = reinterpret_cast<Version*>(cookie);
  std::atomic_ref<std::uint64_t>(v->home).store(address, std::memory_order_relaxed);
}

void BulkLoader::pop_done() {
  while (!waiting_.empty() && waiting_.front().done) {
    waiting_.pop_front();
    ++waiting_base_;
  }
}

void BulkLoader::enter(Waiting* w, std::uint64_t address) {
  BRAID_ASSERT(!w->done);
  w->done = true;
  if (!failure_.is_ok()) return;  // the load fails and rolls back: nothing more to enter
  std::uint64_t existing = 0;
  const index::Outcome inserted = table_->index().insert_if_absent(w->key, address, &existing);
  if (inserted.failed()) {
    failure_ = index::take_load_failure("bulk_load");
  } else if (!inserted) {
    failure_ = Status::duplicate("bulk_load: record " + std::to_string(w->n) +
                                 " repeats the key of an earlier record");
  } else {
    table_->note_named_by_address(1);
  }
  w->key = std::string();  // its memory back now, not when the front catches up
}

Version* BulkLoader::keep(std::string_view value, Status* failure) {
  if (ctx_ != nullptr && ctx_records_ >= kRecordsPerContext) end_context();
  if (ctx_ == nullptr) {
    ctx_ = db_->txns().begin();
    if (ctx_ == nullptr) return nullptr;  // every application context is open
    ctx_records_ = 0;
  }
  ++ctx_records_;
  Version* v = db_->protocol().make_version(ctx_, value, false);
  if (v == nullptr) {
    *failure = db_->protocol().out_of_version_memory();
    return nullptr;
  }
  v->stamp.store(cts_, std::memory_order_relaxed);
  return v;
}

void BulkLoader::drop_kept() {
  end_context();
  ColdStore* cold = db_->cold();
  std::uint32_t dropped = 0;
  for (const auto& [from, to] : own_oids_) {
    for (std::uint64_t oid = from; oid < to; ++oid) {
      std::atomic<std::uint64_t>& slot = table_->oids().entry(oid);
      const std::uint64_t e = slot.load(std::memory_order_acquire);
      if (!entry::is_hot(e)) continue;
      if (ctx_ == nullptr) {
        ctx_ = db_->txns().begin();
        if (ctx_ == nullptr) return;  // every application context is open: the sweep takes them
      }
      // A version whose chunk is not written yet has no home to fall back to: the sweep
      // takes it later.
      if (!cold->drop(slot, e, ctx_, true)) continue;
      // Each context's limbo lists what it retired until it finishes: finished this often, the
      // memory goes back as the pass goes rather than after it.
      if (++dropped % kDropsPerContext == 0) end_context();
    }
  }
  end_context();
  (void)cold->over_budget(true);
}

std::uint64_t BulkLoader::index_to_come(std::uint64_t n) const {
  BRAID_DASSERT(n > 0);
  if (options_.expected_records <= n) return 0;
  const std::size_t nodes = table_->index().node_count();
  // A few nodes price a record badly (the first leaf holds one record at 4 KiB): until the
  // tree has kMinPricingNodes, nothing is projected and the budget alone decides.
  if (nodes < kMinPricingNodes) return 0;
  const double per_record = static_cast<double>(nodes) * index::kNodeBytes / static_cast<double>(n);
  return static_cast<std::uint64_t>(per_record *
                                    static_cast<double>(options_.expected_records - n));
}

void BulkLoader::end_context() {
  if (ctx_ == nullptr) return;
  std::lock_guard<std::mutex> g(db_->durability()->external_mutex());
  db_->finish_txn(ctx_, db_->external_log());
  ctx_ = nullptr;
}

Status BulkLoader::run(BulkSource next) {
  Durability* d = db_->durability();
  {
    std::lock_guard<std::mutex> g(d->external_mutex());
    cts_ = db_->logged_tick(db_->external_log());
  }
  if (cts_ == 0) {
    return d->halted() ? d->halt_status()
                       : Status::io_error("bulk_load: no room in the log for the load's timestamp");
  }
  Result<std::unique_ptr<storage::IoQueue>> q = d->fs().make_queue(4);
  if (!q.is_ok()) return q.status();
  queue_ = std::move(*q);
  storage::CheckpointConfig config = d->part_config();
  config.manifest = false;
  storage::FileTable* files = &db_->cold()->files();
  config.created = [this, files](std::uint64_t n, const std::string& path) {
    files->add(n, path);
    files_.push_back(n);
  };
  config.written = [this](std::uint64_t cookie, std::uint64_t address) {
    written(cookie, address);
  };
  // Sequence 0 in the chunk headers: these parts belong to no checkpoint of their own.
  const storage::CkptHeader header{
      storage::kFormatVersion, db_->table_count(), 0, cts_, d->generation(), 0, 0};
  writer_ = std::make_unique<storage::CheckpointWriter>(
      &d->fs(), queue_.get(), header, std::vector<storage::LogStart>{}, std::move(config));
  ColdStore* cold = db_->cold();
  const bool budget = cold->budget() != 0;
  const bool pages = table_->index().pages();
  const bool by_address = db_->names_by_address(*table_);
  bool reached = false;  // a paging tree's load went past the budget
  std::string_view key;
  std::string_view value;
  for (std::uint64_t n = 1; next(&key, &value); ++n) {
    if (Status s = check_key(key); !s.is_ok()) {
      return Status::invalid_argument("bulk_load: record " + std::to_string(n) + ": " +
                                      std::string(s.message()));
    }
    if (Status s = check_value(value); !s.is_ok()) {
      return Status::invalid_argument("bulk_load: record " + std::to_string(n) + ": " +
                                      std::string(s.message()));
    }
    table_->note_value_size(value.size());
    Status failure;
    Version* v = nullptr;
    // Index leaves count in the budget (ColdStore::sweep): a load past it sends the leaves it
    // filled to storage as it goes, as a worker's rounds would, under a context of its own.
    if (budget && n % kSweepEvery == 0 && cold->over_budget()) {
      if (ctx_ != nullptr && ctx_records_ >= kRecordsPerContext) end_context();
      if (ctx_ == nullptr) {
        ctx_ = db_->txns().begin();
        ctx_records_ = 0;
      }
      if (ctx_ != nullptr) {
        (void)cold->sweep(ctx_, kSweepEvery);
        ctx_records_ += kSweepEvery;  // a context pins the horizon: not for the whole load
      }
      // The leaves' hand catches up with the load only for a tree past the whole budget:
      // until then the sweep above evicts the versions the load kept before it reached the
      // budget (in bulk, so the heap gives their pages back), and the leaves stay. Under a
      // scattered hot set a resident leaf serves every record it holds, and the first records
      // loaded are no hotter than the rest.
      (void)cold->catch_up_index(kSweepEvery, kSweepMoves, &table_->index(), cold->budget());
    }
    // A paging tree's load keeps versions while they fit beside the index the whole load will
    // have built (the caller's count of records at what the tree has cost per record so far;
    // without a count, the index built so far), so a database that fits starts warm. Leaves
    // come first: under a scattered hot set a resident leaf serves every record it holds, and
    // the records loaded first are no hotter than the rest. So once the budget is reached the
    // load keeps no more, and the versions it kept go at once: from then on the leaves' hand
    // keeps the tree near the budget, and versions kept whenever it had just made room would
    // take the room of leaves. At once, not through the sweep's hand: versions the hand was
    // still evicting overlapped the leaves it let grow, and the process peaked 100 MiB past a
    // 344 MiB budget 1.5 s into a 20 M-record load.
    const bool over = budget && cold->over_budget();
    if (pages && !reached) {
      if (over) {
        reached = true;
        drop_kept();
      } else if (cold->sampled_bytes() + index_to_come(n) > cold->budget()) {
        reached = true;
      }
    }
    const bool keeps = options_.keep_in_memory && !reached && !over;
    std::uint64_t oid = 0;
    auto insert_with_oid = [&]() -> Status {
      Result<std::uint64_t> fresh = table_->oids().allocate();
      if (!fresh.is_ok()) return fresh.status();
      oid = *fresh;
      if (!own_oids_.empty() && own_oids_.back().second == oid) {
        ++own_oids_.back().second;
      } else {
        own_oids_.push_back({oid, oid + 1});
      }
      std::uint64_t existing = 0;
      const index::Outcome inserted =
          table_->index().insert_if_absent(key, leaf_value::of_oid(oid), &existing);
      if (inserted.failed()) return index::take_load_failure("bulk_load");
      if (!inserted) {
        return Status::duplicate("bulk_load: record " + std::to_string(n) +
                                 " repeats the key of an earlier record");
      }
      return Status::ok();
    };
    const bool waits = !keeps && by_address;
    if (!waits) {
      if (Status s = insert_with_oid(); !s.is_ok()) return s;
    }
    if (keeps) {
      v = keep(value, &failure);
      if (!failure.is_ok()) return failure;
    }
    std::uint64_t cookie = v != nullptr ? version_cookie(v) : oid_cookie(oid);
    if (waits) {
      // Before the add: the writer may reap (and call written()) inside it.
      waiting_.push_back({std::string(key), n, false});
      cookie = waiting_cookie(waiting_next_++);
    }
    Result<std::uint64_t> at = writer_->add(table_->id(), key, value, cts_, cookie);
    if (!at.is_ok()) return at.status();
    if (!failure_.is_ok()) return failure_;
    if (*at == 0 && v == nullptr) {
      // Too big for a cold address: it can only live in memory (and in the next checkpoint).
      if (waits) {  // no written() follows for it: it enters the index with an OID
        BRAID_ASSERT(!waiting_.empty());
        waiting_.back().done = true;
        pop_done();
        if (Status s = insert_with_oid(); !s.is_ok()) return s;
      }
      v = keep(value, &failure);
      if (!failure.is_ok()) return failure;
      if (v == nullptr) {
        return Status::busy("bulk_load: record " + std::to_string(n) +
                            " must stay in memory and every application transaction context "
                            "is in use (Options::external_transactions)");
      }
    }
    if (v != nullptr)
      table_->oids().entry(oid).store(entry::from_version(v), std::memory_order_release);
  }
  end_context();
  for (;;) {
    Result<bool> done = writer_->finish(true);
    if (!done.is_ok()) return done.status();
    if (!failure_.is_ok()) return failure_;
    if (*done) break;
  }
  BRAID_ASSERT(waiting_.empty());  // every chunk written: every waiting key entered
  // The keys of the last chunks entered the index after the last sweep: the leaves' hand
  // catches up with them before the load's checkpoint (bounded by the leaves there are).
  if (budget && by_address) {
    (void)cold->catch_up_index(
        kSweepEvery,
        static_cast<std::uint32_t>(std::min<std::size_t>(table_->index().node_count(), UINT32_MAX)),
        &table_->index(), cold->budget());
  }
  parts_ = writer_->parts();
  writer_.reset();
  return Status::ok();
}

void BulkLoader::rollback() {
  end_context();
  // Chunks the writer still completes enter no key.
  if (failure_.is_ok()) failure_ = Status::io_error("bulk_load: rolled back");
  writer_.reset();  // waits for its requests: their buffers and callbacks are ours
  // The table held no key before the load (DatabaseImpl::bulk_load checks) and nobody else
  // writes it meanwhile: every key is the load's, and the index is emptied at once, with no
  // read of the leaves that went to storage meanwhile.
  table_->index().clear();
  table_->reset_named_by_address();
  // A context is needed for this: the load's own was finished above, and the rollback waits
  // for one rather than leak.
  mvcc::TxnContext* ctx = nullptr;
  auto context = [&] {
    while (ctx == nullptr) {
      ctx = db_->txns().begin();
      if (ctx == nullptr) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return ctx;
  };
  // Empties an entry; answers whether it held anything.
  auto empty = [&](std::uint64_t oid) {
    const std::uint64_t old =
        table_->oids().entry(oid).exchange(entry::kEmpty, std::memory_order_acq_rel);
    if (entry::is_hot(old)) {
      // Readers that found the record may still walk its chain: retired, freed past the
      // horizon.
      for (Version* x = entry::hot(old); x != nullptr;) {
        Version* older = x->next.load(std::memory_order_acquire);
        db_->txns().retire(context(), x);
        x = older;
      }
    }
    return old != entry::kEmpty;
  };
  // Given back once the transactions that may have found them have ended, as an aborted
  // insert's are.
  auto give_back = [&](std::uint64_t oid) {
    context()->freed_oids.push_back({table_, oid, mvcc::kUnsealed});
    mvcc::add_own(ctx->oids_not_records, 1);
  };
  std::vector<std::pair<std::uint64_t, std::uint64_t>> own = own_oids_;
  std::sort(own.begin(), own.end());
  auto is_own = [&](std::uint64_t oid) {
    const auto after =
        std::upper_bound(own.begin(), own.end(), std::make_pair(oid, ~std::uint64_t{0}));
    return after != own.begin() && oid < std::prev(after)->second;
  };
  // The OIDs past the load's first: its own, and those readers' promotions took meanwhile
  // (promote allocates there while a load runs). A promotion's OID goes back from here when
  // its entry still held something (the index named it, or its promotion is still under way
  // and will find the entry emptied); one whose promotion lost to the clear and emptied it
  // first was given back by the promotion.
  const std::uint64_t end = table_->oids().allocated();
  for (std::uint64_t oid = first_oid_; oid < end; ++oid) {
    if (empty(oid) && !is_own(oid)) give_back(oid);
  }
  // The load's own OIDs, some of them released ones below its first.
  for (const auto& [from, to] : own_oids_) {
    for (std::uint64_t oid = from; oid < to; ++oid) {
      if (oid < first_oid_) (void)empty(oid);
      give_back(oid);
    }
  }
  if (ctx != nullptr) {
    ctx->reclaim_work.store(1, std::memory_order_relaxed);  // exact at its end
    std::lock_guard<std::mutex> g(db_->durability()->external_mutex());
    db_->finish_txn(ctx, db_->external_log());
  }
  // No entry names the parts any more; a read in flight keeps its handle until it completes
  // (FileTable). A failed unlink leaves a file the next open deletes as unneeded.
  Durability* d = db_->durability();
  for (std::uint64_t n : files_) {
    (void)d->fs().remove(d->dir() + "/" + storage::part_file_name(n));
    db_->cold()->files().forget(n);
  }
}

}  // namespace

Status DatabaseImpl::bulk_load(Table* table, BulkSource next, const BulkLoadOptions& options) {
  if (Status s = refuse_on_worker("Database::bulk_load()"); !s.is_ok()) return s;
  if (table->owner() != this) {
    return Status::invalid_argument("bulk_load: table '" + table->name() +
                                    "' belongs to another database");
  }
  if (durability_ == nullptr) {
    return Status::invalid_argument(
        "bulk_load: the database has no directory (in-memory): load it with transactions");
  }
  if (options_.read_only) {
    return Status::invalid_argument("bulk_load: the database was opened read-only");
  }
  {
    std::lock_guard<std::mutex> g(catalog_mutex_);  // create_index takes it too
    if (table->index_count() != 0) {
      return Status::invalid_argument("bulk_load: table '" + table->name() +
                                      "' has secondary indexes; create them after the load");
    }
    if (!table->begin_loading()) {
      return Status::busy("bulk_load: table '" + table->name() + "' is being loaded already");
    }
    table->note_written();  // its stored indexes miss the load's records
  }
  // A pass of the leaves' hand that began before the load may not demote the load's records.
  if (cold_ != nullptr) cold_->wait_for_leaf_hand();
  index::LeafBatch batch;
  std::string from;
  for (;;) {
    if (!table->index().scan_leaf(from, false, {}, {}, false, &batch)) {
      table->end_loading();
      return index::take_load_failure("bulk_load");
    }
    if (!batch.entries.empty()) {
      table->end_loading();
      return Status::invalid_argument("bulk_load: table '" + table->name() +
                                      "' holds keys; a load fills a table created for it");
    }
    if (!batch.has_next) break;
    from = batch.next;
  }
  if (Status s = durability_->hold_checkpoints(); !s.is_ok()) {
    table->end_loading();
    return s;
  }
  BulkLoader loader(this, table, options);
  Status s = loader.run(next);
  if (s.is_ok()) {
    durability_->adopt_parts(loader.parts());
  } else {
    loader.rollback();
  }
  durability_->release_checkpoints();
  // A checkpoint asked for meanwhile waited for the load (Durability::checkpoint_pending) and
  // worker 0 may have gone to sleep over it: nothing else wakes it when the load failed.
  wake_worker0(true);
  table->end_loading();
  // The load's staging and its index build's peak are gone: under a budget, their pages too.
  if (options_.memory_budget_bytes != 0) util::trim_heap();
  if (!s.is_ok() || loader.parts().empty()) return s;
  if (Status c = checkpoint(); !c.is_ok()) {
    return Status(c.code(),
                  "bulk_load: the records are loaded but not durable: the checkpoint that would "
                  "make them so failed (the next one will; a crash before it loses them): " +
                      std::string(c.message()));
  }
  return Status::ok();
}

}  // namespace braid::engine
