// A Bw-tree (Levandoski, Lomet, Sengupta, ICDE 2013) for the probe suite: Killer Nanoseconds
// §4.2 evaluates interleaving on it, where it gained least of the four structures. Every step of
// a lookup goes through one more level of indirection than in a B+-tree:
//   * a node is a logical id (pid); the mapping table turns it into the address of the node's
//     newest record, so each level costs a mapping-table entry before the node itself;
//   * a writer never changes a record: it prepends a delta record (insert, delete, or, on an
//     inner node, an index entry for a split child) to the node's chain with a CAS on the
//     mapping-table entry, and a reader walks the chain, newest first, before the base node;
//   * past `max_chain` deltas the writer consolidates: it builds a new base node from the chain
//     and swaps it in with one CAS; a base that outgrows its capacity splits on the way (the
//     right half gets a new pid, the left half keeps the old one with a high key pointing at
//     it, and the parent gets an index-entry delta).
// So a lookup's path is a chain of dependent loads of three kinds (entry, delta, base), each a
// likely miss on a tree past the cache, and a chain's length differs from node to node: what
// group prefetching's lockstep handles worst.
//
// The lookup is written once, as a stepper (BwLookup: one record per step, next() names what the
// next step reads), and every technique drives that stepper, as btree_probe.h does for the
// B+-tree. References in the mapping table and in a delta's `next` carry a tag bit for "base
// node", so a driver prefetches a base's header and keys, or a delta's one line, before the step
// that reads it.
//
// Concurrency: one writer at a time (the build), any number of readers concurrently with it.
// Records are published by a release CAS and never change after. Replaced records are not
// freed until the tree goes (there is no epoch scheme here: the probe never shrinks the tree
// while it is read), so a reader never touches freed memory. Underfull nodes are not merged.
#pragma once

#include <braid/status.h>
#include <braid/task.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "probe/drive.h"
#include "probe/probe.h"
#include "runtime/cpu.h"
#include "runtime/interleave.h"
#include "util/assert.h"
#include "util/vmem.h"

namespace braid::probe {

struct BwOptions {
  std::uint32_t leaf_capacity = 60;   // entries of a base leaf (60: a 1 KiB node)
  std::uint32_t inner_capacity = 60;  // entries of a base inner node
  std::uint32_t max_chain = 8;        // deltas on a node before the writer consolidates it
  double load_fill = 0.75;            // share of a base node the bulk load fills
};

namespace bw {

enum class Kind : std::uint8_t { kLeaf, kInner, kInsert, kDelete, kIndexEntry };

// A tagged record address (mapping table entries, a delta's `next`): records are 64-byte
// aligned, and bit 0 says the record is a base node.
using Ref = std::uintptr_t;
inline constexpr Ref kBaseTag = 1;

struct alignas(64) Delta {
  Kind kind;
  std::uint8_t has_high;  // index entry: `high` bounds the child's range
  std::uint16_t chain;    // deltas from this one down to the base, this one included
  std::uint8_t level;     // the node's (0 for leaves)
  std::uint8_t pad[3];
  std::uint64_t key;    // insert, delete: the key; index entry: the child's low key (separator)
  std::uint64_t value;  // insert: the value; index entry: the child's pid
  std::uint64_t high;   // index entry: keys >= high are not the child's
  Ref next;
};
static_assert(sizeof(Delta) == 64, "a delta is one cache line");

// A base node: this header, then keys[capacity], then values[capacity]. A leaf's values are
// its values; an inner node's are child pids, keys[i] the least key child i holds (keys[0] is
// the node's own low key, so a routed key is never below it).
struct alignas(64) Base {
  Kind kind;
  std::uint8_t has_high;  // keys >= high live in `sibling` (a split the parent may not know yet)
  std::uint8_t level;     // 0 for leaves
  std::uint8_t pad;
  std::uint32_t count;
  std::uint32_t capacity;
  std::uint32_t sibling;
  std::uint64_t high;
  const std::uint64_t* keys() const { return reinterpret_cast<const std::uint64_t*>(this + 1); }
  std::uint64_t* keys() { return reinterpret_cast<std::uint64_t*>(this + 1); }
  const std::uint64_t* values() const { return keys() + capacity; }
  std::uint64_t* values() { return keys() + capacity; }
};
static_assert(sizeof(Base) == 64, "the arrays start on a line of their own");

inline const void* address(Ref r) { return reinterpret_cast<const void*>(r & ~kBaseTag); }
inline bool is_base(Ref r) { return (r & kBaseTag) != 0; }
inline const Base* as_base(Ref r) { return static_cast<const Base*>(address(r)); }
inline const Delta* as_delta(Ref r) { return static_cast<const Delta*>(address(r)); }
inline std::uint32_t chain_of(Ref r) { return is_base(r) ? 0 : as_delta(r)->chain; }

}  // namespace bw

class BwTree {
 public:
  struct Stats {
    std::uint64_t pids = 0;
    std::uint64_t leaves = 0;
    std::uint64_t inners = 0;
    std::uint64_t deltas = 0;                     // on the current chains
    std::uint32_t height = 0;                     // levels, leaves included
    std::uint64_t bytes = 0;                      // mapping table, current bases and deltas
    std::vector<std::uint64_t> pids_per_level;    // [0] = leaves
    std::vector<std::uint64_t> deltas_per_level;  // [0] = on leaves
  };

