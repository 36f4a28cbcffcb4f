// The cold store (docs/internals/cold-store.md; MosaicDB §2.1, §4.1; Umbra §2-3): records whose
// newest version lives only in its log record, read back on demand and evicted under a memory
// budget.
//
// A cold OID entry holds the address of a durable log record (mvcc/version.h). A transaction
// that meets one joins the record's *load*: the first to miss leads it (issues the read), and
// every other transaction, on any worker or application thread, that misses on the same entry
// while the read is in flight waits for that read instead of issuing another (Umbra's
// de-duplicated loads). The read is verified (record CRC, table, key) and installed by CAS
// cold→hot, so the next access is a memory access; a load that fails gives every transaction
// waiting on it the failure (IOError, Corruption) and leaves the entry cold.
//
// Who reads how: the coroutine modes submit the read on their worker's ring (kColdRead) and
// park the slot (the worker completes the load when the completion comes back and wakes the
// slots waiting on it, without resuming them to ask); sequential and prefetch read
// synchronously, through the worker's ring with a spin on the completion (load_sync), and
// application threads, which have no ring, with pread.
//
// Eviction (bounded steps, run by workers between scheduler rounds and by application threads
// at commit): a record whose head version is committed, durable, seen by every snapshot and
// has a log address turns back into a cold entry; its versions are retired like pruned ones,
// so readers that still hold them are safe (mvcc/txn.h: reclamation by transaction).
#pragma once

#include <braid/database.h>
#include <braid/status.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mvcc/txn.h"
#include "mvcc/version.h"
#include "storage/file_table.h"
#include "storage/log_format.h"
#include "util/stall.h"

namespace braid::mvcc {
class Protocol;
}  // namespace braid::mvcc
namespace braid::detail {
struct TxState;
}  // namespace braid::detail

namespace braid::engine {

class TableSource;

struct ColdLoad {
  // Buffers up to this size are kept with the load; a bigger record borrows one per read.
  static constexpr std::uint32_t kBufBytes = 8192;

  std::atomic<bool> in_flight{false};  // until complete(); `failure` says how it ended
  std::uint32_t index = 0;             // in the pool
  std::uint32_t generation = 0;        // bumped per use: a completion tag names index + generation
  std::atomic<std::uint64_t>* slot = nullptr;
  std::uint64_t entry = 0;
  std::uint32_t table = 0;
  mvcc::TxnContext* ctx = nullptr;  // the leader's: the new version is allocated through it
  std::string key;                  // capacity kMaxKeyBytes, reserved once
  Status failure;                   // written before in_flight turns false
  std::uint64_t installed = 0;      // the entry complete() installed (0: none), as `failure`
  std::uint32_t refs = 0;           // under ColdStore::mutex_
  char* buf = nullptr;              // kDirectAlign-aligned, kBufBytes
  char* big = nullptr;              // this read's own buffer when kBufBytes is too small
  // A ColdReader's registered buffer (kBufBytes) lent for this read in place of `buf`; the
  // reader takes it back once complete() copied the record out.
  char* ring_buf = nullptr;
  std::uint32_t skip = 0;  // where the record starts in the buffer
  // Held from prepare() to complete() (FileTable::acquire); id < 0 while none is.
  storage::FileTable::Handle file;
  std::chrono::steady_clock::time_point issued;
  // A scan's extent (ColdPort::read_extent) has no slot: bytes [extent_start, extent_start +
  // extent_len) of file `extent_file` read into `ring_buf`; extent_got: bytes back, or -errno.
  std::uint32_t extent_file = 0;
  std::uint32_t extent_len = 0;
  std::uint64_t extent_start = 0;
  std::int64_t extent_got = 0;

