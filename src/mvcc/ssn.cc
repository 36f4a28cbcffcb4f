// SSN's read tracking and certification (mvcc/ssn.h), as part of the MVCC protocol.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "mvcc/protocol.h"
#include "mvcc/ssn.h"
#include "util/assert.h"
#include "util/bits.h"

namespace braid::mvcc {

namespace {

// Raises an atomic stamp to at least `to`.
void raise(std::atomic<std::uint64_t>& stamp, std::uint64_t to) {
  std::uint64_t cur = stamp.load(std::memory_order_seq_cst);
  while (cur < to && !stamp.compare_exchange_weak(cur, to, std::memory_order_seq_cst)) {
  }
}

bool reachable(const std::atomic<std::uint64_t>* slot, const Version* v) {
  const std::uint64_t e = slot->load(std::memory_order_seq_cst);
  if (!entry::is_hot(e)) return false;
  for (const Version* x = entry::hot(e); x != nullptr;
       x = x->next.load(std::memory_order_acquire)) {
    if (x == v) return true;
  }
  return false;
}

}  // namespace

std::uint64_t Protocol::commit_stamp_of(const TxnContext* ctx, const Version* v,
                                        bool* known) const {
  *known = true;
  util::StallWatch watch(stalls_, "serializable certification");
  for (std::uint32_t spins = 0;; ++spins) {
    const std::uint64_t s = v->stamp.load(std::memory_order_acquire);
    if (!is_owner_stamp(s)) return s;
    if (s == ctx->tag) return 0;
    // Committed owners stamp their versions right after publishing their state.
    const std::uint64_t xid = stamp_xid(s);
    const TxnContext& owner = txns_->at(static_cast<std::uint32_t>(xid & 0xffff));
    const std::uint64_t st = owner.state.load(std::memory_order_acquire);
    if (owner.xid.load(std::memory_order_acquire) == xid) {
      if (cstate::is_committed(st)) return cstate::cts_of(st);
      // Active, certifying or aborted: not (yet) a committed version. Never wait here: the
      // owner may be waiting for us (mvcc/ssn.h, "Concurrent certification").
      *known = false;
      return 0;
    }
    watch_other(&watch, spins, owner);
    util::backoff(spins);  // the owner finished: its stamp is being replaced
  }
}

Status Protocol::ssn_read(TxnContext* ctx, std::atomic<std::uint64_t>* slot, const Version* v) {
  std::uint64_t stamp = 0;
  if (v != nullptr) {
    bool known = false;
    stamp = commit_stamp_of(ctx, v, &known);
    // A reader sees committed versions and its own (unless DebugFaults::dirty_reads).
    BRAID_DASSERT(known || faults_.dirty_reads);
    if (stamp == 0) return Status::ok();  // our own write (or a dirty read): no dependency
    ctx->ssn_eta = std::max(ctx->ssn_eta, ssn::of_writer(stamp));  // wr: its writer precedes us
  }
  if (ctx->reads.size() + ctx->leaf_reads.size() >= max_reads_) [[unlikely]] {
    return read_set_full();
  }
  ctx->reads.push_back({slot, stamp, v});
  return Status::ok();
}

Status Protocol::read_set_full() const {
  return Status::busy("serializable read set is full (Options::max_txn_reads = " +
                      std::to_string(max_reads_) + ")");
}

Status Protocol::ssn_read_leaf(TxnContext* ctx, const index::LeafRead& r) {
  if (ctx->reads.size() + ctx->leaf_reads.size() >= max_reads_) [[unlikely]] {
    return read_set_full();
  }
  ctx->leaf_reads.push_back(r);
  return Status::ok();
}

void Protocol::ssn_note_insert(TxnContext* ctx, const index::LeafChange& c) {
  BRAID_DASSERT(ctx->serializable);
  for (index::LeafRead& r : ctx->leaf_reads) {
    if (r.leaf == c.leaf && r.version == c.before) r.version = c.after;
  }
  ctx->leaf_inserts.push_back(c.leaf);
}

bool Protocol::ssn_check_leaves(TxnContext* ctx, std::uint64_t me) const {
  // Publish first, validate after (mvcc/ssn.h, "Phantoms"): an insert into a leaf after our
  // validation certifies after us and finds our stamp on the leaf (or on the half a split
  // copied it to); one before it changed the version we read, and we abort.
  for (const index::LeafRead& r : ctx->leaf_reads) raise(r.leaf->pstamp, me);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (const index::LeafRead& r : ctx->leaf_reads) {
    if (r.leaf->lock.read_version() != r.version) {
      add_own(ctx->phantom_aborts, 1);
      return false;
    }
  }
  return true;
}

void Protocol::ssn_wait_earlier(const TxnContext* ctx, std::uint64_t cts) const {
  for (std::uint32_t w = 0; w < txns_->ssn_words(); ++w) {
    std::uint64_t bits = txns_->ssn_registered_word(w);
    if (w == ctx->index / 64) bits &= ~(std::uint64_t{1} << (ctx->index % 64));
    while (bits != 0) {
      const auto i = w * 64 + static_cast<std::uint32_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      const TxnContext& x = txns_->at(i);
      util::StallWatch watch(stalls_, "serializable certification");
      for (std::uint32_t spins = 0;; ++spins) {
        const std::uint64_t xid = x.xid.load(std::memory_order_acquire);
        if (xid == 0) break;
        const std::uint64_t st = x.state.load(std::memory_order_acquire);
        if (x.xid.load(std::memory_order_acquire) != xid) break;
        if (!cstate::is_precommit(st)) break;  // its verdict is out (or it never certified)
        // A stamp not yet known may be smaller than ours; a reader at our own clock value
        // came after us.
        const std::uint64_t c = cstate::cts_of(st);
        if (c != 0 && c >= cts) break;
        watch_other(&watch, spins, x);
        util::backoff(spins);
      }
    }
  }
}

bool Protocol::ssn_check_reads(TxnContext* ctx, std::uint64_t me) const {
  util::StallWatch watch(stalls_, "serializable certification");
  for (const ReadEntry& r : ctx->reads) {
    watch.reset();
    for (std::uint32_t spins = 0;; ++spins) {
      const std::uint64_t e = r.slot->load(std::memory_order_acquire);
      // Moved: the record went cold and its leaf names it by address, so a later overwrite
      // would sit in another OID, out of this entry's sight: certify conservatively.
      if (entry::is_moved(e)) return false;
      // Cold (or empty): nothing above what we read — an overwrite keeps the record in memory
      // while any snapshot, ours included, cannot see it.
      if (!entry::is_hot(e)) break;
      // The version right above the one we read (by stamp: it may be a reloaded copy); for a
      // read of absence, the record's oldest version.
      const Version* above = nullptr;
      bool found = r.stamp == 0;
      for (const Version* x = entry::hot(e); x != nullptr;
           x = x->next.load(std::memory_order_acquire)) {
        if (r.stamp != 0) {
          bool known = false;
          const std::uint64_t s = commit_stamp_of(ctx, x, &known);
          if (known && s == r.stamp) {
            found = true;
            break;
          }
        }
        above = x;
      }
      // Our pin keeps what we read in its chain; if it is gone, certify conservatively.
      if (!found) return false;
      if (above == nullptr) break;
      const std::uint64_t s = above->stamp.load(std::memory_order_acquire);
      if (s == ctx->tag) break;  // we overwrote it ourselves
      if (s == kInvisible) {     // its aborting owner is unlinking it
        if (spins >= util::kYieldingSpins) [[unlikely]] {
          watch.turn(util::progress_of(e, s), [&] {
            return std::string(
                "waiting for an aborting writer to unlink its version of a "
                "record this transaction read");
          });
        }
        util::backoff(spins);
        continue;
      }
      std::uint64_t c = s;
      if (is_owner_stamp(s)) {
        const std::uint64_t xid = stamp_xid(s);
        const TxnContext& owner = txns_->at(static_cast<std::uint32_t>(xid & 0xffff));
        const std::uint64_t st = owner.state.load(std::memory_order_acquire);
        if (owner.xid.load(std::memory_order_acquire) != xid) {
          watch_other(&watch, spins, owner);
          util::backoff(spins);  // it finished meanwhile: look again
          continue;
        }
        if (st == cstate::kActive || st == cstate::kAborted) break;  // later than us, or no edge
        if (cstate::is_precommit(st)) {
          const std::uint64_t oc = cstate::cts_of(st);
          if (oc != 0 && ssn::of_writer(oc) > me) break;  // it will wait for us instead
          watch_other(&watch, spins, owner);              // earlier than us: await its verdict
          util::backoff(spins);
          continue;
        }
        c = cstate::cts_of(st);
      }
      if (ssn::of_writer(c) > me) break;  // cannot happen while we are registered
      // rw: the overwriter committed before us, so its successors are ours.
      std::uint64_t pi = 0;
      if (!txns_->pi_ring().get(c, &pi)) return false;
      ctx->ssn_pi = std::min(ctx->ssn_pi, pi);
      break;
    }
  }
  return true;
}

void Protocol::ssn_publish_reads(const TxnContext* ctx, std::uint64_t me) {
  for (const ReadEntry& r : ctx->reads) {
    const Version* v = r.version;
    if (v == nullptr) {
      // A read of absence: the version that ended it (the record's oldest) carries our stamp,
      // so its writer, certifying after us, is serialized after us.
      const std::uint64_t e = r.slot->load(std::memory_order_acquire);
      if (!entry::is_hot(e)) continue;
      const Version* bottom = entry::hot(e);
      while (const Version* n = bottom->next.load(std::memory_order_acquire)) bottom = n;
      raise(bottom->pstamp, me);
      continue;
    }
    raise(v->pstamp, me);
    // Published on a version the cold store already took out: the floor carries it instead
    // (the evictor raises it after the eviction; one of us sees the other: both seq_cst).
    if (!reachable(r.slot, v)) txns_->raise_cold_floor(me);
  }
}

bool Protocol::ssn_commit(TxnContext* ctx, std::uint64_t* cts_out) {
  BRAID_ASSERT(ctx->serializable);
  BRAID_ASSERT(ctx->state.load(std::memory_order_relaxed) == cstate::kActive);
  BRAID_DASSERT(!ctx->writes.empty());
  txns_->ssn_register(ctx);
  ctx->state.store(cstate::kPrecommit, std::memory_order_seq_cst);
  const std::uint64_t cts = txns_->clock().fetch_add(1, std::memory_order_seq_cst) + 1;
  ctx->state.store(cstate::precommitted(cts), std::memory_order_seq_cst);
  *cts_out = cts;
  const std::uint64_t me = ssn::of_writer(cts);
#if defined(BRAID_DEBUG_CHECKS)
  if (faults_.precommit_pause_ms != 0) [[unlikely]]
    std::this_thread::sleep_for(std::chrono::milliseconds(faults_.precommit_pause_ms));
#endif

  // η from what we overwrite: its writer (ww) and its readers that committed before us (rw),
  // once every transaction certifying ahead of us has published its reads.
  ssn_wait_earlier(ctx, cts);
  std::uint64_t eta = ctx->ssn_eta;
  const std::uint64_t floor = txns_->cold_floor();
  for (const WriteEntry& w : ctx->writes) {
    // Readers of absence publish on the version that ended it: for a fresh record, ours.
    eta = std::max(eta, w.version->pstamp.load(std::memory_order_seq_cst));
    const Version* prev = w.version->next.load(std::memory_order_acquire);
    if (prev == nullptr) continue;
    bool known = false;
    const std::uint64_t pc = commit_stamp_of(ctx, prev, &known);
    BRAID_DASSERT(known);
    eta = std::max(eta, ssn::of_writer(pc));
    eta = std::max(eta, prev->pstamp.load(std::memory_order_seq_cst));
    if ((prev->flags & Version::kReloaded) != 0) eta = std::max(eta, floor);
  }
  // rw into us through a range: readers of the leaves we inserted into.
  for (const index::Node* leaf : ctx->leaf_inserts) {
    eta = std::max(eta, leaf->pstamp.load(std::memory_order_seq_cst));
  }
  const bool leaves = ssn_check_leaves(ctx, me);
  bool ok = leaves && ssn_check_reads(ctx, me);
  const std::uint64_t pi = std::min(ctx->ssn_pi, me);
  bool window = pi > eta;
#if defined(BRAID_DEBUG_CHECKS)
  window = window || faults_.skip_ssn_test;
#endif
  ok = ok && window;
  if (!ok) {
    ctx->state.store(cstate::kAborted, std::memory_order_seq_cst);
    txns_->ssn_deregister(ctx);
    if (leaves) add_own(ctx->ssn_aborts, 1);
    return false;
  }
  ssn_publish_reads(ctx, me);
  txns_->pi_ring().put(cts, pi);
  ctx->state.store(cstate::committed(cts), std::memory_order_seq_cst);
  stamp_writes(ctx, cts);
  txns_->ssn_deregister(ctx);
  add_own(ctx->serializable_commits, 1);
  return true;
}

bool Protocol::ssn_commit_read_only(TxnContext* ctx) {
  BRAID_ASSERT(ctx->serializable);
  BRAID_ASSERT(ctx->writes.empty());
  if (ctx->reads.empty() && ctx->leaf_reads.empty()) {
    add_own(ctx->serializable_commits, 1);
    return true;
  }
  txns_->ssn_register(ctx);
  ctx->state.store(cstate::kPrecommit, std::memory_order_seq_cst);
  const std::uint64_t clock = txns_->clock().load(std::memory_order_seq_cst);
  ctx->state.store(cstate::precommitted(clock), std::memory_order_seq_cst);
  const std::uint64_t me = ssn::of_reader(clock);
  const bool leaves = ssn_check_leaves(ctx, me);
  bool ok = leaves && ssn_check_reads(ctx, me);
  // η is at most twice our snapshot, below `me`; π decides.
  bool window = std::min(ctx->ssn_pi, me) > ctx->ssn_eta;
#if defined(BRAID_DEBUG_CHECKS)
  window = window || faults_.skip_ssn_test;
#endif
  ok = ok && window;
  if (ok) ssn_publish_reads(ctx, me);
  ctx->state.store(ok ? cstate::committed(clock) : cstate::kAborted, std::memory_order_seq_cst);
  txns_->ssn_deregister(ctx);
  if (ok) {
    add_own(ctx->serializable_commits, 1);
  } else if (leaves) {
    add_own(ctx->ssn_aborts, 1);
  }
  return ok;
}

}  // namespace braid::mvcc
