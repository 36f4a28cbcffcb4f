#include "index/btree.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "index/chunk_pool.h"
#include "index/node_search.h"

namespace braid::index {

static_assert(Node::kHeader + (Node::kMaxSlots + search::kOverread) * sizeof(std::uint64_t) <=
                  kNodeBytes,
              "a vector load past the last head stays inside the node");

namespace {

static_assert(kChunkBytes == ChunkPool::kChunkBytes);

// Every line of a node, into L1 (prefetcht0): the step that follows reads it right away.
inline void prefetch_whole(const Node* n) {
  const char* p = n->raw();
  for (std::size_t off = 0; off < kNodeBytes; off += 64) __builtin_prefetch(p + off, 0, 3);
}

// ---- Optimistic (racy) reads -------------------------------------------------------------------
// Volatile loads are never split or repeated by the compiler, so a torn *node* state is possible
// but a torn *word* is not; every consumer clamps what it reads so that garbage stays inside the
// node until the version check throws it away.

using u64_unaligned = std::uint64_t __attribute__((aligned(1), may_alias));

BRAID_OPTIMISTIC inline std::uint64_t racy_u64(const char* p) {
  return __builtin_bswap64(*reinterpret_cast<const volatile u64_unaligned*>(p));
}
BRAID_OPTIMISTIC inline unsigned char racy_byte(const char* p) {
  return *reinterpret_cast<const volatile unsigned char*>(p);
}

BRAID_OPTIMISTIC inline unsigned racy_count(const Node* n) {
  unsigned c = racy(n->count);
  return c > Node::kMaxSlots ? static_cast<unsigned>(Node::kMaxSlots) : c;
}

// Heap offset of a slot's suffix, clamped so that [off, off + suffix_len) stays in the node.
BRAID_OPTIMISTIC inline const char* suffix_ptr(const Node* n, std::uint32_t off,
                                               std::uint32_t suffix_len) {
  if (off + suffix_len > kNodeBytes) off = static_cast<std::uint32_t>(kNodeBytes - suffix_len);
  return n->raw() + off;
}

// Three-way comparison of the search key with the key of the entry with head `h` and tail `t`.
BRAID_OPTIMISTIC int compare(const Node* n, std::uint64_t h, const Tail& t, const SearchKey& k) {
  if (k.infinite) return 1;
  if (k.head != h) return k.head < h ? -1 : 1;
  const std::uint32_t slen = racy(t.len);
  if (k.len <= 8 || slen <= 8) return (k.len > slen) - (k.len < slen);
  const std::uint32_t m = std::min(k.len, slen) - 8;
  const char* p = suffix_ptr(n, racy(t.suffix_off), slen - 8);
  const char* q = k.data + 8;
  std::uint32_t i = 0;
  for (; i + 8 <= m; i += 8) {
    std::uint64_t a = util::load_head(q + i, 8);
    std::uint64_t b = racy_u64(p + i);
    if (a != b) return a < b ? -1 : 1;
  }
  for (; i < m; ++i) {
    unsigned char a = static_cast<unsigned char>(q[i]);
    unsigned char b = racy_byte(p + i);
    if (a != b) return a < b ? -1 : 1;
  }
  return (k.len > slen) - (k.len < slen);
}

// The slots whose head equals k's: [*lo, *hi). Keys are sorted, so heads are non-decreasing:
// the slots with a smaller head form a prefix and the equal ones follow it. The prefix's length
// is found as the search asks (NodeSearch):
//   kCount   counts it over the contiguous heads (node_search.h: 4 to a compare where the
//            build targets AVX2, else one load, compare and add-with-carry each):
//            independent loads, so every line of a cold node misses in parallel.
//   kBisect  bisects the heads without a branch on the data: each step selects its half with a
//            conditional move and the trip count depends only on `count`, so nothing is
//            mispredicted (a branchy bisection mispredicts about half of its probes).
// The equal heads follow, found from there over lines the search just read — usually no step
// at all, since distinct keys of up to 8 bytes have distinct heads. A racing writer can
// leave the heads unsorted or torn; both ends stay within [0, count] and the caller's version
// check discards the result.
BRAID_OPTIMISTIC inline unsigned heads_below(const std::uint64_t* heads, unsigned count,
                                             std::uint64_t head, NodeSearch search) {
  if (search == NodeSearch::kCount) return search::count_below(heads, count, head);
  // Invariant: the answer is in [lo, lo + n]. Halving n is independent of the data.
  unsigned lo = 0;
  unsigned n = count;
  while (n > 1) {
    const unsigned half = n / 2;
    // Marked unpredictable: otherwise clang makes the select a branch, mispredicted half the time.
    const bool less = racy(heads[lo + half - 1]) < head;
    lo += BRAID_UNPREDICTABLE(less) ? half : 0u;
    n -= half;
  }
  if (n == 1) lo += racy(heads[lo]) < head ? 1u : 0u;
  return lo;
}

// The range a full-key bisection must still search: the slots sharing k's first 8 bytes (empty
// for k = +infinity, which sorts after every slot).
BRAID_OPTIMISTIC inline void search_range(const Node* n, unsigned count, const SearchKey& k,
                                          NodeSearch search, unsigned* lo, unsigned* hi) {
  if (k.infinite) {
    *lo = count;
    *hi = count;
    return;
  }
  const std::uint64_t* heads = n->heads();
  const unsigned below = heads_below(heads, count, k.head, search);
  // Usually none or one slot shares the head; composite keys (TPC-C's) may share it across a
  // whole node, where a walk would be linear: past two, the end is bisected too.
  unsigned end = below;
  if (end < count && racy(heads[end]) == k.head) {
    ++end;
    if (end < count && racy(heads[end]) == k.head) {
      ++end;
      end = k.head == ~std::uint64_t{0}
                ? count
                : end + heads_below(heads + end, count - end, k.head + 1, NodeSearch::kBisect);
    }
  }
  *lo = below;
  *hi = end;
}

// First slot whose key is >= k: inlined into a lookup's step (Lookup::step_inline); every
// other caller calls lower_bound, below.
__attribute__((always_inline)) BRAID_OPTIMISTIC inline unsigned lower_bound_inline(
    const Node* n, unsigned count, const SearchKey& k, NodeSearch search, bool* exact) {
  unsigned lo;
  unsigned hi;
  search_range(n, count, k, search, &lo, &hi);
  *exact = false;
  const std::uint64_t* heads = n->heads();
  const Tail* tails = n->tails(count);
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    int c = compare(n, racy(heads[mid]), tails[mid], k);
    if (c > 0) {
      lo = mid + 1;
    } else {
      hi = mid;
      if (c == 0) *exact = true;
    }
  }
  return lo;
}

BRAID_OPTIMISTIC unsigned lower_bound(const Node* n, unsigned count, const SearchKey& k,
                                      NodeSearch search, bool* exact) {
  return lower_bound_inline(n, count, k, search, exact);
}

// First slot whose key is > k. Its one caller is the descent's step.
__attribute__((always_inline)) BRAID_OPTIMISTIC inline unsigned upper_bound(const Node* n,
                                                                            unsigned count,
                                                                            const SearchKey& k,
                                                                            NodeSearch search) {
  unsigned lo;
  unsigned hi;
  search_range(n, count, k, search, &lo, &hi);
  const std::uint64_t* heads = n->heads();
  const Tail* tails = n->tails(count);
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    if (compare(n, racy(heads[mid]), tails[mid], k) >= 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Copies the full key of slot `i` of a node read with `count` entries to `out` (>= kMaxKey
// bytes); returns its length.
BRAID_OPTIMISTIC std::uint32_t copy_key(const Node* n, unsigned count, unsigned i, char* out) {
  const Tail& t = n->tails(count)[i];
  std::uint32_t len = racy(t.len);
  if (len == 0) len = 1;  // torn read; the caller's validation discards it
  // The head holds the key's first 8 bytes big-endian: all 8 are stored (out has room for
  // kMaxKey), the length says which count.
  const std::uint64_t bytes = __builtin_bswap64(racy(n->heads()[i]));  // util::load_head undone
  std::memcpy(out, &bytes, sizeof bytes);
  if (len > 8) {
    const char* p = suffix_ptr(n, racy(t.suffix_off), len - 8);
    for (std::uint32_t i = 0; i < len - 8; ++i) out[8 + i] = static_cast<char>(racy_byte(p + i));
  }
  return len;
}

BRAID_OPTIMISTIC void copy_fence(const Node* n, unsigned count, unsigned i, FenceKey* f) {
  f->present = true;
  f->len = static_cast<std::uint8_t>(copy_key(n, count, i, f->bytes));
}

// ---- Locked node edits (the caller holds the node's lock) ---------------------------------------

// A node's entries materialized as full keys, used to split and compact.
// Not value-initialized (make_unique_for_overwrite): zeroing its ~11 KiB would cost a split
// more than the split's own work.
struct NodeImage {
  struct Entry {
    std::uint16_t off;
    std::uint8_t len;
    std::uint32_t value_hint;
    std::uint64_t value;
  };
  char keys[Node::kMaxSlots * kMaxKey + kMaxKey];
  Entry entries[Node::kMaxSlots + 1];
  unsigned n = 0;
  std::uint32_t used = 0;

  std::string_view key(unsigned i) const { return {keys + entries[i].off, entries[i].len}; }
  void add(std::string_view k, std::uint64_t v, std::uint32_t value_hint) {
    BRAID_DASSERT(n <= Node::kMaxSlots);
    std::memcpy(keys + used, k.data(), k.size());
    entries[n++] = {static_cast<std::uint16_t>(used), static_cast<std::uint8_t>(k.size()),
                    value_hint, v};
    used += static_cast<std::uint32_t>(k.size());
  }
  void gather(const Node* node) {
    n = 0;
    used = 0;
    append(node);
  }
  // Adds a node's entries after those already held (a merge gathers both halves).
  void append(const Node* node) {
    char buf[kMaxKey];
    for (unsigned i = 0; i < node->count; ++i) {
      std::uint32_t len = copy_key(node, node->count, i, buf);
      const Tail& t = node->tails(node->count)[i];
      add({buf, len}, t.value, t.value_hint);
    }
  }
};

std::uint64_t head_of(std::string_view k) { return util::load_head(k.data(), k.size()); }

// Writes entry `idx` of a node that holds `node->count` entries (its arrays already sized).
void write_slot(Node* node, unsigned idx, std::string_view key, std::uint64_t value,
                std::uint32_t value_hint) {
  BRAID_DASSERT(idx < node->count);
  node->heads()[idx] = head_of(key);
  Tail& t = node->tails(node->count)[idx];
  t.value = value;
  t.len = static_cast<std::uint8_t>(key.size());
  t.suffix_off = 0;
  t.pad = 0;
  t.value_hint = value_hint;
  if (key.size() > 8) {
    const std::size_t suf = key.size() - 8;
    node->heap_begin = static_cast<std::uint16_t>(node->heap_begin - suf);
    std::memcpy(node->raw() + node->heap_begin, key.data() + 8, suf);
    t.suffix_off = node->heap_begin;
  }
}

// Rewrites `node` (locked) to hold image entries [from, to), keeping its lock word.
void rebuild(Node* node, const NodeImage& img, unsigned from, unsigned to) {
  node->count = static_cast<std::uint16_t>(to - from);
  node->heap_begin = kNodeBytes;
  node->garbage = 0;
  node->run_end = 0;
  for (unsigned i = from; i < to; ++i) {
    write_slot(node, i - from, img.key(i), img.entries[i].value, img.entries[i].value_hint);
  }
}

void compact(Node* node) {
  auto img = std::make_unique_for_overwrite<NodeImage>();
  img->gather(node);
  rebuild(node, *img, 0, img->n);
}

// Inserts at slot `idx`; the caller made sure the entry fits (after compaction if needed). The
// tails move up by one head's width, those from `idx` on by one entry's: the far ones first,
// then the near ones, then the heads, so nothing is overwritten before it moved.
void insert_at(Node* node, unsigned idx, std::string_view key, std::uint64_t value,
               std::uint32_t value_hint) {
  const std::size_t need = entry_bytes(key.size());
  if (node->free_bytes() < need) compact(node);
  BRAID_ASSERT(node->free_bytes() >= need);
  const unsigned count = node->count;
  BRAID_DASSERT(idx <= count);
  const Tail* old_tails = node->tails(count);
  Tail* new_tails = node->tails(count + 1);
  std::memmove(new_tails + idx + 1, old_tails + idx, (count - idx) * sizeof(Tail));
  std::memmove(new_tails, old_tails, idx * sizeof(Tail));
  std::uint64_t* heads = node->heads();
  std::memmove(heads + idx + 1, heads + idx, (count - idx) * sizeof(std::uint64_t));
  node->count = static_cast<std::uint16_t>(count + 1);
  write_slot(node, idx, key, value, value_hint);
}

// The mirror of insert_at: heads first, then the near tails, then the far ones.
void remove_at(Node* node, unsigned idx) {
  const unsigned count = node->count;
  BRAID_DASSERT(idx < count);
  const Tail* old_tails = node->tails(count);
  Tail* new_tails = node->tails(count - 1);
  if (old_tails[idx].len > 8)
    node->garbage = static_cast<std::uint16_t>(node->garbage + old_tails[idx].len - 8);
  std::uint64_t* heads = node->heads();
  std::memmove(heads + idx, heads + idx + 1, (count - idx - 1) * sizeof(std::uint64_t));
  std::memmove(new_tails, old_tails, idx * sizeof(Tail));
  std::memmove(new_tails + idx, old_tails + idx + 1, (count - idx - 1) * sizeof(Tail));
  node->count = static_cast<std::uint16_t>(count - 1);
  if (idx < node->run_end) --node->run_end;  // the run's end moved down with its slots
}

bool fits(const Node* node, std::size_t key_len) {
  return node->free_bytes() + node->garbage >= entry_bytes(key_len);
}

}  // namespace

bool fill_leaf(Node* n, std::span<const std::string_view> keys,
               std::span<const std::uint64_t> values) {
  BRAID_ASSERT(keys.size() == values.size());
  std::size_t bytes = 0;
  for (std::string_view k : keys) bytes += entry_bytes(k.size());
  if (keys.size() > Node::kMaxSlots || bytes > kNodeBytes - Node::kHeader) return false;
  n->count = static_cast<std::uint16_t>(keys.size());
  n->heap_begin = kNodeBytes;
  n->garbage = 0;
  n->level = 0;
  n->run_end = 0;
  n->leftmost = nullptr;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    BRAID_ASSERT(!keys[i].empty());
    BRAID_ASSERT(keys[i].size() <= kMaxKey);
    BRAID_ASSERT(i == 0 || keys[i - 1] < keys[i]);
    write_slot(n, static_cast<unsigned>(i), keys[i], values[i], 0);
  }
  return true;
}

namespace {

// ---- Underflow ----------------------------------------------------------------------------------

constexpr std::size_t kBodyBytes = kNodeBytes - Node::kHeader;
// A node under a quarter full asks for a merge, and a merge must leave the node that keeps the
// entries at most three quarters full: one that came out full would split again at the next
// insert, and a workload that removes and inserts around one boundary would merge and split
// for ever.
constexpr std::size_t kUnderfullBytes = kBodyBytes / 4;
constexpr std::size_t kMergedMaxBytes = kBodyBytes * 3 / 4;

// Bytes a node's live entries take: the arrays and the suffixes slots still refer to. Racy
// reads: the caller validates (or holds the lock).
BRAID_OPTIMISTIC std::size_t used_bytes(const Node* n) {
  const std::size_t heap = kNodeBytes - std::min<std::size_t>(racy(n->heap_begin), kNodeBytes);
  const std::size_t garbage = std::min<std::size_t>(racy(n->garbage), heap);
  return racy_count(n) * kEntryBytes + heap - garbage;
}

// The nodes from the root down to the one a rebalancing step looks at, each at the version it
// was read at: entry i + 1 is child `child_idx` of entry i (0: leftmost, j + 1: slot j's).
struct Path {
  struct Entry {
    Node* node;
    std::uint64_t version;
    unsigned child_idx;
  };
  Entry at[64];
  unsigned depth = 0;
  Entry& back() { return at[depth - 1]; }
};

// Unlocks what lock_path locked, bottom-up.
void unlock_nodes(Node* const* nodes, unsigned n) {
  while (n > 0) nodes[--n]->lock.unlock();
}

// An insert into a leaf locked at `version`: kPresent (and *existing) when the key is there,
// kInserted when it fitted (the lock let go either way), kFull with the lock still held and
// *idx the key's place, for the caller to split or let go.
enum class LeafInsert { kPresent, kInserted, kFull };
LeafInsert insert_locked(Node* leaf, std::uint64_t version, std::string_view key,
                         const SearchKey& k, std::uint64_t value, std::uint32_t value_hint,
                         std::uint64_t* existing, LeafChange* change, unsigned* idx) {
  BRAID_DASSERT(leaf->level == 0);
  bool exact;
  *idx = lower_bound(leaf, leaf->count, k, NodeSearch::kBisect, &exact);
  if (exact) {
    *existing = leaf->tails(leaf->count)[*idx].value;
    leaf->lock.unlock();
    return LeafInsert::kPresent;
  }
  if (!fits(leaf, key.size())) return LeafInsert::kFull;
  insert_at(leaf, *idx, key, value, value_hint);
  leaf->run_end = static_cast<std::uint8_t>(*idx + 1);
  leaf->lock.unlock();
  // Upgrade and unlock each add kLocked: nothing else changed the leaf in between.
  if (change != nullptr) *change = {leaf, version, version + 2 * OptLock::kLocked};
  return LeafInsert::kInserted;
}

}  // namespace

// ---- Descent
// -------------------------------------------------------------------------------------

Descent::Descent(const BTree& tree, const SearchKey& key, Bias bias, bool track_fences,
                 std::size_t split_threshold, NodeSearch search, bool load, bool user)
    : tree_(tree),
      key_(key),
      bias_(bias),
      search_(search),
      track_fences_(track_fences),
      load_(load),
      mark_used_(user && tree.pages() && tree.marks_uses()),
      split_threshold_(split_threshold) {
  node_ = tree_.root_.load(std::memory_order_acquire);
}

__attribute__((always_inline)) inline unsigned Descent::route(const Node* n, unsigned count) {
  unsigned idx;  // children: 0 = leftmost, i + 1 = slot i
  if (bias_ == Bias::kFloor) {
    idx = upper_bound(n, count, key_, search_);
  } else {
    bool exact;
    idx = lower_bound(n, count, key_, search_, &exact);
  }
  if (track_fences_) {
    if (idx > 0) copy_fence(n, count, idx - 1, &lower_);
    if (idx < count) copy_fence(n, count, idx, &upper_);
  }
  return idx;
}

unsigned Descent::child_of_frame(const Node* frame) {
  BRAID_ASSERT(frame->level != 0);
  return route(frame, frame->count);
}

namespace {
thread_local ContentionCounters tls_contention;
thread_local PagingCounters tls_paging;
}  // namespace

ContentionCounters& thread_contention() { return tls_contention; }
PagingCounters& thread_paging() { return tls_paging; }

void Descent::restart() {
  ++restarts_;
  ++tls_contention.restarts;
  // Back off a little: a restart means a writer holds or just changed a node on our path. The
  // clock reads are on the restart path only (braid-bench contention reports the share).
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(restarts_, 64); ++i) util::cpu_relax();
  tls_contention.backoff_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  BRAID_ASSERT(restarts_ < (1u << 30));  // livelock guard: never legitimately reached
  node_ = tree_.root_.load(std::memory_order_acquire);
  level_ = ~0u;
  parent_ = nullptr;
  lower_.present = false;
  upper_.present = false;
}

bool Descent::to_leaf() {
  BRAID_DASSERT(load_);
  for (;;) {
    const Step s = step();
    if (s == Step::kLeaf) return true;
    if (s == Step::kFailed) return false;
    if (s != Step::kNext) restart();
  }
}

__attribute__((noinline)) Descent::Step Descent::stored(Node* n, std::uint64_t v, unsigned idx,
                                                        std::uint64_t address) {
  if (!load_) {
    node_ = n;
    version_ = v;
    node_idx_ = static_cast<std::uint8_t>(child_idx_);
    child_idx_ = idx;
    stored_address_ = address;
    return Step::kStored;
  }
  Node* child = nullptr;
  switch (tree_.load_child(n, v, idx, address, &child)) {
    case BTree::Load::kInstalled:
      break;
    case BTree::Load::kRaced:
      return Step::kRestart;
    case BTree::Load::kFailed:
      return Step::kFailed;
  }
  // As a kNext: the parent at the version the install left it at, which the child's step
  // validates (a writer since then restarts it).
  parent_ = n;
  parent_version_ = v + 2 * OptLock::kLocked;
  node_ = child;
  level_ = racy(n->level) - 1u;
  child_idx_ = idx;
  return Step::kNext;
}

Descent::Step Descent::step() { return step_inline(); }

__attribute__((always_inline)) inline Descent::Step Descent::step_inline() {
  Node* n = node_;
  const std::uint64_t v = n->lock.read_version();
  if (OptLock::is_locked(v)) return Step::kRestart;
  // The child pointer we followed must still be current when we read the child's version;
  // for the root, the root pointer must still name this node (a root split replaces it).
  if (parent_ != nullptr) {
    if (!parent_->lock.validate(parent_version_)) return Step::kRestart;
  } else if (tree_.root_.load(std::memory_order_acquire) != n) {
    return Step::kRestart;
  }
  if (racy(n->level) == 0) {
    version_ = v;
    if (mark_used_) {
      BTree::note_used(n);
      ++thread_paging().leaf_visits;
    }
    return Step::kLeaf;
  }
  if (mark_used_ && parent_ != nullptr) ++thread_paging().inner_visits;
  const unsigned count = racy_count(n);
  if (split_threshold_ != 0) {
    const long free = static_cast<long>(racy(n->heap_begin)) - static_cast<long>(Node::kHeader) -
                      static_cast<long>(count * kEntryBytes) + racy(n->garbage);
    if (free < static_cast<long>(split_threshold_)) {
      if (!n->lock.validate(v)) return Step::kRestart;
      version_ = v;
      return Step::kSplitInner;
    }
  }
  const unsigned idx = route(n, count);
  const std::uint64_t word = child_word(n, count, idx);
  if (!n->lock.validate(v)) return Step::kRestart;
  if (is_address(word)) [[unlikely]]
    return stored(n, v, idx, word);
  Node* child = reinterpret_cast<Node*>(word);
  BRAID_DASSERT(child != nullptr);
  parent_ = n;
  parent_version_ = v;
  node_ = child;
  level_ = racy(n->level) - 1u;
  child_idx_ = idx;
  return Step::kNext;
}

// ---- BTree
// ---------------------------------------------------------------------------------------

BTree::BTree(std::size_t cache_bytes, ChunkPool* pool, std::size_t llc_bytes)
    : cache_bytes_(cache_bytes), llc_nodes_(llc_bytes / kNodeBytes), pool_(pool) {
  root_.store(new_node(0), std::memory_order_release);
}

BTree::~BTree() {
  for (void* c : chunks_) std::free(c);
}

Node* BTree::new_node(std::uint8_t level) {
  // Where the frame comes from decides what its lock and stamp need: a frame that left the
  // tree goes on counting its version; a given-back one reads zeros and starts above every
  // version a given-back frame had; a fresh one is constructed.
  enum class From { kFree, kReleased, kChunk };
  From from = From::kChunk;
  Node* n = nullptr;
  void* mem = nullptr;
  {
    std::lock_guard<std::mutex> guard(alloc_mutex_);
    if (!free_nodes_.empty()) {
      from = From::kFree;
      n = free_nodes_.back();
      free_nodes_.pop_back();
      free_after_release_ = std::min(free_after_release_, free_nodes_.size());
      nodes_free_.fetch_sub(1, std::memory_order_relaxed);
    } else if (!released_.empty()) {
      // Not constructed again, as any reused frame: stale readers may still read it.
      from = From::kReleased;
      n = released_.back();
      released_.pop_back();
      released_count_.fetch_sub(1, std::memory_order_relaxed);
      nodes_free_.fetch_sub(1, std::memory_order_relaxed);
      n->lock.revive_above(released_version_);
      n->pstamp.store(released_pstamp_, std::memory_order_relaxed);
    } else {
      if (chunk_cursor_ == chunk_end_) {
        void* c = pool_ != nullptr ? pool_->take() : nullptr;
        if (c == nullptr) {
          c = std::aligned_alloc(kChunkBytes, kChunkBytes);
          BRAID_ASSERT(c != nullptr);  // out of memory: nothing sensible to do mid-split
          // Best effort. Without huge pages a small tree faults in only the 4 KiB pages it
          // uses, not a zeroed 2 MiB page per tree (what a database opened many times pays).
          if (pool_ == nullptr || pool_->huge_pages()) ::madvise(c, kChunkBytes, MADV_HUGEPAGE);
          chunks_.push_back(c);
        }
        // The chunk's first slots hold its nodes' used marks (used_mark).
        std::memset(c, 0, kChunkHeaderBytes);
        chunk_cursor_ = static_cast<char*>(c) + kChunkHeaderBytes;
        chunk_end_ = static_cast<char*>(c) + kChunkBytes;
      }
      mem = chunk_cursor_;
      chunk_cursor_ += kNodeBytes;
    }
  }
  if (from == From::kChunk) n = new (mem) Node;  // outside the mutex: the lock word and all
  // A reused node is not constructed again: its version word goes on counting (revive, below)
  // and it keeps the SSN stamp of its earlier lives (Node::pstamp). Readers still holding it
  // read these fields racily and fail their validation.
  n->count = 0;
  n->heap_begin = kNodeBytes;
  n->garbage = 0;
  n->level = level;
  n->run_end = 0;
  n->leftmost = nullptr;
  // Spared by the hand's next pass, unless no descent marks (an open's replay).
  if (pages()) used_mark(n).store(marks_uses() ? 1 : 0, std::memory_order_relaxed);
  if (level < kLevels) level_nodes_[level].fetch_add(1, std::memory_order_relaxed);
  switch (from) {
    case From::kFree:
      n->lock.revive();
      break;
    case From::kReleased:
      break;  // revived above its floor, under the mutex
    case From::kChunk: {
      n->pstamp.store(0, std::memory_order_relaxed);
      const std::size_t nodes = nodes_allocated_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (nodes * kNodeBytes > cache_bytes_ && !outgrew_cache_.load(std::memory_order_relaxed)) {
        outgrew_cache_.store(true, std::memory_order_relaxed);
      }
      break;
    }
  }
  return n;
}

void BTree::retire(Node* n) {
  BRAID_DASSERT(n->lock.locked_now());
  n->lock.retire();
  if (n->level < kLevels) level_nodes_[n->level].fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(alloc_mutex_);
  free_nodes_.push_back(n);
  nodes_free_.fetch_add(1, std::memory_order_relaxed);
}

std::size_t BTree::release_free_frames(std::size_t keep) {
  constexpr std::uintptr_t kPage = 4096;
  constexpr std::size_t kPerPage = kPage / kNodeBytes;
  static_assert(kPage % kNodeBytes == 0);
  static_assert(kChunkHeaderBytes <= kPage, "a chunk's first page holds its marks: kept");
  std::lock_guard<std::mutex> guard(alloc_mutex_);
  // Free frames scattered over pages with frames in use cannot go: a call again before `keep`
  // more came would sort the list for nothing (under a small budget, at every move of the hand).
  if (free_nodes_.size() <= keep || free_nodes_.size() < free_after_release_ + keep) return 0;
  std::sort(free_nodes_.begin(), free_nodes_.end());
  const auto page_of = [](const Node* n) {
    return reinterpret_cast<std::uintptr_t>(n) & ~(kPage - 1);
  };
  const auto first_page = [](std::uintptr_t page) { return page % kChunkBytes == 0; };
  // Whole pages of free frames, taken from the low addresses up while more than `keep` stay.
  std::vector<Node*> kept;
  std::vector<std::uintptr_t> pages;
  kept.reserve(free_nodes_.size());
  const std::size_t total = free_nodes_.size();
  std::size_t i = 0;
  while (i < total) {
    const std::uintptr_t page = page_of(free_nodes_[i]);
    std::size_t j = i;
    while (j < total && page_of(free_nodes_[j]) == page) ++j;
    // A whole page of free frames, not a chunk's first, goes while `keep` frames stay after.
    if (j - i == kPerPage && !first_page(page) && total - (pages.size() + 1) * kPerPage >= keep) {
      pages.push_back(page);
      for (std::size_t k = i; k < j; ++k) {
        Node* n = free_nodes_[k];
        BRAID_DASSERT(n->lock.obsolete_now());
        released_version_ = std::max(released_version_, n->lock.word_now());
        released_pstamp_ = std::max(released_pstamp_, n->pstamp.load(std::memory_order_relaxed));
        released_.push_back(n);
      }
    } else {
      kept.insert(kept.end(), free_nodes_.begin() + static_cast<std::ptrdiff_t>(i),
                  free_nodes_.begin() + static_cast<std::ptrdiff_t>(j));
    }
    i = j;
  }
  free_nodes_ = std::move(kept);
  free_after_release_ = free_nodes_.size();
  released_count_.store(released_.size(), std::memory_order_relaxed);
  // Readers that still hold a given-back frame read zeros and fail their validation, as after
  // any reuse: a page read after MADV_DONTNEED is a zero page, never unmapped memory.
  for (std::size_t k = 0; k < pages.size();) {
    std::size_t e = k + 1;
    while (e < pages.size() && pages[e] == pages[e - 1] + kPage) ++e;
    ::madvise(reinterpret_cast<void*>(pages[k]), (e - k) * kPage, MADV_DONTNEED);
    k = e;
  }
  released_bytes_.fetch_add(pages.size() * kPage, std::memory_order_relaxed);
  return pages.size() * kPage;
}

void BTree::note_key_len(std::size_t len) {
  std::uint16_t cur = max_key_len_.load(std::memory_order_relaxed);
  while (len > cur && !max_key_len_.compare_exchange_weak(cur, static_cast<std::uint16_t>(len),
                                                          std::memory_order_relaxed)) {
  }
}

bool BTree::lock_pair(Node* node, std::uint64_t v, Node* parent, std::uint64_t pv) {
  if (parent != nullptr && !parent->lock.try_upgrade(pv)) return false;
  if (!node->lock.try_upgrade(v)) {
    if (parent != nullptr) parent->lock.unlock();
    return false;
  }
  return true;
}

void BTree::install_new_root(Node* left, std::string_view sep, Node* right) {
  Node* root = new_node(static_cast<std::uint8_t>(left->level + 1));
  root->leftmost = left;
  root->count = 1;
  write_slot(root, 0, sep, reinterpret_cast<std::uint64_t>(right), 0);
  // `left` (the old root) is locked by the caller, so no reader can pass the version check on
  // it before the new root is published.
  root_.store(root, std::memory_order_release);
}

void BTree::build_over_stored(std::span<const StoredLeaf> leaves) {
  BRAID_ASSERT(leaves.size() >= 2);
  // Children per inner node past its leftmost: room for the splits the first writes cause.
  constexpr unsigned kFill = Node::kMaxSlots * 3 / 4;
  // One level at a time: its nodes' first keys and words. The leaves' level reads them from
  // `leaves` (views into the run list): a copy there would be tens of MiB at the open's peak.
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    BRAID_ASSERT(is_address(leaves[i].address));
    BRAID_ASSERT(i == 0 || leaves[i - 1].first_key < leaves[i].first_key);
  }
  std::vector<std::string> keys;
  std::vector<std::uint64_t> words;
  Node* top = nullptr;
  for (std::uint8_t level = 1;; ++level) {
    const std::size_t count = level == 1 ? leaves.size() : keys.size();
    const auto key_at = [&](std::size_t i) -> std::string_view {
      return level == 1 ? leaves[i].first_key : std::string_view(keys[i]);
    };
    const auto word_at = [&](std::size_t i) { return level == 1 ? leaves[i].address : words[i]; };
    std::vector<std::string> up_keys;
    std::vector<std::uint64_t> up_words;
    Node* n = nullptr;
    Node* before = nullptr;  // the node left of n
    for (std::size_t i = 0; i < count; ++i) {
      if (n != nullptr && n->count < kFill && fits(n, key_at(i).size())) {
        insert_at(n, n->count, key_at(i), word_at(i), 0);
        continue;
      }
      before = n;
      n = new_node(level);
      n->leftmost = reinterpret_cast<Node*>(word_at(i));
      up_keys.emplace_back(key_at(i));
      up_words.push_back(reinterpret_cast<std::uint64_t>(n));
    }
    // No inner node with only its leftmost child: the last one takes its left neighbour's last.
    if (n->count == 0 && before != nullptr) {
      BRAID_ASSERT(before->count >= 1);
      char buf[kMaxKey];
      const unsigned last = before->count - 1u;
      const std::uint32_t len = copy_key(before, before->count, last, buf);
      const std::uint64_t word = before->tails(before->count)[last].value;
      remove_at(before, last);
      insert_at(n, 0, up_keys.back(), reinterpret_cast<std::uint64_t>(n->leftmost), 0);
      n->leftmost = reinterpret_cast<Node*>(word);
      up_keys.back().assign(buf, len);
    }
    if (up_keys.size() == 1) {
      top = n;
      break;
    }
    keys = std::move(up_keys);
    words = std::move(up_words);
  }
  Node* old = root_.load(std::memory_order_relaxed);
  const bool locked = old->lock.try_upgrade(old->lock.read_version());
  BRAID_ASSERT(locked);  // nobody else has it: the tree is not shared yet
  root_.store(top, std::memory_order_release);
  retire(old);
  stored_.fetch_add(leaves.size(), std::memory_order_relaxed);
}

