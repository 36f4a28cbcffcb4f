// A concurrent B+-tree with optimistic lock coupling (Leis, Haubenschild, Neumann, "Optimistic
// Lock Coupling", IEEE DE Bull. 2019), mapping variable-length byte keys (1..255 bytes, memcmp
// order) to 64-bit values (OIDs).
//
// Concurrency. Every node carries a version word. Readers take no locks: they read a node's
// version, read the node, and validate the version afterwards, restarting from the root when it
// changed. Writers lock only the nodes they modify (a leaf; on a split, the leaf and its parent),
// by upgrading the version they read with a CAS, so a writer never blocks a reader.
//
// Node size: 1 KiB (16 cache lines). Why: a lookup costs one dependent DRAM miss per level that
// is not cache-resident, and the prefetching drivers fetch all of a node's occupied lines in one
// burst, so a level costs about one miss latency regardless of width; wider nodes mean fewer
// levels (20M 8-byte keys: 5 levels at ~70% fill, the top three — ~600 KiB — stay in cache) at
// the price of memory bandwidth. 1 KiB still holds three maximal (255-byte) keys, which keeps
// splits well defined without out-of-line key storage, and 41 short keys.
//
// Layout (structure of arrays): the keys' first 8 bytes big-endian ("heads") form a contiguous
// array from the header, each key's 16-byte tail (value, length, suffix offset) follows in a
// second array, and a key-suffix heap grows down from the end. Both arrays are as long as the
// node's count, so the tails start where the heads end and an insert shifts both. Why: a search
// compares heads only (keys that differ in their first 8 bytes never reach a tail), and 41 heads
// fill 6 lines where 41 interleaved 24-byte slots filled 16, so a node read cold misses 6 + 1
// lines instead of 16 and the heads compare 4 or 8 to an instruction. An entry still costs 24
// bytes plus its suffix: capacity is unchanged.
//
// Underflow: merges, and type-stable node memory. A removal that leaves a leaf under a quarter
// full merges it with a sibling under the same parent when the two fit in three quarters of a
// node (the left one keeps the entries, the right one leaves the parent); a leaf left empty
// leaves the tree at once, with every ancestor it was the only child of. A parent that lost a
// child is looked at in turn, and a root left with one child hands the root to it. Merges are
// best effort: a lock found taken or a version that moved gives up after a few tries, and a
// later removal in the same range tries again (BTree::rebalance).
// A node that leaves the tree is marked obsolete and goes to the tree's free list, where a
// later split takes it again; its memory goes back to the allocator only with the tree. Why
// not epochs: an optimistic reader may hold a pointer to a node that left the tree, and all it
// can do with it is read words and validate a version (type-stable memory, as LeanStore's
// buffer frames). The version word keeps counting across a node's lives (OptLock::retire and
// revive never lower it), so a version read in one life never validates in another, and a
// pointer is followed only after the node it was read from validated. The engine removes index
// entries for aborted inserts and for reclaimed records (engine/reclaim.cc).
//
// One descent. All operations find their leaf through Descent::step(), which processes exactly
// one node and names the next one. The caller's loop between steps is where a driver prefetches
// the next node and, in coroutine modes, suspends; the search logic exists once.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/racy.h"
#include "util/assert.h"
#include "util/bits.h"
#include "util/cpu_cache.h"

namespace braid::index {

class ChunkPool;  // index/chunk_pool.h
class NodeStore;  // index/node_store.h

inline constexpr std::size_t kNodeBytes = 1024;
// Node memory comes in chunks of this size and alignment (index/chunk_pool.h), whose first
// kChunkHeaderBytes hold one byte per node slot: its used mark (BTree::sweep_leaves).
inline constexpr std::size_t kChunkBytes = std::size_t{2} << 20;
inline constexpr std::size_t kChunkHeaderBytes = 2 * kNodeBytes;
static_assert(kChunkBytes / kNodeBytes <= kChunkHeaderBytes, "a mark for every slot");
inline constexpr std::size_t kMaxKey = 255;
// Levels a tree may have (a node's level is below it): 41-way nodes reach 2^64 keys long before.
inline constexpr std::uint32_t kMaxLevels = 32;
// A child reference in an inner node is a Node* (64-byte aligned) or, for a node on storage,
// its image's address: a word with bit 0 set (index/node_image.h, BTree::attach_store).
inline constexpr std::uint64_t kAddressBit = 1;
inline bool is_address(std::uint64_t word) { return (word & kAddressBit) != 0; }

// The version word of a node: bit 1 = locked, bit 0 = obsolete (the node left the tree), the
// rest a counter. Unlock adds 0b10, which clears the lock bit and bumps the counter; the counter
// never goes down, not even when a node is reused, so no two states of a node share a version.
class OptLock {
 public:
  static constexpr std::uint64_t kLocked = 0b10;
  static constexpr std::uint64_t kObsolete = 0b01;

  std::uint64_t read_version() const { return word_.load(std::memory_order_acquire); }
  static bool is_locked(std::uint64_t v) { return (v & (kLocked | kObsolete)) != 0; }
  // True when nothing was written since `v` was read.
  BRAID_OPTIMISTIC bool validate(std::uint64_t v) const {
    std::atomic_thread_fence(std::memory_order_acquire);
    return word_.load(std::memory_order_relaxed) == v;
  }
  bool try_upgrade(std::uint64_t v) {
    // seq_cst: SSN's leaf readers raise the stamp, then check the version (mvcc/ssn.h).
    return word_.compare_exchange_strong(v, v + kLocked, std::memory_order_seq_cst);
  }
  void unlock() { word_.fetch_add(kLocked, std::memory_order_release); }
  // Unlocks back to `v`, the version try_upgrade(v) locked: for a writer that changed only
  // what no reader validates (BTree::set_value_hint's word).
  void restore(std::uint64_t v) { word_.store(v, std::memory_order_release); }
  // Unlocks a node that left the tree: readers that reach it restart, and no upgrade succeeds.
  void retire() {
    const std::uint64_t w = word_.load(std::memory_order_relaxed);
    BRAID_DASSERT((w & kLocked) != 0);
    word_.store((w + kLocked) | kObsolete, std::memory_order_release);
  }
  // A retired node taken for a new life: unlocked, at a version above every earlier one.
  void revive() {
    const std::uint64_t w = word_.load(std::memory_order_relaxed);
    BRAID_ASSERT((w & kObsolete) != 0);
    word_.store((w & ~kObsolete) + 2 * kLocked, std::memory_order_release);
  }
  // A frame whose memory went back to the system (BTree::release_free_frames) taken for a new
  // life: it reads 0 now, so it starts above `floor`, every version any released frame had,
  // and still never repeats one of its own earlier lives.
  void revive_above(std::uint64_t floor) {
    word_.store((floor & ~(kLocked | kObsolete)) + 2 * kLocked, std::memory_order_release);
  }
  std::uint64_t word_now() const { return word_.load(std::memory_order_relaxed); }
  bool locked_now() const { return (word_.load(std::memory_order_relaxed) & kLocked) != 0; }
  bool obsolete_now() const { return (word_.load(std::memory_order_relaxed) & kObsolete) != 0; }

