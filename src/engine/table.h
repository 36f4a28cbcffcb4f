// A table: an ordered index from keys to OIDs and the OID array holding each record's chain,
// plus the secondary indexes over it.
#pragma once

#include <braid/database.h>
#include <braid/key.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "index/btree.h"
#include "mvcc/oid_array.h"
#include "util/assert.h"

namespace braid {

// A secondary index: a B+-tree from (secondary key ‖ primary key) to the record's OID in its
// table. Appending the primary key makes every entry unique although secondary keys are not;
// the entry's value also carries the secondary key's length, so the two halves split apart
// without any escaping and a read can re-derive and compare the key: a stale entry is
// filtered until reclamation removes it (engine/reclaim.cc).
class Index {
 public:
  // `cache_bytes`: the tree's cache size (index::BTree). `pool`: the database's prefaulted
  // node memory (null: none); it outlives the index.
  // `key_version`: the caller's version of `key_fn` (IndexOptions); 0: never stored.
  Index(std::string name, Table* table, SecondaryKeyFn key_fn, std::uint64_t key_version,
        std::size_t cache_bytes, index::ChunkPool* pool)
      : name_(std::move(name)),
        table_(table),
        key_fn_(std::move(key_fn)),
        key_version_(key_version),
        tree_(cache_bytes, pool) {}
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  const std::string& name() const { return name_; }
  Table& table() { return *table_; }
  std::uint64_t key_version() const { return key_version_; }
  index::BTree& tree() { return tree_; }
  // The secondary key of a record version, or false when it has no entry (an empty key). An
  // overflowed key is returned (kMaxKeyBytes + 1 bytes): the write's size check refuses it.
  bool extract(std::string_view key, std::string_view value, Key* out) const {
    out->clear();
    return key_fn_(key, value, out) && out->size() != 0;
  }

  // Entry values: OID in the low 48 bits (OIDs stay below 2^40, see Options), the secondary
  // key's length above.
  static std::uint64_t pack(std::uint64_t oid, std::size_t secondary_len) {
    BRAID_ASSERT(oid < (std::uint64_t{1} << 48));
    BRAID_ASSERT(secondary_len <= kMaxKeyBytes);
    return oid | (static_cast<std::uint64_t>(secondary_len) << 48);
  }
  static std::uint64_t oid_of(std::uint64_t packed) {
    return packed & ((std::uint64_t{1} << 48) - 1);
  }
  static std::size_t secondary_len_of(std::uint64_t packed) { return packed >> 48; }
  // The OID of an entry attached from storage (Database::create_index with a key version): a
  // hint that names no record, so a reader looks the entry's primary key up (decision 5 of
  // docs/internals/index-paging.md). Above every OID a table can hold.
  static constexpr std::uint64_t kNoOid = (std::uint64_t{1} << 48) - 1;
  static bool names_no_oid(std::uint64_t packed) { return oid_of(packed) == kNoOid; }

 private:
  std::string name_;
  Table* table_;
  SecondaryKeyFn key_fn_;
  std::uint64_t key_version_;
  index::BTree tree_;
};

// A primary-index entry's value (docs/internals/index-paging.md, decision 4): the record's OID
// shifted left by one, so bit 0 is clear. Bit 0 set is kept for a record named by the cold
// address of its newest version (storage/cold_address.h, whose words have bit 0 set) instead of
// an OID, so a record on storage need not hold a slot of the OID array.
namespace leaf_value {
inline std::uint64_t of_oid(std::uint64_t oid) {
  BRAID_DASSERT(oid < (std::uint64_t{1} << 63));
  return oid << 1;
}
inline bool names_oid(std::uint64_t value) { return (value & 1) == 0; }
inline std::uint64_t oid(std::uint64_t value) {
  BRAID_DASSERT(names_oid(value));
  return value >> 1;
}
// For a value read before it is known to name an OID (an absent key's, or an address, which
// promote() turns into one first).
inline std::uint64_t oid_or_zero(std::uint64_t value) { return names_oid(value) ? value >> 1 : 0; }
}  // namespace leaf_value

class Table {
 public:
  // `cache_bytes`: the tree's cache size (index::BTree). `pool`: the database's prefaulted
  // node memory (null: none); it outlives the table.
  Table(const void* owner, std::uint32_t id, std::string name, std::size_t cache_bytes,
        index::ChunkPool* pool)
      : owner_(owner), id_(id), name_(std::move(name)), index_(cache_bytes, pool) {}
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  std::uint32_t id() const { return id_; }
  const std::string& name() const { return name_; }
  // The engine the table belongs to: a Table* of another Database is InvalidArgument.
  const void* owner() const { return owner_; }