BRAID_OPTIMISTIC bool BTree::next_resident_sibling(const Descent& d, std::string* key) const {
  const Node* parent = d.node();
  const unsigned count = std::min<unsigned>(racy(parent->count), Node::kMaxSlots);
  unsigned j = d.child_index() + 1;
  while (j <= count && is_address(child_word(parent, count, j))) ++j;
  // All the rest on storage too: on to the last of them, whose upper fence is the parent's.
  if (j > count) j = count;
  if (j <= d.child_index()) return false;
  char buf[kMaxKey];
  const std::uint32_t len = copy_key(parent, count, j - 1, buf);
  if (!parent->lock.validate(d.version())) return false;
  key->assign(buf, len);
  return true;
}

BRAID_OPTIMISTIC bool Lookup::step() { return step_inline(); }

namespace {
// What Lookup::next_lines learns, per thread and per level class (0: leaves, 1: inner nodes):
//   fill16   the mean count of the nodes searched, in sixteenths (exponential, 1/8 per check);
//   hit256   how often the predicted tails held the slot the search landed on, in 256ths
//            (exponential, 1/16 per check). From 0: whole nodes until predictions prove out;
//   skipped  hints since the last prediction made only to be checked.
struct LineModel {
  std::uint16_t fill16 = 16 * 28;
  std::uint16_t hit256 = 0;
  std::uint16_t skipped = 0;
};
thread_local LineModel t_line_model[2];
// A miss costs a dependent DRAM round trip; a hit saves about 7 of a get's 17 line fetches,
// each a small fraction of that round trip: break-even near 95 % hits, so ask for 97 %.
constexpr std::uint16_t kHitsToPredict = 248;
// Below that, one hint in this many still predicts, to be checked, so keys that become
// predictable are noticed; the rest return at once.
constexpr std::uint16_t kCheckEvery = 16;
// The byte offset of slot `i`'s tail in a node of `count` entries.
inline unsigned tail_offset(unsigned count, unsigned i) {
  return static_cast<unsigned>(Node::kHeader + count * sizeof(std::uint64_t) + i * sizeof(Tail));
}
// Checks a prediction against the slot a search landed on (whose tail it then read).
inline void check_prediction(unsigned cls, const NodeLines& p, unsigned count, unsigned slot) {
  LineModel& m = t_line_model[cls];
  m.fill16 = static_cast<std::uint16_t>(m.fill16 - m.fill16 / 8 + count * 2);
  const unsigned off = tail_offset(count, slot);
  const bool hit = (off & ~63u) >= (p.tail_begin & ~63u) && off + sizeof(Tail) <= p.tail_end;
  m.hit256 = static_cast<std::uint16_t>(m.hit256 - m.hit256 / 16 + (hit ? 16 : 0));
}
}  // namespace

