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
//   * Secondary entries: an update that changed a secondary key leaves its old entry behind
//     (filtered by readers), so a table with secondary indexes does not give its reclaimed
//     OIDs back: a stale entry must never name another record. The entries of the versions
//     still chained are removed with the record; the OID stays unused.
#include <cstring>

#include "engine/database_impl.h"
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
  ctx->tombs_pending.store(tombs, std::memory_order_relaxed);
  ctx->reclaim_work.store(tombs + ctx->freed_oids.size(), std::memory_order_relaxed);
}

void DatabaseImpl::reclaim_records(TxnContext* ctx) {
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
  const bool removed = table.index().remove_if(
      key, t.oid,
      [](void* arg) {
        auto* u = static_cast<Unlink*>(arg);
        std::uint64_t expected = u->head;
        return u->slot->compare_exchange_strong(expected, entry::kEmpty, std::memory_order_acq_rel);
      },
      &unlink);
  if (!removed) return TombOutcome::kDropped;
  const bool indexed = table.index_count() != 0;
  if (indexed) remove_secondary_of(table, key, t.oid, head);
  txns_.retire_chain(ctx, head);
  mvcc::add_own(ctx->records_reclaimed, 1);
  if (!indexed) ctx->freed_oids.push_back({&table, t.oid, mvcc::kUnsealed});
  return TombOutcome::kReclaimed;
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
  const std::uint64_t horizon = txns_.horizon();
  std::size_t n = 0;
  while (n < freed.size() && freed[n].clock < horizon) {
    mvcc::add_own(ctx->oids_not_records, -1);
    freed[n].table->oids().release(freed[n].oid);
    ++n;
  }
  freed.erase(freed.begin(), freed.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace braid::engine