  char* data() {
    if (big != nullptr) return big;
    return ring_buf != nullptr ? ring_buf : buf;
  }
  bool pending() const { return in_flight.load(std::memory_order_acquire); }
};

// Of a worker's kScanExtentsPerWorker extent buffers, the ones scans' reads ahead leave free:
// for the extents scans are in, and for index leaves read through the same buffers.
inline constexpr std::uint32_t kScanExtentsReserved = 4;
static_assert(kScanExtentsReserved < kScanExtentsPerWorker);

// The one hand-off between a transaction that met a cold record and the thread it runs on.
// A worker implements it: its ring issues the reads its transactions lead and its loop
// completes them, and its scheduler parks a transaction until its read is back. Application
// threads have none: they read synchronously.
class ColdPort {
 public:
  // Issues the read of `load`, which the caller leads; it completes on this thread's loop.
  virtual void submit(ColdLoad* load) = 0;
  // Parks the transaction of `tx` until `load` is back (the scheduler's business).
  virtual void park(detail::TxState* tx, ColdLoad* load) = 0;
  // Completes the reads of this thread's ring that are back: a synchronous wait's turn, since
  // the read it waits for may be one this thread leads for a parked transaction.
  virtual void poll() = 0;
  // Whether reads go through a ring (a coroutine can suspend on them); false: read in place.
  virtual bool has_ring() const = 0;
  // Between plug() and unplug(), submit() only collects: a scan that issues a run of reads at
  // once hands them over together, so records that lie next to each other on storage are read
  // as one extent (ColdReader) rather than split by the read batch (the block layer's plugging).
  // Nested calls count; no-ops without a ring.
  virtual void plug() = 0;
  virtual void unplug() = 0;
  // A scan's own read of bytes [start, start + len) of file `segment` (ScanExtents), into a
  // buffer of this thread's reader; it completes on this thread's loop as a load's read does,
  // so the scan parks on the load returned (pending() until then). Null when no buffer or load
  // is free, the file cannot be opened or the ring has no room: the scan reads its record the
  // usual way. `start` and `len` are multiples of storage::kDirectAlign, len at most
  // Options::scan_extent_bytes. release_extent() once its bytes are no longer used (not while
  // pending). Only with a ring. The read waits in the ring's submission queue for the worker's
  // next reap, which hands over every read its round made with one kernel entry (each entry is
  // a doorbell, an exit to the hypervisor on a VM), or for flush_extents().
  // `ahead`: a read a scan issues before it reaches it, which takes a buffer only while
  // kScanExtentsReserved others stay free (for the runs scans are in and for index leaves).
  virtual ColdLoad* read_extent(std::uint32_t segment, std::uint64_t start, std::uint32_t len,
                                bool ahead) = 0;
  virtual void flush_extents() = 0;
  virtual void release_extent(ColdLoad* extent) = 0;
  // An index leaf's read, as read_extent(), that every worker's transactions share: a miss on
  // a leaf whose block a transaction on any worker already asked for (the read in flight or
  // back and not yet let go) joins that read instead of issuing its own, so concurrent misses
  // on one leaf make one read (ColdStore::read_shared). The joiner parks on the load as on any
  // read another thread leads. A node segment is written once and its file number never
  // comes again, so the bytes at an address stay the leaf's for as long as anyone holds them.
  // release_shared() once the image is no longer used; the last holder's releases the extent.
  virtual ColdLoad* read_shared(std::uint32_t segment, std::uint64_t start, std::uint32_t len) = 0;
  virtual void release_shared(ColdLoad* extent) = 0;

  // The calling thread's port (its worker's), or null on an application thread.
  static ColdPort* current();
  static void set_current(ColdPort* port);

 protected:
  ~ColdPort() = default;
};

class ColdReader;
class BulkRead;

class ColdStore {
 public:
  // An entry that changed between a reader's look and the load's install (a writer, or an
  // eviction before it joined) sends the reader round again; this bounds how often before the
  // operation answers Busy. A load that installed hands its version to every waiter, so an
  // eviction between the install and a waiter's resumption costs no round: the version stays
  // allocated while the waiter's snapshot pins the horizon, and it is what that snapshot sees.
  static constexpr int kMaxMissRounds = 64;

  // What the cold store works with, all owned by the engine and outliving it.
  struct Deps {
    const TableSource* tables;       // the CLOCK hand's
    mvcc::TxnTable* txns;            // version memory, retirement, the horizon
    const mvcc::Protocol* protocol;  // its out-of-memory answer
    util::StallMonitor* stalls;      // a wait on another thread's read is watched
  };
  // `max_loads`: loads in flight at once (more misses wait for a free one).
  ColdStore(Deps deps, std::shared_ptr<storage::FileSystem> fs, std::uint32_t max_loads,
            std::uint64_t budget_bytes);
  ~ColdStore();
  ColdStore(const ColdStore&) = delete;
  ColdStore& operator=(const ColdStore&) = delete;

  // Eviction needs the durable clock (Durability's acknowledgement rule), which exists once
  // the logs do: set before the first sweep.
  void set_durable_clock(std::function<std::uint64_t()> clock) {
    durable_clock_ = std::move(clock);
  }

  storage::FileTable& files() { return files_; }
  std::uint64_t budget() const { return budget_; }
  // What over_budget last counted (it samples every 16th call).
  std::uint64_t sampled_bytes() const { return sampled_bytes_.load(std::memory_order_relaxed); }
  // Memory the budget counts where the index pages that no hand can give back (Durability's
  // adopted run list, for as long as checkpoints may carry runs over): the others make room.
  void set_held_bytes(std::uint64_t bytes) { held_bytes_.store(bytes, std::memory_order_relaxed); }
  // Options::page_index_leaves: paging trees' nodes count in the budget and the leaves' hand
  // runs (sweep). Set at open, before the first sweep; without it neither reads the catalog.
  void set_pages_index(bool pages) { pages_index_ = pages; }
  bool pages_index() const { return pages_index_; }
  // Reads completed so far, successful or not (what a wait on a read watches for progress).
  // A load's read is counted after it stopped being pending: whoever reads a count sees every
  // load it counts finished.
  std::uint64_t completed_reads() const {
    return reads_.load(std::memory_order_acquire) + extents_done_.load(std::memory_order_acquire);
  }