BRAID_OPTIMISTIC void Lookup::check_leaf() const {
  check_prediction(0, predicted_, racy_count(descent_.node()), leaf_slot_);
}

BRAID_OPTIMISTIC NodeLines Lookup::next_lines() {
  const Node* p = descent_.parent();
  const unsigned idx = descent_.child_index();
  const unsigned pc = racy_count(p);
  // The parent was searched: check what was predicted for it (child 0 is the header's, child
  // i + 1 slot i's).
  if (predicted_node_ == p) check_prediction(1, predicted_, pc, idx == 0 ? 0 : idx - 1);
  predicted_node_ = nullptr;
  LineModel& m = t_line_model[descent_.level() == 0 ? 0 : 1];
  const bool use = m.hit256 >= kHitsToPredict;
  if (!use && ++m.skipped < kCheckEvery) return kWholeNode;
  m.skipped = 0;
  // The outermost children have one separator only.
  if (idx == 0 || idx >= pc) return kWholeNode;
  const std::uint64_t lo = racy(p->heads()[idx - 1]);
  const std::uint64_t hi = racy(p->heads()[idx]);
  const std::uint64_t k = key_.head;
  if (k < lo || k >= hi) return kWholeNode;  // a torn read: the step will restart
  // Interpolated: the key's slot, f * count, and so its tail's offset.
  const double count = m.fill16 / 16.0;
  const double f = static_cast<double>(k - lo) / static_cast<double>(hi - lo);
  const double tail = static_cast<double>(tail_offset(0, 0)) +
                      count * static_cast<double>(sizeof(std::uint64_t)) +
                      f * count * static_cast<double>(sizeof(Tail));
  // Two slots either side.
  const double b = tail - 2.0 * sizeof(Tail);
  const double e = tail + 3.0 * sizeof(Tail);
  predicted_.head_end = static_cast<std::uint16_t>(tail_offset(Node::kMaxSlots, 0));
  predicted_.tail_begin = static_cast<std::uint16_t>(b < 0 ? 0 : b);
  predicted_.tail_end =
      static_cast<std::uint16_t>(e > static_cast<double>(kNodeBytes) ? kNodeBytes : e);
  predicted_node_ = descent_.node();
  return use ? predicted_ : kWholeNode;
}