  index::BTree& index() { return index_; }
  mvcc::OidArray& oids() { return oids_; }

  // What a primary leaf value `named` (leaf_value) names: the OID entry it points to (null for
  // a record named by its cold address, which has none), and the entry word to read the record
  // by (for an address, the leaf value itself: it is the cold word an evicted entry would hold).
  std::atomic<std::uint64_t>* slot_named(std::uint64_t named) {
    return leaf_value::names_oid(named) ? &oids_.entry(leaf_value::oid(named)) : nullptr;
  }
  std::uint64_t entry_named(std::uint64_t named) {
    return leaf_value::names_oid(named)
               ? oids_.entry(leaf_value::oid(named)).load(std::memory_order_acquire)
               : named;
  }

  // For a walker that reads records where they are and takes no OID (a checkpoint, braid
  // check) whose copy of a leaf named an OID that reads moved now (the leaves' hand demoted the
  // record since): `key`'s leaf value afresh. *slot is its entry (null for a record its leaf
  // names by address) and *e the word to read the record by: the entry's, the address, or
  // empty when the key is gone. Bounded, and the bound is never met (DemotionHold).
  Status reread_moved(std::string_view key, std::atomic<std::uint64_t>** slot, std::uint64_t* e) {
    constexpr int kMaxRereads = 64;
    DemotionHold hold(*this);
    for (int round = 0; round < kMaxRereads; ++round, hold.lost_round()) {
      std::uint64_t named = 0;
      const index::Outcome found = index_.lookup(key, &named);
      if (found.failed()) return index::take_load_failure("reread");
      if (!found) {
        *slot = nullptr;
        *e = mvcc::entry::kEmpty;
        return Status::ok();
      }
      *slot = slot_named(named);
      *e = entry_named(named);
      if (!mvcc::entry::is_moved(*e)) return Status::ok();
    }
    return Status::busy("reread: the record was demoted again on every look");
  }

  // Secondary indexes. Published with release so a writer that sees the count sees the index;
  // added only while no transaction writes the table (Database::create_index).
  std::uint32_t index_count() const { return index_count_.load(std::memory_order_acquire); }
  Index* secondary(std::uint32_t i) const {
    BRAID_DASSERT(i < index_count());
    return secondaries_[i];
  }
  void add_secondary(Index* index) {
    const std::uint32_t n = index_count_.load(std::memory_order_relaxed);
    BRAID_ASSERT(n < kMaxIndexesPerTable);
    secondaries_[n] = index;
    index_count_.store(n + 1, std::memory_order_release);
  }

  // Records whose leaf names them by cold address (leaf_value), holding no OID: what the OID
  // count misses of the table's records. Moved by whoever changes a leaf value's kind
  // (recovery, promotion); DatabaseStats::records adds it.
  // Signed underneath: a promotion racing a bulk load's rollback (which resets the count) can
  // take one off after the reset; read as 0 then.
  std::uint64_t named_by_address() const {
    const std::int64_t n = named_by_address_.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<std::uint64_t>(n) : 0;
  }
  void note_named_by_address(std::int64_t delta) {
    named_by_address_.fetch_add(delta, std::memory_order_relaxed);
  }
  void reset_named_by_address() { named_by_address_.store(0, std::memory_order_relaxed); }

  // Whether the leaves' hand may demote the table's cold records to their addresses
  // (ColdStore::sweep_leaves): not while a bulk load fills it (its rollback empties the OIDs it
  // allocated, which must still be its records'), and not from the start of an index build
  // (secondary entries name OIDs). The hand reads it once per pass under its mutex; whoever
  // sets a hold then waits for the pass under way (ColdStore::wait_for_leaf_hand).
  bool demotes() const {
    return index_count() == 0 && !loading() && demotion_holds_.load(std::memory_order_seq_cst) == 0;
  }
  void hold_demotion() { demotion_holds_.fetch_add(1, std::memory_order_seq_cst); }