  // ---- Loads ----
  struct Miss {
    ColdLoad* load = nullptr;  // null: the entry is no longer `e` (read it again), or busy
    bool lead = false;         // the caller issues the read (prepare, then complete)
    bool busy = false;         // every load is in use: try again after a pause
  };
  // A transaction met cold entry `e` in `slot` (of table `table`, key `key`). With a load, the
  // caller holds a reference to it until release().
  // `ahead`: a read a scan issues before it needs it (ScanAhead). Those take only loads beyond
  // the reserve (set_ahead_reserve), so a read-ahead never takes the load another
  // transaction's current miss needs, and a scan that holds loads ahead never waits for one.
  Miss join(std::atomic<std::uint64_t>* slot, std::uint64_t e, mvcc::TxnContext* ctx,
            std::uint32_t table, std::string_view key, bool ahead = false);
  // Loads kept for misses that are not reads ahead: every transaction context's one and the
  // multi_get fan-outs.
  void set_ahead_reserve(std::uint32_t loads) { ahead_reserve_ = loads; }
  // A load of the caller's own for a scan's extent (ColdReader::read_extent): never in active_,
  // so nobody joins it, and taken only beyond the reserve, as reads ahead are. Null when none
  // is free. The caller's reference is dropped by release().
  ColdLoad* take_private();
  // "file N at offset M (L bytes)": where an error message says a read went.
  static std::string describe(std::uint32_t segment, std::uint64_t offset, std::uint64_t bytes);
  // A scan's extent read came back (`result`: bytes, or -errno): counted as one storage read,
  // its file let go, the load no longer pending.
  void complete_private(ColdLoad* l, std::int64_t result);
  static constexpr std::string_view kNotItsRecord = "is not the record its entry belongs to";
  // What is wrong with the `got` bytes at `p` read for cold entry `e` of table `table`: they
  // must hold the whole record, verify (checksum), have the size the entry gives and a value,
  // and be the record of primary key `*key` (null: a caller that checks the key itself).
  // Empty when they are, and then *rv views the record. Every cold read is checked so, a load's
  // and a scan's record from its own extent alike; inline and free of allocation because a scan
  // checks every record it takes. fault_status() turns an answer into a Status.
  static std::string_view record_fault(std::uint64_t e, const char* p, std::uint64_t got,
                                       std::uint32_t table, const std::string_view* key,
                                       storage::RecordView* rv) {
    const mvcc::entry::ColdAddress a = mvcc::entry::cold(e);
    if (got < a.size) return "the file ends before it";
    if (const std::string_view why =
            storage::decode_record(p, a.size, storage::RecordCheck::kCrc, rv);
        !why.empty()) {
      return why;
    }
    if (rv->table != table) return kNotItsRecord;
    if (rv->size != a.size) return kNotItsRecord;
    // A cold entry names a value: a reference (checkpoint parts only) would be an address bug.
    if (rv->op != storage::WriteOp::kPut) return "holds no value";
    if (key != nullptr && rv->key != *key) return kNotItsRecord;
    return {};
  }
  // Corruption naming where the record of cold entry `e` is (`got` bytes read) and `fault`.
  static Status fault_status(std::uint64_t e, std::uint64_t got, std::string_view fault);
  // Records scans took from their extents: read back, as a load's record is.
  void count_extent_records(std::uint64_t n) { reads_.fetch_add(n, std::memory_order_relaxed); }

  // ---- Index leaves' reads, shared by every worker (ColdPort::read_shared) ----
  // A leaf's block some transaction on any worker asked for and still holds is joined, not
  // read again: concurrent misses on one leaf make one read however many workers they come
  // from. A read lives in the buffer of the reader that issued it, which alone may give that
  // buffer back (its free list is its thread's); so a hold let go last on another thread leaves
  // the read for its reader to collect on its next round (take_released). Each reader brings
  // kScanExtentsPerWorker rows (its buffers bound the reads it can hold) and takes them away.
  void add_shared_rows(std::size_t rows);
  void remove_shared_rows(const ColdReader* owner, std::size_t rows);
  // The read of bytes [start, start + len) of file `segment` as some transaction holds it
  // (joined), or issued now through `reader` (ColdReader::read_extent) and published; null when
  // it cannot be issued now. The caller holds it until release_shared().
  ColdLoad* read_shared(ColdReader* reader, std::uint32_t segment, std::uint64_t start,
                        std::uint32_t len);
  // `reader` null (a thread without a ring): joins only, null when no read is held.
  ColdLoad* join_shared(std::uint32_t segment, std::uint64_t start, std::uint32_t len) {
    return read_shared(nullptr, segment, start, len);
  }
  // A synchronous reader's wait for shared read `l`: polls `port` (the thread's, or null)
  // between looks, since the read may be on its own ring; watched as any wait on a read.
  void wait_shared(ColdPort* port, const ColdLoad* l);
  // Lets one hold of `l` go. True when it was the last and `caller` issued the read: the caller
  // gives its buffer back now (ColdReader::release_extent).
  [[nodiscard]] bool release_shared(const ColdReader* caller, ColdLoad* l);
  // release_shared() of a join_shared() hold (its reader, another thread's, collects it).
  void release_joined(ColdLoad* l);
  // The reads `owner` issued whose last hold went on another thread, up to `max` into `out`:
  // answers how many (each for owner->release_extent()).
  std::size_t take_released(ColdReader* owner, ColdLoad** out, std::size_t max);
  // Drops a reference; the last one returns the load to the pool.
  void release(ColdLoad* l);
  // What a finished load means to a transaction that waited on it: OK (read the entry again)
  // or the load's failure.
  Status outcome(const ColdLoad* l) const;

  // The whole miss synchronously: leads a load, or waits for the one in flight. `port` (the
  // thread's, or null) is polled while waiting: a worker completes its own reads meanwhile.
  // A leader with a ring (a worker in a sequential mode) submits there and spins on the
  // completion, as MosaicDB's sequential engine does; without one it blocks in pread. The
  // spin is the cheaper wait on a VM: a thread that sleeps in pread leaves its vCPU idle,
  // and the completion's wake-up then costs an interrupt and a halt exit on top of the read.
  // OK once `slot` no longer holds `e`; *installed: the hot entry the load published, or 0
  // (the entry changed some other way: read it again).
  Status load_sync(std::atomic<std::uint64_t>* slot, std::uint64_t e, mvcc::TxnContext* ctx,
                   std::uint32_t table, std::string_view key, ColdPort* port,
                   std::uint64_t* installed);

