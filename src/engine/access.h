// The record-access operations in every execution mode, from one source
// (docs/internals/execution.md).
//
// The search logic lives in steppers that never suspend: index::Lookup and index::ScanLeaf (one
// B+-tree node per step) and ChainWalk (mvcc/chain_walk.h, one version per step). Each step names
// the memory the next step will read. The operations (access_ops.inc) drive the steppers, and what
// they do between two steps is the only thing that differs between modes:
//   Sequential   nothing                         plain functions (access_plain.cc)
//   Prefetch     prefetch the next node/entry    plain functions (access_plain.cc)
//   Interleaved  prefetch, then suspend          one coroutine per operation (access_coro.cc)
//   Nested       prefetch, then suspend          a coroutine per driver and per suspension
// access_ops.inc is compiled twice — once as plain functions, once as coroutines — with macros
// that expand to `return` or `co_return`, a call or a `co_await` (CoroBase's PROMISE/AWAIT).
#pragma once

#include <braid/tx.h>

#include <coroutine>
#include <cstdint>
#include <cstring>

#include "engine/database_impl.h"
#include "engine/op_env.h"
#include "engine/tx_state.h"
#include "mvcc/chain_walk.h"

namespace braid::engine {

using mvcc::ChainWalk;
using mvcc::visible_version;

// Mode tags.
// kFlatStorage: the storage path (a cold read) runs inside the operation's coroutine instead
// of a nested one (StoragePath::kFlattened; engine/cold_fetch.h).
struct Sequential {
  static constexpr bool kHints = false;
  static constexpr bool kNested = false;
  static constexpr bool kFlatStorage = false;
};
struct Prefetch {
  static constexpr bool kHints = true;
  static constexpr bool kNested = false;
  static constexpr bool kFlatStorage = false;
};
struct Flat {
  static constexpr bool kHints = true;
  static constexpr bool kNested = false;
  static constexpr bool kFlatStorage = false;
};
struct FlatStorage {
  static constexpr bool kHints = true;
  static constexpr bool kNested = false;
  static constexpr bool kFlatStorage = true;
};
struct Nested {
  static constexpr bool kHints = true;
  static constexpr bool kNested = true;
  static constexpr bool kFlatStorage = false;
};

// A read of one of `table`'s versions in the modes that hint fetches its header and the value
// size the table last wrote, up to 16 lines: a get's caller goes on to read the value, and a
// line it reads that the hint left out is a miss nothing hides (a TPC-C stock row is 5 lines).
inline std::size_t read_bytes(const Table& table) {
  constexpr std::size_t kMaxReadBytes = 1024;
  return std::min<std::size_t>(sizeof(mvcc::Version) + table.value_size_hint(), kMaxReadBytes);
}

// Marks the transaction as inside a scan callback for the guard's lifetime.
class ScanGuard {
 public:
  explicit ScanGuard(mvcc::TxnContext* ctx) : ctx_(ctx) { ctx_->in_scan = true; }
  ~ScanGuard() { ctx_->in_scan = false; }
  ScanGuard(const ScanGuard&) = delete;
  ScanGuard& operator=(const ScanGuard&) = delete;

 private:
  mvcc::TxnContext* ctx_;
};

// Aborts the coroutine transaction (after Conflict); defined with the worker.
void abort_tx(detail::TxState* tx);

// Read-modify-write (mvcc::RecentRead): a get that found its record notes where, and a write of
// the same key in the same transaction starts from there instead of descending again. The key
// is copied and compared in words that overlap at the end, not by calls: the note is on every
// get's path, where memcpy and memcmp calls cost twice what the words do (scripts/profile-ops.sh
// counts them). Keys of 1 to RecentRead::kMaxKey bytes.
namespace recent {
template <typename W>
W load(const char* p) {
  W w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
template <typename W>
void store(char* p, W w) {
  std::memcpy(p, &w, sizeof w);
}
// Calls f<W>(offset) for words W that cover [0, n), n in [1, 32]: 8-byte words from 8 bytes on,
// two 4-byte ones from 4, else the bytes at 0, n/2 and n-1.
template <typename F>
inline void cover(std::size_t n, F&& f) {
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8) f.template operator()<std::uint64_t>(i);
    f.template operator()<std::uint64_t>(n - 8);
  } else if (n >= 4) {
    f.template operator()<std::uint32_t>(0);
    f.template operator()<std::uint32_t>(n - 4);
  } else {
    f.template operator()<std::uint8_t>(0);
    f.template operator()<std::uint8_t>(n / 2);
    f.template operator()<std::uint8_t>(n - 1);
  }
}
}  // namespace recent
inline void note_read(mvcc::TxnContext* ctx, const Table& table, std::string_view key,
                      std::uint64_t oid, const index::LeafRead& leaf, unsigned slot) {
  mvcc::RecentRead& r = ctx->recent_read;
  const std::size_t n = key.size();
  if (n > mvcc::RecentRead::kMaxKey) [[unlikely]] {
    r.table = nullptr;
    return;
  }
  recent::cover(n, [&]<typename W>(std::size_t i) {
    recent::store(r.key + i, recent::load<W>(key.data() + i));
  });
  r.key_len = static_cast<std::uint8_t>(n);
  r.table = &table;
  r.oid = oid;
  r.leaf = leaf;
  r.slot = static_cast<std::uint16_t>(slot);
}
inline bool recall_read(const mvcc::TxnContext* ctx, const Table& table, std::string_view key,
                        LookupHint* hint) {
  const mvcc::RecentRead& r = ctx->recent_read;
  const std::size_t n = key.size();
  if (r.table != &table || r.key_len != n) return false;
  bool same = true;
  recent::cover(n, [&]<typename W>(std::size_t i) {
    same &= recent::load<W>(r.key + i) == recent::load<W>(key.data() + i);
  });
  if (!same) return false;
  *hint = LookupHint{true, r.oid, r.leaf, r.slot};
  return true;
}

