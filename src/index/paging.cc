// Leaves on storage (docs/internals/index.md, "Leaves on storage"): attaching a store, evicting
// a leaf, loading one back, and emptying a tree whose leaves may be out. The B+-tree's other code
// only tells a child on storage apart (is_address) and hands it to load_child through
// Descent::step.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

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

Status take_load_failure(std::string_view context) {
  Status s = take_load_failure();
  BRAID_ASSERT(!s.is_ok());  // the operation failed on a load, which left its reason here
  return Status(s.code(), std::string(context) + ": " + std::string(s.message()));
}

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
  alignas(64) char image[kNodeImageBytes];
  // A read that fails after another loader installed the node (and gave its image back) is a
  // lost race, not a failure: the parent no longer names the address.
  if (Status s = store_->read(address, image); !s.is_ok()) {
    if (!parent->lock.validate(pv)) return Load::kRaced;
    tls_load_failure = std::move(s);
    return Load::kFailed;
  }
  return install_image(parent, pv, idx, address, image, child);
}

Status NodeStore::read_many(std::span<const std::uint64_t> addresses, char* out) {
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (Status s = read(addresses[i], out + i * kNodeImageBytes); !s.is_ok()) return s;
  }
  return Status::ok();
}

LeafImages::LeafImages()
    : images_(static_cast<char*>(std::aligned_alloc(64, std::size_t{kSlots} * kNodeImageBytes))),
      frame_(static_cast<char*>(std::aligned_alloc(64, kNodeBytes))) {
  BRAID_ASSERT(images_ != nullptr);
  BRAID_ASSERT(frame_ != nullptr);
  new (frame_.get()) Node;
}

BTree::Load BTree::resolve_through(Descent& d, LeafImages* images, const Node** parent,
                                   unsigned* idx, std::uint64_t* address) const {
  BRAID_ASSERT(store_ != nullptr);
  const Node* p = d.node();
  unsigned i = d.child_index();
  std::uint64_t a = d.stored_address();
  // Below level 1 the child named is a leaf; above it, an inner node on storage, whose image
  // names only nodes on storage (it went out after its children).
  for (unsigned level = racy(p->level); level > 1; --level) {
    const unsigned below = level - 1;
    if (below >= kMaxLevels) return Load::kFailed;  // a torn level: the caller validates
    if (images->inner_ == nullptr) {
      images->inner_.reset(
          static_cast<char*>(std::aligned_alloc(64, std::size_t{kMaxLevels} * kNodeBytes)));
      BRAID_ASSERT(images->inner_ != nullptr);
      for (unsigned l = 0; l < kMaxLevels; ++l) {
        new (images->inner_.get() + std::size_t{l} * kNodeBytes) Node;
      }
    }
    Node* frame = reinterpret_cast<Node*>(images->inner_.get() + std::size_t{below} * kNodeBytes);
    if (images->inner_addresses_[below] != a) {
      images->inner_addresses_[below] = 0;
      if (Status s = read_stored_node(a, frame); !s.is_ok()) {
        tls_load_failure = std::move(s);
        return Load::kFailed;
      }
      if (frame->level != below) {
        tls_load_failure =
            Status::corruption("index node " + std::to_string(a) + ": a node of level " +
                               std::to_string(frame->level) + " where one of level " +
                               std::to_string(below) + " was evicted");
        return Load::kFailed;
      }
      images->inner_addresses_[below] = a;
    }
    i = d.child_of_frame(frame);
    const std::uint64_t named = child_word(frame, frame->count, i);
    if (!is_address(named)) {
      images->inner_addresses_[below] = 0;
      tls_load_failure = Status::corruption("index node " + std::to_string(a) +
                                            ": an inner node on storage names one in memory");
      return Load::kFailed;
    }
    a = named;
    p = frame;
  }
  *parent = p;
  *idx = i;
  *address = a;
  return Load::kInstalled;
}