  // A miss served on the calling thread, the entry read again until it is not cold (at most
  // kMaxMissRounds): *out receives the hot entry to read. `port` (the thread's, or null) keeps
  // completing its own ring's reads while this waits.
  Status fetch_sync(ColdPort* port, mvcc::TxnContext* ctx, std::atomic<std::uint64_t>* slot,
                    std::uint32_t table, std::string_view key, std::uint64_t* out);

  // A cold record's value without installing it (checkpoints, index builds): reads, verifies.
  // *cts (optional): the record's commit timestamp.
  Status read_value(std::uint64_t e, std::uint32_t table, std::string_view key, std::string* out,
                    std::uint64_t* cts = nullptr);

  // ---- Bulk reads (`braid check`) ----
  // A reader of many cold records at once: sorted by address, the records of one file are read
  // as extents (neighbours within `gap_bytes` share a read, up to about `extent_bytes` each, so
  // every block is read once) with `depth` reads in flight on a queue of the caller's own; a
  // point read per record would pay the device's latency per record and visit a block as often
  // as it holds records.
  struct BulkRecord {
    std::uint64_t entry = 0;     // a cold entry word
    std::uint64_t key_hash = 0;  // key_hash() of the key whose entry it is
    std::uint64_t cookie = 0;    // the caller's
  };
  // A bulk reader checks each record against its key by this hash (64 bits: a record read
  // back in place of another passes with odds of 2^-64), so callers need not keep the keys.
  static std::uint64_t key_hash(std::string_view key) { return std::hash<std::string_view>{}(key); }
  struct BulkOptions {
    std::uint32_t depth = 8;
    std::uint32_t extent_bytes = 1u << 20;
    std::uint32_t gap_bytes = 16u << 10;
  };
  struct BulkStats {
    std::uint64_t records = 0;
    std::uint64_t reads = 0;  // extents, a short read's rest counted once more
    std::uint64_t bytes = 0;
  };
  // Each record is verified (checksum, the size its entry gives, table `table`, a value, its
  // key by hash) and then handed to `visit`, in file order. The first failure — a read error
  // (IOError), a record that does not verify (Corruption naming file and offset) or a non-OK from
  // `visit` — stops issuing; the reads in flight are collected and it is returned. Sorts `refs`.
  // Any thread but a worker's (the wait blocks); the files named must not be deleted meanwhile.
  using BulkVisit = std::function<Status(const BulkRecord&, const storage::RecordView&)>;
  Status read_in_file_order(std::vector<BulkRecord>* refs, std::uint32_t table,
                            const BulkOptions& options, const BulkVisit& visit, BulkStats* stats);

  // ---- Eviction ----
  // Turns the record in `slot` cold if its head may go (see the file comment). `durable`:
  // the durable clock, `horizon`: the reclamation horizon. True (and *to: the cold entry it
  // left; *bytes grows by the version memory it retired) when it did.
  bool evict(std::atomic<std::uint64_t>& slot, mvcc::TxnContext* ctx, std::uint64_t durable,
             std::uint64_t horizon, std::uint64_t* to, std::uint64_t* bytes);
  // A table that does not cache reads (Database::set_cache_reads): turns `slot` back into the
  // cold entry it was, if it still holds `e`, the lone version a load installed. The caller, a
  // reader that still uses the version, retires it through its own `ctx` (freed after it
  // ended). False when the entry moved on (a writer, an eviction) or a checkpoint is deleting
  // files (the version then stays until a sweep). A bulk load drops what it kept too, once its
  // records turn out not to fit the budget (`by_load`: counted as evictions, not as reads let
  // go).
  bool drop(std::atomic<std::uint64_t>& slot, std::uint64_t e, mvcc::TxnContext* ctx,
            bool by_load = false);
  // Whether version memory is past the high-water mark (sampled: cheap to call often;
  // `sample`: sampled now, for a caller that asks seldom).
  bool over_budget(bool sample = false);
  // One bounded CLOCK step: visits up to `visits` entries from the shared hand and evicts
  // what it may, while version memory is above the low-water mark. Answers the evictions.
  // Index leaves count in the budget with the versions and go too (a paging tree's, primary or
  // secondary, BTree::pages): each step also moves a second hand over the leaves that hold
  // about `visits` keys, so both hands cross the key space at about one pace.
  std::uint32_t sweep(mvcc::TxnContext* ctx, std::uint32_t visits);
  // The leaves' hand alone, for the open's replay (one thread, before any worker runs): under
  // a budget records come back as addresses, so the index it rebuilds is what fills the
  // budget, and without this an open held the whole index however small the budget (the
  // records' hand needs the durable clock and a begun context, which a replay has not).
  // Answers the leaves evicted.
  std::uint64_t sweep_index(std::uint32_t keys);
  // Returns once no pass of the leaves' hand is under way: one that starts later sees a table's
  // demotion hold (Table::demotes) set before the call.
  void wait_for_leaf_hand() { std::lock_guard<std::mutex> g(leaf_mutex_); }
  // A single writer that grows a paging index fast (an open's replay, a bulk load) catches the
  // leaves' hand up with it: up to `max_moves` calls of sweep_index(keys) while the budget,
  // sampled at the first, is exceeded. The hand's own pace (a move per kLeafBatchKeys keys of
  // credit, a lap's end after kMinLapSweeps moves, leaves marked used spared once) lets a
  // tree that grows at a load's rate run far past the budget before the first evictions.
  // With `tree`, only while it holds more than `share` bytes of nodes. Answers the leaves
  // evicted.
  std::uint64_t catch_up_index(std::uint32_t keys, std::uint32_t max_moves,
                               const index::BTree* tree = nullptr, std::uint64_t share = 0);
  // Evicts leaves of `tree`, a paging tree nobody else sees yet (create_index attaching to a
  // stored index, whose entries arrive in key order, so the leaves behind the last insert are
  // not touched again), from `*hand` on, until its nodes hold at most `share` bytes or a lap
  // took nothing. Serialized with the leaves' hand, which owns the node store's writer. IOError
  // from the store (a full disk: the leaves stay). Answers the leaves evicted through *evicted.
  Status shrink_unpublished(index::BTree& tree, std::string* hand, std::uint64_t share,
                            std::size_t* evicted);
  // Evicts leaves of `tree`, a paging secondary tree of `table` create_index just published,
  // while the budget is exceeded or until a lap took nothing, waiting for the leaves' hand
  // rather than skipping while a worker moves it. The caller holds a begun context (the
  // leaves' consent reads the versions their entries name). Answers the leaves evicted.
  std::size_t catch_up_secondary(Table* table, index::BTree& tree);