 private:
  std::atomic<std::uint64_t> word_{0b100};
};

// The part of an entry a search reads only for the slot it lands on (or for heads that tie).
struct Tail {
  std::uint64_t value;       // leaf: the mapped value; inner: the child Node*
  std::uint16_t suffix_off;  // heap offset of key bytes 8.. (when len > 8)
  std::uint8_t len;          // key length (1..255; 0 never occurs)
  std::uint8_t pad;
  // Leaf: the owner's hint for where the value leads (BTree::set_value_hint), 0 for none;
  // never trusted, only prefetched by. Inner: 0.
  std::uint32_t value_hint;
};
static_assert(sizeof(Tail) == 16);
static_assert(offsetof(Tail, value_hint) == 12, "an aligned word: set_value_hint stores it whole");
static_assert(alignof(Tail) == 8, "tails start 8-aligned after the heads, at any count");

// Bytes an entry takes in the arrays: its head and its tail.
inline constexpr std::size_t kEntryBytes = sizeof(std::uint64_t) + sizeof(Tail);

struct alignas(64) Node {
  static constexpr std::size_t kHeader = 32;
  static constexpr std::size_t kMaxSlots = (kNodeBytes - kHeader) / kEntryBytes;

  OptLock lock;
  std::uint16_t count;
  std::uint16_t heap_begin;  // lowest used heap offset; kNodeBytes when the heap is empty
  std::uint16_t garbage;     // heap bytes no slot refers to any more (reclaimed by compaction)
  std::uint8_t level;  // 0: a leaf. Fixed for the node's life: a split's half shares it, a new
                       // root is one above the old
  // Leaf: the slot after the one the last insert took (0: none since the last rebuild). An
  // insert there continues an ascending run, and a split at it cuts there (BTree::split_leaf).
  std::uint8_t run_end;
  Node* leftmost;  // inner: child for keys below slot 0
  // Leaf: SSN's η stamp of the key range (mvcc/ssn.h, "Phantoms"): the largest stamp of a
  // serializable transaction that read the leaf and certified. A split or a merge carries it
  // (the larger of the two) to the node that takes the keys, under the lock, and a reused node
  // keeps the stamp of its earlier lives, since an inserter may still read it (mvcc/ssn.h). 0
  // for leaves nobody read serializably.
  std::atomic<std::uint64_t> pstamp;
  char body[kNodeBytes - kHeader];

  std::uint64_t* heads() { return reinterpret_cast<std::uint64_t*>(body); }
  const std::uint64_t* heads() const { return reinterpret_cast<const std::uint64_t*>(body); }
  // The tails of a node holding `n` entries (readers pass the count they read, clamped to
  // kMaxSlots, so the array stays inside the node even when the count was torn).
  Tail* tails(std::size_t n) { return reinterpret_cast<Tail*>(body + n * sizeof(std::uint64_t)); }
  const Tail* tails(std::size_t n) const {
    return reinterpret_cast<const Tail*>(body + n * sizeof(std::uint64_t));
  }
  char* raw() { return reinterpret_cast<char*>(this); }
  const char* raw() const { return reinterpret_cast<const char*>(this); }
  std::size_t free_bytes() const { return heap_begin - kHeader - count * kEntryBytes; }
};
static_assert(sizeof(Node) == kNodeBytes);
static_assert(offsetof(Node, body) == Node::kHeader);
static_assert(Node::kMaxSlots == 41, "the SSN stamp took the header's spare bytes, not a slot");

// Fills `n` (a frame nobody else sees) as a leaf holding keys[i] -> values[i], keys strictly
// ascending: the node a leaf stored in another form than its image turns into (the engine's
// checkpoint runs, index-paging.md, decision 6). False, `n` then undefined, when they do not
// fit one node.
[[nodiscard]] bool fill_leaf(Node* n, std::span<const std::string_view> keys,
                             std::span<const std::uint64_t> values);

// Why `n`'s bytes cannot be a node, or null when they can: entry count and key heap within the
// node, every key non-empty with its head and suffix where its tail says, keys strictly
// ascending, every heap byte a suffix or counted garbage. Reads the node as plain memory: for
// a node nobody writes (a tree checked at rest, a node image read from storage).
[[nodiscard]] const char* node_shape_error(const Node& n);

// Child `idx` of an inner node read with `count` entries (0: leftmost, i + 1: slot i's): a
// Node*, or an address when the child is on storage. A racy read: the caller validates.
BRAID_OPTIMISTIC inline std::uint64_t child_word(const Node* n, unsigned count, unsigned idx) {
  return idx == 0 ? reinterpret_cast<std::uint64_t>(racy(n->leftmost))
                  : racy(n->tails(count)[idx - 1].value);
}

// A leaf a serializable transaction read, at the version it read it (mvcc/ssn.h, "Phantoms").
struct LeafRead {
  Node* leaf;
  std::uint64_t version;
};
// A leaf an insert changed: its version before (as the inserter read it) and after.
struct LeafChange {
  Node* leaf = nullptr;
  std::uint64_t before = 0;
  std::uint64_t after = 0;
};

// Bytes one entry takes in a node.
inline constexpr std::size_t entry_bytes(std::size_t key_len) {
  return kEntryBytes + (key_len > 8 ? key_len - 8 : 0);
}

// A key prepared for comparisons against slots. `infinite` sorts after every key (used as the
// bound of a reverse scan without an upper limit).
struct SearchKey {
  const char* data = nullptr;
  std::uint32_t len = 0;
  std::uint64_t head = 0;
  bool infinite = false;

  SearchKey() = default;
  explicit SearchKey(std::string_view k)
      : data(k.data()),
        len(static_cast<std::uint32_t>(k.size())),
        head(util::load_head(k.data(), k.size())) {}
  static SearchKey plus_infinity() {
    SearchKey k;
    k.infinite = true;
    return k;
  }
};

// A copy of a separator key taken during a descent (scan continuation points).
struct FenceKey {
  bool present = false;  // false: unbounded on this side
  std::uint8_t len = 0;
  char bytes[kMaxKey];
  std::string_view view() const { return {bytes, len}; }
};

// How a node is searched for a key:
//   kCount   counts the heads below the key's (index/node_search.h: a vector compare of 4
//            heads where the build targets AVX2, else one independent load each).
//            The heads of a cold node miss in parallel where a bisection's probes miss one
//            after another, and in cache the count costs ~11 vector compares. Every execution
//            mode's operations use it, and BTree::lookup / scan_leaf (the default).
//   kBisect  bisects the heads branch-free, touching only the ~log2(count) heads it probes.
//            For the tree's own inserts and removes, which the engine issues right after its
//            lookup of the same key has brought the path into the cache, and for the probe
//            suite's GP, AMAC and coroutine lookups (their papers' algorithm).
// Either way only the slots sharing the key's head are then compared in full (btree.cc,
// search_range). With the heads contiguous, counting beats bisecting under every mode; it is
// the contiguous layout that makes the count cheap.
enum class NodeSearch : std::uint8_t { kCount, kBisect };

class BTree;

// The single descent. Usage:
//   Descent d(tree, key, bias);
//   for (;;) { auto s = d.step(); if (s == kNext) { /* prefetch d.node(), maybe suspend */ }
//              else if (s == kLeaf) break; else d.restart(); }
class Descent {
 public:
  enum class Bias : std::uint8_t {
    kFloor,  // the child whose range contains the key
    kBelow,  // the child whose range contains the greatest key strictly below the key
  };
  enum class Step : std::uint8_t {
    kNext,        // moved to a child; node() is next (not yet read)
    kLeaf,        // node() is the leaf, read at leaf_version()
    kRestart,     // a concurrent change was seen; call restart()
    kSplitInner,  // (only with a split threshold) node() is an inner node that must split first
    // The next node is on storage (BTree::attach_store) and could not be loaded: the failure
    // is take_load_failure()'s. The descent is over.
    kFailed,
    // (only for a descent that does not load) The next node is on storage: node() is its
    // parent, child_index() which child, at the version version() names.
    kStored,
  };