BTree::Load BTree::read_through(const Node* parent, std::uint64_t pv, unsigned idx,
                                std::uint64_t address, LeafImages* images,
                                const Node** leaf) const {
  BRAID_ASSERT(store_ != nullptr);
  unsigned at = 0;
  while (at < images->count_ && images->addresses_[at] != address) ++at;
  if (at == images->count_) {
    // This leaf and the stored siblings right of it, up to the first in memory.
    const unsigned count =
        std::min<unsigned>(racy(parent->count), static_cast<unsigned>(Node::kMaxSlots));
    unsigned n = 0;
    for (unsigned i = idx; i <= count && n < LeafImages::kSlots; ++i) {
      const std::uint64_t w = child_word(parent, count, i);
      if (!is_address(w)) break;
      images->addresses_[n++] = w;
    }
    images->count_ = 0;
    if (!parent->lock.validate(pv) || n == 0 || images->addresses_[0] != address) {
      return Load::kRaced;
    }
    if (Status s = store_->read_many(std::span<const std::uint64_t>(images->addresses_, n),
                                     images->images_.get());
        !s.is_ok()) {
      if (!parent->lock.validate(pv)) return Load::kRaced;
      tls_load_failure = std::move(s);
      return Load::kFailed;
    }
    images->count_ = n;
    at = 0;
  }
  Node* frame = reinterpret_cast<Node*>(images->frame_.get());
  const char* image = images->images_.get() + std::size_t{at} * kNodeImageBytes;
  if (const char* why = decode_node_image(image, tree_id_, address, frame); why != nullptr) {
    images->count_ = 0;
    if (!parent->lock.validate(pv)) return Load::kRaced;
    tls_load_failure = Status::corruption("index node " + std::to_string(address) + ": " + why);
    return Load::kFailed;
  }
  if (frame->level != 0) {
    images->count_ = 0;
    tls_load_failure = Status::corruption("index node " + std::to_string(address) +
                                          ": an inner node where a leaf was evicted");
    return Load::kFailed;
  }
  *leaf = frame;
  return Load::kInstalled;
}

BTree::Load BTree::install_image(Node* parent, std::uint64_t pv, unsigned idx,
                                 std::uint64_t address, const char* image, Node** child) const {
  BRAID_ASSERT(store_ != nullptr);
  // Loading changes where a node lives, not what the tree maps: the frame and the install are
  // the tree's own bookkeeping, done under the parent's lock as any structural change.
  BTree* self = const_cast<BTree*>(this);
  // The level the parent's child has (racy: a parent reused since pv fails the upgrade below,
  // and a frame counted on a wrong level is only ever discarded from it).
  const std::uint8_t level = static_cast<std::uint8_t>(std::max<int>(racy(parent->level), 1) - 1);
  Node* f = self->new_node(level);
  const auto discard = [&] {
    const bool locked = f->lock.try_upgrade(f->lock.read_version());
    BRAID_ASSERT(locked);  // nobody else can have it: it was never linked in
    f->level = level;      // the level it was counted on
    self->retire(f);
  };
  if (const char* why = decode_node_image(image, tree_id_, address, f); why != nullptr) {
    discard();
    if (!parent->lock.validate(pv)) return Load::kRaced;
    tls_load_failure = Status::corruption("index node " + std::to_string(address) + ": " + why);
    return Load::kFailed;
  }
  if (f->level != level) {
    const unsigned found = f->level;
    discard();
    if (!parent->lock.validate(pv)) return Load::kRaced;
    tls_load_failure = Status::corruption(
        "index node " + std::to_string(address) + ": a node of level " + std::to_string(found) +
        " where one of level " + std::to_string(level) + " was evicted");
    return Load::kFailed;
  }
  if (level == 0)
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
  // A parent whose children come back is in use: the hand spares it once (pages_inner).
  note_used(parent);
  parent->lock.unlock();
  store_->release(address);
  if (level == 0) {
    stored_.fetch_sub(1, std::memory_order_relaxed);
    loads_.fetch_add(1, std::memory_order_relaxed);
  } else {
    stored_inner_.fetch_sub(1, std::memory_order_relaxed);
    inner_loads_.fetch_add(1, std::memory_order_relaxed);
  }
  *child = f;
  return Load::kInstalled;
}