  // ---- Checkpoints and file deletion (durability.cc) ----
  // A file may be deleted only when no cold entry and no evictable version's `home` names it.
  // The checkpoint rewrites `home`s as its chunks are written and lists the files its
  // references need; what it cannot see is an eviction that read a `home` before the rewrite
  // and turned the entry cold after the record was visited. So while a checkpoint runs, the
  // files that evictions point entries into are noted, and a sweep step holds the gate shared
  // from reading a `home` to noting its file: the checkpoint's end takes it exclusively, so
  // every eviction is either noted or reads the rewritten `home`.
  void start_noting();
  // Stops noting; answers the files noted. The caller holds gate() exclusively.
  std::vector<std::uint64_t> stop_noting();
  std::shared_mutex& gate() { return gate_; }

  void add_stats(DatabaseStats* out) const;

 private:
  friend class ColdReader;
  friend class BulkRead;
  // Free load i made ready for a new read, held by `refs` (under mutex_).
  ColdLoad& take(std::uint32_t i, std::uint32_t refs);
  // The leader's read request (the reader sets the tag); may be called again for the same
  // read. False: the file cannot be read; the load has failed (complete() was called).
  bool prepare(ColdLoad* l, storage::IoRequest* r);
  // The read came back with `result` (bytes, or -errno): verify, install, publish, wake.
  // `io_bytes`: what the storage read transferred, counted as one read with its time in
  // flight; kNoRead when the load made no read of its own (the record came with a read another
  // load counted, an extent's; or the read never started: its file would not open).
  static constexpr std::int64_t kNoRead = -1;
  void complete(ColdLoad* l, std::int64_t result, std::int64_t io_bytes);
  void complete(ColdLoad* l, std::int64_t result) { complete(l, result, result > 0 ? result : 0); }
  ColdLoad* load_at(std::uint32_t index) { return &pool_[index]; }
  void read_sync(ColdLoad* l);
  void fail(ColdLoad* l, Status why);
  std::uint64_t live_bytes() const;
  // Takes what a sweep evicted off the sampled live bytes.
  void debit(std::uint64_t bytes);
  // The leaves' hand: evicts leaves holding about `keys` keys of the table it is in, one thread
  // at a time (a sweeper that finds it taken goes on without), in batches (kLeafBatchKeys).
  // Answers the bytes of the leaves evicted.
  // The caller pins the horizon (`ctx`'s snapshot): the versions the consent reads stay.
  // With `ctx` (a records' sweep), the leaves it visits demote their cold records, which give
  // their OIDs back through `ctx`'s freed OIDs (demote_cold in eviction.cc); without (an open,
  // a bulk load), nothing is demoted.
  std::uint64_t sweep_leaves(std::uint32_t keys, mvcc::TxnContext* ctx);
  // Moves `hand` over `tree` in batches while more() holds, until two laps in a row took
  // nothing (a lap may only clear marks). The caller holds leaf_mutex_.
  template <typename More>
  Status lap_tree(index::BTree& tree, std::string* hand, index::BTree::LeafConsent consent,
                  void* arg, std::size_t* evicted, More more);

  const Deps deps_;
  std::function<std::uint64_t()> durable_clock_;
  std::shared_ptr<storage::FileSystem> fs_;  // outlives the file table's handles
  storage::FileTable files_;
  const std::uint64_t budget_;
  std::unique_ptr<ColdLoad[]> pool_;
  const std::uint32_t max_loads_;
  std::uint32_t ahead_reserve_ = 0;

  std::mutex mutex_;
  std::vector<std::uint32_t> free_;    // pool indexes
  std::vector<std::uint32_t> active_;  // loads in flight (linear search: max_loads is small)

