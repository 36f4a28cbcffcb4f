#include "mvcc/txn.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "util/assert.h"

namespace braid::mvcc {

namespace {
// Recompute the shared horizon after this many commits of one context: the scan reads one
// cache line per context, so doing it per commit would cost more than the pruning saves.
constexpr std::uint32_t kHorizonEvery = 32;
// Try to free limbo once it holds this many versions.
constexpr std::size_t kLimboBatch = 256;
// Each thread starts its search for a free context where its last one was found.
thread_local std::uint32_t t_context_hint = 0;
}  // namespace

TxnTable::TxnTable(std::uint32_t reserved, std::uint32_t shared, std::uint32_t max_writes)
    : reserved_(reserved),
      count_(reserved + shared),
      max_writes_(max_writes),
      contexts_(std::make_unique<TxnContext[]>(reserved + shared)),
      ssn_registered_(std::make_unique<std::atomic<std::uint64_t>[]>((count_ + 63) / 64)) {
  BRAID_ASSERT(count_ > 0);
  BRAID_ASSERT(count_ < (1u << 16));  // xid = generation << 16 | index
  for (std::uint32_t i = 0; i < count_; ++i) contexts_[i].index = i;
  for (std::uint32_t w = 0; w < ssn_words(); ++w) ssn_registered_[w].store(0);
}

TxnTable::~TxnTable() {
  for (std::uint32_t i = 0; i < count_; ++i) {
    TxnContext& c = contexts_[i];
    BRAID_ASSERT(!c.in_use.load());  // every Transaction must end before its Database
    for (const Retired& r : c.limbo) free_retired(&c, r);
    c.limbo.clear();
    c.limbo_sealed = 0;
  }
}

TxnContext* TxnTable::begin() {
  const std::uint32_t shared = count_ - reserved_;
  if (shared == 0) return nullptr;
  // A context another thread borrowed for reclamation (begin_if_free) is back within a few
  // microseconds: an application that uses every context must not see Busy because of it.
  for (std::uint32_t attempt = 0; attempt < kBorrowWaits; ++attempt) {
    const std::uint32_t first = t_context_hint % shared;
    for (std::uint32_t k = 0; k < shared; ++k) {
      TxnContext& c = contexts_[reserved_ + (first + k) % shared];
      if (c.in_use.load(std::memory_order_relaxed)) continue;
      bool expected = false;
      if (!c.in_use.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
      t_context_hint = (first + k) % shared;
      start(c);
      return &c;
    }
    if (borrowed_.load(std::memory_order_acquire) == 0) return nullptr;
    std::this_thread::yield();
  }
  return nullptr;
}

TxnContext* TxnTable::begin_if_free(std::uint32_t i) {
  BRAID_ASSERT(i >= reserved_);
  BRAID_ASSERT(i < count_);
  TxnContext& c = contexts_[i];
  if (c.in_use.load(std::memory_order_relaxed)) return nullptr;
  bool expected = false;
  if (!c.in_use.compare_exchange_strong(expected, true, std::memory_order_acquire)) return nullptr;
  c.lent.store(true, std::memory_order_relaxed);
  borrowed_.fetch_add(1, std::memory_order_acq_rel);
  c.borrowed = true;
  start(c);
  return &c;
}

TxnContext* TxnTable::begin_at(std::uint32_t i) {
  BRAID_DASSERT(i < reserved_);
  TxnContext& c = contexts_[i];
  BRAID_ASSERT(!c.in_use.load(std::memory_order_relaxed));
  c.in_use.store(true, std::memory_order_relaxed);
  start(c);
  return &c;
}

void TxnTable::start(TxnContext& c) {
  // Pin first, then read the snapshot: a horizon scan that misses this pin must have read
  // the clock before our snapshot read, so it cannot exceed our snapshot (see txn.h).
  c.pin.store(clock_.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  c.snapshot = clock_.load(std::memory_order_seq_cst);
  ++c.generation;
  const std::uint64_t xid = (c.generation << 16) | c.index;
  c.tag = owner_stamp(xid);
  // Publish the xid before resetting the state: a reader that sees the new state re-reads the
  // xid and so never mistakes this transaction's state for the previous occupant's.
  c.xid.store(xid, std::memory_order_release);
  c.state.store(cstate::kActive, std::memory_order_release);
  BRAID_DASSERT(c.writes.empty());
  BRAID_DASSERT(c.reads.empty());
  BRAID_DASSERT(c.leaf_reads.empty());
  BRAID_DASSERT(c.leaf_inserts.empty());
  c.recent_read.table = nullptr;
  c.removes = false;
  c.failed_write = false;
  c.serializable = false;
  c.read_only = false;
  c.ssn_eta = 0;
  c.ssn_pi = ssn::kInfinity;
}

bool TxnTable::finish(TxnContext* ctx, const LoggedTick* tick) {
  bool wants_tick = false;
  ctx->writes.clear();
  ctx->staged_keys.clear();
  ctx->index_adds.clear();
  ctx->index_keys.clear();
  ctx->reads.clear();
  ctx->leaf_reads.clear();
  ctx->leaf_inserts.clear();
  ctx->xid.store(0, std::memory_order_release);
  ctx->pin.store(kNoPin, std::memory_order_release);
  if (++ctx->commits_since_horizon >= kHorizonEvery) {
    ctx->commits_since_horizon = 0;
    refresh_horizon();
  }
  seal_limbo(ctx);
  if (!ctx->limbo.empty()) {
    // Limbo is ordered by clock. A full batch is worth a fresh horizon; otherwise free what the
    // cached horizon already allows, which costs nothing when nothing is due.
    if (ctx->limbo.size() >= kLimboBatch) {
      wants_tick = reclaim(ctx, tick);
    } else if (ctx->limbo.front().clock < horizon()) {
      free_before(ctx, horizon());
    }
  }
  const bool borrowed = ctx->borrowed;
  ctx->borrowed = false;
  if (borrowed) ctx->lent.store(false, std::memory_order_relaxed);
  ctx->in_use.store(false, std::memory_order_release);
  if (borrowed) borrowed_.fetch_sub(1, std::memory_order_acq_rel);
  return wants_tick;
}

std::uint64_t TxnTable::refresh_horizon() {
  std::uint64_t h = clock_.load(std::memory_order_seq_cst);
  std::uint64_t stale = h;
  for (std::uint32_t i = 0; i < count_; ++i) {
    h = std::min(h, contexts_[i].pin.load(std::memory_order_seq_cst));
    stale = std::min(stale, contexts_[i].stale_oldest.load(std::memory_order_seq_cst));
  }
  // Same rules as the horizon below: monotonic, and read after the clock.
  std::uint64_t was = stale_horizon_.load(std::memory_order_acquire);
  while (stale > was &&
         !stale_horizon_.compare_exchange_weak(was, stale, std::memory_order_acq_rel)) {
  }
  // Monotonic: a concurrent refresher may have published a larger (equally valid) value.
  // Acquire even when we keep the cached value: a caller frees memory on the strength of it, so
  // it must happen after the pin reads of whichever refresher published it.
  std::uint64_t cur = horizon_.load(std::memory_order_acquire);
  while (h > cur && !horizon_.compare_exchange_weak(cur, h, std::memory_order_acq_rel)) {
  }
  return std::max(h, cur);
}

Version* TxnTable::alloc_version(TxnContext* ctx, std::size_t payload) {
  const std::size_t bytes = Version::bytes_for(payload);
  void* mem = heap_.allocate(&ctx->version_cache, bytes);
  if (mem == nullptr) return nullptr;
  BRAID_DASSERT((reinterpret_cast<std::uintptr_t>(mem) & 15) == 0);  // entry tag bits
  auto* v = static_cast<Version*>(mem);
  v->stamp.store(ctx->tag, std::memory_order_relaxed);
  v->next.store(nullptr, std::memory_order_relaxed);
  v->size = static_cast<std::uint32_t>(payload);
  v->home = 0;
  v->flags = 0;
  v->cooling.store(cooling_init_, std::memory_order_relaxed);
  v->pstamp.store(0, std::memory_order_relaxed);
  add_own(ctx->versions_live, 1);
  add_own(ctx->version_bytes_live, static_cast<std::int64_t>(bytes));
  return v;
}

std::size_t TxnTable::free_version(TxnContext* ctx, Version* v) {
  const std::size_t bytes = Version::bytes_for(v->size);
  add_own(ctx->versions_live, -1);
  add_own(ctx->version_bytes_live, -static_cast<std::int64_t>(bytes));
  heap_.free(&ctx->version_cache, v, bytes);
  return bytes;
}

void TxnTable::retire(TxnContext* ctx, Version* v) {
  // Its clock is read at finish (seal_limbo), once for every version the occupant retired: a
  // fence per retire would cost every update, and nothing is freed before the occupant
  // finishes anyway.
  ctx->limbo.push_back({kUnsealed, v, false});
  ctx->retired.store(ctx->limbo.size(), std::memory_order_relaxed);
  add_own(ctx->retired_bytes, static_cast<std::int64_t>(Version::bytes_for(v->size)));
}

void TxnTable::retire_chain(TxnContext* ctx, Version* first) {
  BRAID_DASSERT(first != nullptr);
  ctx->limbo.push_back({kUnsealed, first, true});
  ctx->retired.store(ctx->limbo.size(), std::memory_order_relaxed);
}

std::int64_t TxnTable::free_retired(TxnContext* ctx, const Retired& r) {
  if (!r.chain) return static_cast<std::int64_t>(free_version(ctx, r.version));
  // Unreachable since the cut, and nobody else's to walk: the links are as pruning left them.
  std::uint64_t n = 0;
  for (Version* v = r.version; v != nullptr; ++n) {
    Version* next = v->next.load(std::memory_order_relaxed);
    (void)free_version(ctx, v);
    v = next;
  }
  add_own(ctx->pruned, n);
  return 0;  // retired_bytes never counted a chain
}

void TxnTable::seal_limbo(TxnContext* ctx) {
  if (ctx->limbo_sealed == ctx->limbo.size()) return;
  // The clock must be read after the unlinks are visible (see the top of txn.h). Unlinks are
  // plain release stores, which a later load may overtake; the fence forbids that, so a
  // transaction whose pin exceeds this clock value cannot find the versions any more. A later
  // clock than the one each retire could have read only frees later.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const std::uint64_t clock = clock_.load(std::memory_order_seq_cst);
  for (std::size_t i = ctx->limbo_sealed; i < ctx->limbo.size(); ++i) {
    BRAID_DASSERT(ctx->limbo[i].clock == kUnsealed);
    ctx->limbo[i].clock = clock;
  }
  ctx->limbo_sealed = ctx->limbo.size();
}

bool TxnTable::reclaim(TxnContext* ctx, const LoggedTick* tick) {
  std::uint64_t h = refresh_horizon();
  // With no commits the clock stands still and nothing retired "now" could ever be freed; a
  // tick of the clock (an empty commit, harmless to every snapshot) lets the horizon pass it.
  if (!ctx->limbo.empty() && ctx->limbo.back().clock >= h) {
    // A durable database logs every timestamp it hands out (recovery relies on them being
    // dense), so there the caller takes the tick through its log.
    if (logged_ticks_) {
      if (tick == nullptr) {
        free_before(ctx, h);
        return true;
      }
      // Taken now, the tick lets this very finish free the batch: after it, a context nobody
      // reuses soon (an application thread's) no longer keeps its versions allocated.
      if (tick->take(tick->arg)) h = refresh_horizon();
    } else {
      clock_.fetch_add(1, std::memory_order_seq_cst);
      h = refresh_horizon();
    }
  }
  free_before(ctx, h);
  return false;
}

void TxnTable::release_limbo(TxnContext* ctx) {
  BRAID_DASSERT(!ctx->in_use.load(std::memory_order_relaxed));
  BRAID_DASSERT(ctx->limbo_sealed == ctx->limbo.size());
  if (ctx->limbo.empty()) return;
  const std::uint64_t oldest = ctx->limbo.front().clock;
  // No horizon passes a clock value the clock itself has not passed.
  if (oldest >= clock_.load(std::memory_order_acquire)) return;
  const std::uint64_t h = oldest < horizon() ? horizon() : refresh_horizon();
  free_before(ctx, h);
}

void TxnTable::free_before(TxnContext* ctx, std::uint64_t horizon) {
  std::size_t n = 0;
  std::int64_t bytes = 0;
  // Each free reads its version's size (and a cut chain's link) and writes the free list's
  // link into it: lines nobody has read since the version was superseded. Fetched a few
  // entries ahead, with intent to write, their misses overlap.
  constexpr std::size_t kAhead = 8;
  const std::size_t size = ctx->limbo.size();
  for (std::size_t i = 0; i < kAhead && i < size; ++i) {
    __builtin_prefetch(ctx->limbo[i].version, 1, 3);
  }
  while (n < size && ctx->limbo[n].clock < horizon) {
    if (n + kAhead < size) __builtin_prefetch(ctx->limbo[n + kAhead].version, 1, 3);
    bytes += free_retired(ctx, ctx->limbo[n]);
    ++n;
  }
  if (bytes != 0) add_own(ctx->retired_bytes, -bytes);
  BRAID_DASSERT(n <= ctx->limbo_sealed);
  ctx->limbo_sealed -= n;
  ctx->limbo.erase(ctx->limbo.begin(), ctx->limbo.begin() + static_cast<std::ptrdiff_t>(n));
  ctx->retired.store(ctx->limbo.size(), std::memory_order_relaxed);
  // Freeing is where the heap's free memory grows: a large drop of the live set (eviction under
  // a budget, removals) gives its pages back here, on whichever thread freed past the mark.
  if (n != 0) heap_.maybe_release();
}

}  // namespace braid::mvcc