// Secondary-index reads (scan_op): the OID an entry names, and whether the entry's secondary
// key (its first `secondary_len` bytes) is still the key of the visible `value`.
inline std::uint64_t entry_oid(const Index* sec, std::uint64_t value) {
  return sec != nullptr ? Index::oid_of(value) : leaf_value::oid(value);
}
// What a secondary entry attached from storage (Index::kNoOid) reads as its slot: moved, which
// sends a reader to the entry's primary key (relocate). Never written.
inline std::atomic<std::uint64_t> g_hint_slot{mvcc::entry::kMoved};
// The OID slot an index entry names (a primary entry naming an OID, or any secondary entry).
inline std::atomic<std::uint64_t>* entry_slot(Table& table, const Index* sec, std::uint64_t value) {
  if (sec != nullptr && Index::names_no_oid(value)) [[unlikely]]
    return &g_hint_slot;
  return &table.oids().entry(entry_oid(sec, value));
}
bool entry_current(Index* sec, std::string_view entry_key, std::size_t secondary_len,
                   std::string_view value);
// A reader looked an attached entry (`hint`, naming Index::kNoOid) up by its primary key and
// found the record's OID slot `slot`, entry `e`: the entry names that OID from now on, if the
// record's newest version is committed and derives the entry (then a later change of the
// record's secondary key stages the entry stale under that OID, and its removal finds it).
void refresh_hint(Table& table, Index& sec, std::string_view entry_key, std::uint64_t hint,
                  const std::atomic<std::uint64_t>* slot, std::uint64_t e);
// The smallest key above every key that starts with `prefix` (empty: none, unbounded).
std::string prefix_successor(std::string_view prefix);

// The storage path (engine/cold_store.h): makes the record in `slot` (of `table`, key `key`)
// not cold, reading it back if it is; OK, or the read's failure. The memory path never enters
// these (MosaicDB's selective nesting: only a miss pays for the nested coroutine). *e receives
// the entry as the fetch left it (hot or empty): re-reading the slot could find it evicted again.
// Plain modes and application threads read synchronously (a worker thread keeps completing its
// own ring's reads while it waits on another transaction's load).
Status cold_fetch_sync(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                       std::string_view key, std::uint64_t* e);
// Coroutine modes: the read goes on the worker's ring and the slot parks until it is back.
// `key` must stay valid until the task completes (it is awaited at once).
Task<Status> cold_fetch(OpEnv env, std::atomic<std::uint64_t>* slot, const Table& table,
                        std::string_view key, std::uint64_t* e);

// A scan's copy of a primary leaf: every record it names by cold address takes an OID
// (promote). True when it named none; false when some took one (the caller reads the leaf
// again) or a promotion failed (*status).
bool promote_named(Table& table, const index::LeafBatch& batch, Status* status);

// The caller took an OID from `key`'s leaf, and its entry now reads moved (mvcc::entry::kMoved):
// the leaves' hand demoted the record to its address since. Looks the key up again (promoting
// the address: promote) and reads the record back if it is cold, synchronously as promote is
// (the move is a narrow race: a record went out between a look and a read). On OK, *slot and
// *e name the entry as the read left it (hot or empty), or *slot is null when the key is gone
// (removed before the snapshot: a later removal keeps its record in memory); *leaf is the
// leaf read that answered. Bounded by ColdStore::kMaxMissRounds.
Status relocate(OpEnv env, Table& table, std::string_view key, std::atomic<std::uint64_t>** slot,
                std::uint64_t* e, index::LeafRead* leaf);

// A get that found no record: NotFound, and for a serializable transaction the leaf that said
// so is a read too (an insert of the key must not go unnoticed: phantoms).
Status absent(const OpEnv& env, const index::LeafRead& leaf);

// A get of a table that does not cache reads (Database::set_cache_reads) read `e` back into
// `slot`: turn the entry cold again (the version stays valid while the transaction runs).
void drop_read(OpEnv env, std::atomic<std::uint64_t>* slot, std::uint64_t e);

// A serializable get's read (mvcc/ssn.h): the version it found (null: nothing visible), and
// then the key's leaf too, for an insert that aborts and leaves the key to a new record
// (another entry) must not go unnoticed. Out of line: it keeps the get coroutine's frame small.
Status ssn_track_get(const OpEnv& env, std::atomic<std::uint64_t>* slot, const mvcc::Version* v,
                     const index::LeafRead& leaf);

namespace plain {
// Runs `op` to completion; its outcome lands in `op`.
template <typename M>
void run(OpEnv env, detail::OpState* op);
}  // namespace plain

namespace coro {
template <typename M>
Task<void> run(OpEnv env, detail::OpState* op);
}  // namespace coro

}  // namespace braid::engine
