#include "index/chunk_pool.h"

#include <string>

#include "util/assert.h"

namespace braid::index {

Status ChunkPool::init(std::size_t bytes, bool huge_pages) {
  BRAID_ASSERT(chunks_ == 0);
  huge_pages_ = huge_pages;
  if (bytes == 0) return Status::ok();
  const std::size_t n = (bytes + kChunkBytes - 1) / kChunkBytes;
  if (Status s = arena_.reserve(n * kChunkBytes, huge_pages); !s.is_ok()) return s;
  if (Status s = arena_.populate(n * kChunkBytes); !s.is_ok()) {
    return Status::io_error("Options::prefault_index_bytes: " + std::string(s.message()));
  }
  chunks_ = n;
  return Status::ok();
}

void* ChunkPool::take() {
  std::size_t i = next_.load(std::memory_order_relaxed);
  do {
    if (i >= chunks_) return nullptr;
  } while (!next_.compare_exchange_weak(i, i + 1, std::memory_order_relaxed));
  return arena_.base() + i * kChunkBytes;
}

std::size_t ChunkPool::taken() const { return next_.load(std::memory_order_relaxed); }

}  // namespace braid::index
