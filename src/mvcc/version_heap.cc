#include "mvcc/version_heap.h"

#include <bit>

#include "util/assert.h"

namespace braid::mvcc {

namespace {
void*& next_of(void* p) { return *static_cast<void**>(p); }
}  // namespace

Status VersionHeap::init(std::size_t reserve_bytes, bool huge_pages) {
  return arena_.reserve(reserve_bytes, huge_pages);
}

VersionHeap::~VersionHeap() = default;  // the arena unmaps everything

std::size_t VersionHeap::class_of(std::size_t bytes) {
  BRAID_DASSERT(bytes > 0);
  BRAID_DASSERT(bytes <= kMaxBytes);
  if (bytes <= 256) return bytes <= 32 ? 0 : (bytes + 15) / 16 - 2;
  return 15 + static_cast<std::size_t>(std::bit_width(bytes - 1)) - 9;
}

std::size_t VersionHeap::class_bytes(std::size_t c) {
  return c < 15 ? (c + 2) * 16 : std::size_t{512} << (c - 15);
}

std::uint32_t VersionHeap::batch_of(std::size_t c) {
  // About 8 KiB per transfer, at least 2 objects: a context holds at most two batches per class.
  const std::size_t n = (std::size_t{8} << 10) / class_bytes(c);
  return static_cast<std::uint32_t>(n < 2 ? 2 : (n > 128 ? 128 : n));
}

bool VersionHeap::refill(Cache* cache, std::size_t c) {
  const std::uint32_t want = batch_of(c);
  const std::size_t size = class_bytes(c);
  std::lock_guard<std::mutex> guard(mutex_);
  std::uint32_t got = 0;
  while (got < want && central_[c] != nullptr) {
    void* p = central_[c];
    central_[c] = next_of(p);
    next_of(p) = cache->head[c];
    cache->head[c] = p;
    ++got;
  }
  if (got < want) {
    const std::size_t need = (want - got) * size;
    if (cursor_ + need <= arena_.reserved() && arena_.ensure_committed(cursor_ + need).is_ok()) {
      for (; got < want; ++got) {
        void* p = arena_.base() + cursor_;
        cursor_ += size;
        next_of(p) = cache->head[c];
        cache->head[c] = p;
      }
    }
  }
  cache->count[c] += got;
  return got > 0;
}

void* VersionHeap::allocate(Cache* cache, std::size_t bytes) {
  if (bytes > kMaxBytes) return nullptr;
  const std::size_t c = class_of(bytes);
  if (cache->head[c] == nullptr && !refill(cache, c)) return nullptr;
  void* p = cache->head[c];
  cache->head[c] = next_of(p);
  --cache->count[c];
  return p;
}

void VersionHeap::free(Cache* cache, void* p, std::size_t bytes) {
  const std::size_t c = class_of(bytes);
  next_of(p) = cache->head[c];
  cache->head[c] = p;
  if (++cache->count[c] < 2 * batch_of(c)) return;
  // Give one batch back so memory freed here can serve other contexts.
  std::uint32_t n = batch_of(c);
  void* first = cache->head[c];
  void* last = first;
  for (std::uint32_t i = 1; i < n; ++i) last = next_of(last);
  cache->head[c] = next_of(last);
  cache->count[c] -= n;
  std::lock_guard<std::mutex> guard(mutex_);
  next_of(last) = central_[c];
  central_[c] = first;
}

void VersionHeap::drain(Cache* cache) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (std::size_t c = 0; c < kClasses; ++c) {
    while (cache->head[c] != nullptr) {
      void* p = cache->head[c];
      cache->head[c] = next_of(p);
      next_of(p) = central_[c];
      central_[c] = p;
    }
    cache->count[c] = 0;
  }
}

}  // namespace braid::mvcc