Status BTree::adopt_stored_leaves(std::span<const StoredLeaf> leaves) {
  BRAID_ASSERT(store_ != nullptr);
  Node* root = root_.load(std::memory_order_relaxed);
  BRAID_ASSERT(root->level == 0);
  BRAID_ASSERT(root->count == 0);
  if (leaves.empty()) return Status::ok();
  if (leaves.size() >= 2) {
    build_over_stored(leaves);
    return Status::ok();
  }
  // One leaf: it is the root, which stays in memory, decoded into the empty root's own frame
  // (nobody reads it yet); the store's image is then no one's.
  alignas(64) char image[kNodeImageBytes];
  const std::uint64_t address = leaves[0].address;
  if (Status s = store_->read(address, image); !s.is_ok()) return s;
  // decode_node_image leaves the node as it was when the image does not verify.
  if (const char* why = decode_node_image(image, tree_id_, address, root); why != nullptr) {
    return Status::corruption("index node " + std::to_string(address) + ": " + why);
  }
  if (root->level != 0) {
    root->level = 0;
    root->count = 0;
    root->heap_begin = kNodeBytes;
    root->garbage = 0;
    return Status::corruption("index node " + std::to_string(address) +
                              ": an inner node where a leaf was stored");
  }
  store_->release(address);
  loads_.fetch_add(1, std::memory_order_relaxed);
  return Status::ok();
}

void BTree::clear() {
  // Evictions stay out: they lock pairs of the nodes retired here.
  std::lock_guard<std::mutex> guard(evict_mutex_);
  Node* fresh = new_node(0);
  Node* old = root_.load(std::memory_order_acquire);
  // Locked before the new root is published, so no reader passes a version check on the old
  // one after it; a loader holds a lock only briefly and never waits for another.
  while (!old->lock.try_upgrade(old->lock.read_version())) {
  }
  root_.store(fresh, std::memory_order_release);
  retire_subtree(old);
}

void BTree::retire_subtree(Node* n) {
  // Children are locked while their parent is (a loader's install needs the parent's lock, so
  // none can land under a node being retired).
  for (unsigned i = 0; n->level != 0 && i <= n->count; ++i) {
    const std::uint64_t w = child_word(n, n->count, i);
    if (is_address(w)) {
      (void)release_stored(w, n->level - 1u);
      continue;
    }
    Node* child = reinterpret_cast<Node*>(w);
    while (!child->lock.try_upgrade(child->lock.read_version())) {
    }
    retire_subtree(child);
  }
  retire(n);
}

Status BTree::read_stored_node(std::uint64_t address, Node* frame) const {
  BRAID_ASSERT(store_ != nullptr);
  alignas(64) char image[kNodeImageBytes];
  if (Status s = store_->read(address, image); !s.is_ok()) return s;
  if (const char* why = decode_node_image(image, tree_id_, address, frame); why != nullptr) {
    return Status::corruption("index node " + std::to_string(address) + ": " + why);
  }
  return Status::ok();
}

bool BTree::release_stored(std::uint64_t address, std::uint32_t level) {
  bool all = true;
  if (level != 0) {
    // Off the stack: the recursion holds a frame per level.
    auto frame = std::make_unique<Node>();
    if (!read_stored_node(address, frame.get()).is_ok() || frame->level != level) {
      all = false;
    } else {
      for (unsigned i = 0; i <= frame->count; ++i) {
        const std::uint64_t w = child_word(frame.get(), frame->count, i);
        // Only a node whose children were all out went out (take_node_image).
        const bool released = is_address(w) && release_stored(w, level - 1);
        all = all && released;
      }
    }
  }
  store_->release(address);
  (level == 0 ? stored_ : stored_inner_).fetch_sub(1, std::memory_order_relaxed);
  return all;
}