  BwTree() = default;
  BwTree(const BwTree&) = delete;
  BwTree& operator=(const BwTree&) = delete;

  // Room for `max_writes` keys loaded, inserted or removed over the tree's life (address space
  // only; memory is committed as records are written). InvalidArgument for options that cannot
  // make a tree.
  Status init(std::size_t max_writes, const BwOptions& options) {
    BRAID_ASSERT(root_.load() == kNoPid);
    if (options.leaf_capacity < 2 || options.inner_capacity < 3 || options.max_chain < 1 ||
        options.leaf_capacity > 4096 || options.inner_capacity > 4096 || options.max_chain > 1024 ||
        !(options.load_fill > 0) || options.load_fill > 1) {
      return Status::invalid_argument(
          "Bw-tree options: leaf capacity >= 2, inner capacity >= 3 (both <= 4096), "
          "max chain 1..1024, load fill in (0, 1]");
    }
    options_ = options;
    base_bytes_ = sizeof(bw::Base) + 2 * sizeof(std::uint64_t) *
                                         std::max(options.leaf_capacity, options.inner_capacity);
    // Every split takes one pid, and a split needs at least capacity/2 writes since the node's
    // last one; the bulk load's nodes are at least one entry each.
    max_pids_ = 2 * max_writes + 64;
    if (Status s = map_mem_.reserve(max_pids_ * sizeof(Slot), true); !s.is_ok()) return s;
    // A write adds one delta and, every max_chain writes, a new base on each level it reaches;
    // consolidations replace records without freeing them (see the header).
    const std::size_t record_bytes = (max_writes + 64) * (sizeof(bw::Delta) + 2 * base_bytes_);
    if (Status s = record_mem_.reserve(record_bytes, true); !s.is_ok()) return s;
    return Status::ok();
  }

