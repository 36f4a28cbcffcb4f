// Reclamation of removed records: once a removal is committed, durable (with a directory) and
// seen by every snapshot, the record leaves the primary index, its versions go to the limbo,
// and its OID is allocated again once the transactions that could have found it have ended.
// No background thread: a context's queue is worked on by the context's own transaction ends
// (TxnTable's epoch rules apply to everything it hands on), a bounded number per end.
//
// Why each step is safe (docs/internals/mvcc.md, "Removed records"):
//   * The tombstone's timestamp is at or below the horizon, so every snapshot that exists or
//     will exist sees it: to all of them the record is absent, and so it stays without it.
//   * The OID entry is emptied by a CAS from the tombstone, inside the index's removal of the
//     key, with the leaf locked (BTree::remove_if). A writer that had found the OID either
//     installed over the tombstone first (the CAS fails, nothing is reclaimed: its write
//     queues its own tomb if it removes again) or finds the entry empty and looks the key up
//     again (Install::kRelookup), which waits for the leaf and then finds no key: it inserts a
//     fresh record, as a first insert of the key does. A reader that had found the OID reads
//     an empty entry: absent, as the tombstone said.
//   * A serializable reader that saw the tombstone recorded its leaf (ssn_track_get), so the
//     key's removal from the leaf, and any later insert of it, meet SSN's phantom rules.
//   * The versions are retired, not freed: a reader that loaded the entry before it was
//     emptied may still walk them until its transaction ends.
//   * The OID waits for the same epoch (FreedOid): a transaction that found it before may
//     still hold it (RecentRead, a lookup's result) until it ends; after the horizon passes
//     the clock read after the unlink nobody can, and no index names it.
//   * Secondary entries: a reader re-derives an entry's key from the version it sees, so a
//     stale entry is harmless while its OID holds the same record; but it must never name
//     another one. The entries a removal or a key-changing update left go through the stale
//     queue below; a freed OID is allocated again only once the stale horizon passed it too.
//
// Stale secondary entries (mvcc::StaleEntry). A committed write whose replaced version derived
// an entry the new one does not queues that entry with its timestamp. Once the horizon passes
// it, every snapshot sees the new version or a later one, so the entry is needed only if one of
// those derives it again (A → B → A). The removal asks under the entry's leaf lock
// (BTree::remove_if) whether any version from the record's head down to the one the horizon
// sees derives it, and refuses if one does: a writer that makes the entry current again
// installs its version before it looks for the entry in that leaf, so either the check sees
// the version or the writer finds the entry gone and inserts it again. Every key change
// queues its own entry, so the last one away from a key removes it. An evicted record's value
// is read first, outside the lock; the removal then requires the entry to be unchanged.
// The OIDs: TxnContext::stale_oldest lies at or below every entry a context still holds, set
// before the entry's timestamp exists; TxnTable::stale_horizon is their minimum. A freed OID
// is released only below both horizons, so no queued entry can still name it.
#include "engine/database_impl.h"

#include <algorithm>
#include <cstring>

#include "engine/cold_store.h"
#include "engine/durability.h"
#include "mvcc/protocol.h"
#include "util/assert.h"