bool Descent::install_stored(const char* image) {
  Node* child = nullptr;
  const BTree::Load l =
      tree_.install_image(node_, version_, child_idx_, stored_address_, image, &child);
  if (l == BTree::Load::kFailed) return true;
  // Leaves only: driver_loads() is a share of loads(). (The parent's level is fixed for its
  // life, and a parent reused since fails the install.)
  if (l == BTree::Load::kInstalled && racy(node_->level) == 1) {
    tree_.driver_loads_.fetch_add(1, std::memory_order_relaxed);
  }
  // Installed, by this read or another: from the root again (a few cached nodes) rather than
  // from a parent whose version the install moved.
  restart();
  return false;
}

bool Descent::load_stored() {
  Node* child = nullptr;
  const BTree::Load l = tree_.load_child(node_, version_, child_idx_, stored_address_, &child);
  if (l == BTree::Load::kFailed) return true;
  restart();
  return false;
}

bool Descent::fail_stored(Status why) {
  BRAID_ASSERT(!why.is_ok());
  // A read that failed after another loader installed the leaf (and gave its image back) is a
  // lost race, as in load_child: from the root again.
  if (!node_->lock.validate(version_)) {
    restart();
    return false;
  }
  tls_load_failure = std::move(why);
  return true;
}

Status BTree::evict_leaf(std::string_view key, bool* evicted) {
  BRAID_ASSERT(store_ != nullptr);
  BRAID_ASSERT(!key.empty() && key.size() <= kMaxKey);
  *evicted = false;
  // One at a time: the store's slots and flushes are single-threaded.
  std::lock_guard<std::mutex> guard(evict_mutex_);
  const SearchKey k(key);
  Descent d(*this, k, Descent::Bias::kFloor, false, 0, NodeSearch::kBisect, /*load=*/false,
            /*user=*/false);
  for (;;) {
    const Descent::Step s = d.step();
    if (s == Descent::Step::kNext) continue;
    if (s == Descent::Step::kStored) return Status::ok();  // out already
    if (s == Descent::Step::kLeaf) return evict_reached(d, evicted);
    BRAID_ASSERT(s == Descent::Step::kRestart);
    d.restart();
  }
}