  // Builds the tree from distinct keys in ascending order and their values (none kNotFound),
  // once, before any insert. An empty load makes an empty leaf.
  Status bulk_load(std::span<const std::uint64_t> keys, std::span<const std::uint64_t> values) {
    BRAID_ASSERT(keys.size() == values.size());
    BRAID_ASSERT(root_.load() == kNoPid);
    for (std::size_t i = 1; i < keys.size(); ++i) {
      if (keys[i - 1] >= keys[i]) return Status::invalid_argument("bulk load: keys not ascending");
    }
    // Level by level: (low key, pid) of each node just built, the next level's entries.
    std::vector<std::uint64_t> lows, pids;
    const auto per_node = [&](std::uint32_t capacity) {
      const double fill = options_.load_fill * capacity;
      return std::max<std::size_t>(1, static_cast<std::size_t>(fill));
    };
    {
      const std::size_t per = per_node(options_.leaf_capacity);
      std::size_t i = 0;
      do {
        const std::size_t n = std::min(per, keys.size() - i);
        Result<bw::Base*> b = new_base(bw::Kind::kLeaf, 0, n);
        if (!b.is_ok()) return b.status();
        std::copy_n(keys.data() + i, n, (*b)->keys());
        std::copy_n(values.data() + i, n, (*b)->values());
        Result<std::uint32_t> pid = new_pid(ref_of(*b));
        if (!pid.is_ok()) return pid.status();
        lows.push_back(i == 0 ? 0 : keys[i]);
        pids.push_back(*pid);
        i += n;
      } while (i < keys.size());
    }
    std::uint8_t level = 0;
    while (pids.size() > 1) {
      ++level;
      const std::size_t per = per_node(options_.inner_capacity);
      // At least two children per inner node, so every level shrinks.
      const std::size_t fan = std::max<std::size_t>(per, 2);
      std::vector<std::uint64_t> up_lows, up_pids;
      for (std::size_t i = 0; i < pids.size(); i += fan) {
        const std::size_t n = std::min(fan, pids.size() - i);
        Result<bw::Base*> b = new_base(bw::Kind::kInner, level, n);
        if (!b.is_ok()) return b.status();
        std::copy_n(lows.data() + i, n, (*b)->keys());
        std::copy_n(pids.data() + i, n, (*b)->values());
        Result<std::uint32_t> pid = new_pid(ref_of(*b));
        if (!pid.is_ok()) return pid.status();
        up_lows.push_back(lows[i]);
        up_pids.push_back(*pid);
      }
      lows = std::move(up_lows);
      pids = std::move(up_pids);
    }
    // Siblings within a level: the high key of each node is its right neighbour's low key.
    link_levels();
    height_ = level + 1;
    root_.store(static_cast<std::uint32_t>(pids[0]), std::memory_order_release);
    return Status::ok();
  }

  // Adds key -> value (value != kNotFound): true, or false when the key is present. IOError
  // when the records outgrow init's room.
  Result<bool> insert(std::uint64_t key, std::uint64_t value) {
    BRAID_ASSERT(value != kNotFound);
    return write(bw::Kind::kInsert, key, value);
  }

  // Removes key: true, or false when it is absent.
  Result<bool> remove(std::uint64_t key) { return write(bw::Kind::kDelete, key, 0); }

  // The value of `key`, or kNotFound.
  inline std::uint64_t lookup(std::uint64_t key) const;

  std::uint32_t root() const { return root_.load(std::memory_order_acquire); }
  const std::atomic<bw::Ref>* slot(std::uint32_t pid) const {
    BRAID_DASSERT(pid < pid_count_.load(std::memory_order_acquire));
    return map() + pid;
  }
  // Bytes a base node takes (the largest kind).
  std::size_t base_bytes() const { return base_bytes_; }
  // The header and keys of a base node: what a search reads before it picks one value.
  std::size_t base_prefetch_bytes() const {
    return sizeof(bw::Base) +
           sizeof(std::uint64_t) * std::max(options_.leaf_capacity, options_.inner_capacity);
  }
  std::uint32_t height() const { return height_; }
  // The pid of a mapping-table entry (a lookup's next() at BwLookup::At::kEntry).
  std::uint32_t pid_of(const void* entry) const {
    return static_cast<std::uint32_t>(static_cast<const Slot*>(entry) - map());
  }

  Stats stats() const {
    Stats st;
    st.height = height_;
    st.pids = pid_count_.load(std::memory_order_acquire);
    st.pids_per_level.assign(height_, 0);
    st.deltas_per_level.assign(height_, 0);
    st.bytes = st.pids * sizeof(Slot);
    for (std::uint64_t p = 0; p < st.pids; ++p) {
      bw::Ref r = map()[p].load(std::memory_order_acquire);
      std::uint64_t deltas = 0;
      for (; !bw::is_base(r); r = bw::as_delta(r)->next) ++deltas;
      const bw::Base* b = bw::as_base(r);
      ++(b->kind == bw::Kind::kLeaf ? st.leaves : st.inners);
      st.deltas += deltas;
      BRAID_ASSERT(b->level < height_);
      ++st.pids_per_level[b->level];
      st.deltas_per_level[b->level] += deltas;
      st.bytes += base_bytes_ + deltas * sizeof(bw::Delta);
    }
    return st;
  }