BRAID_OPTIMISTIC void Lookup::run(bool hint) {
  while (step_inline()) {
    if (hint) prefetch_whole(descent_.node());
  }
}

__attribute__((always_inline)) BRAID_OPTIMISTIC inline bool Lookup::step_inline() {
  for (;;) {
    const Descent::Step s = descent_.step_inline();
    if (s == Descent::Step::kNext) return true;
    if (s == Descent::Step::kRestart) {
      descent_.restart();
      return true;
    }
    if (s == Descent::Step::kFailed) [[unlikely]] {
      failed_ = true;
      found_ = false;
      return false;
    }
    if (s == Descent::Step::kStored) [[unlikely]] {  // the driver loads (install)
      stored_ = true;
      return true;
    }
    BRAID_DASSERT(s == Descent::Step::kLeaf);
    const Node* leaf = descent_.node();
    const unsigned count = racy_count(leaf);
    bool exact;
    const unsigned idx = lower_bound_inline(leaf, count, key_, descent_.search(), &exact);
    const std::uint64_t v = exact ? racy(leaf->tails(count)[idx].value) : 0;
    const std::uint32_t h = exact ? racy(leaf->tails(count)[idx].value_hint) : 0;
    if (!leaf->lock.validate(descent_.version())) {
      descent_.restart();
      continue;  // the root is resident: no point in handing it back for a hint
    }
    value_hint_ = h;
    found_ = exact;
    // Kept for next_lines' check: one store per lookup, where finding the slot again would
    // cost every predicted lookup a second search of its leaf.
    leaf_slot_ = static_cast<std::uint16_t>(idx);
    value_ = v;
    return false;
  }
}