  // `key` must outlive the descent (the steppers own theirs, declared before their descent).
  // `load`: a child on storage is read in (synchronously) and the descent goes on into it;
  // otherwise it stops there (kStored).
  // `user`: the descent is an operation's, which marks the leaves it reaches used (the CLOCK
  // hand's second chance) also when it does not load (its driver loads: Lookup::install);
  // an eviction's own descents mark nothing.
  Descent(const BTree& tree, const SearchKey& key, Bias bias, bool track_fences = false,
          std::size_t split_threshold = 0, NodeSearch search = NodeSearch::kCount, bool load = true,
          bool user = true);

  BRAID_OPTIMISTIC Step step();
  // step(), inlined into the loops in btree.cc that run a whole descent (Lookup::run).
  BRAID_OPTIMISTIC inline Step step_inline();
  // Which child of inner node `n` (of `count` entries) the key leads to, narrowing the fences
  // when they are tracked: the one choice both step() and child_of_frame() make.
  BRAID_OPTIMISTIC inline unsigned route(const Node* n, unsigned count);
  void restart();
  // The sequential driver: steps (restarting as needed) until node() is the leaf; false when a
  // node could not be loaded (take_load_failure()). Only for descents without a split
  // threshold that load.
  [[nodiscard]] bool to_leaf();

  Node* node() const { return node_; }
  std::uint64_t version() const { return version_; }
  Node* parent() const { return parent_; }
  std::uint64_t parent_version() const { return parent_version_; }
  const FenceKey& lower_fence() const { return lower_; }
  const FenceKey& upper_fence() const { return upper_; }
  std::uint32_t restarts() const { return restarts_; }
  NodeSearch search() const { return search_; }
  const BTree& tree() const { return tree_; }
  // After kNext: the level of node() (read from its parent, which is cached).
  std::uint32_t level() const { return level_; }
  // After kNext: which of parent()'s children node() is (0: leftmost, i + 1: slot i's).
  std::uint32_t child_index() const { return child_idx_; }
  // After kStored: the address the child on storage has.
  std::uint64_t stored_address() const { return stored_address_; }
  // After kStored: which of parent()'s children node() is (child_index() names the stored
  // child of node() by then). Meaningless when node() is the root (parent() null).
  unsigned node_index() const { return node_idx_; }
  // After kStored, the three ways a driver's own read of that child ends (Lookup and ScanLeaf
  // built not to load). Each answers whether the operation failed (take_load_failure() says
  // why; the tree is unchanged); otherwise the child is in memory, installed by this read or
  // by another loader's, and the descent restarts from the root, since the install moved the
  // parent's version. install_stored(): the image read (kNodeImageBytes, unverified);
  // load_stored(): no read of the driver's own could be had, so read it here, synchronously;
  // fail_stored(): the read failed (`why`, IOError), unless another loader came first.
  [[nodiscard]] bool install_stored(const char* image);
  // A read-through scan's step into a node read from storage (`frame`, an inner node nobody
  // else sees): which child the key leads to, as step() chooses it, with the fences narrowed
  // as step() narrows them. The frame needs no validation: an image never changes.
  unsigned child_of_frame(const Node* frame);
  [[nodiscard]] bool load_stored();
  [[nodiscard]] bool fail_stored(Status why);

 private:
  // The step met child `idx` of `n` (read at `v`) on storage, at `address`.
  Step stored(Node* n, std::uint64_t v, unsigned idx, std::uint64_t address);

  const BTree& tree_;
  // Referred to, not copied: the copy read the key's fields, stored one by one a moment before,
  // as one 32-byte load, which the store buffer cannot forward: a stall on every update.
  const SearchKey& key_;
  Bias bias_;
  NodeSearch search_;
  bool track_fences_;
  bool load_;
  bool mark_used_;  // load_ and the tree pages (BTree::note_used): decided once, not per leaf
  std::uint8_t node_idx_ = 0;  // a child index (at most kMaxSlots): in the flags' padding
  std::size_t split_threshold_;
  Node* node_ = nullptr;
  Node* parent_ = nullptr;
  std::uint64_t version_ = 0;
  std::uint64_t parent_version_ = 0;
  std::uint32_t restarts_ = 0;
  std::uint32_t level_ = ~0u;  // of node_; unknown for the root
  std::uint32_t child_idx_ = 0;
  std::uint64_t stored_address_ = 0;
  FenceKey lower_;
  FenceKey upper_;
};

// Contention seen by this thread's descents: restarts (a node on the path was locked or
// changed under us) and the time spent backing off before the next try. Thread-local, so
// counting shares no line; a worker publishes its own (ExecStats::index_restarts).
struct ContentionCounters {
  std::uint64_t restarts = 0;
  std::uint64_t backoff_ns = 0;
};
ContentionCounters& thread_contention();

// Leaves this thread's operations reached in trees that page (BTree::attach_store), the visit
// after each load included: with the trees' loads(), the leaves' hit ratio (1 - loads /
// visits). Counted where the descent marks the leaf used, so a tree that does not page pays
// nothing. Thread-local, as ContentionCounters; a worker publishes its own
// (ExecStats::index_leaf_visits).
struct PagingCounters {
  std::uint64_t leaf_visits = 0;
  // The same for inner nodes below the root (those that may be on storage, BTree::pages_inner):
  // with the trees' inner_loads(), the inner nodes' hit ratio.
  std::uint64_t inner_visits = 0;
};
PagingCounters& thread_paging();

// What a point operation of the tree did: yes (found, inserted, removed), no (absent, already
// present, not removed), or failed: a node on the way is on storage and could not be loaded
// (take_load_failure() says why; the tree is unchanged). Testing it as a bool asks "yes?", so a
// caller that must tell "no" from "failed" says so, and one that may not ignore a failure cannot
// store the answer in a bool by mistake (the conversion is explicit).
class [[nodiscard]] Outcome {
 public:
  enum Kind : std::uint8_t { kNo, kYes, kFailed };
  constexpr Outcome(Kind kind) : kind_(kind) {}  // NOLINT(google-explicit-constructor)
  static constexpr Outcome of(bool yes) { return yes ? kYes : kNo; }
  explicit constexpr operator bool() const { return kind_ == kYes; }
  constexpr bool failed() const { return kind_ == kFailed; }
  constexpr Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Why this thread's last operation that failed on a node load failed (IOError or Corruption
// naming the node's address), taken: the next call answers OK until another load fails. Set by
// the steppers' and write paths' loads (BTree::attach_store).
Status take_load_failure();
// The same, for a caller told that its operation failed (so a failure is there to take), with
// `context` (the caller's operation) before the message.
Status take_load_failure(std::string_view context);

// The lines of a node that a lookup's next step will likely read: the header and heads
// [0, head_end), and the tails around the slot its search will likely land on
// [tail_begin, tail_end). tail_end == 0: the whole node, [0, head_end).
struct NodeLines {
  std::uint16_t head_end;
  std::uint16_t tail_begin;
  std::uint16_t tail_end;
};
inline constexpr NodeLines kWholeNode{static_cast<std::uint16_t>(kNodeBytes), 0, 0};

// A point lookup as a stepper: the descent, the leaf search and any restarts, one node per step.
//   Lookup l(tree, key);
//   while (l.step()) { /* l.next() is the node the next step reads: prefetch, maybe suspend */ }
//   if (l.found()) use(l.value());
// The root is read by the first step without a hint: it is always cache-resident.
class Lookup {
 public:
  // `load`: a leaf on storage is read in synchronously by the step that meets it; otherwise
  // the step stops there (stored()) and the driver reads it its own way (the coroutine modes:
  // through the worker's ring, suspended) and hands the image to install().
  Lookup(const BTree& tree, std::string_view key, NodeSearch search = NodeSearch::kCount,
         bool load = true)
      : key_(key), descent_(tree, key_, Descent::Bias::kFloor, false, 0, search, load) {}
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;