  // Whether a commit or a bulk load wrote the table since the open: its stored indexes (from
  // the open's checkpoint) then miss those writes, so none is attached or carried any more.
  void note_written() {
    if (!written_.load(std::memory_order_relaxed)) written_.store(true, std::memory_order_seq_cst);
  }
  bool written() const { return written_.load(std::memory_order_seq_cst); }
  void release_demotion() { demotion_holds_.fetch_sub(1, std::memory_order_seq_cst); }

  // A retry loop's guarantee of progress against the leaves' hand: a loop that looks a key up
  // again because its record was demoted under it (a read of the record's OID found moved)
  // can lose every round when the hand laps the key's leaf faster than a read completes (a
  // budget of a byte, a tree of a few leaves, a read from storage). After kFreeRounds lost
  // rounds the loop holds the table's demotions until it ends; the hand's pass under way may
  // still demote once, none after it, so the loop's bound is never reached. Not
  // wait_for_leaf_hand: a worker must not block on the hand's mutex.
  class DemotionHold {
   public:
    static constexpr int kFreeRounds = 2;
    explicit DemotionHold(Table& table) : table_(table) {}
    DemotionHold(const DemotionHold&) = delete;
    DemotionHold& operator=(const DemotionHold&) = delete;
    ~DemotionHold() {
      if (held_) table_.release_demotion();
    }
    // Called once per lost round.
    void lost_round() {
      if (held_ || ++lost_ < kFreeRounds) return;
      table_.hold_demotion();
      held_ = true;
    }
    // The loop won: a later one (the next leaf of a scan) starts free again.
    void won() {
      if (held_) table_.release_demotion();
      held_ = false;
      lost_ = 0;
    }

   private:
    Table& table_;
    int lost_ = 0;
    bool held_ = false;
  };

  // Set while Database::bulk_load fills the table (one load at a time): writes and index
  // builds answer Busy meanwhile, so every record past the load's first OID is the load's.
  bool loading() const { return loading_.load(std::memory_order_acquire); }
  bool begin_loading() {
    bool idle = false;
    return loading_.compare_exchange_strong(idle, true, std::memory_order_seq_cst);
  }
  void end_loading() { loading_.store(false, std::memory_order_release); }

  // The size of the value last written (inserts, updates and bulk loads), as a hint of how
  // much of a version a read will go on to touch: the modes that hint fetch the version's
  // header and that many bytes at once (engine/access.h, read_bytes). A table's rows
  // usually share a size, so the store is skipped unless the size changed: a table whose
  // sizes alternate shares the line between writers, and pays only in prefetch accuracy.
  std::uint32_t value_size_hint() const { return value_size_.load(std::memory_order_relaxed); }
  void note_value_size(std::size_t n) {
    const auto size = static_cast<std::uint32_t>(n);
    if (value_size_.load(std::memory_order_relaxed) != size) {
      value_size_.store(size, std::memory_order_relaxed);
    }
  }

  // Database::set_cache_reads: false lets a record a get read back turn cold again at once.
  bool caches_reads() const { return cache_reads_.load(std::memory_order_relaxed); }
  void set_cache_reads(bool cache) { cache_reads_.store(cache, std::memory_order_relaxed); }

 private:
  const void* owner_;
  std::atomic<bool> cache_reads_{true};
  std::uint32_t id_;
  std::string name_;
  index::BTree index_;
  mvcc::OidArray oids_;
  std::array<Index*, kMaxIndexesPerTable> secondaries_{};
  std::atomic<std::uint32_t> index_count_{0};
  std::atomic<bool> loading_{false};
  std::atomic<std::uint32_t> demotion_holds_{0};
  std::atomic<std::int64_t> named_by_address_{0};
  std::atomic<bool> written_{false};
  std::atomic<std::uint32_t> value_size_{0};
};

namespace engine {
// The engine's tables by id, as the parts beneath the engine see them (the cold store's CLOCK
// hand, a checkpoint's scan). The engine implements it; a table, once listed, lives as long as
// the engine.
class TableSource {
 public:
  virtual std::uint32_t table_count() const = 0;
  virtual Table* table_at(std::uint32_t id) const = 0;

 protected:
  ~TableSource() = default;
};
}  // namespace engine

}  // namespace braid