Outcome BTree::lookup(std::string_view key, std::uint64_t* value) const {
  BRAID_DASSERT(!key.empty() && key.size() <= kMaxKey);
  Lookup l(*this, key);
  l.run(false);
  if (l.failed()) [[unlikely]]
    return Outcome::kFailed;
  if (l.found()) *value = l.value();
  return Outcome::of(l.found());
}

Outcome BTree::insert_if_absent(std::string_view key, std::uint64_t value, std::uint64_t* existing,
                                LeafChange* change, const LeafRead* at, std::uint32_t value_hint) {
  BRAID_ASSERT(!key.empty());
  BRAID_ASSERT(key.size() <= kMaxKey);
  note_key_len(key.size());
  const SearchKey k(key);
  // The lookup's leaf: TPC-C's writes look every key up before inserting it, and a second
  // descent over the nodes that lookup just read would repeat its work.
  if (at != nullptr && at->leaf != nullptr && at->leaf->lock.try_upgrade(at->version)) {
    unsigned idx;
    switch (
        insert_locked(at->leaf, at->version, key, k, value, value_hint, existing, change, &idx)) {
      case LeafInsert::kPresent:
        return Outcome::kNo;
      case LeafInsert::kInserted:
        return Outcome::kYes;
      case LeafInsert::kFull:
        at->leaf->lock.unlock();  // a split needs the parent: the descent finds and locks it
        break;
    }
  }
  // A descent of its own finds a path the caller has not read: a secondary index's entry
  // (engine/secondary.cc), a load's insert. In a tree past the cache each node below the root is
  // then fetched whole before its step, and counted, as a plain lookup's (Lookup::run): bisecting
  // a cold node's heads misses one probe after another.
  const bool cold = outgrew_cache();
  for (;;) {
    // Inner nodes on the way down must have room for the longest separator a child split could
    // push up; the bound is the longest key ever inserted, re-read after every restart.
    Descent d(*this, k, Descent::Bias::kFloor, false,
              entry_bytes(max_key_len_.load(std::memory_order_relaxed)),
              cold ? NodeSearch::kCount : NodeSearch::kBisect);
    for (;;) {
      const Descent::Step s = d.step();
      if (s == Descent::Step::kNext) {
        if (cold) prefetch_whole(d.node());
        continue;
      }
      if (s == Descent::Step::kRestart) break;
      if (s == Descent::Step::kFailed) [[unlikely]] {
        *existing = 0;
        return Outcome::kFailed;
      }
      if (s == Descent::Step::kSplitInner) {
        if (lock_pair(d.node(), d.version(), d.parent(), d.parent_version())) {
          Node* n = d.node();
          const unsigned last = n->count - 1u;
          split_inner(n, d.parent(), compare(n, n->heads()[last], n->tails(n->count)[last], k) > 0);
          d.node()->lock.unlock();
          if (d.parent() != nullptr) d.parent()->lock.unlock();
        }
        break;
      }
      Node* leaf = d.node();
      if (!leaf->lock.try_upgrade(d.version())) break;
      unsigned idx;
      const LeafInsert r =
          insert_locked(leaf, d.version(), key, k, value, value_hint, existing, change, &idx);
      if (r != LeafInsert::kFull) return Outcome::of(r == LeafInsert::kInserted);
      Node* parent = d.parent();
      if (parent != nullptr && !parent->lock.try_upgrade(d.parent_version())) {
        leaf->lock.unlock();
        break;
      }
      split_leaf(leaf, parent, idx);
      leaf->lock.unlock();
      if (parent != nullptr) parent->lock.unlock();
      break;  // retry the insert in the half that now has room
    }
  }
}

void BTree::link_right_sibling(Node* node, Node* parent, std::string_view sep, Node* right) {
  if (parent == nullptr) {
    install_new_root(node, sep, right);
    return;
  }
  bool exact;
  const SearchKey sk(sep);
  const unsigned pos = lower_bound(parent, parent->count, sk, NodeSearch::kBisect, &exact);
  BRAID_ASSERT(!exact);
  insert_at(parent, pos, sep, reinterpret_cast<std::uint64_t>(right), 0);
}

void BTree::split_leaf(Node* node, Node* parent, unsigned idx) {
  const bool run = idx != 0 && idx == node->run_end;
  auto img = std::make_unique_for_overwrite<NodeImage>();
  img->gather(node);
  BRAID_ASSERT(img->n >= 2);
  BRAID_ASSERT(idx <= img->n);
  std::size_t left_bytes = 0;  // of the entries below idx, when cutting there
  if (run && idx < img->n) {
    for (unsigned i = 0; i < idx; ++i) left_bytes += entry_bytes(img->entries[i].len);
  }
  unsigned m;
  if (idx == img->n) {
    // Ascending inserts (bulk loads, monotonically increasing keys) would leave every leaf half
    // full after an even split; keep the left node full instead (like B-tree "fastpath" splits).
    m = img->n - 1;
  } else if (run && left_bytes + entry_bytes(max_key_len_.load(std::memory_order_relaxed)) <=
                        kNodeBytes - Node::kHeader) {
    // An ascending run inside the leaf: keys rising within a range whose next range follows in
    // the same leaf (TPC-C's order lines, orders and new orders rise per district). An even
    // split would leave the left half half full for good, since the run only ever inserts at
    // its end; cutting at the run's end lets it fill the left half, and the right half keeps
    // the next range whole. The left half keeps room for the insert itself.
    m = idx;
  } else {
    // Split by bytes, not count, so that both halves have room with variable-length keys.
    std::size_t total = 0;
    for (unsigned i = 0; i < img->n; ++i) total += entry_bytes(img->entries[i].len);
    std::size_t acc = 0;
    m = 0;
    while (m < img->n - 1 && acc + entry_bytes(img->entries[m].len) <= total / 2) {
      acc += entry_bytes(img->entries[m].len);
      ++m;
    }
    if (m == 0) m = 1;
  }
  // Suffix truncation: the separator is the shortest prefix of the right half's first key that
  // still sorts above the left half's last key, which keeps inner nodes wide.
  const std::string_view last = img->key(m - 1);
  const std::string_view first = img->key(m);
  std::size_t cp = 0;
  while (cp < last.size() && cp < first.size() && last[cp] == first[cp]) ++cp;
  BRAID_ASSERT(cp < first.size());
  const std::string sep(first.substr(0, cp + 1));
  if (parent != nullptr && !fits(parent, sep.size())) return;  // longer keys arrived; retry
  Node* right = new_node(0);
  // Under the lock: a reader that raised the stamp before our lock saw its read version
  // change (and aborts); one that raised it after finds it copied (mvcc/ssn.h).
  // The larger of the two: a reused node keeps the stamp of its earlier lives (Node::pstamp).
  right->pstamp.store(std::max(right->pstamp.load(std::memory_order_seq_cst),
                               node->pstamp.load(std::memory_order_seq_cst)),
                      std::memory_order_seq_cst);
  rebuild(right, *img, m, img->n);
  rebuild(node, *img, 0, m);
  link_right_sibling(node, parent, sep, right);
}

