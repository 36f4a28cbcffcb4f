// Secondary indexes: creation (with the build from the table), and maintenance on writes and
// aborts. Their reads are scan_op's (access_ops.inc, helpers in index_read.cc).
//
// Why writers do not remove entries: a reader with an older snapshot may still need the entry
// of the version it sees, so an entry can only go once no snapshot can see any version with
// that key. Reads re-derive the key from the visible version, which makes a stale entry
// harmless meanwhile. A write stages the entries it leaves stale (stage_stale), its commit
// queues them, and they are removed once the horizon passed them (reclaim.cc).
#include "engine/database_impl.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "engine/cold_store.h"
#include "engine/entry_sort.h"
#include "engine/node_segments.h"
#include "mvcc/chain_walk.h"
#include "storage/index_file.h"
#include "util/assert.h"

namespace braid::engine {

using mvcc::TxnContext;
using mvcc::Version;
namespace entry = mvcc::entry;

namespace {
Status check_entry_size(const Index& sec, std::size_t secondary_len, std::size_t key_len) {
  if (secondary_len + key_len <= kMaxKeyBytes) return Status::ok();
  return Status::invalid_argument("index '" + sec.name() + "': secondary key (" +
                                  std::to_string(secondary_len) + " bytes) plus primary key (" +
                                  std::to_string(key_len) + " bytes) exceed " +
                                  std::to_string(kMaxKeyBytes) + " bytes");
}

// Inserts the entry secondary ‖ key → oid (the caller checked its size) unless present (a
// stale entry of the key's earlier record is replaced). `*entry` is the entry key, in `buf`.
// Where the index pages, the entry's leaf may be on storage and its read may fail: kFailed,
// with take_load_failure() saying why, and the entry is not there.
enum class EntryAdd : std::uint8_t { kInserted, kPresent, kFailed };
EntryAdd insert_entry(Index* sec, std::string_view secondary, std::string_view key,
                      std::uint64_t oid, char (&buf)[kMaxKeyBytes], std::string_view* entry,
                      index::LeafChange* change = nullptr) {
  std::memcpy(buf, secondary.data(), secondary.size());
  std::memcpy(buf + secondary.size(), key.data(), key.size());
  *entry = {buf, secondary.size() + key.size()};
  const std::uint64_t packed = Index::pack(oid, secondary.size());
  std::uint64_t existing = 0;
  for (int attempt = 0;; ++attempt) {
    const index::Outcome inserted = sec->tree().insert_if_absent(*entry, packed, &existing, change);
    if (inserted.failed()) return EntryAdd::kFailed;
    if (inserted) return EntryAdd::kInserted;
    if (existing == packed) return EntryAdd::kPresent;
    // Same entry key, same primary key, another OID: the key was removed, its record
    // reclaimed (no snapshot sees it) and inserted again, before the removal's stale entry
    // came up in its queue (reclaim.cc). That entry is stale for everybody: replaced. The
    // queued one then finds another value and leaves this entry alone. The key is ours
    // (our uncommitted insert holds it), so nobody else adds this entry meanwhile.
    BRAID_ASSERT(Index::oid_of(existing) != Index::oid_of(packed));
    BRAID_ASSERT(attempt < 2);
    if (sec->tree().remove(*entry, existing).failed()) return EntryAdd::kFailed;
  }
}

// The same, into a tree nobody else sees yet (an index being built or attached). Where the
// index pages under a budget, an attach and a sorted build send leaves out as they fill the
// tree (DatabaseImpl::shed_unpublished), and a later insert may then meet a leaf that fails to
// load.
Status insert_unshared(Index* sec, std::string_view secondary, std::string_view key,
                       std::uint64_t oid) {
  char buf[kMaxKeyBytes];
  std::string_view entry;
  if (insert_entry(sec, secondary, key, oid, buf, &entry) == EntryAdd::kFailed) {
    return index::take_load_failure("create_index");
  }
  return Status::ok();
}
}  // namespace

Status DatabaseImpl::derive_secondary(Table& table, std::string_view key, std::string_view value,
                                      SecondaryKeys* out) {
  out->count = table.index_count();
  for (std::uint32_t i = 0; i < out->count; ++i) {
    Index* sec = table.secondary(i);
    out->present[i] = sec->extract(key, value, &out->keys[i]);
    if (!out->present[i]) continue;
    if (Status st = check_entry_size(*sec, out->keys[i].size(), key.size()); !st.is_ok()) {
      return st;
    }
  }
  return Status::ok();
}

Status DatabaseImpl::add_secondary(TxnContext* ctx, Table& table, std::string_view key,
                                   std::uint64_t oid, const SecondaryKeys& keys,
                                   const Version* prev) {
  const bool had_value = prev != nullptr && !prev->tombstone();
  for (std::uint32_t i = 0; i < table.index_count(); ++i) {
    Index* sec = table.secondary(i);
    Key old;
    const bool had_key = had_value && sec->extract(key, prev->value(), &old) &&
                         old.size() + key.size() <= kMaxKeyBytes;
    const bool has_key = i < keys.count && keys.present[i];
    // The common update leaves the secondary key alone: its entry exists already.
    if (had_key && has_key && old.view() == keys.keys[i].view()) continue;
    if (had_key) stage_stale(ctx, sec, old.view(), key, oid);
    if (!has_key) continue;
    const std::string_view secondary = keys.keys[i].view();
    char buf[kMaxKeyBytes];
    std::string_view k;
    index::LeafChange change;
    const EntryAdd added =
        insert_entry(sec, secondary, key, oid, buf, &k, ctx->serializable ? &change : nullptr);
    if (added == EntryAdd::kFailed) [[unlikely]] {
      // The record is installed and this entry is missing: the transaction cannot commit.
      // What it added so far is listed and goes with its abort.
      ctx->failed_write = true;
      return index::take_load_failure("index '" + sec->name() + "'");
    }
    if (added == EntryAdd::kPresent) continue;
    if (ctx->serializable) protocol_.ssn_note_insert(ctx, change);
    ctx->index_adds.push_back({sec, Index::pack(oid, secondary.size()),
                               static_cast<std::uint32_t>(ctx->index_keys.size()),
                               static_cast<std::uint16_t>(k.size())});
    ctx->index_keys.append(k);
  }
  return Status::ok();
}

void DatabaseImpl::stage_stale(TxnContext* ctx, Index* sec, std::string_view secondary,
                               std::string_view key, std::uint64_t oid) {
  BRAID_DASSERT(secondary.size() + key.size() <= kMaxKeyBytes);
  if (ctx->stale_oldest.load(std::memory_order_relaxed) == mvcc::kNoPin) {
    // Before the commit timestamp exists, a value below it: a stale-horizon scan from now on
    // waits for this entry (TxnContext::stale_oldest).
    ctx->stale_oldest.store(txns_.clock().load(std::memory_order_seq_cst),
                            std::memory_order_seq_cst);
  }
  ctx->stale.push_back({sec, oid, mvcc::kUnsealed,
                        static_cast<std::uint32_t>(ctx->stale_keys.size()),
                        static_cast<std::uint16_t>(secondary.size() + key.size()),
                        static_cast<std::uint16_t>(secondary.size())});
  ctx->stale_keys.append(secondary);
  ctx->stale_keys.append(key);
}

void DatabaseImpl::stage_stale_of(TxnContext* ctx, Table& table, std::string_view key,
                                  std::uint64_t oid, const Version* prev) {
  if (prev == nullptr || prev->tombstone()) return;
  for (std::uint32_t i = 0; i < table.index_count(); ++i) {
    Index* sec = table.secondary(i);
    Key old;
    if (!sec->extract(key, prev->value(), &old)) continue;
    if (old.size() + key.size() > kMaxKeyBytes) continue;  // never inserted
    stage_stale(ctx, sec, old.view(), key, oid);
  }
}

void DatabaseImpl::remove_secondary_adds(TxnContext* ctx) {
  for (auto it = ctx->index_adds.rbegin(); it != ctx->index_adds.rend(); ++it) {
    const std::string_view k(ctx->index_keys.data() + it->key_off, it->key_len);
    // The leaf is in memory: one that holds an entry naming a record an open transaction
    // writes never leaves (ColdStore::sweep_leaves), so nothing here fails on a load.
    const index::Outcome removed = it->index->tree().remove(k, it->value);
    BRAID_ASSERT(static_cast<bool>(removed));
  }
  // The lists themselves are cleared with the rest of the context (TxnTable::finish).
}

void DatabaseImpl::finish_own_txn(TxnContext* ctx) {
  if (durability_ == nullptr) return finish_txn(ctx, external_log());
  std::lock_guard<std::mutex> g(durability_->external_mutex());
  finish_txn(ctx, external_log());
}

Result<Index*> DatabaseImpl::create_index(Table& table, std::string_view name,
                                          SecondaryKeyFn key_fn, const IndexOptions& options) {
  if (name.empty() || name.size() > kMaxTableNameBytes) {
    return Status::invalid_argument("index name must be 1.." + std::to_string(kMaxTableNameBytes) +
                                    " bytes");
  }
  if (!key_fn) return Status::invalid_argument("create_index: empty key function");
  // Where the index pages under a budget, the build moves the leaves' hand and sheds the new
  // tree's leaves, whose consent reads the versions their entries name: a begun context keeps
  // those from being freed meanwhile (as for every sweep that visits such leaves), from before
  // the build to the end of the catch-up below.
  TxnContext* pin = nullptr;
  if (node_segments_ != nullptr && cold_->budget() != 0) {
    pin = txns_.begin();
    if (pin == nullptr) {
      return Status::busy("create_index: all " + std::to_string(options_.external_transactions) +
                          " application-thread transactions are open "
                          "(Options::external_transactions)");
    }
  }
  // The build reads evicted records where it finds them, in passes: no checkpoint may copy
  // them elsewhere and delete their part meanwhile. Taken before the catalog's mutex, which a
  // running checkpoint's scan takes (table_at) while the hold waits for it to end.
  if (durability_ != nullptr) {
    if (Status s = durability_->hold_checkpoints(); !s.is_ok()) return s;
  }
  // The build gives every record named by address an OID, and the index's entries name them:
  // from here on no record may give its OID back (Table::demotes).
  table.hold_demotion();
  if (cold_ != nullptr) cold_->wait_for_leaf_hand();
  Result<Index*> built = build_index(table, name, std::move(key_fn), options);
  table.release_demotion();  // kept off by the index itself, once it was added
  if (durability_ != nullptr) {
    durability_->release_checkpoints();
    wake_worker0(true);  // a checkpoint asked for meanwhile waited for the hold
  }
  // A paging tree is published with up to its share of the budget in memory (a sorted build
  // or an attach sheds the rest as it fills it): its leaves go now while the budget is
  // exceeded, as after a bulk load, in a pass of their own over the new tree (the shared hand
  // could be anywhere, and a worker holding it would skip every move). Its leaves carry no
  // marks from the build, so the first lap takes (in the pinning context).
  if (built.is_ok() && pin != nullptr) {
    index::BTree& tree = (*built)->tree();
    tree.set_marks_uses(true);
    (void)cold_->catch_up_secondary(&table, tree);
  }
  if (pin != nullptr) finish_own_txn(pin);
  return built;
}

Result<Index*> DatabaseImpl::build_index(Table& table, std::string_view name, SecondaryKeyFn key_fn,
                                         const IndexOptions& options) {
  std::unique_lock<std::mutex> guard(catalog_mutex_);
  if (index_by_name_.count(std::string(name)) != 0) {
    return Status::duplicate("index '" + std::string(name) + "' exists");
  }
  // A stored index of this name: attached when its version matches, else dropped (the next
  // checkpoint stores the one built here instead).
  Durability::PendingIndex stored;
  const bool found_stored =
      durability_ != nullptr && durability_->take_stored_index(table.id(), name, &stored);
  const bool attach = found_stored && options.key_version != 0 &&
                      stored.stored.desc.key_version == options.key_version;
  if (options.attach_only && !attach) {
    const std::string what = "index '" + std::string(name) + "' of table '" + table.name() + "'";
    if (!found_stored) {
      return Status::not_found(what + " is not stored (never created with a key version, " +
                               "or the table was written since the open)");
    }
    return Status::invalid_argument(what + " is stored with key version " +
                                    std::to_string(stored.stored.desc.key_version) + ", not " +
                                    std::to_string(options.key_version));
  }
  if (table.loading()) {
    return Status::busy("create_index: table '" + table.name() +
                        "' is being bulk-loaded (Database::bulk_load)");
  }
  if (table.index_count() >= kMaxIndexesPerTable) {
    return Status::busy("table '" + table.name() + "' has " + std::to_string(kMaxIndexesPerTable) +
                        " indexes (kMaxIndexesPerTable)");
  }
  auto owned = std::make_unique<Index>(std::string(name), &table, std::move(key_fn),
                                       options.key_version, l2_cache_bytes(), &index_pool_);
  Index* sec = owned.get();
  // Where the index pages, secondary trees page too, through the same store. Their ids sit
  // above every table's, so an image read for one tree is never taken for another's.
  if (node_segments_ != nullptr) {
    sec->tree().attach_store(node_segments_.get(),
                             kSecondaryTreeIds | static_cast<std::uint32_t>(indexes_.size()));
    sec->tree().set_pages_inner(options_.page_index_inner);
    // The build's inserts are no application's reads (create_index turns marks on again).
    sec->tree().set_marks_uses(false);
  }
  // Build from every version of every record, not only the newest: the caller guarantees no
  // writer, but readers with older snapshots may read through the index once it is published.
  // The entries older versions derive and the newest does not are stale from the start: they
  // are queued like a write's (reclaim.cc), in a context of their own.
  Status status = Status::ok();
  std::vector<std::pair<std::string, std::uint64_t>> stale;  // (entry key, oid)
  std::vector<std::uint16_t> stale_secondary_len;
  // Where the index pages under a budget, the entries are sorted first (engine/entry_sort.h)
  // and fill the tree in key order, its leaves going out behind the last insert as an
  // attach's do: inserted as the table's order gives them, they would scatter over the tree and
  // keep it whole in memory until it is published.
  std::optional<EntrySorter> sorter;
  if (!attach && node_segments_ != nullptr && cold_->budget() != 0) {
    sorter.emplace(&durability_->fs(), durability_->dir(), &cold_->files(), build_sort_bytes());
  }
  auto add = [&](std::string_view key, std::string_view value, std::uint64_t oid) {
    Key secondary;
    if (!sec->extract(key, value, &secondary)) return Status::ok();
    if (Status s = check_entry_size(*sec, secondary.size(), key.size()); !s.is_ok()) return s;
    if (!sorter) return insert_unshared(sec, secondary.view(), key, oid);
    char buf[kMaxKeyBytes];
    std::memcpy(buf, secondary.view().data(), secondary.size());
    std::memcpy(buf + secondary.size(), key.data(), key.size());
    return sorter->add({buf, secondary.size() + key.size()}, secondary.size(),
                       Index::pack(oid, secondary.size()));
  };
  // Evicted records (their one version each) are read as the checker reads them: in passes
  // (build_cold_pass), each pass in file order with many reads in flight, every block once,
  // each record verified against its key's hash. A read per record, in key order, paid the
  // device's latency once per record.
  const std::size_t cold_pass = build_cold_pass();
  std::vector<ColdStore::BulkRecord> cold;
  cold.reserve(cold_pass);  // once: grown by doubling it would pass the bound (untouched: free)
  ColdStore::BulkStats cold_stats;
  auto read_cold = [&]() -> Status {
    if (cold.empty()) return Status::ok();
    BRAID_ASSERT(cold_ != nullptr);  // cold entries exist only with a directory
    Status s = cold_->read_in_file_order(
        &cold, table.id(), {},
        [&](const ColdStore::BulkRecord& r, const storage::RecordView& rv) {
          return add(rv.key, rv.value, r.cookie);
        },
        &cold_stats);
    cold.clear();
    return s;
  };
  // The table's own leaves, which the scan reads back where they are out, would stay until
  // the build ends (no worker need move the hand meanwhile): the build moves it itself while
  // over budget, as a bulk load does. Without a context the hand passes the secondary trees by,
  // and this one is not the table's yet.
  const bool sheds_table = !attach && node_segments_ != nullptr && cold_->budget() != 0;
  std::uint64_t visited = 0;
  auto visit = [&](std::string_view key, std::uint64_t value) {
    if (!status.is_ok()) return;
    if (sheds_table && ++visited % kBuildSweepEvery == 0) {
      (void)cold_->catch_up_index(kBuildSweepEvery, kBuildSweepMoves);
    }
    if (!leaf_value::names_oid(value)) {
      // A record named by its cold address: a secondary entry names an OID, so the record
      // takes one first (names_by_address: a table with secondary indexes keeps no address).
      LookupHint promoted;
      status = promote(table, key, value, &promoted);
      if (!status.is_ok() || !promoted.found) return;
      value = leaf_value::of_oid(promoted.oid);
    }
    const std::uint64_t oid = leaf_value::oid(value);
    const std::uint64_t e = table.oids().entry(oid).load(std::memory_order_acquire);
    if (entry::is_cold(e)) {
      cold.push_back({e, ColdStore::key_hash(key), oid});
      if (cold.size() >= cold_pass) status = read_cold();
      return;
    }
    if (!entry::is_hot(e)) return;
    const Version* head = entry::hot(e);
    Key newest;
    const bool has_newest = !head->tombstone() && sec->extract(key, head->value(), &newest);
    for (const Version* v = head; v != nullptr && status.is_ok();
         v = v->next.load(std::memory_order_acquire)) {
      if (v->tombstone()) continue;
      status = add(key, v->value(), oid);
      if (v == head || !status.is_ok()) continue;
      Key old;
      if (!sec->extract(key, v->value(), &old)) continue;
      if (has_newest && old.view() == newest.view()) continue;
      std::string k(old.view());
      k.append(key);
      stale.emplace_back(std::move(k), oid);
      stale_secondary_len.push_back(static_cast<std::uint16_t>(old.size()));
    }
  };
  std::uint64_t attached = 0;
  if (attach) {
    status = attach_entries(table, sec, stored, visit, &attached);
  } else {
    if (!table.index().for_each(visit) && status.is_ok()) {
      status = index::take_load_failure("create_index");
    }
  }
  if (status.is_ok()) status = read_cold();
  if (status.is_ok() && sorter) {
    std::string hand;
    std::size_t evicted = 0;
    std::uint64_t inserted = 0;
    status =
        sorter->drain([&](std::string_view entry, std::size_t secondary_len, std::uint64_t packed) {
          Status s = insert_unshared(sec, entry.substr(0, secondary_len),
                                     entry.substr(secondary_len), Index::oid_of(packed));
          if (s.is_ok()) shed_unpublished(sec->tree(), ++inserted, &hand, &evicted);
          return s;
        });
    index_sort_runs_.fetch_add(sorter->runs_written(), std::memory_order_relaxed);
  }
  if (!status.is_ok()) return status;
  if (attach) {
    indexes_attached_.fetch_add(1, std::memory_order_relaxed);
    index_entries_attached_.fetch_add(attached, std::memory_order_relaxed);
  } else {
    indexes_built_.fetch_add(1, std::memory_order_relaxed);
  }
  TxnContext* ctx = nullptr;
  if (!stale.empty()) {
    ctx = txns_.begin();
    if (ctx == nullptr) {
      return Status::busy("create_index: all " + std::to_string(options_.external_transactions) +
                          " application-thread transactions are open "
                          "(Options::external_transactions)");
    }
    for (std::size_t i = 0; i < stale.size(); ++i) {
      const std::string_view k = stale[i].first;
      stage_stale(ctx, sec, k.substr(0, stale_secondary_len[i]), k.substr(stale_secondary_len[i]),
                  stale[i].second);
    }
    // Every write the entries outlived committed below the clock now (no writer runs).
    seal_stale(ctx, txns_.clock_now());
  }
  table.add_secondary(sec);
  index_by_name_.emplace(std::string(name), sec);
  indexes_.push_back(std::move(owned));
  guard.unlock();  // the external log's mutex is never taken under the catalog's
  if (ctx != nullptr) {
    finish_own_txn(ctx);
  }
  return sec;
}

Status DatabaseImpl::attach_entries(
    Table& table, Index* sec, const Durability::PendingIndex& stored,
    const std::function<void(std::string_view, std::uint64_t)>& visit, std::uint64_t* attached) {
  const storage::CkptIndex& d = stored.stored.desc;
  // The keys written since the entries were taken: the dirty file's and the log tail's. Their
  // stored entries may be stale or missing, so each is derived again from its record; every
  // other key's record is as the entries saw it.
  std::vector<std::string> dirty = stored.tail_keys;
  if (d.dirty_file != 0) {
    Status s = storage::read_index_file(&durability_->fs(), durability_->dir(), d.dirty_file,
                                        d.dirty_entries, [&](std::string_view key, std::size_t) {
                                          dirty.emplace_back(key);
                                          return Status::ok();
                                        });
    if (!s.is_ok()) return s;
  }
  std::sort(dirty.begin(), dirty.end());
  dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
  // The entries name no OID (the records may have none after an open: a budget names them by
  // address): each is a hint a reader resolves by its primary key. They come in key order, so
  // where the index pages under a budget the leaves behind the last insert are sent out as the
  // tree passes its share (an attach of an index larger than the budget stays near it; the
  // hand catches up with the rest once the index is published, create_index).
  std::string hand;
  std::size_t evicted = 0;
  Status s = storage::read_index_file(
      &durability_->fs(), durability_->dir(), d.file, d.entries,
      [&](std::string_view entry, std::size_t secondary_len) {
        if (std::binary_search(dirty.begin(), dirty.end(), entry.substr(secondary_len))) {
          return Status::ok();
        }
        std::uint64_t existing = 0;
        const index::Outcome inserted = sec->tree().insert_if_absent(
            entry, Index::pack(Index::kNoOid, secondary_len), &existing);
        if (inserted.failed()) return index::take_load_failure("create_index");
        if (inserted) {
          ++*attached;
          shed_unpublished(sec->tree(), *attached, &hand, &evicted);
        }
        return Status::ok();
      });
  if (!s.is_ok()) return s;
  for (const std::string& key : dirty) {
    index::Lookup l(table.index(), key);
    l.run(false);
    if (l.failed()) return index::take_load_failure("create_index");
    if (l.found()) visit(key, l.value());
  }
  return Status::ok();
}

void DatabaseImpl::shed_unpublished(index::BTree& tree, std::uint64_t inserted, std::string* hand,
                                    std::size_t* evicted) {
  if (node_segments_ == nullptr || cold_->budget() == 0) return;
  if (inserted % kAttachShrinkEvery != 0) return;
  const std::uint64_t share = cold_->budget() / kAttachShareDivisor;
  if (tree.node_count() * index::kNodeBytes <= share) return;
  const std::size_t before = *evicted;
  (void)cold_->shrink_unpublished(tree, hand, share, evicted);
  index_leaves_shed_.fetch_add(*evicted - before, std::memory_order_relaxed);
}

std::size_t DatabaseImpl::build_cold_pass() const {
  const std::uint64_t budget = cold_ != nullptr ? cold_->budget() : 0;
  if (budget == 0) return kColdPassMax;
  return std::clamp<std::size_t>(budget / kColdPassDivisor / sizeof(ColdStore::BulkRecord),
                                 kColdPassMin, kColdPassMax);
}

std::size_t DatabaseImpl::build_sort_bytes() const {
  if (options_.index_build_sort_bytes != 0) return options_.index_build_sort_bytes;
  return std::clamp(cold_->budget() / kBuildSortDivisor, kBuildSortMinBytes, kBuildSortMaxBytes);
}

}  // namespace braid::engine