  // True while more steps are needed.
  BRAID_OPTIMISTIC bool step();
  // Every step in one loop, for the plain drivers (engine/access_ops.inc) and BTree::lookup:
  // with `hint`, each node below the root is prefetched whole, to L1, before its step reads it
  // (a pB+-tree's descent). The steps are inlined into the loop, which saves each level the
  // calls and their register saves of step(), Descent::step() and the node search, which are a
  // large part of an in-cache lookup.
  BRAID_OPTIMISTIC void run(bool hint);
  const Node* next() const { return descent_.node(); }
  bool found() const { return found_; }
  // After the last step: a node on the way could not be loaded (take_load_failure() says why);
  // found() is then false and means nothing.
  bool failed() const { return failed_; }
  // (A lookup that does not load) The last step met a leaf on storage, at stored_address():
  // the lookup waits until the driver hands its image (kNodeImageBytes, unverified) to
  // install(), or says fail() or load_here(). step() must not be called meanwhile, nor after
  // the lookup failed.
  bool stored() const { return stored_; }
  std::uint64_t stored_address() const { return descent_.stored_address(); }
  // Installs the image (unless another loader came first) and goes on from the root: true. False
  // when it does not verify: the lookup failed (take_load_failure() says why).
  bool install(const char* image) { return end_load(descent_.install_stored(image)); }
  // The image could not be read (`why`, IOError): the lookup failed.
  void fail(Status why) { (void)end_load(descent_.fail_stored(std::move(why))); }
  // No read of the driver's own could be had: reads the image here, as a lookup that loads.
  bool load_here() { return end_load(descent_.load_stored()); }
  // Whether a plain driver should prefetch next() whole before the step (BTree::outgrew_cache).
  inline bool outgrew_cache() const;
  // Whether next() is on a level small enough to stay cached (BTree::resident_level).
  inline bool next_resident() const;
  // The lines of next() that the next step will likely read, for the coroutine drivers' hints
  // (a prefetch that a suspension follows). Once the tree's leaves outgrow the last-level cache,
  // in a tree whose keys fit their heads (BTree::hints_lines), the parent's two separators place
  // the key within next()'s range, and this thread's recent mean count of that level's nodes
  // places the tail the search will land on: the hint names the header, the heads and the tails
  // two slots either side, about 8 of a full leaf's 15 lines. Only while this thread's recent
  // predictions for that level held the slot (one hint in 16 still predicts, to be checked,
  // when they did not); otherwise the whole node. Why: each line a hint names holds one of the
  // core's few miss buffers until it arrives from DRAM, and an interleaved get over a table past
  // the cache is bound by them.
  // Call only when hints_lines(); otherwise the hint is the whole node.
  BRAID_OPTIMISTIC NodeLines next_lines();
  // Whether next_lines may name less than the whole node (BTree::hints_lines).
  inline bool hints_lines() const;
  // After the last step: checks a prediction next_lines made for the leaf.
  inline void note_leaf() const;
  std::uint64_t value() const { return value_; }
  // The found entry's value hint (BTree::set_value_hint), 0 for none; and its slot in the leaf.
  std::uint32_t value_hint() const { return value_hint_; }
  unsigned leaf_slot() const { return leaf_slot_; }
  // After the last step: the leaf the answer came from, at the version it was read.
  LeafRead leaf_read() const { return {descent_.node(), descent_.version()}; }

 private:
  BRAID_OPTIMISTIC void check_leaf() const;
  // After the driver's load: `failed` (the lookup is over), or on from the root.
  bool end_load(bool failed) {
    BRAID_ASSERT(stored_);
    stored_ = false;
    if (failed) {
      failed_ = true;
      found_ = false;
    }
    return !failed;
  }
  // One step, with the descent's step and the node searches inlined: step() for the drivers
  // that suspend between steps (the calls cost there too), and run's loop.
  BRAID_OPTIMISTIC inline bool step_inline();

  SearchKey key_;
  Descent descent_;
  bool found_ = false;
  bool failed_ = false;
  bool stored_ = false;
  std::uint16_t leaf_slot_ = 0;  // the slot the leaf's search landed on (next_lines checks it)
  std::uint64_t value_ = 0;
  std::uint32_t value_hint_ = 0;
  // next_lines' last prediction, for the node it was made for.
  const Node* predicted_node_ = nullptr;
  NodeLines predicted_{0, 0, 0};
};

// Entries copied out of one leaf by a scan step.
struct LeafBatch {
  struct Entry {
    std::uint32_t key_off;
    std::uint32_t key_len;
    std::uint64_t value;
  };
  std::vector<Entry> entries;
  std::string keys;
  std::string next;  // where the next step starts (forward: inclusive; reverse: exclusive)
  bool has_next = false;
  // A leaf on storage the scan did not read (LeafImages::carry_by): its address; 0 otherwise.
  std::uint64_t carried = 0;
  std::string_view key(const Entry& e) const { return {keys.data() + e.key_off, e.key_len}; }
  void clear() {
    entries.clear();
    keys.clear();
    next.clear();
    has_next = false;
    carried = 0;
  }
  // `other`'s entries and continuation without its keys, as a keyless step leaves a batch.
  void copy_entries_of(const LeafBatch& other) {
    entries = other.entries;
    keys.clear();
    next = other.next;
    has_next = other.has_next;
    carried = other.carried;
  }
};

class BTree;

// One leaf of a range scan as a stepper (see BTree::scan_leaf for the arguments): while step()
// answers true, next() is the node the next step reads. The key views must outlive it.
// `keys` false: the batch's entries carry values only (empty keys; `next` is still set), for a
// caller that looks at where entries lead and not at their keys.
// Leaf images a one-pass scan reads without bringing the leaves back into the tree (ScanLeaf's
// read-through mode; the checkpoint's scan of every key). Loading each leaf the scan meets
// would fill memory with leaves nobody asked for, and read them one at a time: a scan that
// meets a leaf on storage reads the images of that leaf's stored right siblings with it (the
// hand evicts in key order, so they tend to lie side by side and go as one read), and the
// scans after it take theirs from here. An image at an address never changes (addresses are
// not reused), so a held one is current as long as the parent still names its address.
class LeafImages {
 public:
  static constexpr unsigned kSlots = 64;
  LeafImages();
  LeafImages(const LeafImages&) = delete;
  LeafImages& operator=(const LeafImages&) = delete;

  // Leaves on storage a forward scan through these images leaves unread: those whose address
  // `fn(arg, address)` accepts. The scan answers such a leaf as an empty batch naming it
  // (LeafBatch::carried) with its continuation, for a caller that has what the leaf holds
  // from elsewhere (a checkpoint carrying an earlier one's run over).
  using Carry = bool (*)(void* arg, std::uint64_t address);
  void carry_by(Carry fn, void* arg) {
    carry_ = fn;
    carry_arg_ = arg;
  }

