#include "mvcc/protocol.h"

#include <cstring>
#include <string>

#include "util/assert.h"

namespace braid::mvcc {

void Protocol::watch_other(util::StallWatch* watch, std::uint32_t spins,
                           const TxnContext& other) const {
  // A verdict or a precommit window is a few instructions; only a wait that has begun to
  // yield the core is worth a clock read.
  if (spins < util::kYieldingSpins) [[likely]]
    return;
  const std::uint64_t st = other.state.load(std::memory_order_acquire);
  const std::uint64_t xid = other.xid.load(std::memory_order_acquire);
  watch->turn(util::progress_of(st, xid), [&] {
    const char* what = cstate::is_precommit(st)   ? "certifying (precommit)"
                       : cstate::is_committed(st) ? "committed"
                       : st == cstate::kAborted   ? "aborted"
                                                  : "active";
    return "waiting for the transaction in context " + std::to_string(other.index) + " (xid " +
           std::to_string(xid) + ", " + what + ", timestamp " + std::to_string(cstate::cts_of(st)) +
           ", commit clock " + std::to_string(txns_->clock_now()) +
           ") to reach its verdict or restamp its writes";
  });
}

Vis Protocol::owner_visibility(const TxnContext* ctx, std::uint64_t stamp) const {
  const std::uint64_t xid = stamp_xid(stamp);
  const TxnContext& owner = txns_->at(static_cast<std::uint32_t>(xid & 0xffff));
  util::StallWatch watch(stalls_, "read of a precommitted version");
  for (std::uint32_t spins = 0;; ++spins) {
    // State first, then xid: if the xid still matches, the state belongs to that owner.
    const std::uint64_t s = owner.state.load(std::memory_order_acquire);
    if (owner.xid.load(std::memory_order_acquire) != xid) return Vis::kRetry;
    if (cstate::is_committed(s)) {
      return cstate::cts_of(s) <= ctx->snapshot ? Vis::kVisible : Vis::kInvisible;
    }
    if (s == cstate::kActive) return Vis::kInvisible;
    if (s == cstate::kAborted) return Vis::kOwnerAborting;
    // Precommit: the owner is between taking its timestamp and publishing it; whether our
    // snapshot includes it depends on that number, so wait the few instructions it takes.
    watch_other(&watch, spins, owner);
    util::backoff(spins);
  }
}

Status Protocol::out_of_version_memory() const {
  return Status::io_error("version memory exhausted (Options::max_version_bytes = " +
                          std::to_string(version_limit_) + ")");
}

Version* Protocol::make_version(TxnContext* ctx, std::string_view value, bool tombstone) {
  Version* v = txns_->alloc_version(ctx, value.size());
  if (v == nullptr) [[unlikely]]
    return nullptr;
  if (!value.empty()) std::memcpy(v->payload(), value.data(), value.size());
  if (tombstone) v->flags = Version::kTombstone;
  BRAID_DASSERT(v->stamp.load(std::memory_order_relaxed) == ctx->tag);
  return v;
}

void Protocol::add_write(TxnContext* ctx, Table* table, std::atomic<std::uint64_t>* slot,
                         std::uint64_t oid, Version* v, std::string_view key, bool fresh) {
  BRAID_DASSERT(ctx->writes.size() < txns_->max_writes());
  v->write_index = static_cast<std::uint32_t>(ctx->writes.size());
  ctx->writes.push_back({table, slot, oid, v, static_cast<std::uint32_t>(ctx->staged_keys.size()),
                         static_cast<std::uint16_t>(key.size()), fresh});
  ctx->staged_keys.append(key);
}

Version* Protocol::successor(TxnContext* ctx, const Version* head, WriteKind kind,
                             std::string_view value, Status* status) {
  if (kind == WriteKind::kInsert && !head->tombstone()) {
    *status = Status::duplicate();
    return nullptr;
  }
  if ((kind == WriteKind::kUpdate || kind == WriteKind::kRemove) && head->tombstone()) {
    *status = Status::not_found();
    return nullptr;
  }
  Version* v = make_version(ctx, value, kind == WriteKind::kRemove);
  if (v == nullptr) *status = out_of_version_memory();
  return v;
}

Install Protocol::install(TxnContext* ctx, Table* table, std::atomic<std::uint64_t>& slot,
                          std::uint64_t oid, std::string_view key, std::string_view value,
                          WriteKind kind, Status* status, const Version** prev) {
  BRAID_DASSERT(ctx->state.load(std::memory_order_relaxed) == cstate::kActive);
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    std::uint64_t e = slot.load(std::memory_order_acquire);
    // Empty: an aborted insert is taking this key's index entry away; moved: the record's leaf
    // names it by address now. Either way the OID is no longer the key's: look it up again.
    if (entry::is_empty(e) || entry::is_moved(e)) return Install::kRelookup;
    if (entry::is_cold(e)) return Install::kCold;
    Version* head = entry::hot(e);
    const std::uint64_t stamp = head->stamp.load(std::memory_order_acquire);

    if (stamp == ctx->tag) {
      // Our own uncommitted head: replace it, keeping one version per record per transaction.
      Version* v = successor(ctx, head, kind, value, status);
      if (v == nullptr) return Install::kDone;
      BRAID_DASSERT(head->write_index < ctx->writes.size());
      v->next.store(head->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
      v->write_index = head->write_index;
      *prev = head;  // retired below, freed only after this transaction ends
      slot.store(entry::from_version(v), std::memory_order_release);
      head->stamp.store(kInvisible, std::memory_order_release);
      ctx->writes[v->write_index].version = v;
      // Views this transaction got from `head` stay valid: it is freed only after we end.
      txns_->retire(ctx, head);
      *status = Status::ok();
      return Install::kDone;
    }

    const Vis vis = visibility(ctx, stamp);
    if (vis == Vis::kRetry) continue;
    if (vis == Vis::kOwnerAborting || stamp == kInvisible) {
      // The head is being unlinked by its aborting owner. Spinning alone is not enough: a
      // descheduled owner kept a spin-only waiter here past its retry bound (Busy under
      // `braid-bench ycsb --records 20 --threads 8 --rmw 100`), so back off to yielding.
      util::backoff(static_cast<std::uint32_t>(attempt));
      continue;
    }
    bool lose_update = false;
#if defined(BRAID_DEBUG_CHECKS)
    lose_update = faults_.no_first_updater_wins && !is_owner_stamp(stamp);
#endif
    if (vis == Vis::kInvisible && !lose_update) {
      // Uncommitted by another transaction, or committed after our snapshot: first updater wins.
      *status = Status::conflict();
      add_own(ctx->write_conflicts, 1);
      return Install::kDone;
    }
    Version* v = successor(ctx, head, kind, value, status);
    if (v == nullptr) {
      // Duplicate and NotFound answer from the visible head: a read of it.
      if (ctx->serializable && (*status == Code::kDuplicate || *status == Code::kNotFound)) {
        if (Status s = ssn_read(ctx, &slot, head); !s.is_ok()) *status = std::move(s);
      }
      return Install::kDone;
    }
    v->next.store(head, std::memory_order_relaxed);
    if (!slot.compare_exchange_strong(e, entry::from_version(v), std::memory_order_acq_rel)) {
      txns_->free_version(ctx, v);  // never published
      continue;
    }
    add_write(ctx, table, &slot, oid, v, key, false);
    *prev = head;  // read before pruning, which keeps the head itself
    prune_below(ctx, head);
    *status = Status::ok();
    return Install::kDone;
  }
  *status = Status::busy("write retried too often");
  return Install::kDone;
}

void Protocol::prune_below(TxnContext* ctx, Version* head) {
  // We own the chain's head (our uncommitted version), so no one else prunes it now. The newest
  // version stamped at or below the horizon is visible to every snapshot that exists or will;
  // everything older is unreachable for readers and goes to limbo.
  const std::uint64_t horizon = txns_->horizon();
  Version* keep = head;
  while (keep != nullptr) {
    const std::uint64_t s = keep->stamp.load(std::memory_order_acquire);
    if (seen_by_all(s, horizon)) break;
    keep = keep->next.load(std::memory_order_acquire);
  }
  if (keep == nullptr) return;
  // The cut itself reads nothing below `keep` (TxnTable::retire_chain).
  if (Version* rest = keep->next.exchange(nullptr, std::memory_order_acq_rel); rest != nullptr) {
    txns_->retire_chain(ctx, rest);
  }
}

std::uint64_t Protocol::publish_commit(TxnContext* ctx) {
  BRAID_ASSERT(ctx->state.load(std::memory_order_relaxed) == cstate::kActive);
  BRAID_DASSERT(!ctx->writes.empty());
  // Precommit before taking the timestamp: a reader whose snapshot is taken after our
  // fetch_add sees Precommit (or the final state) and waits for the number instead of
  // skipping versions it must see.
  ctx->state.store(cstate::kPrecommit, std::memory_order_seq_cst);
  const std::uint64_t cts = txns_->clock().fetch_add(1, std::memory_order_seq_cst) + 1;
  ctx->state.store(cstate::committed(cts), std::memory_order_release);
  stamp_writes(ctx, cts);
  return cts;
}

void Protocol::stamp_writes(TxnContext* ctx, std::uint64_t cts) {
  for (const WriteEntry& w : ctx->writes) {
    BRAID_DASSERT(w.version->stamp.load(std::memory_order_relaxed) == ctx->tag);
    w.version->stamp.store(cts, std::memory_order_release);
  }
  BRAID_DASSERT(cts > ctx->snapshot);
}

std::size_t Protocol::check_chain(std::uint64_t e) {
  if (!entry::is_hot(e)) return 0;
  std::size_t n = 0;
  std::uint64_t newer = ~std::uint64_t{0};
  for (const Version* v = entry::hot(e); v != nullptr;
       v = v->next.load(std::memory_order_relaxed)) {
    const std::uint64_t stamp = v->stamp.load(std::memory_order_relaxed);
    BRAID_ASSERT(!is_owner_stamp(stamp));  // no transaction is open
    BRAID_ASSERT(stamp != kInvisible);     // aborted versions are unlinked
    BRAID_ASSERT(stamp < newer);           // newest first, one version per commit
    newer = stamp;
    ++n;
  }
  return n;
}

void Protocol::abort_begin(TxnContext* ctx) {
  // Active, or already aborted by a refused certification (ssn_commit).
  const std::uint64_t s = ctx->state.load(std::memory_order_relaxed);
  BRAID_ASSERT(s == cstate::kActive || s == cstate::kAborted);
  if (s == cstate::kActive) ctx->state.store(cstate::kAborted, std::memory_order_release);
}

void Protocol::unlink_writes(TxnContext* ctx) {
  BRAID_ASSERT(ctx->state.load(std::memory_order_relaxed) == cstate::kAborted);
  for (auto it = ctx->writes.rbegin(); it != ctx->writes.rend(); ++it) {
    Version* v = it->version;
    // Our version is its chain's head: no one installs over an uncommitted version.
    BRAID_DASSERT(it->slot->load(std::memory_order_relaxed) == entry::from_version(v));
    Version* older = v->next.load(std::memory_order_acquire);
    it->slot->store(older != nullptr ? entry::from_version(older) : entry::kEmpty,
                    std::memory_order_release);
    v->stamp.store(kInvisible, std::memory_order_release);
    txns_->retire(ctx, v);
  }
}

}  // namespace braid::mvcc
