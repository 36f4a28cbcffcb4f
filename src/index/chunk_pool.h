// Node memory made resident before the trees need it (Options::prefault_index_bytes).
//
// A B+-tree takes its nodes from 2 MiB chunks. A chunk the tree allocates itself is faulted in
// by the first node written to it, inside the transaction whose insert split a node: the kernel
// zeroes the whole huge page there (on a host that backs memory lazily, a stall of
// milliseconds inside that transaction, which growing tables such as TPC-C's meet often). A
// pool populated at open hands its
// chunks to every tree of the database first; trees fall back to their own once it is spent.
// Chunks are never returned: nodes live as long as their tree, and trees as long as the
// database, which owns the pool and destroys it after them.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstddef>

#include "util/vmem.h"

namespace braid::index {

class ChunkPool {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t{2} << 20;

  ChunkPool() = default;
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // Reserves `bytes` (rounded up to whole chunks) and makes them resident now. IOError, with
  // the cause, when the memory cannot be had; the pool then hands out nothing. `huge_pages`
  // also tells the trees whether to ask for huge pages on the chunks they allocate themselves
  // once the pool is spent (Options::huge_pages).
  Status init(std::size_t bytes, bool huge_pages);

  // A resident chunk not handed out before, or nullptr once every chunk is taken. Thread-safe.
  void* take();

  std::size_t chunks() const { return chunks_; }
  std::size_t taken() const;
  bool huge_pages() const { return huge_pages_; }

 private:
  util::VirtualArena arena_;
  std::size_t chunks_ = 0;
  bool huge_pages_ = true;
  std::atomic<std::size_t> next_{0};
};

}  // namespace braid::index