 private:
  friend class BTree;
  friend class ScanLeaf;
  Carry carry_ = nullptr;
  void* carry_arg_ = nullptr;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> images_;  // kSlots images
  std::unique_ptr<char, Free> frame_;   // a Node, decoded from one of them
  std::uint64_t addresses_[kSlots] = {};
  unsigned count_ = 0;
  // Inner nodes on storage the scan went through (BTree::pages_inner), decoded: one frame per
  // level, kMaxLevels of them, made at the first; inner_addresses_ names each frame's image
  // (0: none). The leaves' images above come from the level-1 frame's children then.
  std::unique_ptr<char, Free> inner_;
  std::uint64_t inner_addresses_[kMaxLevels] = {};
};

class ScanLeaf {
 public:
  // `through`: read leaves on storage through these images instead of loading them (see
  // LeafImages); such a scan marks no leaf used either, being no reason to keep one.
  // `load` (without `through`): as Lookup's; a scan built not to load stops at a leaf on
  // storage (stored()) for its driver to read.
  ScanLeaf(const BTree& tree, std::string_view from, bool from_infinite, std::string_view begin,
           std::string_view end, bool reverse, LeafBatch* out,
           NodeSearch search = NodeSearch::kCount, bool keys = true, LeafImages* through = nullptr,
           bool load = true);
  ScanLeaf(const ScanLeaf&) = delete;
  ScanLeaf& operator=(const ScanLeaf&) = delete;

  BRAID_OPTIMISTIC bool step();
  const Node* next() const { return descent_.node(); }
  // After the last step: as Lookup::failed(); the batch is then empty.
  bool failed() const { return failed_; }
  // A scan that does not load waits for its driver, as a Lookup that does not load does:
  // stored(), stored_address(), install(), fail() and load_here() are Lookup's.
  bool stored() const { return stored_; }
  std::uint64_t stored_address() const { return descent_.stored_address(); }
  bool install(const char* image) { return end_load(descent_.install_stored(image)); }
  void fail(Status why) { (void)end_load(descent_.fail_stored(std::move(why))); }
  bool load_here() { return end_load(descent_.load_stored()); }
  inline bool outgrew_cache() const;  // as Lookup's
  inline bool next_resident() const;  // as Lookup's
  // After the last step: the leaf the batch came from, at the version it was read.
  LeafRead leaf_read() const { return {descent_.node(), descent_.version()}; }

 private:
  SearchKey key_;
  // A forward step's continuation past the leaf reached: its upper fence, if inside the range.
  void continue_forward(LeafBatch* out) const;

  Descent descent_;
  std::string_view begin_;
  std::string_view end_;
  bool reverse_;
  bool keys_;
  bool failed_ = false;
  bool stored_ = false;
  LeafBatch* out_;
  LeafImages* through_;

  bool end_load(bool failed) {
    BRAID_ASSERT(stored_);
    stored_ = false;
    if (failed) {
      out_->clear();
      failed_ = true;
    }
    return !failed;
  }
};

class BTree {
 public:
  // `cache_bytes`: the size past which the tree counts as outgrowing the cache (outgrew_cache).
  // `pool`: where node chunks come from first (null: none); it must outlive the tree.
  // `llc_bytes`: the last-level cache the leaves must outgrow before hints name part of a node
  // (hints_lines).
  explicit BTree(std::size_t cache_bytes = util::l2_cache_bytes(), ChunkPool* pool = nullptr,
                 std::size_t llc_bytes = util::llc_bytes());
  ~BTree();
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  // Point lookup. Keys must be 1..255 bytes (the engine checks; here it is asserted). Yes:
  // `*value` is the key's; no: absent; failed: a node load failed (then, as for every Outcome
  // below, take_load_failure() says why and the tree is unchanged).
  Outcome lookup(std::string_view key, std::uint64_t* value) const;
  // Inserts key → value unless the key is present. Yes: inserted; no: `*existing` receives the
  // present value. `change`, when given, receives the leaf the key
  // went into and its versions around the insert (the leaf is a split's half when it split).
  // `at`, when given, is the leaf a completed lookup of the same key ended on, at the version
  // it validated: while that version holds, the leaf still covers the key (a leaf's range
  // narrows only by its own split or by leaving the tree, and both change its version, which
  // no later life of the node repeats; an unlink beside it only widens it), so the insert goes
  // there without a second descent. A changed leaf, or one that must split,
  // takes the descent from the root.
  // `value_hint`: the entry's first value hint (set_value_hint).
  Outcome insert_if_absent(std::string_view key, std::uint64_t value, std::uint64_t* existing,
                           LeafChange* change = nullptr, const LeafRead* at = nullptr,
                           std::uint32_t value_hint = 0);
  // Sets the value hint of entry `slot` of the leaf a lookup ended on (`at`), if the leaf is
  // still as that lookup validated it; otherwise does nothing. A value hint is 4 bytes the
  // owner keeps beside an entry's value to say where the value leads (the engine: its newest
  // version), which readers prefetch by and never trust (Lookup::value_hint). The leaf's
  // version is locked around the store and then restored, not bumped: optimistic readers and
  // SSN's phantom checks (which compare leaf versions) see no change; a phantom check that
  // lands inside the few instructions the lock is held aborts, as for any locked leaf.
  void set_value_hint(const LeafRead& at, unsigned slot, std::uint32_t value_hint);
  // Removes the key if it maps to `expected` (or any value when `any`); yes when removed. A
  // leaf the removal leaves underfull is merged or unlinked (see "Underflow" above).
  Outcome remove(std::string_view key, std::uint64_t expected, bool any = false);
  // The same, if moreover `consent(arg)` answers true, asked with the leaf locked and the entry
  // found: a check-and-act the caller needs atomic with the removal (the engine's reclamation
  // empties the record's OID entry in it, so a writer that found the OID before either sees
  // the record still there or sees it gone and looks the key up again, which then waits for
  // the leaf). `consent` must be short and must not touch this tree.
  Outcome remove_if(std::string_view key, std::uint64_t expected, bool (*consent)(void*),
                    void* arg);
  // Sets the key's value to `desired` if it maps to `expected`; yes when set, no when the key
  // is absent or maps to something else. The leaf's version moves (unlike set_value_hint's),
  // for two reasons: an optimistic reader that read `expected` must not validate it afterwards,
  // and a leaf eviction that took its image before the change must find the leaf changed and
  // give up (an image that held `expected` would bring it back). SSN's phantom checks on the
  // leaf see a change too: a serializable reader of the leaf's absences may abort needlessly.
  Outcome replace(std::string_view key, std::uint64_t expected, std::uint64_t desired);

  // Empties the tree at once: every key goes, and the images of leaves on storage are given
  // back to the store. Readers that run meanwhile find the old nodes retired and restart on the
  // new, empty root; no writer and no other clear() may run meanwhile (the caller's promise:
  // the engine clears a table that a failed bulk load filled, and writes to it are refused).
  void clear();

