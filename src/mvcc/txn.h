// Transaction contexts, the commit clock, and reclamation (docs/internals/mvcc.md).
//
// Everything a transaction owns lives in its TxnContext — write set, staged keys, scan scratch,
// retired-version limbo — never in thread-local storage: several transactions will be open per
// worker thread at once, so thread != transaction. Contexts are pre-allocated in a fixed table
// and reused; an owner tag in a version names a context *and* a generation (the xid), so a reader
// can tell a finished owner from the context's next occupant.
//
// One clock, two uses. The commit clock orders snapshots. Each active transaction publishes a
// pin: a clock value read before its snapshot. The minimum pin over active transactions (the
// horizon) is, at the same time,
//   * the pruning bound: a version stamped at or below the horizon is visible to every active and
//     future snapshot, so everything older than the newest such version can be cut, and
//   * the reclamation epoch: memory retired at clock value r may be freed once the horizon
//     exceeds r, because every transaction that could still hold a pointer to it pinned <= r.
// So the unit of reclamation is the transaction, not the thread (CoroBase §4.4 made it the batch,
// which breaks under pipelining: a pipelined worker never ends a batch, so its epoch would never
// move, or moved, would let go of versions its open transactions still read).
#pragma once

#include <braid/options.h>
#include <braid/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "index/btree.h"
#include "mvcc/ssn.h"
#include "mvcc/version.h"
#include "mvcc/version_heap.h"

namespace braid {
class Table;
class Index;
}  // namespace braid