Status BTree::sweep_leaves(std::string* hand, std::size_t max_leaves, std::size_t* evicted,
                           LeafConsent consent, void* arg, std::size_t max_keys,
                           LeafRewrite rewrite) {
  BRAID_ASSERT(store_ != nullptr);
  std::lock_guard<std::mutex> guard(evict_mutex_);
  // The images of the leaves the hand took go out with one flush (one write for up to a
  // stage's worth) and are published after it: a flush per leaf wrote a block per leaf.
  std::vector<TakenLeaf> taken;
  Status failed;
  std::size_t keys = 0;          // in the leaves taken
  std::size_t visited_keys = 0;  // in the leaves visited in memory
  const std::size_t max_visited_keys = max_keys > SIZE_MAX / 2 ? SIZE_MAX : 2 * max_keys;
  for (std::size_t visited = 0;
       visited < max_leaves && keys < max_keys && visited_keys < max_visited_keys; ++visited) {
    const bool first = hand->empty();
    const SearchKey k = first ? SearchKey() : SearchKey(*hand);
    Descent d(*this, k, Descent::Bias::kFloor, /*track_fences=*/true, 0, NodeSearch::kBisect,
              /*load=*/false, /*user=*/false);
    Descent::Step s;
    while ((s = d.step()) != Descent::Step::kLeaf && s != Descent::Step::kStored) {
      if (s != Descent::Step::kNext) d.restart();
    }
    if (s == Descent::Step::kLeaf) {
      const std::size_t count = racy(d.node()->count);  // unvalidated: only a pace
      visited_keys += count;
      // Used since the hand last came: spared, and unmarked so that the next pass decides.
      std::atomic_ref<std::uint8_t> mark = used_mark(d.node());
      if (mark.load(std::memory_order_relaxed) != 0) {
        mark.store(0, std::memory_order_relaxed);
        // A leaf in use is rewritten all the same: the records it names may be cold.
        if (rewrite != nullptr && d.node()->lock.try_upgrade(d.version())) {
          rewrite(arg, *d.node());
          d.node()->lock.restore(d.version());
        }
      } else {
        TakenLeaf t;
        bool took = false;
        failed = take_image(d, consent, rewrite, arg, &t, &took);
        if (!failed.is_ok()) break;
        if (took) {
          taken.push_back(t);
          keys += count;
        }
      }
    }
    // Past the leaves on storage beside the one reached, in one step: a tree opened over its
    // runs is nearly all on storage, and a visit per stored leaf spent the hand's visits on
    // leaves it cannot take while the loaded ones piled up past the budget.
    if (s == Descent::Step::kStored && next_resident_sibling(d, hand)) continue;
    // Stopped at the last child of an inner node, on storage: the node's children were all
    // passed, and the fence below is the node's own, so the hand moves past the node whether
    // it goes or not (a node is looked at once per pass). Its mark (a load below it, or its
    // own) is looked at only once every child is out: cleared earlier, it would let the node
    // go in the pass right after its last child, with no second chance of its own.
    if (s == Descent::Step::kStored && pages_inner() && all_children_stored(d)) {
      std::atomic_ref<std::uint8_t> mark = used_mark(d.node());
      if (mark.load(std::memory_order_relaxed) != 0) {
        mark.store(0, std::memory_order_relaxed);
      } else {
        TakenLeaf t;
        bool took = false;
        failed = take_inner_image(d, &t, &took);
        if (!failed.is_ok()) break;
        if (took) taken.push_back(t);
      }
    }
    // On past the leaf (or the leaves on storage) the descent reached: its upper fence.
    const FenceKey& upper = d.upper_fence();
    if (!upper.present) {
      hand->clear();
      break;
    }
    hand->assign(upper.view());
  }
  if (taken.empty()) return failed;
  if (Status s = store_->flush(); !s.is_ok()) {
    for (const TakenLeaf& t : taken) store_->release(t.address);
    return s;
  }
  *evicted += publish(taken);
  return failed;
}

BRAID_OPTIMISTIC bool BTree::all_children_stored(const Descent& d) {
  const Node* n = d.node();
  const unsigned count = std::min<unsigned>(racy(n->count), Node::kMaxSlots);
  if (d.child_index() != count) return false;
  for (unsigned i = 0; i < count; ++i) {
    if (!is_address(child_word(n, count, i))) return false;
  }
  return n->lock.validate(d.version());
}

Status BTree::evict_reached(const Descent& d, bool* evicted) {
  *evicted = false;
  TakenLeaf t;
  bool took = false;
  if (Status s = take_image(d, nullptr, nullptr, nullptr, &t, &took); !s.is_ok() || !took) {
    return s;
  }
  if (Status s = store_->flush(); !s.is_ok()) {
    store_->release(t.address);
    return s;
  }
  *evicted = publish(std::span<const TakenLeaf>(&t, 1)) == 1;
  return Status::ok();
}

Status BTree::take_image(const Descent& d, LeafConsent consent, LeafRewrite rewrite, void* arg,
                         TakenLeaf* out, bool* took) {
  return take_node_image(d.node(), d.version(), d.parent(), d.parent_version(), d.child_index(),
                         consent, rewrite, arg, out, took);
}

Status BTree::take_inner_image(const Descent& d, TakenLeaf* out, bool* took) {
  return take_node_image(d.node(), d.version(), d.parent(), d.parent_version(), d.node_index(),
                         nullptr, nullptr, nullptr, out, took);
}