void BTree::split_inner(Node* node, Node* parent, bool append) {
  auto img = std::make_unique_for_overwrite<NodeImage>();
  img->gather(node);
  BRAID_ASSERT(img->n >= 3);
  const unsigned m = append ? img->n - 1 : img->n / 2;
  const std::string sep(img->key(m));
  if (parent != nullptr && !fits(parent, sep.size())) return;
  Node* right = new_node(node->level);
  right->leftmost = reinterpret_cast<Node*>(img->entries[m].value);
  rebuild(right, *img, m + 1, img->n);
  rebuild(node, *img, 0, m);
  link_right_sibling(node, parent, sep, right);
}

void BTree::set_value_hint(const LeafRead& at, unsigned slot, std::uint32_t value_hint) {
  Node* leaf = at.leaf;
  if (leaf == nullptr || !leaf->lock.try_upgrade(at.version)) return;
  BRAID_DASSERT(leaf->level == 0);
  BRAID_DASSERT(slot < leaf->count);
  leaf->tails(leaf->count)[slot].value_hint = value_hint;
  // Restored, not bumped: only the hint changed, and nobody trusts a hint.
  leaf->lock.restore(at.version);
}

namespace {
// Descends to the leaf that covers `k` and locks it at the version the descent validated (the
// caller unlocks it, or restores that version when it changed nothing); `*idx` is k's slot in
// it and `*exact` whether k is there. Null when a node on the way could not be loaded.
Node* lock_leaf(Descent& d, const SearchKey& k, unsigned* idx, bool* exact) {
  for (;;) {
    if (!d.to_leaf()) return nullptr;
    Node* leaf = d.node();
    if (leaf->lock.try_upgrade(d.version())) {
      BRAID_DASSERT(leaf->level == 0);
      *idx = lower_bound(leaf, leaf->count, k, NodeSearch::kBisect, exact);
      return leaf;
    }
    d.restart();
  }
}
}  // namespace

Outcome BTree::remove(std::string_view key, std::uint64_t expected, bool any) {
  return change_matching(key, expected, any, nullptr, nullptr, nullptr);
}

Outcome BTree::remove_if(std::string_view key, std::uint64_t expected, bool (*consent)(void*),
                         void* arg) {
  BRAID_ASSERT(consent != nullptr);
  return change_matching(key, expected, false, consent, arg, nullptr);
}

Outcome BTree::replace(std::string_view key, std::uint64_t expected, std::uint64_t desired) {
  return change_matching(key, expected, false, nullptr, nullptr, &desired);
}

Outcome BTree::change_matching(std::string_view key, std::uint64_t expected, bool any,
                               bool (*consent)(void*), void* arg, const std::uint64_t* desired) {
  BRAID_ASSERT(!key.empty());
  BRAID_ASSERT(key.size() <= kMaxKey);
  const SearchKey k(key);
  Descent d(*this, k, Descent::Bias::kFloor, false, 0, NodeSearch::kBisect);
  unsigned idx;
  bool exact;
  Node* leaf = lock_leaf(d, k, &idx, &exact);
  if (leaf == nullptr) return Outcome::kFailed;
  const bool hit = exact && (any || leaf->tails(leaf->count)[idx].value == expected) &&
                   (consent == nullptr || consent(arg));
  if (!hit) {
    leaf->lock.restore(d.version());  // nothing changed: readers need not restart
    return Outcome::kNo;
  }
  if (desired != nullptr) {
    leaf->tails(leaf->count)[idx].value = *desired;
    leaf->lock.unlock();
    return Outcome::kYes;
  }
  remove_at(leaf, idx);
  const bool underfull = used_bytes(leaf) < kUnderfullBytes;
  leaf->lock.unlock();
  if (underfull) rebalance(k);
  return Outcome::kYes;
}

void BTree::rebalance(const SearchKey& k) {
  // A step that found a lock taken or a version moved is tried again a few times, then left
  // to a later removal in the range: merging is for space, never needed for correctness.
  constexpr unsigned kTries = 4;
  std::uint32_t level = 0;
  unsigned tries = 0;
  while (tries < kTries) {
    const std::uint32_t next = rebalance_level(k, level);
    if (next == kRebalanceDone) return;
    if (next == kRebalanceRetry) {
      ++tries;
      continue;
    }
    BRAID_DASSERT(next > level);
    level = next;
  }
}

namespace {

enum class PathRead { kOk, kRetry, kShort };

// Reads the path from the root down to the node at `level` on k's path, every node validated
// before its child pointer is followed and each child's version read while its parent still
// validated. kShort: the tree is not that tall (any more).
BRAID_OPTIMISTIC PathRead read_path(const std::atomic<Node*>& root, const SearchKey& k,
                                    std::uint32_t level, Path* p) {
  p->depth = 0;
  Node* n = root.load(std::memory_order_acquire);
  std::uint64_t v = n->lock.read_version();
  if (OptLock::is_locked(v)) return PathRead::kRetry;
  if (root.load(std::memory_order_acquire) != n) return PathRead::kRetry;
  unsigned idx = 0;
  for (;;) {
    BRAID_ASSERT(p->depth < std::size(p->at));
    p->at[p->depth++] = {n, v, idx};
    const unsigned nl = racy(n->level);
    if (!n->lock.validate(v)) return PathRead::kRetry;
    if (nl == level) return PathRead::kOk;
    if (nl < level) return PathRead::kShort;
    const unsigned count = racy_count(n);
    idx = upper_bound(n, count, k, NodeSearch::kBisect);
    const std::uint64_t word = child_word(n, count, idx);
    if (!n->lock.validate(v)) return PathRead::kRetry;
    if (is_address(word)) return PathRead::kShort;  // on storage: nothing there to merge now
    Node* child = reinterpret_cast<Node*>(word);
    const std::uint64_t cv = child->lock.read_version();
    if (OptLock::is_locked(cv)) return PathRead::kRetry;
    if (!n->lock.validate(v)) return PathRead::kRetry;  // still the child when cv was read
    n = child;
    v = cv;
  }
}

BRAID_OPTIMISTIC unsigned racy_len(const Node* n, unsigned count, unsigned slot) {
  return racy(n->tails(count)[slot].len);
}

}  // namespace

std::uint32_t BTree::rebalance_level(const SearchKey& k, std::uint32_t level) {
  Path p;
  switch (read_path(root_, k, level, &p)) {
    case PathRead::kOk:
      break;
    case PathRead::kRetry:
      return kRebalanceRetry;
    case PathRead::kShort:
      return kRebalanceDone;
  }
  Node* const n = p.back().node;
  const std::uint64_t nv = p.back().version;

  // The root: one with a single child hands the root down (the tree loses a level).
  if (p.depth == 1) {
    if (level == 0 || racy(n->count) != 0) return kRebalanceDone;
    if (!n->lock.try_upgrade(nv)) return kRebalanceRetry;
    BRAID_ASSERT(n->count == 0);
    if (is_address(reinterpret_cast<std::uint64_t>(n->leftmost))) {  // the root stays in memory
      n->lock.restore(nv);
      return kRebalanceDone;
    }
    // Readers that loaded the old root find root_ changed (Descent::step) or the node obsolete.
    root_.store(n->leftmost, std::memory_order_release);
    retire(n);
    merges_.fetch_add(1, std::memory_order_relaxed);
    return kRebalanceDone;
  }

  if (used_bytes(n) >= kUnderfullBytes) return kRebalanceDone;

  // An empty leaf leaves the tree with every ancestor it is the only child of (inner nodes
  // without separators): the top of that chain is unlinked from the first ancestor that has
  // other children.
  if (level == 0 && racy(n->count) == 0) {
    unsigned top = p.depth - 1;
    while (top > 1 && racy(p.at[top - 1].node->count) == 0) --top;
    if (top == 1 && racy(p.at[0].node->count) == 0) return kRebalanceDone;  // the tree is empty
    if (!p.at[top - 1].node->lock.validate(p.at[top - 1].version)) return kRebalanceRetry;
    // Lock from the ancestor down, each at the version the path read: a success proves the
    // node unchanged since, so the counts read above hold.
    Node* locked[std::size(Path{}.at)];
    unsigned held = 0;
    for (unsigned i = top - 1; i < p.depth; ++i) {
      if (!p.at[i].node->lock.try_upgrade(p.at[i].version)) {
        unlock_nodes(locked, held);
        return kRebalanceRetry;
      }
      locked[held++] = p.at[i].node;
    }
    Node* q = p.at[top - 1].node;
    BRAID_ASSERT(q->count >= 1);
    BRAID_ASSERT(n->count == 0);
    const unsigned c = p.at[top].child_idx;
    if (c == 0) {
      // The next child takes the leftmost place (its range widens downwards).
      q->leftmost = reinterpret_cast<Node*>(q->tails(q->count)[0].value);
      remove_at(q, 0);
    } else {
      remove_at(q, c - 1);  // the child before widens upwards
    }
    for (unsigned i = held; i > 1; --i) retire(locked[i - 1]);
    q->lock.unlock();
    merges_.fetch_add(1, std::memory_order_relaxed);
    return q->level;
  }

  // Otherwise merge with a sibling under the same parent: the right one when there is one.
  Node* const parent = p.at[p.depth - 2].node;
  const std::uint64_t pv = p.at[p.depth - 2].version;
  const unsigned c = p.back().child_idx;
  const unsigned pc = racy_count(parent);
  // The only child: its parent is as underfull as it gets; look there.
  if (pc == 0) return level + 1;
  const unsigned si = c < pc ? c + 1 : c - 1;
  const std::uint64_t sib_word = child_word(parent, pc, si);
  if (!parent->lock.validate(pv)) return kRebalanceRetry;
  if (is_address(sib_word)) return kRebalanceDone;  // a sibling on storage is not merged with
  Node* const sib = reinterpret_cast<Node*>(sib_word);
  const std::uint64_t sv = sib->lock.read_version();
  if (OptLock::is_locked(sv)) return kRebalanceRetry;
  if (!parent->lock.validate(pv)) return kRebalanceRetry;
  Node* const left = si > c ? n : sib;
  Node* const right = si > c ? sib : n;
  const unsigned sep = std::max(c, si) - 1;  // the parent's slot whose child is `right`
  // An inner merge pulls the separator down between the halves' entries.
  const std::size_t sep_bytes =
      level == 0 ? 0 : entry_bytes(std::max(racy_len(parent, pc, sep), 1u));
  // An inner node without separators has a lone child that cannot merge below it: it merges
  // whenever it fits at all.
  const std::size_t limit = racy(n->count) == 0 ? kBodyBytes : kMergedMaxBytes;
  if (used_bytes(n) + used_bytes(sib) + sep_bytes > limit) return kRebalanceDone;
  if (!parent->lock.try_upgrade(pv)) return kRebalanceRetry;
  const std::uint64_t lv = left == n ? nv : sv;
  const std::uint64_t rv = right == n ? nv : sv;
  if (!left->lock.try_upgrade(lv)) {
    parent->lock.unlock();
    return kRebalanceRetry;
  }
  if (!right->lock.try_upgrade(rv)) {
    left->lock.unlock();
    parent->lock.unlock();
    return kRebalanceRetry;
  }
  // Locked at the versions read: what was measured above is what is there.
  BRAID_ASSERT(left->level == right->level);
  BRAID_ASSERT(used_bytes(left) + used_bytes(right) + sep_bytes <= kBodyBytes);
  auto img = std::make_unique_for_overwrite<NodeImage>();
  img->gather(left);
  if (level != 0) {
    char buf[kMaxKey];
    const std::uint32_t len = copy_key(parent, parent->count, sep, buf);
    img->add({buf, len}, reinterpret_cast<std::uint64_t>(right->leftmost), 0);
  }
  img->append(right);
  rebuild(left, *img, 0, img->n);
  if (level == 0) {
    // The keys' readers move with them (mvcc/ssn.h, "Phantoms"), as in split_leaf.
    left->pstamp.store(std::max(left->pstamp.load(std::memory_order_seq_cst),
                                right->pstamp.load(std::memory_order_seq_cst)),
                       std::memory_order_seq_cst);
  }
  remove_at(parent, sep);
  retire(right);
  left->lock.unlock();
  parent->lock.unlock();
  merges_.fetch_add(1, std::memory_order_relaxed);
  return level + 1;
}

