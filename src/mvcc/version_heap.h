// Memory for record versions: one reserved virtual range per database, on transparent huge pages
// where the kernel allows, carved into size classes.
//
// Why not malloc: every read of a record touches its newest version, so versions are the
// largest randomly accessed structure after the index; on 4 KiB pages each such access also
// misses the TLB, a page walk on top of the DRAM access. And why per-context caches: a
// version is allocated by one transaction and often freed by another (pruning, reclamation),
// possibly on another thread, so each transaction context keeps small per-class free lists that
// need no lock, and trades whole batches with a central list under a mutex (tcmalloc's design,
// much smaller).
#pragma once

#include <braid/status.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "util/vmem.h"

namespace braid::mvcc {

class VersionHeap {
 public:
  // 16-byte steps up to 256 bytes (15 classes), then powers of two up to 128 KiB (9 classes).
  static constexpr std::size_t kClasses = 24;
  static constexpr std::size_t kMaxBytes = std::size_t{128} << 10;

  struct Cache {
    void* head[kClasses] = {};
    std::uint32_t count[kClasses] = {};
  };

  // Reserves the heap's address space; `prefault_bytes` of it are made resident at once (see
  // Options::prefault_version_bytes).
  Status init(std::size_t reserve_bytes, bool huge_pages, std::size_t prefault_bytes = 0);
  ~VersionHeap();

  // 16-byte aligned; null when the reservation is exhausted.
  void* allocate(Cache* cache, std::size_t bytes);
  void free(Cache* cache, void* p, std::size_t bytes);
  // Hands everything in `cache` back to the central lists.
  void drain(Cache* cache);

  std::size_t committed_bytes() const { return arena_.committed(); }
  const char* base() const { return arena_.base(); }
  bool huge_pages() const { return arena_.huge_pages_advised(); }

  static std::size_t class_of(std::size_t bytes);
  static std::size_t class_bytes(std::size_t c);

 private:
  static std::uint32_t batch_of(std::size_t c);
  // Moves up to `n` objects of class c into the cache (central list first, then fresh memory).
  bool refill(Cache* cache, std::size_t c);

  util::VirtualArena arena_;
  std::mutex mutex_;
  std::size_t cursor_ = 0;        // guarded by mutex_
  void* central_[kClasses] = {};  // per class, a stack of whole batches (version_heap.cc)
};

}  // namespace braid::mvcc
