// A chained hash table (Killer Nanoseconds §3.1): an array of bucket heads, each a linked list of
// nodes carved in insertion order from one arena, so a chain's nodes lie far apart in memory and
// every step along it is a dependent, likely miss. The paper fixes 100,000 buckets, so chains
// grow with the key count (63 keys per bucket at 10 M keys); `buckets` is a parameter here.
//
// Keys are 4 or 8 bytes (K = uint32_t or uint64_t). A node fits one cache line and never
// straddles two (16 B for 4-byte keys, 32 B for 8-byte keys), so one prefetch covers it.
#pragma once

#include <braid/task.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "probe/probe.h"
#include "runtime/cpu.h"
#include "runtime/interleave.h"
#include "util/assert.h"
#include "util/vmem.h"

namespace braid::probe {

template <typename K>
struct alignas(sizeof(K) == 4 ? 16 : 32) HashNode {
  static_assert(std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::uint64_t>);
  K key;
  K value;
  const HashNode* next;
};
static_assert(sizeof(HashNode<std::uint32_t>) == 16);
static_assert(sizeof(HashNode<std::uint64_t>) == 32);

template <typename K>
class HashTable {
 public:
  using Node = HashNode<K>;

  // Room for `capacity` keys over `buckets` chains (> 0). Memory on huge pages where allowed.
  Status init(std::size_t buckets, std::size_t capacity) {
    BRAID_ASSERT(buckets > 0);
    buckets_ = buckets;
    if (Status s = heads_mem_.reserve(buckets * sizeof(const Node*), true); !s.is_ok()) return s;
    if (Status s = heads_mem_.ensure_committed(buckets * sizeof(const Node*)); !s.is_ok()) return s;
    const std::size_t node_bytes = std::max<std::size_t>(capacity, 1) * sizeof(Node);
    if (Status s = nodes_mem_.reserve(node_bytes, true); !s.is_ok()) return s;
    if (Status s = nodes_mem_.ensure_committed(node_bytes); !s.is_ok()) return s;
    heads_ = reinterpret_cast<const Node**>(heads_mem_.base());
    capacity_ = capacity;
    return Status::ok();
  }

  // Adds key → value at the head of its chain. The caller keeps keys distinct.
  void insert(K key, K value) {
    BRAID_ASSERT(size_ < capacity_);
    Node* n = reinterpret_cast<Node*>(nodes_mem_.base()) + size_++;
    n->key = key;
    n->value = value;
    const Node** head = bucket(key);
    n->next = *head;
    *head = n;
  }

  const Node** bucket(K key) const {
    // Fibonacci hashing, then Lemire's range reduction: no division on the probe path.
    const std::uint64_t h = static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ull;
    return heads_ + static_cast<std::size_t>((static_cast<unsigned __int128>(h) * buckets_) >> 64);
  }

  std::size_t size() const { return size_; }
  std::size_t buckets() const { return buckets_; }
  std::size_t bytes() const { return buckets_ * sizeof(const Node*) + size_ * sizeof(Node); }

  // Nodes a lookup of `key` visits (the chain length up to the match): the miss count naive pays.
  std::size_t nodes_visited(K key) const {
    std::size_t n = 0;
    for (const HashNode<K>* p = *bucket(key); p != nullptr; p = p->next) {
      ++n;
      if (p->key == key) break;
    }
    return n;
  }