  // Paging (docs/internals/index-paging.md). Once a store is attached, leaves may leave memory:
  // evict_leaf() writes a leaf's image to the store and its parent names the image's address
  // instead of the leaf, and a descent that meets the address reads the image back into a frame
  // and goes on (synchronously, on the calling thread). Concurrent misses on one leaf may read
  // it twice; one install wins. A failed read fails only the operation that needed it:
  // Lookup::failed(), ScanLeaf::failed(), a failed Outcome from lookup() and the writes, each with
  // take_load_failure() saying why. Only leaves leave (inner nodes too with pages_inner), and
  // never the root. Attach before the tree
  // is shared; `store` must outlive the tree; `tree_id` goes into every image.
  void attach_store(NodeStore* store, std::uint32_t tree_id);
  // A leaf already on storage, for adopt_stored_leaves: it holds the keys from `first_key` up
  // to the next one's first key (all keys below the second, for the first).
  struct StoredLeaf {
    std::string_view first_key;
    std::uint64_t address;
  };
  // Builds the tree over leaves that are on storage already, in key order (an open over the
  // runs of a checkpoint, index-paging.md, decision 6): inner nodes, filled to 3/4 so that the
  // splits the first writes cause stay local, and kept in memory; the leaves load on demand.
  // A single leaf is read at once and becomes the root (the root never leaves memory). The
  // tree must be empty and not shared yet, with a store attached. IOError or Corruption from
  // that single read; the tree is then unchanged.
  Status adopt_stored_leaves(std::span<const StoredLeaf> leaves);
  // Evicts the leaf that holds `key`'s range, unless it changed while its image was written, is
  // the root, is empty or is already out (`*evicted` says which). IOError from the store.
  // Evictions are serialized; lookups, writes and scans go on beside one.
  Status evict_leaf(std::string_view key, bool* evicted);
  // The CLOCK hand over the leaves, in key order (second chance, as records have): from the
  // leaf that holds `*hand` (empty: the first), up to `max_leaves` leaves; a leaf used since
  // the hand last passed it is spared and its mark cleared, one not used is evicted
  // (evict_leaf's rules). `*hand` moves on past the last leaf visited (empty again once it
  // passed the last leaf). Adds the leaves evicted to `*evicted`. IOError from the store.
  // A leaf is marked used by every descent that reaches it while a store is attached.
  // `consent`, when given, is asked with the leaf locked before its image is taken, and a leaf
  // it refuses stays (the engine keeps leaves that hold records open transactions write); it
  // must be short and must not touch this tree. The images of the leaves taken are written
  // with one flush, then published.
  using LeafConsent = bool (*)(void* arg, const Node& leaf);
  // `max_keys`: the hand stops, too, once the leaves it took held that many keys (so a caller
  // can evict at the pace of a hand over the records), or the leaves it visited in memory
  // twice that. Not at visited keys alone: a tree that grows at its end (a load) adds fresh,
  // marked leaves as fast as that pace moves the hand, which then never finished the pass
  // that clears their marks and evicted nothing. Not at taken keys alone either: a hand that
  // runs on until it takes enough laps the leaves so fast that warm ones are not marked again
  // in time, and come straight back (YCSB with Zipf keys: ten times the loads).
  //
  // `rewrite`, when given, is called (with `arg`) for every leaf the hand visits in memory,
  // spared or taken, with the leaf locked and before its image is taken: it may change values
  // (never keys), and the leaf's version stays, so readers that copied the old values validate.
  // The engine demotes records there (index-paging.md, decision 4): a reader of an old value
  // must handle it being stale on its own. Short, and must not touch this tree.
  using LeafRewrite = void (*)(void* arg, Node& leaf);
  Status sweep_leaves(std::string* hand, std::size_t max_leaves, std::size_t* evicted,
                      LeafConsent consent = nullptr, void* arg = nullptr,
                      std::size_t max_keys = SIZE_MAX, LeafRewrite rewrite = nullptr);
  // Whether a store is attached (leaves may be on storage).
  bool pages() const { return store_ != nullptr; }
  // Whether the hand takes inner nodes too (off by default): an inner node whose children are
  // all on storage, not the root, and not used since the hand last came (a load of one of its
  // children, or of itself, marks it) goes out as a leaf does, its image naming its children's
  // addresses; a descent that meets it loads it, then the child it needs, level by level. The
  // rule applies upwards, so whole subtrees leave memory bottom-up. The tree's walks read
  // stored inner nodes where they must (clear, check_invariants, a read-through scan through
  // LeafImages) and stop above them where they need not (split_keys, level_sizes).
  bool pages_inner() const { return pages_inner_.load(std::memory_order_relaxed); }
  void set_pages_inner(bool on) { pages_inner_.store(on, std::memory_order_relaxed); }
  // Whether descents mark the leaves they reach used (on by default). Off while an open
  // replays into the tree: its inserts are no application's reads, and a rebuild that marked
  // every leaf it filled left the hand a whole pass of clearing before it could evict one.
  bool marks_uses() const { return marks_uses_.load(std::memory_order_relaxed); }
  void set_marks_uses(bool on) { marks_uses_.store(on, std::memory_order_relaxed); }
  // Leaves on storage now; evictions and loads so far.
  std::size_t stored_leaves() const { return stored_.load(std::memory_order_relaxed); }
  std::uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  std::uint64_t loads() const { return loads_.load(std::memory_order_relaxed); }
  // The same for inner nodes (pages_inner).
  std::size_t stored_inner_nodes() const { return stored_inner_.load(std::memory_order_relaxed); }
  std::uint64_t inner_evictions() const { return inner_evictions_.load(std::memory_order_relaxed); }
  std::uint64_t inner_loads() const { return inner_loads_.load(std::memory_order_relaxed); }
  // Of loads(), those whose image the operation's driver read (Descent::install_stored: a
  // coroutine on a worker's ring, suspended while the read was out); the rest were read
  // synchronously by the thread that met the leaf.
  std::uint64_t driver_loads() const { return driver_loads_.load(std::memory_order_relaxed); }

  // One leaf of a range scan over [begin, end) (empty end: unbounded).
  //   forward: `from` is the inclusive start; fills entries in ascending order.
  //   reverse: `from` is the exclusive upper bound (`from_infinite` for none); descending order.
  // Sets `out->next`/`has_next` to continue with the neighbouring leaf. False when a leaf
  // could not be loaded (take_load_failure()): `out` is then empty, with no next.
  bool scan_leaf(std::string_view from, bool from_infinite, std::string_view begin,
                 std::string_view end, bool reverse, LeafBatch* out,
                 LeafImages* through = nullptr) const;

  // Full scan helpers for tests and tools.
  // False when a leaf could not be loaded (take_load_failure()); the entries before it were
  // visited.
  template <typename Fn>
  bool for_each(Fn&& fn) const {
    LeafBatch batch;
    std::string from;
    for (;;) {
      if (!scan_leaf(from, false, {}, {}, false, &batch)) return false;
      for (const auto& e : batch.entries) fn(batch.key(e), e.value);
      if (!batch.has_next) return true;
      from = batch.next;
    }
  }

  // Visits every node bottom-up, each after its children, as writing node images needs (a
  // parent's image names its children's addresses): `fn(node, children)` answers the word that
  // names `node` and receives the words its children's calls answered (an inner node's:
  // leftmost first, then entry by entry; a leaf's: none). Answers the root's word.
  // Single-threaded callers only: nothing may change the tree meanwhile.
  template <typename Fn>
  std::uint64_t visit_bottom_up(Fn&& fn) const {
    return visit_bottom_up(root_.load(std::memory_order_acquire), fn);
  }

  // Checks every structural invariant (sorted keys, separators bound their subtrees, heap
  // accounting), reading inner nodes on storage (pages_inner) to check them too; one that
  // cannot be read (IOError) is skipped with what is below it, one that reads but does not
  // verify fails the check. Single-threaded callers only. Returns the number of keys in the
  // leaves in memory.
  std::size_t check_invariants() const;

