// Secondary indexes: creation (with the build from the table), and maintenance on writes and
// aborts. Their reads are scan_op's (access_ops.inc, helpers in index_read.cc).
//
// Why entries are added but never removed by writers: a reader with an older snapshot may still
// need the entry of the version it sees, so an entry could only go once no snapshot can see any
// version with that key. Reads re-derive the key from the visible version instead, which makes
// a stale entry harmless. A removed record's entries go when it is reclaimed (reclaim.cc);
// entries left by updates that changed the key stay, so a table with secondary indexes never
// reuses an OID: an entry can never name another record.
#include "engine/database_impl.h"

#include <cstring>

#include "engine/cold_store.h"
#include "mvcc/chain_walk.h"
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

// Inserts the entry secondary ‖ key → oid (the caller checked its size) unless present. Returns
// true when inserted; `*entry` is the entry key, in `buf`.
bool insert_entry(Index* sec, std::string_view secondary, std::string_view key, std::uint64_t oid,
                  char (&buf)[kMaxKeyBytes], std::string_view* entry,
                  index::LeafChange* change = nullptr) {
  std::memcpy(buf, secondary.data(), secondary.size());
  std::memcpy(buf + secondary.size(), key.data(), key.size());
  *entry = {buf, secondary.size() + key.size()};
  const std::uint64_t packed = Index::pack(oid, secondary.size());
  std::uint64_t existing = 0;
  if (sec->tree().insert_if_absent(*entry, packed, &existing, change)) return true;
  // Same entry key means same primary key, hence the same OID (see the file comment).
  BRAID_ASSERT(existing == packed);
  return false;
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

void DatabaseImpl::add_secondary(TxnContext* ctx, Table& table, std::string_view key,
                                 std::uint64_t oid, const SecondaryKeys& keys,
                                 const Version* prev) {
  const bool had_value = prev != nullptr && !prev->tombstone();
  for (std::uint32_t i = 0; i < keys.count; ++i) {
    if (!keys.present[i]) continue;
    Index* sec = table.secondary(i);
    const std::string_view secondary = keys.keys[i].view();
    if (had_value) {
      // The common update leaves the secondary key alone: its entry exists already.
      Key old;
      if (sec->extract(key, prev->value(), &old) && old.view() == secondary) continue;
    }
    char buf[kMaxKeyBytes];
    std::string_view k;
    index::LeafChange change;
    if (!insert_entry(sec, secondary, key, oid, buf, &k, ctx->serializable ? &change : nullptr)) {
      continue;
    }
    if (ctx->serializable) protocol_.ssn_note_insert(ctx, change);
    ctx->index_adds.push_back({sec, Index::pack(oid, secondary.size()),
                               static_cast<std::uint32_t>(ctx->index_keys.size()),
                               static_cast<std::uint16_t>(k.size())});
    ctx->index_keys.append(k);
  }
}

void DatabaseImpl::remove_secondary_adds(TxnContext* ctx) {
  for (auto it = ctx->index_adds.rbegin(); it != ctx->index_adds.rend(); ++it) {
    const std::string_view k(ctx->index_keys.data() + it->key_off, it->key_len);
    const bool removed = it->index->tree().remove(k, it->value);
    BRAID_ASSERT(removed);
  }
  // The lists themselves are cleared with the rest of the context (TxnTable::finish).
}

void DatabaseImpl::remove_secondary_of(Table& table, std::string_view key, std::uint64_t oid,
                                       const Version* head) {
  // The chain is unreachable from the entry now but not yet retired: ours to read. Entries of
  // versions pruned before stay (stale, filtered), which is why the OID is not reused.
  for (const Version* v = head; v != nullptr; v = v->next.load(std::memory_order_acquire)) {
    if (v->tombstone()) continue;
    for (std::uint32_t i = 0; i < table.index_count(); ++i) {
      Index* sec = table.secondary(i);
      Key secondary;
      if (!sec->extract(key, v->value(), &secondary)) continue;
      if (secondary.size() + key.size() > kMaxKeyBytes) continue;  // never inserted
      char buf[kMaxKeyBytes];
      std::memcpy(buf, secondary.view().data(), secondary.size());
      std::memcpy(buf + secondary.size(), key.data(), key.size());
      // Absent when an older version derived the same entry and it went already.
      (void)sec->tree().remove(std::string_view(buf, secondary.size() + key.size()),
                               Index::pack(oid, secondary.size()));
    }
  }
}

Result<Index*> DatabaseImpl::create_index(Table& table, std::string_view name,
                                          SecondaryKeyFn key_fn) {
  if (name.empty() || name.size() > kMaxTableNameBytes) {
    return Status::invalid_argument("index name must be 1.." + std::to_string(kMaxTableNameBytes) +
                                    " bytes");
  }
  if (!key_fn) return Status::invalid_argument("create_index: empty key function");
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  if (index_by_name_.count(std::string(name)) != 0) {
    return Status::duplicate("index '" + std::string(name) + "' exists");
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
                                       l2_cache_bytes(), &index_pool_);
  Index* sec = owned.get();
  // Build from every version of every record, not only the newest: the caller guarantees no
  // writer, but readers with older snapshots may read through the index once it is published.
  Status status = Status::ok();
  table.index().for_each([&](std::string_view key, std::uint64_t oid) {
    if (!status.is_ok()) return;
    const std::uint64_t e = table.oids().entry(oid).load(std::memory_order_acquire);
    auto add = [&](std::string_view value) {
      Key secondary;
      if (!sec->extract(key, value, &secondary)) return;
      status = check_entry_size(*sec, secondary.size(), key.size());
      if (!status.is_ok()) return;
      char buf[kMaxKeyBytes];
      std::string_view entry;
      (void)insert_entry(sec, secondary.view(), key, oid, buf, &entry);
    };
    if (entry::is_cold(e)) {
      // Evicted: its one version, read without bringing it back into memory.
      std::string value;
      status = cold_->read_value(e, table.id(), key, &value);
      if (status.is_ok()) add(value);
      return;
    }
    if (!entry::is_hot(e)) return;
    for (const Version* v = entry::hot(e); v != nullptr && status.is_ok();
         v = v->next.load(std::memory_order_acquire)) {
      if (!v->tombstone()) add(v->value());
    }
  });
  if (!status.is_ok()) return status;
  table.add_secondary(sec);
  index_by_name_.emplace(std::string(name), sec);
  indexes_.push_back(std::move(owned));
  return sec;
}

}  // namespace braid::engine