  // CLOCK hand: table and OID, advanced in chunks by whoever sweeps.
  std::mutex hand_mutex_;
  std::uint32_t hand_table_ = 0;
  std::uint64_t hand_oid_ = 0;
  std::atomic<std::uint64_t> sampled_bytes_{0};
  std::atomic<std::uint64_t> held_bytes_{0};
  // A lap of the leaves' hand over a table starts at most once per this many calls of
  // sweep_leaves (each sweep of the records calls it once, whether or not its batch moves). A
  // coroutine's descent reads a leaf a few scheduler rounds after the step that reached or
  // loaded it, and a worker over budget sweeps every round: a hand that lapped a small table
  // every round would clear a leaf's mark and evict it in two, before the descent came back
  // to it, and the descent would load it again forever.
  static constexpr std::uint64_t kMinLapSweeps = 64;
  // The leaves' hand moves once its callers' paces add up to this many keys, and takes them
  // all in one go: each move writes its leaves' images with one flush, a kernel entry and a
  // doorbell. A move per sweep (about six leaves) made a bulk load of 2 M records under a
  // small budget spend half its time in writes.
  static constexpr std::uint32_t kLeafBatchKeys = 2048;
  // Leaves one move visits at most (marked ones it spares count): bounds a worker's round.
  static constexpr std::uint32_t kLeafBatchVisits = 256;
  // Demoted OIDs a context may hold waiting for the horizon: past it the leaves' hand evicts
  // without demoting. A waiting OID costs its 24-byte note on top of the slot it frees later,
  // so while a checkpoint's snapshot holds the horizon back, demotion only adds memory (a load
  // under a budget piled up 50 MiB of notes behind its checkpoint).
  static constexpr std::size_t kMaxWaitingDemotions = std::size_t{1} << 16;
  // Free frames a paging tree keeps for the loads to come beside a quarter of its nodes (at
  // most a sixty-fourth of the budget); the rest go back to the system (ColdStore::sweep_leaves).
  static constexpr std::size_t kKeptFrames = 64;
  bool pages_index_ = false;
  std::mutex leaf_mutex_;  // the leaves' hand: its table and where in it, and its pace
  std::uint32_t leaf_table_ = 0;
  std::uint32_t leaf_tree_ = 0;  // 0: the table's primary tree; i + 1: its secondary i
  std::string leaf_hand_;
  std::uint64_t leaf_sweeps_ = 0;
  std::uint64_t leaf_lap_start_ = 0;
  std::uint64_t leaf_credit_ = 0;  // keys owed to the hand since it last moved
  std::atomic<std::uint64_t> leaf_write_errors_{0};
  std::atomic<std::uint64_t> demotions_{0};  // records whose OID the leaves' hand gave back
  std::atomic<std::uint64_t> leaf_joins_{0};
  // A synchronous wait for read `l`: spins, polling `port` (the thread's, or null: the read may
  // be on its own ring), and reports through `watch` once the spin lasts.
  template <typename Describe>
  void spin_until_back(ColdPort* port, const ColdLoad* l, util::StallWatch& watch,
                       const Describe& describe);
  // The shared leaf reads (read_shared): a row with a load is held by `holders` transactions,
  // or by none and waits for its owner to collect it.
  struct SharedRead {
    ColdLoad* load = nullptr;
    ColdReader* owner = nullptr;
    std::uint32_t holders = 0;
  };
  std::mutex shared_mutex_;  // before mutex_ and the file table's, never after
  std::vector<SharedRead> shared_reads_;
  std::atomic<std::uint32_t> sample_countdown_{0};
  std::atomic<bool> evicting_{false};  // between the high- and low-water marks

  std::shared_mutex gate_;
  bool noting_ = false;  // under gate_ (written exclusively)
  std::mutex noted_mutex_;
  std::vector<std::uint64_t> noted_;  // file numbers, sorted and unique per merge

  // reads_: records read back (loads completed, and the bulk reads' records); ios_: the
  // storage reads that carried them (an extent of neighbours is one).
  std::atomic<std::uint64_t> reads_{0}, ios_{0}, read_bytes_{0}, joins_{0}, errors_{0},
      evictions_{0}, wait_ns_{0}, drops_{0};
  std::atomic<std::uint64_t> extents_done_{0};  // scans' extent reads back (a wake-up's signal)
};

// One bulk pass over many cold records (ColdStore::read_in_file_order): sorted by address,
// read as extents in file order through a queue the caller drives, verified and visited in
// that order. Resumable: step() issues what the window allows and collects what is back, so a
// worker can run a pass between its scheduler rounds (the checkpoint's copies out of log
// segments) and a tool can block on it. Buffers are allocated once, `depth` extents of about
// `extent_bytes` each. Single-threaded: its caller's.
class BulkRead {
 public:
  BulkRead(ColdStore* store, const ColdStore::BulkOptions& options);
  ~BulkRead();
  BulkRead(const BulkRead&) = delete;
  BulkRead& operator=(const BulkRead&) = delete;