ScanLeaf::ScanLeaf(const BTree& tree, std::string_view from, bool from_infinite,
                   std::string_view begin, std::string_view end, bool reverse, LeafBatch* out,
                   NodeSearch search, bool keys, LeafImages* through, bool load)
    : key_(from_infinite ? SearchKey::plus_infinity() : SearchKey(from)),
      descent_(tree, key_, reverse ? Descent::Bias::kBelow : Descent::Bias::kFloor, true, 0, search,
               /*load=*/through == nullptr && load, /*user=*/through == nullptr),
      begin_(begin),
      end_(end),
      reverse_(reverse),
      keys_(keys),
      out_(out),
      through_(through) {}

void ScanLeaf::continue_forward(LeafBatch* out) const {
  const FenceKey& f = descent_.upper_fence();
  if (f.present && (end_.empty() || f.view() < end_)) {
    out->has_next = true;
    out->next.assign(f.view());
  }
}

BRAID_OPTIMISTIC bool ScanLeaf::step() {
  char buf[kMaxKey];
  for (;;) {
    const Descent::Step s = descent_.step();
    if (s == Descent::Step::kNext) return true;
    if (s == Descent::Step::kRestart) {
      descent_.restart();
      return true;
    }
    if (s == Descent::Step::kFailed) [[unlikely]] {
      out_->clear();
      failed_ = true;
      return false;
    }
    const Node* leaf = descent_.node();
    if (s == Descent::Step::kStored) {
      if (through_ == nullptr) {  // built not to load: the driver reads it (install())
        stored_ = true;
        return true;
      }
      const BTree& tree = descent_.tree();
      const Node* parent = nullptr;
      unsigned idx = 0;
      std::uint64_t address = 0;
      if (tree.resolve_through(descent_, through_, &parent, &idx, &address) ==
          BTree::Load::kFailed) {
        if (!descent_.node()->lock.validate(descent_.version())) {  // a lost race, not a failure
          (void)take_load_failure();
          descent_.restart();
          return true;
        }
        out_->clear();
        failed_ = true;
        return false;
      }
      if (!reverse_ && through_->carry_ != nullptr &&
          through_->carry_(through_->carry_arg_, address)) {
        out_->clear();
        out_->carried = address;
        continue_forward(out_);
        // The leaf is the one its parent names while the parent holds still.
        if (!descent_.node()->lock.validate(descent_.version())) {
          descent_.restart();
          continue;
        }
        return false;
      }
      // A frame's version never moves; the descent's node is validated below, after the use.
      const std::uint64_t pv =
          parent == descent_.node() ? descent_.version() : parent->lock.read_version();
      switch (tree.read_through(parent, pv, idx, address, through_, &leaf)) {
        case BTree::Load::kInstalled:
          break;
        case BTree::Load::kRaced:
          descent_.restart();
          return true;
        case BTree::Load::kFailed:
          out_->clear();
          failed_ = true;
          return false;
      }
    }
    LeafBatch* out = out_;
    out->clear();
    const unsigned count = racy_count(leaf);
    bool exact;
    const unsigned lb = lower_bound(leaf, count, key_, descent_.search(), &exact);
    bool stopped = false;  // hit the far end of the range inside this leaf
    // The leaf's keys lie in [lower fence, upper fence): a fence inside the range spares every
    // entry the compare with the range's far end (a whole leaf of a long scan does).
    const FenceKey& far = reverse_ ? descent_.lower_fence() : descent_.upper_fence();
    const bool check = reverse_ ? !begin_.empty() && !(far.present && far.view() >= begin_)
                                : !end_.empty() && !(far.present && far.view() <= end_);
    auto emit = [&](unsigned i) {
      if (!keys_ && !check) {
        out->entries.push_back({0, 0, racy(leaf->tails(count)[i].value)});
        return true;
      }
      const std::uint32_t len = copy_key(leaf, count, i, buf);
      const std::string_view key(buf, len);
      if (check && (reverse_ ? key < begin_ : key >= end_)) return false;
      if (!keys_) {
        out->entries.push_back({0, 0, racy(leaf->tails(count)[i].value)});
        return true;
      }
      out->entries.push_back(
          {static_cast<std::uint32_t>(out->keys.size()), len, racy(leaf->tails(count)[i].value)});
      out->keys.append(key);
      return true;
    };
    if (!reverse_) {
      for (unsigned i = lb; i < count && !stopped; ++i) stopped = !emit(i);
      if (!stopped) continue_forward(out);
    } else {
      for (unsigned i = lb; i > 0 && !stopped; --i) stopped = !emit(i - 1);
      const FenceKey& f = descent_.lower_fence();
      if (!stopped && f.present && f.view() > begin_) {
        out->has_next = true;
        out->next.assign(f.view());
      }
    }
    // A leaf read through its image is current while its parent (node()) still names it.
    if (!descent_.node()->lock.validate(descent_.version())) {
      descent_.restart();
      continue;
    }
    return false;
  }
}

bool BTree::scan_leaf(std::string_view from, bool from_infinite, std::string_view begin,
                      std::string_view end, bool reverse, LeafBatch* out,
                      LeafImages* through) const {
  ScanLeaf s(*this, from, from_infinite, begin, end, reverse, out, NodeSearch::kCount, true,
             through);
  while (s.step()) {
  }
  return !s.failed();
}

std::uint32_t BTree::height() const { return root_.load(std::memory_order_acquire)->level + 1u; }

std::vector<std::size_t> BTree::level_sizes() const {
  std::vector<std::size_t> sizes{1};
  std::vector<const Node*> level{root_.load(std::memory_order_acquire)};
  while (!level.empty() && level.front()->level != 0) {
    std::vector<const Node*> below;
    std::size_t stored = 0;  // children on storage: counted, not read
    for (const Node* n : level) {
      for (unsigned i = 0; i <= n->count; ++i) {
        const std::uint64_t w = child_word(n, n->count, i);
        if (is_address(w)) {
          ++stored;
        } else {
          below.push_back(reinterpret_cast<const Node*>(w));
        }
      }
    }
    sizes.push_back(below.size() + stored);
    level = std::move(below);
  }
  return sizes;
}

