// Leaves on storage (docs/internals/index.md, "Leaves on storage"): attaching a store, evicting
// a leaf, loading one back. The B+-tree's other code only tells a child on storage apart
// (is_address) and hands it to load_child through Descent::step.
#include <algorithm>
#include <string>
#include <utility>

// (btree.h comes with node_image.h: this file is the images' user, in their module.)
#include "index/node_image.h"
#include "index/node_store.h"

namespace braid::index {

namespace {

thread_local Status tls_load_failure;

// Sets child `idx` of a locked inner node.
void set_child(Node* n, unsigned idx, std::uint64_t word) {
  if (idx == 0) {
    n->leftmost = reinterpret_cast<Node*>(word);
  } else {
    n->tails(n->count)[idx - 1].value = word;
  }
}

}  // namespace

Status take_load_failure() { return std::exchange(tls_load_failure, Status::ok()); }

void BTree::attach_store(NodeStore* store, std::uint32_t tree_id) {
  BRAID_ASSERT(store != nullptr);
  BRAID_ASSERT(store_ == nullptr);
  store_ = store;
  tree_id_ = tree_id;
}

BTree::Load BTree::load_child(Node* parent, std::uint64_t pv, unsigned idx, std::uint64_t address,
                              Node** child) const {
  // An address in the tree was put there by evict_leaf(), through the store.
  BRAID_ASSERT(store_ != nullptr);
  // Loading changes where a leaf lives, not what the tree maps: the frame and the install are
  // the tree's own bookkeeping, done under the parent's lock as any structural change.
  BTree* self = const_cast<BTree*>(this);
  alignas(64) char image[kNodeImageBytes];
  // A read that fails after another loader installed the node (and gave its image back) is a
  // lost race, not a failure: the parent no longer names the address.
  if (Status s = store_->read(address, image); !s.is_ok()) {
    if (!parent->lock.validate(pv)) return Load::kRaced;
    tls_load_failure = std::move(s);
    return Load::kFailed;
  }
  Node* f = self->new_node(0);
  const auto discard = [&] {
    const bool locked = f->lock.try_upgrade(f->lock.read_version());
    BRAID_ASSERT(locked);  // nobody else can have it: it was never linked in
    self->retire(f);
  };
  if (const char* why = decode_node_image(image, tree_id_, address, f); why != nullptr) {
    discard();
    if (!parent->lock.validate(pv)) return Load::kRaced;
    tls_load_failure = Status::corruption("index node " + std::to_string(address) + ": " + why);
    return Load::kFailed;
  }
  if (f->level != 0) {  // only leaves leave memory
    discard();
    tls_load_failure = Status::corruption("index node " + std::to_string(address) +
                                          ": an inner node where a leaf was evicted");
    return Load::kFailed;
  }
  f->pstamp.store(std::max(f->pstamp.load(std::memory_order_relaxed),
                           evicted_pstamp_.load(std::memory_order_seq_cst)),
                  std::memory_order_seq_cst);
  if (!parent->lock.try_upgrade(pv)) {  // another loader installed it, or a writer came
    discard();
    return Load::kRaced;
  }
  // Unchanged since pv, when the descent read `address` there.
  BRAID_ASSERT(child_word(parent, parent->count, idx) == address);
  set_child(parent, idx, reinterpret_cast<std::uint64_t>(f));
  parent->lock.unlock();
  store_->release(address);
  stored_.fetch_sub(1, std::memory_order_relaxed);
  loads_.fetch_add(1, std::memory_order_relaxed);
  *child = f;
  return Load::kInstalled;
}

Status BTree::evict_leaf(std::string_view key, bool* evicted) {
  BRAID_ASSERT(store_ != nullptr);
  BRAID_ASSERT(!key.empty() && key.size() <= kMaxKey);
  *evicted = false;
  // One at a time: the store's slots and flushes are single-threaded.
  std::lock_guard<std::mutex> guard(evict_mutex_);
  const SearchKey k(key);
  Descent d(*this, k, Descent::Bias::kFloor, false, 0, NodeSearch::kBisect, /*load=*/false);
  for (;;) {
    const Descent::Step s = d.step();
    if (s == Descent::Step::kNext) continue;
    if (s == Descent::Step::kStored) return Status::ok();  // out already
    if (s == Descent::Step::kLeaf) return evict_reached(d, evicted);
    BRAID_ASSERT(s == Descent::Step::kRestart);
    d.restart();
  }
}

Status BTree::sweep_leaves(std::string* hand, std::size_t max_leaves, std::size_t* evicted) {
  BRAID_ASSERT(store_ != nullptr);
  std::lock_guard<std::mutex> guard(evict_mutex_);
  for (std::size_t visited = 0; visited < max_leaves; ++visited) {
    const bool first = hand->empty();
    const SearchKey k = first ? SearchKey() : SearchKey(*hand);
    Descent d(*this, k, Descent::Bias::kFloor, /*track_fences=*/true, 0, NodeSearch::kBisect,
              /*load=*/false);
    Descent::Step s;
    while ((s = d.step()) != Descent::Step::kLeaf && s != Descent::Step::kStored) {
      if (s != Descent::Step::kNext) d.restart();
    }
    if (s == Descent::Step::kLeaf) {
      // Used since the hand last came: spared, and unmarked so that the next pass decides.
      std::atomic_ref<std::uint8_t> mark = used_mark(d.node());
      if (mark.load(std::memory_order_relaxed) != 0) {
        mark.store(0, std::memory_order_relaxed);
      } else {
        bool out = false;
        if (Status st = evict_reached(d, &out); !st.is_ok()) return st;
        if (out) ++*evicted;
      }
    }
    // On past the leaf (or the leaf on storage) the descent reached: its upper fence.
    const FenceKey& upper = d.upper_fence();
    if (!upper.present) {
      hand->clear();
      return Status::ok();
    }
    hand->assign(upper.view());
  }
  return Status::ok();
}

Status BTree::evict_reached(const Descent& d, bool* evicted) {
  *evicted = false;
  Node* const leaf = d.node();
  Node* const parent = d.parent();
  const unsigned idx = d.child_index();
  const std::uint64_t lv = d.version();
  const std::uint64_t pv = d.parent_version();
  if (parent == nullptr) return Status::ok();  // the root stays
  if (!lock_pair(leaf, lv, parent, pv)) return Status::ok();
  if (leaf->count == 0) {
    leaf->lock.restore(lv);
    parent->lock.restore(pv);
    return Status::ok();
  }
  char* slot = nullptr;
  Result<std::uint64_t> at = store_->add(&slot);
  if (!at.is_ok()) {
    leaf->lock.restore(lv);
    parent->lock.restore(pv);
    return at.status();
  }
  const std::uint64_t address = *at;
  BRAID_ASSERT(is_address(address));
  encode_node_image(*leaf, tree_id_, address, {}, slot);
  // The image is taken: unlock without a change, so readers and writers go on while it is
  // written, and take the locks again at the same versions after. If either moved, the image
  // may not say what the leaf holds now, and the eviction gives up.
  leaf->lock.restore(lv);
  parent->lock.restore(pv);
  if (Status s = store_->flush(); !s.is_ok()) {
    store_->release(address);
    return s;
  }
  if (!lock_pair(leaf, lv, parent, pv)) {
    store_->release(address);
    return Status::ok();
  }
  BRAID_ASSERT(child_word(parent, parent->count, idx) == reinterpret_cast<std::uint64_t>(leaf));
  // The leaf's readers' stamp outlives it in the tree's (load_child).
  const std::uint64_t stamp = leaf->pstamp.load(std::memory_order_seq_cst);
  std::uint64_t cur = evicted_pstamp_.load(std::memory_order_relaxed);
  while (stamp > cur && !evicted_pstamp_.compare_exchange_weak(cur, stamp)) {
  }
  set_child(parent, idx, address);
  stored_.fetch_add(1, std::memory_order_relaxed);
  evictions_.fetch_add(1, std::memory_order_relaxed);
  retire(leaf);  // optimistic readers that hold it find it obsolete and restart
  parent->lock.unlock();
  *evicted = true;
  return Status::ok();
}

}  // namespace braid::index