Status BTree::take_node_image(Node* leaf, std::uint64_t lv, Node* parent, std::uint64_t pv,
                              unsigned idx, LeafConsent consent, LeafRewrite rewrite, void* arg,
                              TakenLeaf* out, bool* took) {
  *took = false;
  if (parent == nullptr) return Status::ok();  // the root stays
  if (!lock_pair(leaf, lv, parent, pv)) return Status::ok();
  const auto keep = [&] {
    leaf->lock.restore(lv);
    parent->lock.restore(pv);
  };
  if (leaf->level != 0) {
    // An inner node goes out only above children that are all out: its image then names
    // every node below it by address, and no load can land under it unseen (a load locks it,
    // which moves the version publish checks).
    for (unsigned i = 0; i <= leaf->count; ++i) {
      if (!is_address(child_word(leaf, leaf->count, i))) {
        keep();
        return Status::ok();
      }
    }
  } else {
    // Before the image: a leaf that goes out carries what the rewrite made of its values.
    if (rewrite != nullptr) rewrite(arg, *leaf);
    if (leaf->count == 0 || (consent != nullptr && !consent(arg, *leaf))) {
      keep();
      return Status::ok();
    }
  }
  char* slot = nullptr;
  Result<std::uint64_t> at = store_->add(&slot);
  if (!at.is_ok()) {
    keep();
    return at.status();
  }
  BRAID_ASSERT(is_address(*at));
  // An inner node's image names its children as the node does: by their addresses.
  std::uint64_t children[Node::kMaxSlots + 1];
  const std::size_t named = leaf->level == 0 ? 0 : leaf->count + 1u;
  for (unsigned i = 0; i < named; ++i) children[i] = child_word(leaf, leaf->count, i);
  encode_node_image(*leaf, tree_id_, *at, std::span<const std::uint64_t>(children, named), slot);
  // The image is taken: unlock without a change, so readers and writers go on while it is
  // written, and take the locks again at the same versions after (publish). If either moved,
  // the image may not say what the leaf holds now, and the eviction gives up.
  keep();
  *out = {leaf, lv, parent, pv, idx, *at};
  *took = true;
  return Status::ok();
}

std::size_t BTree::publish(std::span<const TakenLeaf> taken) {
  std::size_t published = 0;
  // Leaves of one parent are next to each other (the hand goes in key order) and were taken at
  // one parent version: the parent is locked once for all of them, since the first publish
  // would change the version the others were taken at.
  for (std::size_t i = 0; i < taken.size();) {
    std::size_t j = i + 1;
    while (j < taken.size() && taken[j].parent == taken[i].parent && taken[j].pv == taken[i].pv) {
      ++j;
    }
    Node* const parent = taken[i].parent;
    bool changed = false;
    if (parent->lock.try_upgrade(taken[i].pv)) {
      for (std::size_t k = i; k < j; ++k) {
        const TakenLeaf& t = taken[k];
        if (!t.leaf->lock.try_upgrade(t.lv)) {
          store_->release(t.address);
          continue;
        }
        // Unchanged since pv, when the descent read the leaf there.
        BRAID_ASSERT(child_word(parent, parent->count, t.idx) ==
                     reinterpret_cast<std::uint64_t>(t.leaf));
        if (t.leaf->level == 0) {
          // The leaf's readers' stamp outlives it in the tree's (load_child).
          const std::uint64_t stamp = t.leaf->pstamp.load(std::memory_order_seq_cst);
          std::uint64_t cur = evicted_pstamp_.load(std::memory_order_relaxed);
          while (stamp > cur && !evicted_pstamp_.compare_exchange_weak(cur, stamp)) {
          }
          stored_.fetch_add(1, std::memory_order_relaxed);
          evictions_.fetch_add(1, std::memory_order_relaxed);
        } else {
          stored_inner_.fetch_add(1, std::memory_order_relaxed);
          inner_evictions_.fetch_add(1, std::memory_order_relaxed);
        }
        set_child(parent, t.idx, t.address);
        if (t.leaf->level == 0) ++published;
        retire(t.leaf);  // optimistic readers that hold it find it obsolete and restart
        changed = true;
      }
      if (changed) {
        parent->lock.unlock();
      } else {
        parent->lock.restore(taken[i].pv);
      }
    } else {
      for (std::size_t k = i; k < j; ++k) store_->release(taken[k].address);
    }
    i = j;
  }
  return published;
}

}  // namespace braid::index