namespace {

// One inner node's separators and children, read optimistically: false when the node was
// locked or changed under the read (the copy is then discarded).
struct InnerCopy {
  std::vector<std::string> keys;
  std::vector<const Node*> children;
  unsigned level = 0;  // of the nodes copied (children are one below)
  // A child above the leaves is on storage (BTree::pages_inner): its word is an address, so
  // the level below cannot be read whole without loading it, which splitting never does.
  bool stored_child = false;
};
BRAID_OPTIMISTIC bool copy_inner(const Node* n, InnerCopy* out) {
  const std::uint64_t v = n->lock.read_version();
  if (OptLock::is_locked(v)) return false;
  const unsigned level = racy(n->level);
  if (level == 0) return n->lock.validate(v);  // a leaf: nothing to copy
  out->level = level;
  const unsigned count = racy_count(n);
  char buf[kMaxKey + sizeof(std::uint64_t)];
  // The children of a level-1 node are leaves, which hold no separators and are never read
  // here (one may be on storage, its word an address).
  const auto child = [&](unsigned idx) -> const Node* {
    if (level <= 1) return nullptr;
    const std::uint64_t word = child_word(n, count, idx);
    if (is_address(word)) {
      out->stored_child = true;
      return nullptr;
    }
    return reinterpret_cast<const Node*>(word);
  };
  out->children.push_back(child(0));
  for (unsigned i = 0; i < count; ++i) {
    const std::uint32_t len = copy_key(n, count, i, buf);
    out->keys.emplace_back(buf, len);
    out->children.push_back(child(i + 1));
  }
  return n->lock.validate(v);
}

}  // namespace

std::vector<std::string> BTree::split_keys(std::string_view begin, std::string_view end,
                                           std::size_t want) const {
  // Bounded: a level of more nodes than this is not read (the one above it splits finely
  // enough for any sensible `want`), and a read that loses to writers this often gives up.
  constexpr std::size_t kMaxFrontier = 1 << 16;
  constexpr int kMaxAttempts = 64;
  std::vector<std::string> keys;
  if (want == 0) return keys;
  const auto inside = [&](const std::string& k) {
    return k > begin && (end.empty() || std::string_view(k) < end);
  };
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    std::vector<const Node*> level{root_.load(std::memory_order_acquire)};
    bool torn = false;
    std::vector<std::string> found;
    for (;;) {
      InnerCopy copy;
      for (const Node* n : level) {
        if (!copy_inner(n, &copy)) {
          torn = true;
          break;
        }
      }
      if (torn) break;
      std::vector<std::string> in_range;
      for (std::string& k : copy.keys) {
        if (inside(k)) in_range.push_back(std::move(k));
      }
      // Nodes read at different moments of a concurrent split can disagree on order.
      std::sort(in_range.begin(), in_range.end());
      in_range.erase(std::unique(in_range.begin(), in_range.end()), in_range.end());
      if (!in_range.empty() || copy.children.empty()) found = std::move(in_range);
      // Enough, or the next level down is the leaves (no separators), or too wide to read.
      const Node* below = copy.children.empty() ? nullptr : copy.children.front();
      if (found.size() >= want || below == nullptr || copy.level <= 1 || copy.stored_child ||
          copy.children.size() > kMaxFrontier) {
        break;
      }
      level = std::move(copy.children);
    }
    if (torn) continue;
    if (found.size() <= want) return found;
    // Thin evenly: the i-th of `want` picks lie at (i + 1) / (want + 1) of the list.
    for (std::size_t i = 0; i < want; ++i) {
      keys.push_back(std::move(found[(i + 1) * found.size() / (want + 1)]));
    }
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }
  return keys;
}

namespace {

struct CheckCtx {
  std::size_t keys = 0;
  int leaf_depth = -1;
  std::vector<std::size_t> level_nodes;  // reachable nodes in memory per level
  std::size_t stored = 0;                // leaves on storage
  std::size_t stored_inner = 0;          // inner nodes on storage
  // Inner nodes on storage that could not be read (a failing disk: the engine checks its trees
  // as it closes, after a crash the tests simulate). Neither they nor what is below them are
  // counted; what could be read is checked.
  std::size_t unread = 0;
  // Reads the inner node on storage at an address into a frame (BTree::read_stored_node).
  std::function<Status(std::uint64_t, Node*)> read_stored;
};

// `stored`: `n` is a frame decoded from storage, not a node of the tree (it is counted as
// stored, and below it every child is on storage too).
void check_node(const Node* n, const std::string* lo, const std::string* hi, int depth,
                CheckCtx* ctx, bool stored = false) {
  BRAID_ASSERT(!n->lock.locked_now());
  BRAID_ASSERT(!n->lock.obsolete_now());
  if (const char* why = node_shape_error(*n); why != nullptr) {
    std::fprintf(stderr, "B+-tree node at level %u: %s\n", n->level, why);
    BRAID_ASSERT(why == nullptr);
  }
  char buf[kMaxKey];
  std::vector<std::string> keys;
  for (unsigned i = 0; i < n->count; ++i) {
    const std::uint32_t len = copy_key(n, n->count, i, buf);
    std::string key(buf, len);
    if (lo != nullptr) BRAID_ASSERT(key >= *lo);
    if (hi != nullptr) BRAID_ASSERT(key < *hi);
    keys.push_back(std::move(key));
  }
  if (stored) {
    BRAID_ASSERT(n->level != 0);  // stored leaves are counted by their parents, not read
    ++ctx->stored_inner;
  } else {
    if (ctx->level_nodes.size() <= n->level) ctx->level_nodes.resize(n->level + 1u);
    ++ctx->level_nodes[n->level];
  }
  if (n->level == 0) {
    if (ctx->leaf_depth < 0) ctx->leaf_depth = depth;
    BRAID_ASSERT(ctx->leaf_depth == depth);  // all leaves on one level
    ctx->keys += n->count;
    return;
  }
  for (unsigned i = 0; i <= n->count; ++i) {
    const std::uint64_t w = child_word(n, n->count, i);
    if (is_address(w)) {
      if (n->level == 1) {
        ++ctx->stored;
        continue;
      }
      // An inner node on storage: read, and checked as one in memory is.
      auto frame = std::make_unique<Node>();
      const Status read = ctx->read_stored(w, frame.get());
      if (read.code() == Code::kIOError) {
        ++ctx->unread;
        continue;
      }
      if (!read.is_ok()) std::fprintf(stderr, "B+-tree check: %s\n", read.to_string().c_str());
      BRAID_ASSERT(read.is_ok());  // an image that reads but does not verify is damage
      BRAID_ASSERT(frame->level + 1 == n->level);
      check_node(frame.get(), i == 0 ? lo : &keys[i - 1], i < n->count ? &keys[i] : hi, depth + 1,
                 ctx, true);
      continue;
    }
    BRAID_ASSERT(!stored);  // a node goes out only when all its children are out
    const Node* child = reinterpret_cast<const Node*>(w);
    BRAID_ASSERT(child != nullptr);
    BRAID_ASSERT(child->level + 1 == n->level);
    check_node(child, i == 0 ? lo : &keys[i - 1], i < n->count ? &keys[i] : hi, depth + 1, ctx);
  }
}

}  // namespace

const char* node_shape_error(const Node& n) {
  if (n.count > Node::kMaxSlots) return "more entries than a node holds";
  if (n.heap_begin > kNodeBytes) return "key heap starts past the node's end";
  if (n.heap_begin < Node::kHeader + n.count * kEntryBytes) {
    return "key heap overlaps the entry arrays";
  }
  std::size_t suffix_bytes = 0;
  char prev[kMaxKey];
  std::uint32_t prev_len = 0;
  char key[kMaxKey];
  for (unsigned i = 0; i < n.count; ++i) {
    const Tail& t = n.tails(n.count)[i];
    if (t.len == 0) return "an entry with an empty key";
    if (t.len > 8) {
      if (t.suffix_off < n.heap_begin || t.suffix_off + (t.len - 8u) > kNodeBytes) {
        return "a key suffix outside the key heap";
      }
      suffix_bytes += t.len - 8u;
    }
    const std::uint32_t len = copy_key(&n, n.count, i, key);
    if (n.heads()[i] != util::load_head(key, len)) return "a key head disagrees with its key";
    if (i > 0 && std::string_view(prev, prev_len) >= std::string_view(key, len)) {
      return "keys out of order";
    }
    std::memcpy(prev, key, len);
    prev_len = len;
  }
  if (suffix_bytes + n.garbage != kNodeBytes - n.heap_begin) {
    return "key heap bytes unaccounted for";
  }
  return nullptr;
}

std::size_t BTree::check_invariants() const {
  CheckCtx ctx;
  ctx.read_stored = [this](std::uint64_t address, Node* frame) {
    return read_stored_node(address, frame);
  };
  check_node(root_.load(std::memory_order_acquire), nullptr, nullptr, 0, &ctx);
  // Every node is either linked in or on the free list, so the per-level counts that
  // resident_level() reads are exact, and so is node_count().
  std::size_t total = 0;
  for (std::uint32_t l = 0; l < kLevels; ++l) {
    const std::size_t reachable = l < ctx.level_nodes.size() ? ctx.level_nodes[l] : 0;
    BRAID_ASSERT(level_nodes_[l].load(std::memory_order_relaxed) == reachable);
    total += reachable;
  }
  BRAID_ASSERT(node_count() == total);
  if (ctx.unread == 0) {
    BRAID_ASSERT(ctx.stored == stored_leaves());
    BRAID_ASSERT(ctx.stored_inner == stored_inner_nodes());
  } else {
    BRAID_ASSERT(ctx.stored <= stored_leaves());
    BRAID_ASSERT(ctx.stored_inner + ctx.unread <= stored_inner_nodes());
  }
  for (const Node* n : free_nodes_) BRAID_ASSERT(n->lock.obsolete_now());
  return ctx.keys;
}

}  // namespace braid::index