 private:
  using Slot = std::atomic<bw::Ref>;
  static constexpr std::uint32_t kNoPid = ~std::uint32_t{0};

  Slot* map() const { return reinterpret_cast<Slot*>(map_mem_.base()); }
  static bw::Ref ref_of(const bw::Base* b) { return reinterpret_cast<bw::Ref>(b) | bw::kBaseTag; }
  static bw::Ref ref_of(const bw::Delta* d) { return reinterpret_cast<bw::Ref>(d); }

  Result<void*> allocate(std::size_t bytes) {
    BRAID_DASSERT(bytes % 64 == 0);
    if (Status s = record_mem_.ensure_committed(record_used_ + bytes); !s.is_ok()) {
      return Status::io_error("Bw-tree records outgrew their room (init's max_writes): " +
                              std::string(s.message()));
    }
    void* p = record_mem_.base() + record_used_;
    record_used_ += bytes;
    return p;
  }

  Result<bw::Base*> new_base(bw::Kind kind, std::uint8_t level, std::size_t count) {
    const std::uint32_t capacity =
        kind == bw::Kind::kLeaf ? options_.leaf_capacity : options_.inner_capacity;
    BRAID_ASSERT(count <= capacity);
    Result<void*> p = allocate(base_bytes_);
    if (!p.is_ok()) return p.status();
    auto* b = new (*p) bw::Base{};
    b->kind = kind;
    b->level = level;
    b->count = static_cast<std::uint32_t>(count);
    b->capacity = capacity;
    b->sibling = kNoPid;
    return b;
  }

  Result<std::uint32_t> new_pid(bw::Ref r) {
    const std::uint32_t pid = pid_count_.load(std::memory_order_relaxed);
    if (pid >= max_pids_) return Status::io_error("Bw-tree mapping table full");
    if (Status s = map_mem_.ensure_committed((pid + 1) * sizeof(Slot)); !s.is_ok()) return s;
    new (map() + pid) Slot(r);
    // Release: a reader that learns the pid (from a parent or a sibling link published after
    // this) finds the entry initialised.
    pid_count_.store(pid + 1, std::memory_order_release);
    return pid;
  }

  void link_levels() {
    // The bulk load's nodes in pid order are, level by level, in key order.
    const std::uint32_t n = pid_count_.load(std::memory_order_relaxed);
    for (std::uint32_t p = 0; p + 1 < n; ++p) {
      auto* b = const_cast<bw::Base*>(bw::as_base(map()[p].load(std::memory_order_relaxed)));
      const bw::Base* right = bw::as_base(map()[p + 1].load(std::memory_order_relaxed));
      if (right->level != b->level) continue;
      b->has_high = 1;
      b->high = right->keys()[0];
      b->sibling = p + 1;
    }
  }

  // The pids from the root to key's leaf, and the leaf's current view of the key.
  struct Found {
    std::uint32_t path[64];
    std::uint32_t depth = 0;  // entries in path; path[depth - 1] is the leaf
    bool present = false;
  };
  inline Found find(std::uint64_t key) const;

  Result<bool> write(bw::Kind kind, std::uint64_t key, std::uint64_t value) {
    BRAID_ASSERT(root() != kNoPid);  // bulk_load first
    const Found f = find(key);
    if (f.present == (kind == bw::Kind::kInsert)) return false;
    const std::uint32_t leaf = f.path[f.depth - 1];
    if (Status s = prepend(leaf, kind, key, value, 0, false); !s.is_ok()) return s;
    if (Status s = consolidate_if_long(f.path, f.depth - 1); !s.is_ok()) return s;
    return true;
  }

  Status prepend(std::uint32_t pid, bw::Kind kind, std::uint64_t key, std::uint64_t value,
                 std::uint64_t high, bool has_high) {
    Result<void*> p = allocate(sizeof(bw::Delta));
    if (!p.is_ok()) return p.status();
    auto* d = new (*p) bw::Delta{};
    d->kind = kind;
    d->key = key;
    d->value = value;
    d->high = high;
    d->has_high = has_high ? 1 : 0;
    bw::Ref head = map()[pid].load(std::memory_order_acquire);
    d->level = bw::is_base(head) ? bw::as_base(head)->level : bw::as_delta(head)->level;
    do {
      d->next = head;
      d->chain = static_cast<std::uint16_t>(bw::chain_of(head) + 1);
    } while (!map()[pid].compare_exchange_weak(head, ref_of(d), std::memory_order_release,
                                               std::memory_order_acquire));
    return Status::ok();
  }

