// A bounded multi-producer queue of pointers (Vyukov's bounded MPMC ring, used here with one
// consumer: the worker). Producers are application threads calling Database::submit; a full
// queue is reported, never grown, so memory stays bounded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "util/assert.h"

namespace braid::runtime {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity_pow2) : mask_(capacity_pow2 - 1) {
    BRAID_ASSERT(capacity_pow2 >= 2);
    BRAID_ASSERT((capacity_pow2 & mask_) == 0);
    cells_ = std::make_unique<Cell[]>(capacity_pow2);
    for (std::size_t i = 0; i < capacity_pow2; ++i)
      cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  bool push(T* item) {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& c = cells_[pos & mask_];
      const std::size_t seq = c.seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.item = item;
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  T* pop() {
    std::size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& c = cells_[pos & mask_];
      const std::size_t seq = c.seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos + 1);
      if (diff == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          T* item = c.item;
          c.seq.store(pos + mask_ + 1, std::memory_order_release);
          return item;
        }
      } else if (diff < 0) {
        return nullptr;  // empty
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

  bool empty_hint() const {
    return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_relaxed);
  }

 private:
  struct Cell {
    std::atomic<std::size_t> seq;
    T* item;
  };
  std::size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

}  // namespace braid::runtime