  // Nodes in the tree, and nodes on its free list (left the tree, kept for later splits).
  std::size_t node_count() const {
    return nodes_allocated_.load(std::memory_order_relaxed) -
           nodes_free_.load(std::memory_order_relaxed);
  }
  std::size_t free_node_count() const { return nodes_free_.load(std::memory_order_relaxed); }
  // Gives the memory of free frames back to the system (the pages all of whose frames are
  // free), keeping about `keep` frames on the free list; a frame given back is reused after
  // the others, at a version above every version a given-back frame had (OptLock). Answers
  // the bytes given back. Without this a paging tree holds its peak's frames for good: an
  // evicted leaf's frame only waits for the next load. Any thread; takes the allocation lock
  // for a sort of the free list and one madvise per run of pages.
  std::size_t release_free_frames(std::size_t keep);
  std::size_t released_frames() const { return released_count_.load(std::memory_order_relaxed); }
  // Bytes given back so far (a page reused and given back again counts again).
  std::uint64_t released_bytes() const { return released_bytes_.load(std::memory_order_relaxed); }
  // The frames the tree holds: all it made (its nodes and its free frames) but those given
  // back. Read racily: a release between the reads must not wrap the difference.
  std::uint64_t frame_bytes() const {
    const std::size_t made = node_count() + free_node_count();
    const std::size_t released = released_frames();
    return made > released ? (made - released) * kNodeBytes : 0;
  }
  // Merges and unlinks done so far (tests and tools).
  std::uint64_t merges() const { return merges_.load(std::memory_order_relaxed); }
  // True once the nodes take more than the constructor's `cache_bytes` (a core's L2 by
  // default); never false again, not even when merges shrink the tree. From then on a level below
  // the root is likely a miss, and the plain drivers (sequential and the synchronous API) prefetch
  // each node whole before its step reads it, as pB+-trees do: a cold node then costs one miss
  // latency, where the count over its heads and the read of the tail it lands on were two
  // dependent ones (engine/access_ops.inc, BRAID_DRIVE). A tree that fits does not pay for the
  // hints it would not need.
  bool outgrew_cache() const { return outgrew_cache_.load(std::memory_order_relaxed); }
  std::uint32_t height() const;
  // Whether Lookup::next_lines may name part of a node: every key fits its 8-byte head (no
  // suffixes, no ties to compare), and the leaves outgrew the last-level cache (until then a
  // get's lines come from L3 and hold a miss buffer a fraction of a DRAM fetch's time, and the
  // hint's own work is all it adds). Every level's: once the leaves miss in DRAM, the lines of
  // an upper level that L3 serves still hold buffers the DRAM fetches wait for.
  bool hints_lines() const {
    return level_nodes_[0].load(std::memory_order_relaxed) > llc_nodes_ &&
           max_key_len_.load(std::memory_order_relaxed) <= 8;
  }
  // True when the nodes of `level` (0: leaves; ~0u: the root, unknown) fit in a quarter of the
  // constructor's `cache_bytes`: stepping into one there needs no suspension, since levels that
  // small stay cached under the stream of lines the levels below bring in.
  bool resident_level(std::uint32_t level) const {
    if (level >= kLevels) return true;
    return level_nodes_[level].load(std::memory_order_relaxed) * kNodeBytes <= cache_bytes_ / 4;
  }
  // Keys that cut [begin, end) (empty `end`: no upper bound) into parts of similar size, for
  // splitting a scan into morsels: the separators of the highest inner level that holds at least
  // `want` of them inside the range (all of the lowest inner level's when none does; none for a
  // tree that is one leaf). Sorted, distinct, each strictly inside the range; at most `want`,
  // thinned evenly. Safe beside writers: every node is read optimistically and validated, and
  // a read that keeps losing to them answers fewer keys (any sorted set of keys splits a range
  // correctly; only the balance suffers).
  std::vector<std::string> split_keys(std::string_view begin, std::string_view end,
                                      std::size_t want) const;
  // Nodes per level, root first, a node on storage counted on its level. Single-threaded
  // callers only (tools and benchmarks: it reads every inner node in memory). Levels below
  // nodes on storage are not read (pages_inner): a level counts the nodes under those in
  // memory above it, and the list ends at a level that is all on storage.
  std::vector<std::size_t> level_sizes() const;

 private:
  friend class Descent;
  friend class Lookup;
  friend class ScanLeaf;

