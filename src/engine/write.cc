// The write path of an active transaction: argument-checked writes, the primary record's
// install (first-updater-wins, mvcc::Protocol::install) with the secondary entries it needs,
// and the value hint a write leaves in its lookup's leaf.
#include "engine/database_impl.h"

#include <string>

#include "engine/cold_store.h"
#include "util/assert.h"

namespace braid::engine {

using mvcc::TxnContext;
using mvcc::Version;
namespace entry = mvcc::entry;
using mvcc::kMaxWriteRetries;

// ---- Writes -------------------------------------------------------------------------------------

Status DatabaseImpl::write(TxnContext* ctx, Table& table, std::string_view key,
                           std::string_view value, WriteKind kind, const LookupHint* hint) {
  if (options_.read_only) [[unlikely]] {
    return Status::invalid_argument("the database was opened read-only (Options::read_only)");
  }
  if (table.loading()) [[unlikely]] {
    return Status::busy("table '" + table.name() + "' is being bulk-loaded (Database::bulk_load)");
  }
  if (ctx->writes.size() >= txns_.max_writes()) {
    return Status::busy("transaction write set is full (Options::max_txn_writes = " +
                        std::to_string(txns_.max_writes()) + ")");
  }
  if (kind != WriteKind::kRemove) table.note_value_size(value.size());
  // A removal needs no entry: the tombstone hides the record from every index read. The
  // entries of the version it replaced become stale.
  if (kind == WriteKind::kRemove || table.index_count() == 0) {
    std::uint64_t oid;
    const Version* prev;
    Status s = write_primary(ctx, table, key, value, kind, hint, &oid, &prev);
    if (kind == WriteKind::kRemove && s.is_ok()) {
      ctx->removes = true;
      if (table.index_count() != 0) stage_stale_of(ctx, table, key, oid, prev);
    }
    return s;
  }
  SecondaryKeys keys;
  if (Status s = derive_secondary(table, key, value, &keys); !s.is_ok()) return s;
  std::uint64_t oid = 0;
  const Version* prev = nullptr;
  Status s = write_primary(ctx, table, key, value, kind, hint, &oid, &prev);
  if (!s.is_ok()) return s;
  return add_secondary(ctx, table, key, oid, keys, prev);
}

Status DatabaseImpl::write_primary(TxnContext* ctx, Table& table, std::string_view key,
                                   std::string_view value, WriteKind kind, const LookupHint* hint,
                                   std::uint64_t* oid_out, const Version** prev) {
  *prev = nullptr;
  // A value read from the key's leaf: an OID, or a cold address that takes one first.
  const auto oid_of = [&](std::uint64_t named, bool* found, std::uint64_t* oid) {
    if (leaf_value::names_oid(named)) [[likely]] {
      *oid = leaf_value::oid(named);
      return Status::ok();
    }
    LookupHint promoted;
    Status s = promote(table, key, named, &promoted);
    *found = promoted.found;
    *oid = promoted.oid;
    return s;
  };
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    std::uint64_t oid = 0;
    bool found;
    if (attempt == 0 && hint != nullptr) {
      found = hint->found;
      oid = hint->oid;
    } else {
      std::uint64_t value = 0;
      const index::Outcome looked = table.index().lookup(key, &value);
      if (looked.failed()) return index::take_load_failure("write");
      found = static_cast<bool>(looked);
      if (found) {
        if (Status s = oid_of(value, &found, &oid); !s.is_ok()) return s;
      }
    }
    if (!found && ctx->serializable && (kind == WriteKind::kUpdate || kind == WriteKind::kRemove)) {
      // NotFound is a read of absence: keep the leaf that answered it (phantoms).
      index::Lookup l(table.index(), key);
      l.run(false);
      if (l.failed()) return index::take_load_failure("write");
      found = l.found();
      if (found) {
        if (Status s = oid_of(l.value(), &found, &oid); !s.is_ok()) return s;
      }
      if (!found) {
        if (Status s = protocol_.ssn_read_leaf(ctx, l.leaf_read()); !s.is_ok()) return s;
      }
    }
    if (!found) {
      if (kind == WriteKind::kUpdate || kind == WriteKind::kRemove) return Code::kNotFound;
      // A new record: publish the version in a fresh OID, then the key in the index.
      Result<std::uint64_t> fresh = table.oids().allocate();
      if (!fresh.is_ok()) return fresh.status();
      Version* v = protocol_.make_version(ctx, value, false);
      if (v == nullptr) return protocol_.out_of_version_memory();
      auto& slot = table.oids().entry(*fresh);
      protocol_.install_fresh(slot, v);
      std::uint64_t existing;
      index::LeafChange change;
      const index::Outcome inserted = table.index().insert_if_absent(
          key, leaf_value::of_oid(*fresh), &existing, ctx->serializable ? &change : nullptr,
          attempt == 0 && hint != nullptr ? &hint->leaf : nullptr, txns_.hint_of(v));
      if (inserted) {
        if (ctx->serializable) protocol_.ssn_note_insert(ctx, change);
        protocol_.add_write(ctx, &table, &slot, *fresh, v, key, true);
        *oid_out = *fresh;
        return Status::ok();
      }
      // Lost a race with a concurrent insert of the same key (or the leaf could not be read in):
      // no index names the OID, but the
      // cold store's sweep walks OID arrays directly and may be reading the version now, so it
      // is retired, not freed, and the OID waits for the same epoch.
      slot.store(entry::kEmpty, std::memory_order_release);
      txns_.retire(ctx, v);
      ctx->freed_oids.push_back({&table, *fresh, mvcc::kUnsealed});
      mvcc::add_own(ctx->oids_not_records, 1);
      ctx->reclaim_work.store(1, std::memory_order_relaxed);  // exact again at its finish
      if (inserted.failed()) return index::take_load_failure("write");
      bool still = true;
      if (Status s = oid_of(existing, &still, &oid); !s.is_ok()) return s;
      if (!still) continue;  // the key went since: look again
    }
    Status status;
    const mvcc::Install r = protocol_.install(ctx, &table, table.oids().entry(oid), oid, key, value,
                                              kind, &status, prev);
    if (r == mvcc::Install::kDone) {
      // Our version heads the chain now (ours until we end): the leaf's value hint names it,
      // for get_op to fetch beside the entry. Only through the lookup's own leaf and slot.
      if (status.is_ok() && attempt == 0 && hint != nullptr && hint->found) {
        const std::uint64_t e = table.oids().entry(oid).load(std::memory_order_relaxed);
        if (entry::is_hot(e)) {
          table.index().set_value_hint(hint->leaf, hint->slot, txns_.hint_of(entry::hot(e)));
        }
      }
      *oid_out = oid;
      return status;
    }
    if (r == mvcc::Install::kCold) {
      // Evicted since the operation looked (the coroutine modes fetched it already, so this
      // is a narrow race there): read it back synchronously and write again.
      std::uint64_t e;
      if (Status s = cold_->fetch_sync(ColdPort::current(), ctx, &table.oids().entry(oid),
                                       table.id(), key, &e);
          !s.is_ok()) {
        return s;
      }
    }
  }
  return Status::busy("write retried too often");
}

}  // namespace braid::engine