  // Consolidates path[at] if its chain is past max_chain, splitting it when it outgrew its
  // capacity and posting the split to its parent (which may consolidate in turn).
  inline Status consolidate_if_long(const std::uint32_t* path, std::uint32_t at);

  BwOptions options_;
  std::size_t base_bytes_ = 0;
  std::size_t max_pids_ = 0;
  util::VirtualArena map_mem_;
  util::VirtualArena record_mem_;
  std::size_t record_used_ = 0;  // the writer's only
  std::atomic<std::uint32_t> pid_count_{0};
  std::atomic<std::uint32_t> root_{kNoPid};
  std::uint32_t height_ = 0;
};

// One lookup as a stepper: each step() reads the record next() names (a mapping-table entry, a
// delta, or a base node) and decides the next one. Drivers prefetch next_bytes() at next() before
// a step, or not (naive).
class BwLookup {
 public:
  // kValue: the slot of a base node's values array the search chose (a leaf's value or an inner
  // node's child), read in a step of its own so that a base's prefetch covers its header and keys
  // only (9 lines of 16; the other values are never read).
  enum class At : std::uint8_t { kEntry, kDelta, kBase, kValue };

  BwLookup(const BwTree& tree, std::uint64_t key) : tree_(&tree), key_(key) {
    to_entry(tree.root());
  }

  // True while more steps are needed.
  bool step() {
    if (at_ == At::kEntry) {
      to_record(static_cast<const std::atomic<bw::Ref>*>(next_)->load(std::memory_order_acquire));
      return true;
    }
    if (at_ == At::kBase) {
      const bw::Base* b = bw::as_base(ref_);
      if (b->has_high != 0 && key_ >= b->high) {  // split off, and the parent did not say yet
        to_entry(b->sibling);
        return true;
      }
      // Counting the keys below the search key, not bisecting: the loads are independent, so
      // even a lookup that did not prefetch the node has all its lines in flight at once (a
      // bisection's loads depend on each other), and the loop vectorizes.
      const std::uint64_t* keys = b->keys();
      std::uint32_t below = 0;
      for (std::uint32_t i = 0; i < b->count; ++i) below += keys[i] < key_ ? 1 : 0;
      const bool hit = below != b->count && keys[below] == key_;
      leaf_ = b->kind == bw::Kind::kLeaf;
      if (leaf_ && !hit) return false;
      // A leaf's match, or the last child whose low key is <= key (keys[0] is the node's low
      // key: never above).
      const std::uint32_t slot = hit ? below : below - 1;
      BRAID_DASSERT(slot < b->count);
      at_ = At::kValue;
      next_ = b->values() + slot;
      bytes_ = sizeof(std::uint64_t);
      return true;
    }
    if (at_ == At::kValue) {
      const std::uint64_t v = *static_cast<const std::uint64_t*>(next_);
      if (leaf_) {
        value_ = v;
        return false;
      }
      to_entry(static_cast<std::uint32_t>(v));
      return true;
    }
    const bw::Delta* d = bw::as_delta(ref_);
    switch (d->kind) {
      case bw::Kind::kInsert:
        if (d->key == key_) {
          value_ = d->value;
          return false;
        }
        break;
      case bw::Kind::kDelete:
        if (d->key == key_) return false;
        break;
      case bw::Kind::kIndexEntry:
        if (key_ >= d->key && (d->has_high == 0 || key_ < d->high)) {
          to_entry(static_cast<std::uint32_t>(d->value));
          return true;
        }
        break;
      default:
        BRAID_ASSERT(false);
    }
    to_record(d->next);
    return true;
  }