  template <typename Fn>
  static std::uint64_t visit_bottom_up(const Node* n, Fn& fn) {
    std::vector<std::uint64_t> children;
    if (n->level != 0) {
      children.reserve(n->count + 1u);
      // A child on storage is named by its image's address already.
      const auto child = [&](std::uint64_t word) {
        return is_address(word) ? word : visit_bottom_up(reinterpret_cast<const Node*>(word), fn);
      };
      children.push_back(child(reinterpret_cast<std::uint64_t>(n->leftmost)));
      for (unsigned i = 0; i < n->count; ++i)
        children.push_back(child(n->tails(n->count)[i].value));
    }
    return fn(*n, std::span<const std::uint64_t>(children));
  }
  Node* new_node(std::uint8_t level);
  // remove, remove_if and replace: the entry goes, or takes `*desired` when given.
  Outcome change_matching(std::string_view key, std::uint64_t expected, bool any,
                          bool (*consent)(void*), void* arg, const std::uint64_t* desired);
  // Locks a node found at version v (and its parent at pv, when present) or answers false.
  bool lock_pair(Node* node, std::uint64_t v, Node* parent, std::uint64_t pv);
  // `append`: the insert that forced the split lies beyond the node's last key.
  void split_inner(Node* node, Node* parent, bool append);
  // `idx`: the slot the insert that found the leaf full would take.
  void split_leaf(Node* node, Node* parent, unsigned idx);
  void install_new_root(Node* left, std::string_view sep, Node* right);
  // adopt_stored_leaves' inner levels over two leaves or more; publishes the new root.
  void build_over_stored(std::span<const StoredLeaf> leaves);
  // For a descent that reached a leaf on storage: the lowest key of the first child right of
  // it in the same parent that is in memory, or of the parent's last child when none is;
  // false when the reached child is the last (or the parent changed).
  bool next_resident_sibling(const Descent& d, std::string* key) const;
  // After a split of `node` (locked, as is `parent`): publish `right` under separator `sep`.
  void link_right_sibling(Node* node, Node* parent, std::string_view sep, Node* right);
  void note_key_len(std::size_t len);
  // Underflow (see the header comment). rebalance() starts at the leaf on k's path and walks up
  // while each step changed a parent; rebalance_level() does one level and answers the level
  // to look at next, kRebalanceDone or kRebalanceRetry.
  static constexpr std::uint32_t kRebalanceDone = ~0u;
  static constexpr std::uint32_t kRebalanceRetry = ~0u - 1;
  void rebalance(const SearchKey& k);
  std::uint32_t rebalance_level(const SearchKey& k, std::uint32_t level);
  // Takes a locked node out of service: obsolete, on the free list.
  void retire(Node* n);
  // A descent met child `idx` of `parent` (read at `pv`) on storage at `address`: reads it into
  // a frame and installs it there. kInstalled: `*child` is the frame, and `parent` is at version
  // pv + 2 * kLocked unless a writer came since; kRaced: the parent changed (another loader
  // won, or a writer); kFailed: take_load_failure() says why. The tree is unchanged unless
  // installed. Logically const: what the tree maps stays as it was.
  enum class Load : std::uint8_t { kInstalled, kRaced, kFailed };
  // A read-through scan's descent stopped at a node on storage (kStored): where the leaf on
  // its key's path is named. Through inner nodes on storage (their images read into
  // `images`' inner frames, unless held already, and the descent's fences narrowed), down to
  // the node of level 1 that names it (`*parent`: the descent's own node, or a frame), which
  // child (`*idx`) and its address. kInstalled, or kFailed (an inner image unreadable or
  // damaged). The caller validates the descent's node after using what this found.
  Load resolve_through(Descent& d, LeafImages* images, const Node** parent, unsigned* idx,
                       std::uint64_t* address) const;
  // Then the leaf: decoded from its image into `images`' frame (kInstalled, `*leaf`), read
  // with its stored right siblings unless held already. `pv`: the parent's version, which the
  // caller read (a frame's never moves).
  Load read_through(const Node* parent, std::uint64_t pv, unsigned idx, std::uint64_t address,
                    LeafImages* images, const Node** leaf) const;
  Load load_child(Node* parent, std::uint64_t pv, unsigned idx, std::uint64_t address,
                  Node** child) const;
  // load_child's second half: `image` (read from `address`, unverified) decoded into a frame
  // and installed as child `idx` of `parent`, if the parent is still at `pv`.
  Load install_image(Node* parent, std::uint64_t pv, unsigned idx, std::uint64_t address,
                     const char* image, Node** child) const;
  // Reads the node image at `address` into `frame` (a Node nobody else sees), verified:
  // IOError or Corruption naming the address. For walks at rest (check_invariants).
  Status read_stored_node(std::uint64_t address, Node* frame) const;
  // clear(): retires `n` (locked) and the subtree below it, children first.
  void retire_subtree(Node* n);
  // Gives back the image at `address`, of a node of `level`, and those of the nodes below it
  // (an inner image is read to name them). A read that fails leaves the images below where
  // they are (garbage nobody names, still counted as stored): false.
  bool release_stored(std::uint64_t address, std::uint32_t level);
  // Evicts the leaf a descent that does not load just reached (kLeaf); evict_leaf's rules.
  // The caller holds evict_mutex_.
  Status evict_reached(const Descent& d, bool* evicted);
  // An eviction between taking a leaf's image and publishing its address in the parent.
  struct TakenLeaf {
    Node* leaf;
    std::uint64_t lv;  // the leaf's version when its image was taken
    Node* parent;
    std::uint64_t pv;  // the parent's
    unsigned idx;      // which child of the parent the leaf is
    std::uint64_t address;
  };
  // Takes the image of the leaf `d` reached into a slot of the store (unflushed), unless the
  // leaf is the root, is empty, changed since `d` read it, or `consent` refuses it (*took
  // false). The caller holds evict_mutex_. IOError from the store.
  Status take_image(const Descent& d, LeafConsent consent, LeafRewrite rewrite, void* arg,
                    TakenLeaf* out, bool* took);
  // take_image for the node a descent stopped in at kStored (an inner node): taken when every
  // child is on storage and it is not the root; no consent or rewrite (they are the leaves').
  Status take_inner_image(const Descent& d, TakenLeaf* out, bool* took);
  // Whether a descent that stopped at kStored stopped at the last child of its node, and every
  // child of that node is on storage (read optimistically, validated).
  static bool all_children_stored(const Descent& d);
  // Both: the image of `node` (found at `v`; child `idx` of `parent`, found at `pv`).
  Status take_node_image(Node* node, std::uint64_t v, Node* parent, std::uint64_t pv, unsigned idx,
                         LeafConsent consent, LeafRewrite rewrite, void* arg, TakenLeaf* out,
                         bool* took);
  // After the flush that wrote their images: each leaf still at the versions its image was
  // taken at leaves the tree and its parent names the address; the others' slots go back.
  // Answers how many left. The caller holds evict_mutex_.
  std::size_t publish(std::span<const TakenLeaf> taken);
  static std::atomic_ref<std::uint8_t> used_mark(const Node* n) {
    const auto at = reinterpret_cast<std::uintptr_t>(n);
    const auto chunk = at & ~(std::uintptr_t{kChunkBytes} - 1);
    return std::atomic_ref<std::uint8_t>(
        reinterpret_cast<std::uint8_t*>(chunk)[(at - chunk) / kNodeBytes]);
  }
  // Marks a leaf used (set only when clear: a read seldom writes). Only while leaves may leave.
  static void note_used(const Node* leaf) {
    std::atomic_ref<std::uint8_t> mark = used_mark(leaf);
    if (mark.load(std::memory_order_relaxed) == 0) mark.store(1, std::memory_order_relaxed);
  }

  std::atomic<Node*> root_;
  std::atomic<bool> outgrew_cache_{false};  // beside root_: a descent reads that line first
  const std::size_t cache_bytes_;
  const std::size_t llc_nodes_;  // nodes the last-level cache holds
  std::atomic<std::uint16_t> max_key_len_{8};
  std::atomic<std::size_t> nodes_allocated_{0};
  std::atomic<std::size_t> nodes_free_{0};
  std::atomic<std::uint64_t> merges_{0};
  // Paging (attach_store): the store, this tree's id in its images, the evictions' lock, and the
  // largest SSN stamp of a leaf that left memory, which every loaded leaf takes (conservative:
  // an inserter behind a reader that certified is then never missed, mvcc/ssn.h).
  NodeStore* store_ = nullptr;
  std::atomic<bool> marks_uses_{true};  // beside store_: a descent reads both
  std::uint32_t tree_id_ = 0;
  std::mutex evict_mutex_;
  mutable std::atomic<std::uint64_t> evicted_pstamp_{0};
  mutable std::atomic<std::size_t> stored_{0};
  std::atomic<std::uint64_t> evictions_{0};
  mutable std::atomic<std::uint64_t> loads_{0};
  std::atomic<bool> pages_inner_{false};  // read by the hand only
  mutable std::atomic<std::size_t> stored_inner_{0};
  std::atomic<std::uint64_t> inner_evictions_{0};
  mutable std::atomic<std::uint64_t> inner_loads_{0};
  mutable std::atomic<std::uint64_t> driver_loads_{0};
  static constexpr std::uint32_t kLevels = kMaxLevels;
  std::atomic<std::size_t> level_nodes_[kLevels] = {};

  // Nodes come from 2 MiB chunks: the pool's while it has any, else the tree's own (madvised
  // for huge pages), which are freed with the tree.
  ChunkPool* const pool_;
  std::mutex alloc_mutex_;
  std::vector<void*> chunks_;
  std::vector<Node*> free_nodes_;  // retired nodes, reused first (LIFO: the warmest)
  // Free frames left after the last release_free_frames (and the fewest since): the next one
  // sorts the list only once `keep` more are free.
  std::size_t free_after_release_ = 0;
  // Frames whose pages went back to the system: reused once free_nodes_ is empty, each above
  // released_version_ (and with released_pstamp_, the highest SSN stamp they had).
  std::vector<Node*> released_;
  std::uint64_t released_version_ = 0;
  std::uint64_t released_pstamp_ = 0;
  std::atomic<std::size_t> released_count_{0};
  std::atomic<std::uint64_t> released_bytes_{0};
  char* chunk_cursor_ = nullptr;
  char* chunk_end_ = nullptr;
};

inline bool Lookup::outgrew_cache() const { return descent_.tree().outgrew_cache(); }
inline bool ScanLeaf::outgrew_cache() const { return descent_.tree().outgrew_cache(); }
inline bool Lookup::hints_lines() const { return descent_.tree().hints_lines(); }
inline void Lookup::note_leaf() const {
  if (!failed_ && predicted_node_ == descent_.node()) check_leaf();
}
inline bool Lookup::next_resident() const {
  return descent_.tree().resident_level(descent_.level());
}
inline bool ScanLeaf::next_resident() const {
  return descent_.tree().resident_level(descent_.level());
}

}  // namespace braid::index