 private:
  util::VirtualArena heads_mem_;
  util::VirtualArena nodes_mem_;
  const Node** heads_ = nullptr;
  std::size_t buckets_ = 0;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

namespace hash_detail {

template <typename K>
std::uint64_t naive_one(const HashTable<K>& t, K key) {
  for (const HashNode<K>* n = *t.bucket(key); n != nullptr; n = n->next) {
    if (n->key == key) return n->value;
  }
  return kNotFound;
}

template <typename K>
Task<std::uint64_t> coro_one(const HashTable<K>& t, K key) {
  const auto* head = t.bucket(key);
  co_await runtime::Yield{head, sizeof(*head)};
  for (const HashNode<K>* n = *head; n != nullptr; n = n->next) {
    co_await runtime::Yield{n, sizeof(HashNode<K>)};
    if (n->key == key) co_return n->value;
  }
  co_return kNotFound;
}

}  // namespace hash_detail

// Looks up keys[i] into out[i] (the value, or kNotFound) with technique `t` and group size
// `group` (1..runtime::kMaxGroup; naive ignores it).
template <typename K>
void hash_probe(const HashTable<K>& t, Technique tech, std::span<const K> keys,
                std::span<std::uint64_t> out, std::size_t group) {
  BRAID_ASSERT(keys.size() == out.size());
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= runtime::kMaxGroup);
  using Node = HashNode<K>;
  const std::size_t n = keys.size();
  switch (tech) {
    case Technique::kNaive:
      for (std::size_t i = 0; i < n; ++i) out[i] = hash_detail::naive_one(t, keys[i]);
      return;

    case Technique::kGp: {
      // Stage 1 prefetches every bucket of the group, stage 2 every head node; then each round
      // advances every unfinished lookup by one node. A group takes as many rounds as its
      // longest chain — GP's known weakness on skewed chain lengths.
      const Node* node[runtime::kMaxGroup];
      for (std::size_t base = 0; base < n; base += group) {
        const std::size_t g = std::min(group, n - base);
        for (std::size_t j = 0; j < g; ++j) {
          runtime::prefetch_lines(t.bucket(keys[base + j]), sizeof(const Node*));
        }
        std::size_t left = 0;  // lookups still walking
        for (std::size_t j = 0; j < g; ++j) {
          node[j] = *t.bucket(keys[base + j]);
          out[base + j] = kNotFound;
          if (node[j] != nullptr) {
            runtime::prefetch_lines(node[j], sizeof(Node));
            ++left;
          }
        }
        while (left != 0) {
          for (std::size_t j = 0; j < g; ++j) {
            const Node* p = node[j];
            if (p == nullptr) continue;
            if (p->key == keys[base + j]) {
              out[base + j] = p->value;
              node[j] = nullptr;
              --left;
              continue;
            }
            node[j] = p->next;
            if (node[j] == nullptr) {
              --left;
            } else {
              runtime::prefetch_lines(node[j], sizeof(Node));
            }
          }
        }
      }
      return;
    }

    case Technique::kAmac: {
      // Each state: 0 = free, 1 = bucket prefetched, 2 = node prefetched.
      struct State {
        std::size_t input;
        const Node* const* head;
        const Node* node;
        std::uint8_t stage;
      };
      State st[runtime::kMaxGroup];
      for (std::size_t j = 0; j < group; ++j) st[j].stage = 0;
      std::size_t next = 0;
      std::size_t finished = 0;
      for (std::size_t j = 0; finished < n; j = j + 1 == group ? 0 : j + 1) {
        State& s = st[j];
        switch (s.stage) {
          case 0:
            if (next == n) break;
            s.input = next++;
            s.head = t.bucket(keys[s.input]);
            runtime::prefetch_lines(s.head, sizeof(*s.head));
            s.stage = 1;
            break;
          case 1:
            s.node = *s.head;
            if (s.node == nullptr) {
              out[s.input] = kNotFound;
              ++finished;
              s.stage = 0;
            } else {
              runtime::prefetch_lines(s.node, sizeof(Node));
              s.stage = 2;
            }
            break;
          case 2:
            if (s.node->key == keys[s.input]) {
              out[s.input] = s.node->value;
              ++finished;
              s.stage = 0;
            } else if ((s.node = s.node->next) == nullptr) {
              out[s.input] = kNotFound;
              ++finished;
              s.stage = 0;
            } else {
              runtime::prefetch_lines(s.node, sizeof(Node));
            }
            break;
        }
      }
      return;
    }

    case Technique::kCoro:
      runtime::interleave<std::uint64_t>(
          n, group, [&](std::size_t i) { return hash_detail::coro_one(t, keys[i]); },
          [&](std::size_t i, std::uint64_t v) { out[i] = v; });
      return;
  }
}

}  // namespace braid::probe
