#include "mvcc/version_heap.h"

#include <bit>
#include <string>

#include "util/assert.h"

namespace braid::mvcc {

namespace {
void*& next_of(void* p) { return *static_cast<void**>(p); }

// A central list holds whole batches, so that a transfer is O(1): refilling by walking a list of
// freed versions would chase one cold pointer per object under the mutex, every one a DRAM
// miss. A batch's first
// object carries, in its second word, the next batch and the batch's length in the top 16 bits.
// Every class is at least 32 bytes, so the second word exists.
constexpr unsigned kCountShift = 48;
constexpr std::uint64_t kLinkMask = (std::uint64_t{1} << kCountShift) - 1;

std::uint64_t& batch_word(void* p) { return static_cast<std::uint64_t*>(p)[1]; }

void push_batch(void** central, void* first, std::uint32_t n) {
  BRAID_DASSERT(n > 0);
  BRAID_DASSERT(n < (1u << 16));
  BRAID_DASSERT((reinterpret_cast<std::uintptr_t>(*central) & ~kLinkMask) == 0);
  batch_word(first) =
      reinterpret_cast<std::uintptr_t>(*central) | (std::uint64_t{n} << kCountShift);
  *central = first;
}

// The next allocation from a cache writes this object right away (a new version's header and
// payload), and its first word is the list link the pop after it reads: fetch both now, with
// intent to write, so neither the pop nor the version's stores wait for DRAM. The whole class,
// not the bytes asked for now: a table's rows vary in length (TPC-C's customer and stock), and
// the next object of a class may serve a longer one. Its stores must not miss: the CAS that
// publishes a version waits for every store before it, and a store that missed held that CAS
// for a DRAM round trip, where the install's CAS then spent most of its time. Capped at 1 KiB:
// 16 prefetches per allocation at most; longer payloads stream from one address on.
void prefetch_next(const void* p, std::size_t class_bytes) {
  if (p == nullptr) return;
  const char* c = static_cast<const char*>(p);
  const std::size_t n = class_bytes < 1024 ? class_bytes : 1024;
  for (std::size_t off = 0; off < n; off += 64) __builtin_prefetch(c + off, 1, 3);
}
}  // namespace

Status VersionHeap::init(std::size_t reserve_bytes, bool huge_pages, std::size_t prefault_bytes) {
  BRAID_ASSERT(prefault_bytes <= reserve_bytes);
  if (Status s = arena_.reserve(reserve_bytes, huge_pages); !s.is_ok()) return s;
  if (Status s = arena_.populate(prefault_bytes); !s.is_ok()) {
    return Status::io_error("Options::prefault_version_bytes: " + std::string(s.message()));
  }
  return Status::ok();
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
  BRAID_DASSERT(cache->head[c] == nullptr);
  BRAID_DASSERT(cache->count[c] == 0);
  const std::uint32_t want = batch_of(c);
  const std::size_t size = class_bytes(c);
  std::lock_guard<std::mutex> guard(mutex_);
  if (void* first = central_[c]; first != nullptr) {
    const std::uint64_t word = batch_word(first);
    central_[c] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(word & kLinkMask));
    cache->head[c] = first;
    cache->count[c] = static_cast<std::uint32_t>(word >> kCountShift);
    return true;
  }
  const std::size_t need = want * size;
  if (cursor_ + need > arena_.reserved() || !arena_.ensure_committed(cursor_ + need).is_ok()) {
    return false;  // exhausted: a partial batch would only postpone the same answer
  }
  // Linked back to front so the cache hands out ascending addresses (the pages fault in order).
  void* head = nullptr;
  for (std::uint32_t i = want; i-- > 0;) {
    void* p = arena_.base() + cursor_ + i * size;
    next_of(p) = head;
    head = p;
  }
  cursor_ += need;
  cache->head[c] = head;
  cache->count[c] = want;
  return true;
}

void* VersionHeap::allocate(Cache* cache, std::size_t bytes) {
  if (bytes > kMaxBytes) return nullptr;
  const std::size_t c = class_of(bytes);
  if (cache->head[c] == nullptr && !refill(cache, c)) return nullptr;
  void* p = cache->head[c];
  void* next = next_of(p);
  cache->head[c] = next;
  --cache->count[c];
  prefetch_next(next, class_bytes(c));
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
  next_of(last) = nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  push_batch(&central_[c], first, n);
}

void VersionHeap::drain(Cache* cache) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (std::size_t c = 0; c < kClasses; ++c) {
    if (cache->head[c] != nullptr) push_batch(&central_[c], cache->head[c], cache->count[c]);
    cache->head[c] = nullptr;
    cache->count[c] = 0;
  }
}

}  // namespace braid::mvcc