  // A new pass over `refs` (sorted here; they must outlive the pass), records of `table`.
  // Precondition: idle().
  void start(std::vector<ColdStore::BulkRecord>* refs, std::uint32_t table,
             ColdStore::BulkVisit visit);
  // Issues, collects (with `wait`: blocks for a completion) and visits. True once the pass
  // ended: every record visited, or status() holds the failure that stopped it (nothing of
  // it is in flight any more).
  bool step(storage::IoQueue& queue, bool wait);
  // Stops issuing: the pass ends (Busy) once the reads in flight are back.
  void cancel() {
    if (status_.is_ok()) status_ = Status::busy("bulk read cancelled");
  }
  const Status& status() const { return status_; }
  bool idle() const { return in_flight_ == 0 && head_ == issued_; }
  std::uint32_t in_flight() const { return in_flight_; }
  std::uint64_t completions() const { return completions_; }
  const ColdStore::BulkStats& stats() const { return stats_; }

 private:
  struct Extent {
    std::uint64_t file = 0;
    storage::FileTable::Handle handle;
    std::uint64_t start = 0;
    std::uint64_t len = 0;
    std::uint64_t got = 0;  // bytes back so far
    std::size_t first = 0;  // the records [first, end) of the sorted refs
    std::size_t end = 0;
    char* buf = nullptr;
    bool done = false;
    bool carry_in = false;   // its first block is the last extent's last block
    bool carry_out = false;  // its last block is the next extent's first
    std::int64_t error = 0;  // -errno
  };
  Status plan(storage::IoQueue& queue, Extent& x);
  void submit(storage::IoQueue& queue, Extent& x);
  Status hand_out(Extent& x);

  ColdStore* store_;
  const ColdStore::BulkOptions options_;
  std::vector<Extent> window_;  // extent i lives in window_[i % depth]
  std::uint64_t buf_bytes_ = 0;
  bool buffers_ = true;
  std::vector<ColdStore::BulkRecord>* refs_ = nullptr;
  std::uint32_t table_ = 0;
  ColdStore::BulkVisit visit_;
  std::unique_ptr<char[]> carry_;        // a block two extents share, between their hand-outs
  bool carry_next_ = false;              // the next extent planned starts with it
  std::size_t next_ = 0;                 // the first record no extent has taken
  std::uint64_t head_ = 0, issued_ = 0;  // extents handed out, extents issued
  std::uint32_t in_flight_ = 0;          // requests in the queue
  std::uint64_t completions_ = 0;
  std::uint64_t counted_reads_ = 0;    // of stats_.reads, added to the store's count
  std::uint64_t counted_records_ = 0;  // of stats_.records, likewise
  std::uint64_t counted_bytes_ = 0;    // of stats_.bytes, likewise
  bool error_counted_ = false;
  Status status_;
  ColdStore::BulkStats stats_;
};

// A worker's asynchronous reads: the loads its transactions lead, issued through its ring's
// kColdRead channel (at most kMaxInFlight at once; the rest wait in a backlog, each issued once)
// and completed as their completions come back — verified, installed, their waiters' loads
// marked done. The worker's one hand-off with the cold store on the read path: it gives the
// reader a load (submit) and, once per loop, lets it finish what came back (service); it then
// only parks and wakes its own transactions. Single-threaded: the worker's.
class ColdReader {
 public:
  static constexpr std::uint32_t kMaxInFlight = 64;
  // Loads that follow each other in the backlog and whose records lie within kExtentGap of each
  // other in one file are read as one extent of at most kExtentBytes (Umbra's scans read
  // contiguous runs, not records): a bulk load or a checkpoint writes a key range contiguously,
  // so a scan's cold records come in file order, tens to a 4 KiB block. The reads are larger
  // and far fewer, and a block is read once per extent, not once per record in it. kExtents
  // extents are in flight at once; past that, loads are read one by one. The sizes were not
  // tuned: a scan's refill (half its window, at most 16 records) stays far below the cap, and
  // the gap is the bulk readers' (BulkOptions::gap_bytes).
  static constexpr std::uint32_t kExtentBytes = 128u << 10;
  static constexpr std::uint32_t kExtentGap = ColdStore::BulkOptions{}.gap_bytes;
  static constexpr std::uint32_t kExtents = 8;
  static constexpr std::uint32_t kExtentMembers = 64;

  // `backlog`: the most loads that can wait at once (the worker's slots times the loads one
  // transaction can wait on), reserved now so nothing allocates on a miss.
  ColdReader(ColdStore* store, std::unique_ptr<storage::IoQueue> channel, std::size_t backlog);
  ~ColdReader();
  ColdReader(const ColdReader&) = delete;
  ColdReader& operator=(const ColdReader&) = delete;