  const void* next() const { return next_; }
  std::size_t next_bytes() const { return bytes_; }
  At at() const { return at_; }
  // At a delta, a base or a value: the level of the node it belongs to (0 for leaves). It reads
  // the record: call it for statistics and the writer's descent, not on the measured path.
  std::uint32_t level() const {
    BRAID_ASSERT(at_ != At::kEntry);
    return bw::is_base(ref_) ? bw::as_base(ref_)->level : bw::as_delta(ref_)->level;
  }
  // After the last step: the value, or kNotFound.
  std::uint64_t answer() const { return value_; }

 private:
  void to_entry(std::uint32_t pid) {
    at_ = At::kEntry;
    next_ = tree_->slot(pid);
    bytes_ = sizeof(bw::Ref);
  }
  void to_record(bw::Ref r) {
    ref_ = r;
    next_ = bw::address(r);
    if (bw::is_base(r)) {
      at_ = At::kBase;
      bytes_ = tree_->base_prefetch_bytes();
    } else {
      at_ = At::kDelta;
      bytes_ = sizeof(bw::Delta);
    }
  }

  const BwTree* tree_;
  std::uint64_t key_;
  std::uint64_t value_ = kNotFound;
  bw::Ref ref_ = 0;
  const void* next_ = nullptr;
  std::size_t bytes_ = 0;
  bool leaf_ = false;  // at kValue: the slot is a leaf's value, not a child pid
  At at_ = At::kEntry;
};

inline std::uint64_t BwTree::lookup(std::uint64_t key) const {
  BwLookup l(*this, key);
  while (l.step()) {
  }
  return l.answer();
}

inline BwTree::Found BwTree::find(std::uint64_t key) const {
  // The lookup's own steps, remembering the pid whose records each level's steps read; a move
  // to a sibling replaces that level's pid (the split's right half holds the key now).
  Found f;
  f.depth = height_;
  BRAID_ASSERT(f.depth <= 64);
  BwLookup l(*this, key);
  std::uint32_t pid = root();
  for (;;) {
    if (l.at() == BwLookup::At::kEntry) {
      pid = pid_of(l.next());
    } else {
      f.path[height_ - 1 - l.level()] = pid;
    }
    if (!l.step()) break;
  }
  f.present = l.answer() != kNotFound;
  return f;
}

inline Status BwTree::consolidate_if_long(const std::uint32_t* path, std::uint32_t at) {
  const std::uint32_t pid = path[at];
  const bw::Ref head = map()[pid].load(std::memory_order_acquire);
  if (bw::chain_of(head) <= options_.max_chain) return Status::ok();
  // The node's view: the base's entries, then the deltas oldest first.
  std::vector<const bw::Delta*> deltas;
  bw::Ref r = head;
  for (; !bw::is_base(r); r = bw::as_delta(r)->next) deltas.push_back(bw::as_delta(r));
  const bw::Base* old = bw::as_base(r);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> entries;
  entries.reserve(old->count + deltas.size());
  for (std::uint32_t i = 0; i < old->count; ++i) {
    entries.emplace_back(old->keys()[i], old->values()[i]);
  }
  const auto less = [](const auto& e, std::uint64_t k) { return e.first < k; };
  for (auto it = deltas.rbegin(); it != deltas.rend(); ++it) {
    const bw::Delta* d = *it;
    auto pos = std::lower_bound(entries.begin(), entries.end(), d->key, less);
    const bool there = pos != entries.end() && pos->first == d->key;
    if (d->kind == bw::Kind::kDelete) {
      BRAID_ASSERT(there);
      entries.erase(pos);
    } else {
      BRAID_ASSERT(!there);
      entries.insert(pos, {d->key, d->value});
    }
  }
  // A split leaves nothing at or past the high key on the left (writes past it go right).
  BRAID_DASSERT(entries.empty() || old->has_high == 0 || entries.back().first < old->high);
  const std::uint32_t capacity = old->capacity;
  const bool split = entries.size() > capacity;
  const std::size_t left_n = split ? entries.size() / 2 : entries.size();
  Result<bw::Base*> left = new_base(old->kind, old->level, left_n);
  if (!left.is_ok()) return left.status();
  for (std::size_t i = 0; i < left_n; ++i) {
    (*left)->keys()[i] = entries[i].first;
    (*left)->values()[i] = entries[i].second;
  }
  (*left)->has_high = old->has_high;
  (*left)->high = old->high;
  (*left)->sibling = old->sibling;
  std::uint64_t sep = 0;
  std::uint32_t right_pid = kNoPid;
  if (split) {
    Result<bw::Base*> right = new_base(old->kind, old->level, entries.size() - left_n);
    if (!right.is_ok()) return right.status();
    for (std::size_t i = left_n; i < entries.size(); ++i) {
      (*right)->keys()[i - left_n] = entries[i].first;
      (*right)->values()[i - left_n] = entries[i].second;
    }
    (*right)->has_high = old->has_high;
    (*right)->high = old->high;
    (*right)->sibling = old->sibling;
    Result<std::uint32_t> p = new_pid(ref_of(*right));
    if (!p.is_ok()) return p.status();
    right_pid = *p;
    sep = entries[left_n].first;
    (*left)->has_high = 1;
    (*left)->high = sep;
    (*left)->sibling = right_pid;
  }
  // One writer: nothing else changed the chain since it was read.
  bw::Ref expected = head;
  const bool swapped =
      map()[pid].compare_exchange_strong(expected, ref_of(*left), std::memory_order_release);
  BRAID_ASSERT(swapped);
  if (!split) return Status::ok();
  if (at == 0) {
    // The root split: a new root over both halves (the old root's low key is the least key).
    Result<bw::Base*> root = new_base(bw::Kind::kInner, static_cast<std::uint8_t>(height_), 2);
    if (!root.is_ok()) return root.status();
    (*root)->keys()[0] = 0;
    (*root)->values()[0] = pid;
    (*root)->keys()[1] = sep;
    (*root)->values()[1] = right_pid;
    Result<std::uint32_t> p = new_pid(ref_of(*root));
    if (!p.is_ok()) return p.status();
    ++height_;
    root_.store(*p, std::memory_order_release);
    return Status::ok();
  }
  // The right half inherited the old node's high key: the parent's entry bounds it by that.
  if (Status s = prepend(path[at - 1], bw::Kind::kIndexEntry, sep, right_pid, old->high,
                         old->has_high != 0);
      !s.is_ok()) {
    return s;
  }
  return consolidate_if_long(path, at - 1);
}

namespace bwtree_detail {

// Internal linkage, not inline: the g++-12 link failure binsearch.h's coro_one explains.
static Task<std::uint64_t> coro_one(const BwTree& tree, std::uint64_t key) {
  // The first step reads the root's mapping-table entry, always cached: no suspension before it.
  BwLookup l(tree, key);
  while (l.step()) {
    co_await runtime::Yield{l.next(), l.next_bytes()};
  }
  co_return l.answer();
}

}  // namespace bwtree_detail

// Looks up keys[i] into out[i] (the value, or kNotFound) with technique `tech` and group size
// `group` (1..runtime::kMaxGroup; naive ignores it). Every technique drives BwLookup.
inline void bwtree_probe(const BwTree& tree, Technique tech, std::span<const std::uint64_t> keys,
                         std::span<std::uint64_t> out, std::size_t group) {
  BRAID_ASSERT(keys.size() == out.size());
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= runtime::kMaxGroup);
  const std::size_t n = keys.size();
  switch (tech) {
    case Technique::kNaive:
      for (std::size_t i = 0; i < n; ++i) out[i] = tree.lookup(keys[i]);
      return;

    case Technique::kGp:
    case Technique::kAmac: {
      const auto start = [&](std::optional<BwLookup>& l, std::size_t i) {
        l.emplace(tree, keys[i]);
      };
      const auto prefetch = [](const BwLookup& l) {
        runtime::prefetch_lines(l.next(), l.next_bytes());
      };
      const auto done = [](const BwLookup& l) { return l.answer(); };
      if (tech == Technique::kGp) {
        drive_gp<BwLookup>(n, group, start, prefetch, done, out);
      } else {
        drive_amac<BwLookup>(n, group, start, prefetch, done, out);
      }
      return;
    }

    case Technique::kCoro:
      runtime::interleave<std::uint64_t>(
          n, group, [&](std::size_t i) { return bwtree_detail::coro_one(tree, keys[i]); },
          [&](std::size_t i, std::uint64_t v) { out[i] = v; });
      return;
  }
}

}  // namespace braid::probe