namespace braid::engine {

using mvcc::TxnContext;
using mvcc::Version;
namespace entry = mvcc::entry;

namespace {
// Tombs reclaimed per transaction end, at most: a removal-heavy workload queues a few per
// transaction, so this keeps pace with any of them while bounding one end's extra work.
constexpr std::size_t kTombsPerEnd = 64;
// A queue this long asks for a fresh horizon instead of waiting for the cached one.
constexpr std::size_t kTombBatch = 256;
// Stale secondary entries removed per transaction end, at most; the same batch rule.
constexpr std::size_t kStalePerEnd = 64;
}  // namespace

void DatabaseImpl::queue_tombs(TxnContext* ctx, std::uint64_t cts) {
  BRAID_DASSERT(ctx->removes);
  for (const mvcc::WriteEntry& w : ctx->writes) {
    // The write set names the record's newest version of this transaction: a removal that
    // the transaction itself overwrote (remove, then insert) is no removal.
    if (!w.version->tombstone()) continue;
    ctx->tombs.push_back(
        {w.table, w.oid, cts, static_cast<std::uint32_t>(ctx->tomb_keys.size()), w.key_len});
    ctx->tomb_keys.append(ctx->staged_keys.data() + w.key_off, w.key_len);
    mvcc::add_own(ctx->oids_not_records, 1);
  }
  note_reclaim_work(ctx);
}

void DatabaseImpl::note_reclaim_work(TxnContext* ctx) {
  const std::uint64_t tombs = ctx->tombs.size() - ctx->tombs_done;
  const std::uint64_t stale = ctx->stale_sealed - ctx->stale_done;
  ctx->tombs_pending.store(tombs, std::memory_order_relaxed);
  ctx->stale_pending.store(stale, std::memory_order_relaxed);
  ctx->reclaim_work.store(tombs + stale + ctx->freed_oids.size(), std::memory_order_relaxed);
}

void DatabaseImpl::seal_stale(TxnContext* ctx, std::uint64_t cts) {
  for (std::size_t i = ctx->stale_sealed; i < ctx->stale.size(); ++i) ctx->stale[i].cts = cts;
  ctx->stale_sealed = ctx->stale.size();
  note_reclaim_work(ctx);
}

void DatabaseImpl::drop_staged_stale(TxnContext* ctx) {
  if (ctx->stale_sealed == ctx->stale.size()) return;
  ctx->stale.resize(ctx->stale_sealed);
  ctx->stale_keys.resize(
      ctx->stale.empty() ? 0 : ctx->stale.back().key_off + std::size_t{ctx->stale.back().key_len});
  // Nothing else pending: the word set at staging would hold OIDs back for nothing.
  if (ctx->stale_done == ctx->stale_sealed) {
    ctx->stale_oldest.store(mvcc::kNoPin, std::memory_order_release);
  }
}

void DatabaseImpl::reclaim_records(TxnContext* ctx) {
  if (ctx->stale_done < ctx->stale_sealed) reclaim_stale(ctx);
  if (ctx->tombs_done < ctx->tombs.size()) reclaim_tombs(ctx);
  if (!ctx->freed_oids.empty()) release_oids(ctx);
  note_reclaim_work(ctx);
}

void DatabaseImpl::help_reclaim(std::uint32_t log) {
  // A free application-thread context keeps its queues until its next occupant: an
  // application thread that removed keys and went quiet would hold their memory for good.
  // Transaction ends (one in kHelpEvery per context) and idle workers look at every shared
  // context's work word (a load each) and take up to kContextsPerVisit of the free ones with
  // work for a moment.
  constexpr std::uint32_t kContextsPerVisit = 4;
  const std::uint32_t first = txns_.first_shared();
  const std::uint32_t shared = txns_.size() - first;
  if (shared == 0) return;
  // Announce first, then look at open_ (close_external stores it, then waits for helpers_):
  // either close sees this helper and waits, or this helper sees the close and stays out.
  helpers_.fetch_add(1, std::memory_order_seq_cst);
  if (!open_->load(std::memory_order_seq_cst)) {
    helpers_.fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
  const std::uint32_t start = help_cursor_.fetch_add(1, std::memory_order_relaxed);
  std::uint32_t taken = 0;
  for (std::uint32_t k = 0; k < shared && taken < kContextsPerVisit; ++k) {
    const std::uint32_t i = first + (start + k) % shared;
    if (txns_.at(i).reclaim_work.load(std::memory_order_relaxed) == 0) continue;
    TxnContext* ctx = txns_.begin_if_free(i);
    if (ctx == nullptr) continue;
    ++taken;
    reclaim_records(ctx);
    end_context(ctx, log);
  }
  helpers_.fetch_sub(1, std::memory_order_release);
}

void DatabaseImpl::reclaim_tombs(TxnContext* ctx) {
  std::uint64_t horizon = txns_.horizon();
  const mvcc::Tomb& first = ctx->tombs[ctx->tombs_done];
  if (!mvcc::Protocol::seen_by_all(first.cts, horizon) &&
      ctx->tombs.size() - ctx->tombs_done >= kTombBatch) {
    horizon = txns_.refresh_horizon();
  }
  // Read once: it only grows, and a lagging value only delays.
  const std::uint64_t durable =
      durability_ != nullptr ? durability_->durable_clock() : ~std::uint64_t{0};
  std::size_t n = 0;
  while (ctx->tombs_done < ctx->tombs.size() && n < kTombsPerEnd) {
    const mvcc::Tomb& t = ctx->tombs[ctx->tombs_done];
    // In timestamp order: the first that must wait ends the round.
    if (!mvcc::Protocol::seen_by_all(t.cts, horizon) || t.cts > durable) break;
    const TombOutcome outcome = reclaim_tomb(ctx, t);
    if (outcome == TombOutcome::kRetry) {
      // Another transaction's write sits on the tombstone and may still abort, which would
      // leave the removal in place: ask again later, from the back of the queue.
      const mvcc::Tomb again = t;
      ctx->tombs.push_back({again.table, again.oid, again.cts,
                            static_cast<std::uint32_t>(ctx->tomb_keys.size()), again.key_len});
      ctx->tomb_keys.append(ctx->tomb_keys, again.key_off, again.key_len);
    }
    ++ctx->tombs_done;
    ++n;
    ctx->tombs_pending.store(ctx->tombs.size() - ctx->tombs_done, std::memory_order_relaxed);
    // A reclaimed record's OID stays out of the records (queued → out of use); a tomb dropped
    // because the record was written again since leaves a record behind.
    if (outcome == TombOutcome::kDropped) mvcc::add_own(ctx->oids_not_records, -1);
  }
  if (ctx->tombs_done == ctx->tombs.size()) {
    ctx->tombs.clear();
    ctx->tomb_keys.clear();
    ctx->tombs_done = 0;
  } else if (ctx->tombs_done >= kTombBatch && ctx->tombs_done * 2 >= ctx->tombs.size()) {
    // Compact: the pending half moves to the front, its keys with it.
    const std::size_t key_base = ctx->tombs[ctx->tombs_done].key_off;
    ctx->tomb_keys.erase(0, key_base);
    ctx->tombs.erase(ctx->tombs.begin(),
                     ctx->tombs.begin() + static_cast<std::ptrdiff_t>(ctx->tombs_done));
    for (mvcc::Tomb& t : ctx->tombs) t.key_off -= static_cast<std::uint32_t>(key_base);
    ctx->tombs_done = 0;
  }
}

DatabaseImpl::TombOutcome DatabaseImpl::reclaim_tomb(TxnContext* ctx, const mvcc::Tomb& t) {
  Table& table = *t.table;
  std::atomic<std::uint64_t>& slot = table.oids().entry(t.oid);
  const std::uint64_t e = slot.load(std::memory_order_acquire);
  // A tombstone is never evicted (ColdStore::evict), so a removed record is hot until it is
  // reclaimed; an entry that is not was reclaimed already (by an older tomb's turn) or
  // belongs to another record since.
  if (!entry::is_hot(e)) return TombOutcome::kDropped;
  Version* head = entry::hot(e);
  const std::uint64_t stamp = head->stamp.load(std::memory_order_acquire);
  if (stamp != t.cts) {
    // Written again since. Committed: the write stands (if it is a removal, it queued a tomb
    // of its own). Not committed (an owner's, or an aborted one being unlinked): it may still
    // go, leaving this removal on top, so the tomb must stay.
    const bool settled = !mvcc::is_owner_stamp(stamp) && stamp != mvcc::kInvisible;
    return settled ? TombOutcome::kDropped : TombOutcome::kRetry;
  }
  BRAID_ASSERT(head->tombstone());
  const std::string_view key(ctx->tomb_keys.data() + t.key_off, t.key_len);
  struct Unlink {
    std::atomic<std::uint64_t>* slot;
    std::uint64_t head;
  } unlink{&slot, e};
  const index::Outcome removed = table.index().remove_if(
      key, leaf_value::of_oid(t.oid),
      [](void* arg) {
        auto* u = static_cast<Unlink*>(arg);
        std::uint64_t expected = u->head;
        return u->slot->compare_exchange_strong(expected, entry::kEmpty, std::memory_order_acq_rel);
      },
      &unlink);
  if (removed.failed()) {
    // The leaf could not be read in: the removal waits for a later round, as the record stays.
    (void)index::take_load_failure();
    return TombOutcome::kRetry;
  }
  if (!removed) return TombOutcome::kDropped;
  // The record's secondary entries are in the stale queue (the removal staged them).
  txns_.retire_chain(ctx, head);
  mvcc::add_own(ctx->records_reclaimed, 1);
  ctx->freed_oids.push_back({&table, t.oid, mvcc::kUnsealed});
  return TombOutcome::kReclaimed;
}

void DatabaseImpl::reclaim_stale(TxnContext* ctx) {
  // Staged entries are sealed or dropped before the context's end reclaims.
  BRAID_DASSERT(ctx->stale_sealed == ctx->stale.size());
  std::uint64_t horizon = txns_.horizon();
  if (!mvcc::Protocol::seen_by_all(ctx->stale[ctx->stale_done].cts, horizon) &&
      ctx->stale_sealed - ctx->stale_done >= kTombBatch) {
    horizon = txns_.refresh_horizon();
  }
  std::size_t n = 0;
  while (ctx->stale_done < ctx->stale_sealed && n < kStalePerEnd) {
    const mvcc::StaleEntry& e = ctx->stale[ctx->stale_done];
    // In timestamp order: the first that must wait ends the round.
    if (!mvcc::Protocol::seen_by_all(e.cts, horizon)) break;
    const std::string_view key(ctx->stale_keys.data() + e.key_off, e.key_len);
    const StaleOutcome outcome = reclaim_stale_entry(e, key, horizon);
    // An evicted record that changed under us, or a read that failed: again next round; the
    // entry stays at the front, holding stale_oldest (and so its OID) down meanwhile.
    if (outcome == StaleOutcome::kRetry) break;
    if (outcome == StaleOutcome::kRemoved) mvcc::add_own(ctx->stale_removed, 1);
    ++ctx->stale_done;
    ++n;
  }
  if (ctx->stale_done == ctx->stale_sealed) {
    ctx->stale.clear();
    ctx->stale_keys.clear();
    ctx->stale_done = 0;
    ctx->stale_sealed = 0;
  } else if (ctx->stale_done >= kTombBatch && ctx->stale_done * 2 >= ctx->stale_sealed) {
    const std::size_t key_base = ctx->stale[ctx->stale_done].key_off;
    ctx->stale_keys.erase(0, key_base);
    ctx->stale.erase(ctx->stale.begin(),
                     ctx->stale.begin() + static_cast<std::ptrdiff_t>(ctx->stale_done));
    for (mvcc::StaleEntry& e : ctx->stale) e.key_off -= static_cast<std::uint32_t>(key_base);
    ctx->stale_sealed -= ctx->stale_done;
    ctx->stale_done = 0;
  }
  // Raised only after the removals: a stale-horizon scan that reads the new value must not
  // find the entries it covered still in their trees.
  ctx->stale_oldest.store(
      ctx->stale_done < ctx->stale_sealed ? ctx->stale[ctx->stale_done].cts : mvcc::kNoPin,
      std::memory_order_seq_cst);
}

DatabaseImpl::StaleOutcome DatabaseImpl::reclaim_stale_entry(const mvcc::StaleEntry& s,
                                                             std::string_view entry_key,
                                                             std::uint64_t horizon) {
  Index& sec = *s.index;
  Table& table = sec.table();
  const std::string_view secondary = entry_key.substr(0, s.secondary_len);
  const std::string_view key = entry_key.substr(s.secondary_len);
  struct Consent {
    const Index* sec;
    std::atomic<std::uint64_t>* slot;
    std::uint64_t cold;  // the evicted entry whose value was checked, 0 if none
    std::string_view key;
    std::string_view secondary;
    std::uint64_t horizon;
    bool retry;
  } c{&sec, &table.oids().entry(s.oid), 0, key, secondary, horizon, false};
  const std::uint64_t e = c.slot->load(std::memory_order_acquire);
  if (entry::is_cold(e)) {
    // An evicted record is one committed version, seen by all: it alone decides. Read outside
    // the leaf lock, rare (the record was evicted between the write and now).
    std::string value;
    if (!cold_->read_value(e, table.id(), key, &value).is_ok()) return StaleOutcome::kRetry;
    Key derived;
    if (sec.extract(key, value, &derived) && derived.view() == secondary) {
      return StaleOutcome::kKept;
    }
    c.cold = e;
  }
  // The entry names the record's OID, or, attached from storage, no OID (Index::kNoOid): both
  // are this record's entry (a later insert of the same entry key replaces a hint).
  const auto remove_named = [&](std::uint64_t oid) {
    return sec.tree().remove_if(
        entry_key, Index::pack(oid, s.secondary_len),
        [](void* arg) {
          auto* c = static_cast<Consent*>(arg);
          const std::uint64_t now = c->slot->load(std::memory_order_acquire);
          if (entry::is_empty(now)) return true;  // the record is gone
          if (entry::is_cold(now)) {
            if (now == c->cold) return true;
            c->retry = true;
            return false;
          }
          for (const Version* v = entry::hot(now); v != nullptr;
               v = v->next.load(std::memory_order_acquire)) {
            const std::uint64_t stamp = v->stamp.load(std::memory_order_acquire);
            // An aborted version derives nothing anyone sees.
            if (stamp != mvcc::kInvisible && !v->tombstone()) {
              Key derived;
              if (c->sec->extract(c->key, v->value(), &derived) && derived.view() == c->secondary) {
                // Current again for some snapshot. An uncommitted version decides only once its
                // writer has: kept for it, the entry would outlive its abort, and nothing would
                // queue it again (the writer found it present and added nothing).
                if (mvcc::is_owner_stamp(stamp)) c->retry = true;
                return false;
              }
            }
            // Nothing older is seen by any snapshot.
            const bool committed = !mvcc::is_owner_stamp(stamp) && stamp != mvcc::kInvisible;
            if (committed && mvcc::Protocol::seen_by_all(stamp, c->horizon)) break;
          }
          return true;
        },
        &c);
  };
  index::Outcome removed = remove_named(s.oid);
  if (!removed.failed() && !removed && !c.retry) removed = remove_named(Index::kNoOid);
  if (removed.failed()) {
    (void)index::take_load_failure();
    return StaleOutcome::kRetry;
  }
  if (removed) return StaleOutcome::kRemoved;
  return c.retry ? StaleOutcome::kRetry : StaleOutcome::kKept;
}

void DatabaseImpl::release_oids(TxnContext* ctx) {
  auto& freed = ctx->freed_oids;
  if (freed.back().clock == mvcc::kUnsealed) {
    // As TxnTable::seal_limbo: the clock is read after the entries were emptied and the names
    // removed, so a transaction pinned above it cannot have found the OID.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint64_t clock = txns_.clock().load(std::memory_order_seq_cst);
    for (auto it = freed.rbegin(); it != freed.rend() && it->clock == mvcc::kUnsealed; ++it) {
      it->clock = clock;
    }
  }
  // Below the stale horizon too: no queued stale entry names the OID (file comment).
  const std::uint64_t horizon = std::min(txns_.horizon(), txns_.stale_horizon());
  std::size_t n = 0;
  while (n < freed.size() && freed[n].clock < horizon) {
    mvcc::add_own(ctx->oids_not_records, -1);
    freed[n].table->oids().release(freed[n].oid);
    ++n;
  }
  freed.erase(freed.begin(), freed.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace braid::engine