  // Reads wait to be issued together (ExecOptions::read_batch, read_window_us): every
  // submission writes the device's doorbell, which on a VM exits to the hypervisor, the largest
  // single cost of a cold read in a worker's profile (ExecStats::storage_stage_ns). Up to
  // `batch` go with one kernel entry; the oldest waits at most `window`, and none once the
  // worker has nothing else to run. 1 <= batch <= kMaxInFlight.
  void configure(std::uint32_t batch, std::chrono::microseconds window);
  // Takes the read of `load`, which the caller leads, to issue with the next batch (or queues
  // it while the ring is full); a read that cannot be issued fails the load.
  void submit(ColdLoad* load);
  // Completes the reads that came back, then issues what waits once enough waits, the oldest
  // waited long enough, or `force` (the worker has nothing else to run, or a synchronous miss
  // waits). Cheap when nothing is pending.
  void service(bool force);
  // ColdPort::plug(): while plugged, submit() collects without issuing.
  void plug() { ++plugged_; }
  void unplug();
  bool busy() const { return channel_->in_flight() != 0 || !backlog_.empty(); }
  // ColdPort::read_extent() and release_extent(). The buffers (kScanExtentsPerWorker of
  // `bytes`, configure_extents) are allocated on the first extent, not before: most workers
  // never scan cold data.
  void configure_extents(std::uint32_t bytes);
  ColdLoad* read_extent(std::uint32_t segment, std::uint64_t start, std::uint32_t len, bool ahead);
  void flush_extents();
  void release_extent(ColdLoad* l);
  // ColdPort::read_shared() and release_shared(): through the store's table of shared reads,
  // so a miss joins the read another worker's transaction holds.
  ColdLoad* read_shared(std::uint32_t segment, std::uint64_t start, std::uint32_t len);
  void release_shared(ColdLoad* l);
  // Gives back the buffers of shared reads this reader issued whose last hold went on another
  // thread (ColdStore::take_released). Cheap when there are none: the worker calls it every
  // round.
  void collect_released() {
    if (released_.load(std::memory_order_relaxed) != 0) collect_released_slow();
  }
  // A shared read of this reader's lost its last hold on another thread (under the store's
  // shared-read lock).
  void note_released() { released_.fetch_add(1, std::memory_order_relaxed); }
  void note_collected(std::uint32_t n) { released_.fetch_sub(n, std::memory_order_relaxed); }
  std::uint32_t in_flight() const { return channel_->in_flight(); }
  std::size_t waiting() const { return backlog_.size(); }

  // Plain: the owning thread's (ExecStats publishes them).
  struct Counters {
    std::uint64_t issued = 0;       // reads handed to the kernel
    std::uint64_t submissions = 0;  // kernel entries that handed them over
    std::uint64_t reaps = 0;        // completion passes that found reads back
    std::uint64_t reaped = 0;       // reads those passes completed
    std::uint64_t registered = 0;   // issued reads into the registered buffers
  };
  const Counters& counters() const { return counters_; }

 private:
  void reap();
  void issue();
  // The loads from backlog_[first] on that one extent can carry (1: read it alone).
  std::size_t neighbours(std::size_t first) const;
  // Issues backlog_[first, first + n) as one extent. False: the ring is full (they wait).
  bool issue_extent(std::size_t first, std::size_t n);
  void complete_extent(std::uint32_t index, std::int64_t result);
  // Below the ring's channel bits (storage::IoQueue tags are 56 bits); a load's tag is its
  // index (under 2^23) and generation.
  static constexpr std::uint64_t kExtentTag = std::uint64_t{1} << 55;
  // A scan's extent: its load's index in the low 32 bits.
  static constexpr std::uint64_t kScanExtentTag = kExtentTag | (std::uint64_t{1} << 54);
  // The reader's buffers: one per read in flight, in one block registered with the ring so
  // the kernel pins them once, not on every read (the destination's page pinning was a
  // measurable part of a read's submission). The block outlives the channel (declared first):
  // the channel's destructor waits for reads still in flight.
  char* take_buffer();
  void give_back(char* buffer);
  // Backs `bytes` at `block` and registers them with the ring: the index, or -1 (plain reads).
  std::int32_t register_zeroed(char* block, std::size_t bytes);
  struct FreeBlock {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeBlock> buffers_;
  std::vector<std::uint32_t> free_buffers_;
  std::int32_t fixed_ = -1;  // the block's registration, or -1: plain reads
  // The extents' buffers (kExtents of kExtentBytes), before the channel for the same reason.
  struct Extent {
    char* buf = nullptr;  // in extent_block_
    std::uint64_t start = 0;
    std::uint32_t loads = 0;
    ColdLoad* load[kExtentMembers] = {};
    std::uint64_t at[kExtentMembers] = {};  // where each load's read starts in the file
  };
  std::unique_ptr<char, FreeBlock> extent_block_;
  std::unique_ptr<Extent[]> extents_;
  std::vector<std::uint32_t> free_extents_;
  std::int32_t extent_fixed_ = -1;  // extent_block_'s registration
  // Scans' extents (read_extent): kScanExtentsPerWorker buffers of scan_bytes_ each, also
  // registered (an extent pins up to 32 pages a read, each with a reference taken and
  // dropped, and dirties each as it completes).
  std::unique_ptr<char, FreeBlock> scan_block_;
  std::vector<std::uint32_t> free_scan_;
  std::uint32_t scan_bytes_ = 0;
  std::int32_t scan_fixed_ = -1;  // scan_block_'s registration
  void collect_released_slow();
  // Shared reads of this reader's waiting for collect_released(): written by other threads
  // (rarely), read by the worker every round, so on a line of its own.
  alignas(64) std::atomic<std::uint32_t> released_{0};
  std::uint32_t plugged_ = 0;

  ColdStore* store_;
  std::unique_ptr<storage::IoQueue> channel_;
  std::vector<ColdLoad*> backlog_;
  std::chrono::steady_clock::time_point first_wait_{};  // when the oldest in backlog_ came
  static constexpr std::uint32_t kWindowPolls = 4;
  static_assert((kWindowPolls & (kWindowPolls - 1)) == 0, "service() masks by it");
  std::uint32_t window_polls_ = 0;
  std::uint32_t batch_ = 1;
  std::chrono::microseconds window_{0};
  Counters counters_;
};

}  // namespace braid::engine
