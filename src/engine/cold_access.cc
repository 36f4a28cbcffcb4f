// The storage path of the record operations (access.h: cold_fetch, cold_fetch_sync).
#include <coroutine>

#include "engine/access.h"
#include "engine/cold_fetch.h"
#include "engine/cold_store.h"
#include "engine/stage_profile.h"
#include "engine/table.h"
#include "engine/tx_state.h"
#include "runtime/miss.h"

namespace braid::engine {

Status cold_fetch_sync(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                       std::string_view key, std::uint64_t* out) {
  ColdStore* cold = env.db->cold();
  BRAID_ASSERT(cold != nullptr);  // cold entries exist only in a database with a directory
  ColdPort* port = env.tx != nullptr ? env.tx->port : ColdPort::current();
  return cold->fetch_sync(port, env.ctx, slot, table.id(), key, out);
}

Status promote(Table& table, std::string_view key, std::uint64_t named, LookupHint* hint) {
  // A round is lost to another promotion, a removal, or the hand demoting the fresh OID.
  Table::DemotionHold hold(table);
  for (int round = 0; round < ColdStore::kMaxMissRounds; ++round, hold.lost_round()) {
    BRAID_DASSERT(!leaf_value::names_oid(named));
    BRAID_DASSERT(mvcc::entry::is_cold(named));
    // Beside a bulk load, an OID above the load's first: a failed load takes back what lies
    // there (BulkLoader::rollback), promotions' OIDs included.
    Result<std::uint64_t> fresh =
        table.loading() ? table.oids().allocate_above() : table.oids().allocate();
    if (!fresh.is_ok()) return fresh.status();
    std::atomic<std::uint64_t>& entry = table.oids().entry(*fresh);
    entry.store(named, std::memory_order_release);
    const index::Outcome swapped = table.index().replace(key, named, leaf_value::of_oid(*fresh));
    if (swapped) table.note_named_by_address(-1);
    if (!swapped) {
      // The leaf changed first (another promotion, a removal, a failed load's clear): nothing
      // ever named the OID, so no transaction can hold it and it goes back at once; unless a
      // load's rollback emptied it first, which then gives it back (one of the two wins here).
      std::uint64_t expect = named;
      if (entry.compare_exchange_strong(expect, mvcc::entry::kEmpty, std::memory_order_acq_rel)) {
        table.oids().release(*fresh);
      }
      if (swapped.failed()) return index::take_load_failure("promote");
    }
    index::Lookup l(table.index(), key);
    l.run(false);
    if (l.failed()) return index::take_load_failure("promote");
    if (!l.found()) {
      *hint = LookupHint{false, 0, l.leaf_read(), 0};
      return Status::ok();
    }
    named = l.value();
    if (leaf_value::names_oid(named)) {
      *hint = LookupHint{true, leaf_value::oid(named), l.leaf_read(), l.leaf_slot()};
      return Status::ok();
    }
  }
  return Status::busy("promote: the key's leaf kept changing");
}

Status relocate(OpEnv env, Table& table, std::string_view key, std::atomic<std::uint64_t>** slot,
                std::uint64_t* e, index::LeafRead* leaf) {
  Table::DemotionHold hold(table);
  for (int round = 0; round < ColdStore::kMaxMissRounds; ++round, hold.lost_round()) {
    index::Lookup l(table.index(), key);
    l.run(false);
    if (l.failed()) return index::take_load_failure("relocate");
    LookupHint hint;
    if (Status s = hint_of(table, key, l, &hint); !s.is_ok()) return s;
    *leaf = hint.leaf;
    if (!hint.found) {
      *slot = nullptr;
      *e = mvcc::entry::kEmpty;
      return Status::ok();
    }
    *slot = &table.oids().entry(hint.oid);
    if (Status s = cold_fetch_sync(env, *slot, table, key, e); !s.is_ok()) return s;
    if (!mvcc::entry::is_moved(*e)) return Status::ok();
  }
  return Status::busy("relocate: the record was demoted again on every look");
}

bool promote_named(Table& table, const index::LeafBatch& batch, Status* status) {
  bool none = true;
  for (const auto& e : batch.entries) {
    if (leaf_value::names_oid(e.value)) [[likely]]
      continue;
    none = false;
    LookupHint promoted;
    if (Status s = promote(table, batch.key(e), e.value, &promoted); !s.is_ok()) {
      *status = std::move(s);
      return false;
    }
  }
  return none;
}

void drop_read(OpEnv env, std::atomic<std::uint64_t>* slot, std::uint64_t e) {
  const StageScope stage(Stage::kDrop);
  (void)env.db->cold()->drop(*slot, e, env.ctx);
}

ColdFetch::Wait ColdFetch::step() {
  ColdStore* cold = env_.db->cold();
  if (load_ != nullptr) {  // the read we waited for
    if (load_->pending()) return Wait::kIo;
    Status s = cold->outcome(load_);
    const std::uint64_t installed = load_->installed;
    cold->release(load_);
    load_ = nullptr;
    if (!s.is_ok()) {
      status_ = std::move(s);
      return Wait::kNone;
    }
    if (installed != 0) {
      entry_ = installed;
      return Wait::kNone;
    }
    ++round_;  // the entry moved before the install: look again
  }
  for (; round_ < ColdStore::kMaxMissRounds; ++round_) {
    const std::uint64_t e = slot_->load(std::memory_order_acquire);
    if (!mvcc::entry::is_cold(e)) {
      entry_ = e;  // its versions stay allocated while our snapshot pins the horizon
      return Wait::kNone;
    }
    const ColdStore::Miss m = cold->join(slot_, e, env_.ctx, table_.id(), key_, ahead_);
    if (m.busy) return Wait::kBusy;  // every load is in use: let the others finish theirs
    if (m.load == nullptr) continue;
    // Issued or joined: a later round runs when the scan is at this entry, its own miss,
    // entitled to the reserve.
    ahead_ = false;
    if (m.lead) env_.tx->port->submit(m.load);
    load_ = m.load;
    return step();  // pending (the usual case) answers kIo; a failed submit is done already
  }
  status_ = Status::busy("record evicted again on every read of it");
  return Wait::kNone;
}

Task<Status> cold_fetch(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                        std::string_view key, std::uint64_t* out) {
  if (!env.tx->port->has_ring()) co_return cold_fetch_sync(env, slot, table, key, out);
  ColdFetch f(env, slot, table, key);
  BRAID_COLD_DRIVE(env, f);
  *out = f.entry();
  co_return std::move(f.status());
}

}  // namespace braid::engine