namespace braid::mvcc {

inline constexpr std::uint64_t kNoPin = ~std::uint64_t{0};

// Commit state of a context, one word: kActive, kPrecommit (taking a timestamp), kAborted,
// precommitted(cts) = cts << 2 | 1 (a serializable transaction between taking its timestamp
// and SSN's verdict; kPrecommit is precommitted(0)), or committed(cts) = cts << 2 | 2.
namespace cstate {
inline constexpr std::uint64_t kActive = 0;
inline constexpr std::uint64_t kPrecommit = 1;
inline constexpr std::uint64_t kAborted = 3;
inline std::uint64_t committed(std::uint64_t cts) { return (cts << 2) | 2; }
inline std::uint64_t precommitted(std::uint64_t cts) { return (cts << 2) | 1; }
inline bool is_committed(std::uint64_t s) { return (s & 3) == 2; }
inline bool is_precommit(std::uint64_t s) { return (s & 3) == 1; }
inline std::uint64_t cts_of(std::uint64_t s) { return s >> 2; }
}  // namespace cstate

// A version a serializable transaction read (mvcc/ssn.h): the record's entry, the commit stamp
// of the version (0: the record had no version visible to the snapshot — it was read absent),
// and the version itself as read (a hint: eviction may replace it by a copy with the same stamp).
struct ReadEntry {
  std::atomic<std::uint64_t>* slot;
  std::uint64_t stamp;
  const Version* version;
};

struct WriteEntry {
  Table* table;
  std::atomic<std::uint64_t>* slot;  // the record's OID entry (OID arrays never move)
  std::uint64_t oid;
  Version* version;       // this transaction's newest version of the record
  std::uint32_t key_off;  // key bytes in TxnContext::staged_keys (the redo record's key)
  std::uint16_t key_len;
  bool fresh;  // this transaction allocated the OID and inserted the index entry
};

// A secondary-index entry this transaction added (removed again if it aborts).
struct IndexAdd {
  Index* index;
  std::uint64_t value;    // the packed entry value (Index::pack)
  std::uint32_t key_off;  // entry key bytes in TxnContext::index_keys
  std::uint16_t key_len;
};

// A removal a context's occupant committed, waiting until it may be reclaimed: no snapshot can
// see the removed record any more (its timestamp is at or below the horizon) and, with a
// directory, it is durable (engine/reclaim.cc).
struct Tomb {
  Table* table;
  std::uint64_t oid;
  std::uint64_t cts;
  std::uint32_t key_off;  // the key's bytes in TxnContext::tomb_keys
  std::uint16_t key_len;
};

// A secondary-index entry (secondary key ‖ primary key → oid) that a committed write left
// stale: the version it replaced derived that key and the new one does not (an update that
// changed the key, or a removal). It is removed once no snapshot can see a version that
// derives it (engine/reclaim.cc, "Stale secondary entries"). Queued at write time with
// cts kUnsealed; the commit stamps it, an abort drops it.
struct StaleEntry {
  Index* index;
  std::uint64_t oid;
  std::uint64_t cts;
  std::uint32_t key_off;  // the entry key's bytes in TxnContext::stale_keys
  std::uint16_t key_len;
  std::uint16_t secondary_len;  // the entry key is secondary ‖ primary key
};

// An OID that nothing names any more (a reclaimed record's, an aborted or lost insert's),
// allocatable again once the horizon passes `clock`: a clock value read after its last name
// went, kUnsealed until then (like Retired).
struct FreedOid {
  Table* table;
  std::uint64_t oid;
  std::uint64_t clock;
};

struct Retired {
  // A clock value read after the version was unlinked; kUnsealed until the occupant's finish
  // reads one (TxnTable::retire).
  std::uint64_t clock;
  Version* version;
  // `version` heads a chain cut by pruning (TxnTable::retire_chain), linked by `next` and not
  // read since: its length and sizes are learnt when it is freed.
  bool chain;
};
inline constexpr std::uint64_t kUnsealed = ~std::uint64_t{0};  // above every horizon

// Adds to a counter of the context's that only its occupant writes (TxnContext, "Counters"),
// with a plain load and store: a locked read-modify-write waits for every store before it to
// drain, and the stores before a version's free include the free-list link written into the
// cold version (a miss), so each free's locked count waited for the last one's miss (TPC-C:
// half of TxnTable::finish's samples sat on one `lock dec`). A new occupant sees the last
// one's counts through in_use's release and acquire.
template <typename T>
inline void add_own(std::atomic<T>& counter, std::type_identity_t<T> delta) {
  counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

// The index entry a transaction's last get found (engine/access_ops.inc, get_op), for a write
// of the same key that follows it (write_op): a read-modify-write, as every TPC-C update is. It
// keeps the key's OID and the leaf and slot its lookup ended on, so that the write skips a
// descent of its own. Sound because an OID is reused only once every transaction that could
// have found it has ended (engine/reclaim.cc), so within this transaction it names the key's
// record or an emptied entry; a write that finds the entry emptied (an aborted insert's, a
// reclaimed record's) looks the key up again (Install::kRelookup), as after its own lookup.
// A stale leaf only costs the value hint's upkeep (BTree::set_value_hint checks the version).
// Keys of 1 to kMaxKey bytes: the copy is on every get's path.
struct RecentRead {
  static constexpr std::size_t kMaxKey = 32;
  const Table* table = nullptr;  // null: none
  std::uint64_t oid = 0;
  index::LeafRead leaf{};
  std::uint16_t slot = 0;
  std::uint8_t key_len = 0;
  char key[kMaxKey];
};

struct alignas(64) TxnContext {
  // ---- Read by other threads ----
  std::atomic<std::uint64_t> xid{0};  // 0 while the context is free
  std::atomic<std::uint64_t> state{cstate::kActive};
  std::atomic<std::uint64_t> pin{kNoPin};
  std::atomic<bool> in_use{false};
  // In use by a thread that borrowed it to do its queued reclamation (TxnTable::begin_if_free):
  // no transaction, so stats() does not count it as an open one. Set right after the borrow and
  // cleared right before the return: a stats() read can count a borrow for those few
  // instructions only (it counted the whole borrow before).
  std::atomic<bool> lent{false};
  // Counters summed by Database::stats(); written only by the occupant (add_own).
  std::atomic<std::int64_t> versions_live{0};
  std::atomic<std::int64_t> version_bytes_live{0};
  std::atomic<std::uint64_t> commits{0};
  std::atomic<std::uint64_t> aborts{0};
  std::atomic<std::uint64_t> pruned{0};
  // limbo.size(), readable by stats(): a cut chain counts as one version until it is freed.
  std::atomic<std::uint64_t> retired{0};
  // Bytes of the limbo's versions retired one by one: counted in version_bytes_live until
  // freed, but no longer anybody's to evict (the cold store's budget leaves them out). A cut
  // chain's bytes stay counted as live until it is freed (TxnTable::retire_chain).
  std::atomic<std::int64_t> retired_bytes{0};
  // Why transactions aborted: first-updater-wins conflicts, SSN's exclusion window, and index
  // leaves a serializable transaction read that changed before it committed (phantoms).
  std::atomic<std::uint64_t> write_conflicts{0};
  std::atomic<std::uint64_t> ssn_aborts{0};
  std::atomic<std::uint64_t> phantom_aborts{0};
  std::atomic<std::uint64_t> serializable_commits{0};
  // Reclamation of removed records (engine/reclaim.cc): removals queued and not yet reclaimed,
  // records reclaimed.
  std::atomic<std::uint64_t> tombs_pending{0};
  std::atomic<std::uint64_t> records_reclaimed{0};
  // OIDs in use that hold no record, as this context changed them: its removals queued, and
  // the OIDs it took out of use without giving them back yet (freed_oids) or for good (a
  // reclaimed record of a table with secondary indexes). One word, so that reclaiming a tomb
  // (queued → out of use) changes nothing stats() could see half of. Signed: only the sum
  // over contexts is meaningful.
  std::atomic<std::int64_t> oids_not_records{0};
  // Pending reclamation work of this context's queues (tombs + freed OIDs): another thread may
  // take the context while it is free and do it (DatabaseImpl::help_reclaim).
  std::atomic<std::uint64_t> reclaim_work{0};
  // At or below the timestamp of every stale entry this context queued and has not handled
  // (kNoPin when none): TxnTable::refresh_horizon folds it into stale_horizon(), below which
  // no queued stale entry names an OID. Set before the first entry's commit timestamp exists
  // (a clock value read at write time), so a scan never misses an entry it should wait for.
  std::atomic<std::uint64_t> stale_oldest{kNoPin};
  // Stale secondary entries queued and not handled yet, and those removed.
  std::atomic<std::uint64_t> stale_pending{0};
  std::atomic<std::uint64_t> stale_removed{0};
  // Records the ended transactions' operations reached (records_reached, published at the end).
  std::atomic<std::uint64_t> record_accesses{0};

  // ---- Private to the occupant ----
  alignas(64) std::uint32_t index = 0;
  std::uint64_t generation = 0;
  std::uint64_t snapshot = 0;  // begin timestamp
  std::uint64_t tag = 0;       // owner stamp of this transaction's versions
  std::uint32_t commits_since_horizon = 0;
  std::uint32_t ends_since_help = 0;  // DatabaseImpl::finish_txn's cadence of helping others
  bool borrowed = false;              // taken by begin_if_free, not by its own thread
  bool in_scan = false;               // a scan callback is running (re-entry is refused)
  bool removes = false;  // this transaction wrote a tombstone (its commit queues Tombs)
  // A write failed after its record was installed (a secondary entry's leaf could not be read
  // in): the transaction's state is partial, so its commit aborts it.
  bool failed_write = false;
  // SSN (mvcc/ssn.h), set at begin. η and π in SSN's doubled units.
  bool serializable = false;
  bool read_only = false;  // declared: writes are refused
  // Records the running transaction's operations reached (engine/access_ops.inc, run and
  // scan_op): counted here, where every operation writes, and added to record_accesses when
  // the transaction ends, so no operation writes a line other threads read.
  std::uint64_t records_reached = 0;
  std::uint64_t ssn_eta = 0;
  std::uint64_t ssn_pi = ~std::uint64_t{0};
  std::vector<ReadEntry> reads;
  std::vector<index::LeafRead> leaf_reads;  // leaves scans and misses read (phantoms)
  std::vector<index::Node*> leaf_inserts;   // leaves this transaction inserted keys into
  std::vector<WriteEntry> writes;
  std::string staged_keys;
  std::vector<IndexAdd> index_adds;
  std::string index_keys;
  index::LeafBatch scan_batch;   // scan scratch: keys copied out of a leaf
  index::LeafBatch plan_batch;   // the same for the leaves a scan plans its reads from
  RecentRead recent_read;        // cleared at begin
  std::vector<Retired> limbo;    // survives across occupants of this context
  std::size_t limbo_sealed = 0;  // limbo[0, limbo_sealed) carry their clock
  // Committed removals in commit order (so in timestamp order), [tombs_done, size) pending;
  // and OIDs waiting for the horizon, in clock order. Both survive across occupants.
  std::vector<Tomb> tombs;
  std::string tomb_keys;
  std::size_t tombs_done = 0;
  std::vector<FreedOid> freed_oids;
  // Stale secondary entries: [stale_done, stale_sealed) committed and pending, in timestamp
  // order; [stale_sealed, size) staged by the running transaction. Survive across occupants.
  std::vector<StaleEntry> stale;
  std::string stale_keys;
  std::size_t stale_done = 0;
  std::size_t stale_sealed = 0;
  VersionHeap::Cache version_cache;
};

class TxnTable {
 public:
  // Contexts [0, reserved) belong to worker slots (begin_at); the next `shared` ones to
  // application threads (begin).
  TxnTable(std::uint32_t reserved, std::uint32_t shared, std::uint32_t max_writes);
  ~TxnTable();
  Status init_heap(std::size_t reserve_bytes, bool huge_pages, std::size_t prefault_bytes = 0) {
    if (Status s = pi_ring_.init(); !s.is_ok()) return s;
    return heap_.init(reserve_bytes, huge_pages, prefault_bytes);
  }

  // Takes a free shared context and starts a transaction in it; null when all are in use.
  TxnContext* begin();
  // Starts a transaction in reserved context i, which must be free (a worker slot's own).
  TxnContext* begin_at(std::uint32_t i);
  // Starts a transaction in context i if it is free (null if not): the context's own queues
  // are then the caller's to work on. Shared contexts only: a reserved one belongs to its
  // worker, whose begin_at expects it free.
  TxnContext* begin_if_free(std::uint32_t i);
  std::uint32_t first_shared() const { return reserved_; }
  // A clock tick taken through the caller's log (durable databases: set_logged_ticks): `take`
  // answers whether the tick was taken.
  struct LoggedTick {
    bool (*take)(void* arg);
    void* arg;
  };
  // Ends the transaction (after commit or abort bookkeeping) and frees the context. When
  // reclamation wants the clock ticked and logged_ticks() is set: with `tick`, takes it before
  // the context is let go and frees what the tick lets it free (false); without, true, and the
  // caller must take one timestamp through its log (the limbo then waits for the context's
  // next finish).
  [[nodiscard]] bool finish(TxnContext* ctx, const LoggedTick* tick = nullptr);
  // Durable databases: never tick the clock without the caller logging it.
  void set_logged_ticks(bool on) { logged_ticks_ = on; }
  // Under a memory budget new versions start unreferenced (Version::cooling set): the next
  // eviction pass takes one nobody read. Without one nothing evicts, and reads never write.
  void set_cooling(bool on) { cooling_init_ = on ? 1 : 0; }

  // ---- SSN (mvcc/ssn.h) ----
  // A serializable transaction registers before it takes its stamp and deregisters after its
  // verdict is published; a certifying writer waits for the registered ones with smaller stamps.
  void ssn_register(const TxnContext* ctx) {
    ssn_registered_[ctx->index / 64].fetch_or(std::uint64_t{1} << (ctx->index % 64),
                                              std::memory_order_seq_cst);
  }
  void ssn_deregister(const TxnContext* ctx) {
    ssn_registered_[ctx->index / 64].fetch_and(~(std::uint64_t{1} << (ctx->index % 64)),
                                               std::memory_order_seq_cst);
  }
  std::uint64_t ssn_registered_word(std::uint32_t w) const {
    return ssn_registered_[w].load(std::memory_order_seq_cst);
  }
  std::uint32_t ssn_words() const { return (count_ + 63) / 64; }
  ssn::PiRing& pi_ring() { return pi_ring_; }
  const ssn::PiRing& pi_ring() const { return pi_ring_; }
  // Raised to the pstamp of every version the cold store takes out of memory (mvcc/ssn.h).
  void raise_cold_floor(std::uint64_t pstamp) {
    std::uint64_t cur = cold_floor_.load(std::memory_order_seq_cst);
    while (pstamp > cur && !cold_floor_.compare_exchange_weak(cur, pstamp)) {
    }
  }
  std::uint64_t cold_floor() const { return cold_floor_.load(std::memory_order_seq_cst); }
  // Called by the cold store right after a version left its entry.
  void note_evicted(const Version* v) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint64_t p = v->pstamp.load(std::memory_order_seq_cst);
    if (p != 0) raise_cold_floor(p);
  }

  TxnContext& at(std::uint32_t i) { return contexts_[i]; }
  const TxnContext& at(std::uint32_t i) const { return contexts_[i]; }
  std::uint32_t size() const { return count_; }
  std::uint32_t max_writes() const { return max_writes_; }

  std::atomic<std::uint64_t>& clock() { return clock_; }
  std::uint64_t clock_now() const { return clock_.load(std::memory_order_acquire); }
  // Cached horizon; may lag (it only grows), which is always safe.
  std::uint64_t horizon() const { return horizon_.load(std::memory_order_acquire); }
  // Recomputes the horizon from the pins of all active transactions.
  std::uint64_t refresh_horizon();
  // Below every stale secondary entry still queued (TxnContext::stale_oldest), as of the last
  // refresh_horizon; like the horizon it may lag and only grows. An OID freed at a clock value
  // below it is named by no secondary entry (engine/reclaim.cc).
  std::uint64_t stale_horizon() const { return stale_horizon_.load(std::memory_order_acquire); }

  // Version memory. Allocation is charged to the context that allocates, freeing to the one that
  // frees; only the sum is meaningful. Null when the version reservation is exhausted.
  Version* alloc_version(TxnContext* ctx, std::size_t payload);
  const VersionHeap& heap() const { return heap_; }
  void set_small_heap_releases(bool on) { heap_.set_small_releases(on); }
  // A version's address as an index entry's value hint (index::BTree::set_value_hint): its
  // offset in the heap in 16-byte units, plus one; 0 (no hint) past the first 64 GiB. Readers
  // only prefetch what a hint names (hinted), so a stale one costs a wasted fetch, nothing more.
  std::uint32_t hint_of(const Version* v) const {
    const auto off = static_cast<std::uint64_t>(reinterpret_cast<const char*>(v) - heap_.base());
    const std::uint64_t units = off / 16 + 1;
    return units <= UINT32_MAX ? static_cast<std::uint32_t>(units) : 0;
  }
  const char* hinted(std::uint32_t hint) const {
    BRAID_DASSERT(hint != 0);
    return heap_.base() + (std::uint64_t{hint} - 1) * 16;
  }
  // Returns the bytes freed (Version::bytes_for its size).
  std::size_t free_version(TxnContext* ctx, Version* v);
  // Hands an unlinked version to ctx's limbo. It is freed after ctx's occupant finishes, once
  // the horizon passes the clock finish() reads for it.
  void retire(TxnContext* ctx, Version* v);
  // The same for the chain below a version pruning keeps (Protocol::prune_below), from its
  // newest version `first`, which is not read now: it is usually a version nobody touched since
  // it was superseded, so reading its link and size at the cut was a dependent miss on every
  // update of a cold record. The chain is walked when freed, a few entries behind a prefetch
  // (free_before), and counted in `pruned` then.
  void retire_chain(TxnContext* ctx, Version* first);
  [[nodiscard]] bool reclaim(TxnContext* ctx, const LoggedTick* tick = nullptr);
  // Frees what ctx's last occupant retired once the horizon has passed it, without ticking the
  // clock: for a context nobody occupies now, whose limbo would otherwise wait for its next
  // occupant's finish (a worker's eviction context waits for memory to go over budget again).
  // Refreshes the horizon only when the clock has moved past the oldest retire.
  void release_limbo(TxnContext* ctx);

 private:
  // Gives the versions retired since the last seal their clock value (one fence for all).
  void seal_limbo(TxnContext* ctx);
  // Frees the limbo prefix retired before `horizon` (limbo is in clock order).
  void free_before(TxnContext* ctx, std::uint64_t horizon);
  // Frees one limbo entry (a version, or a whole cut chain); answers the bytes it takes off
  // retired_bytes.
  std::int64_t free_retired(TxnContext* ctx, const Retired& r);
  void start(TxnContext& c);

  VersionHeap heap_;  // first member: destroyed last, after the contexts' limbo is freed
  std::uint32_t reserved_;
  std::uint32_t count_;
  std::uint32_t max_writes_;
  std::unique_ptr<TxnContext[]> contexts_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> ssn_registered_;
  ssn::PiRing pi_ring_;
  alignas(64) std::atomic<std::uint64_t> cold_floor_{0};
  bool logged_ticks_ = false;
  std::uint8_t cooling_init_ = 0;
  // Contexts begin_if_free holds now; begin() waits for them (a yield a try) rather than
  // answering Busy.
  std::atomic<std::uint32_t> borrowed_{0};
  static constexpr std::uint32_t kBorrowWaits = 1024;
  alignas(64) std::atomic<std::uint64_t> clock_{1};
  alignas(64) std::atomic<std::uint64_t> horizon_{1};
  std::atomic<std::uint64_t> stale_horizon_{1};
};

}  // namespace braid::mvcc
