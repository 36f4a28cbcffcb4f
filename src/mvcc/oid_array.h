// A table's indirection array: OID → tagged entry. Reserved virtually at its maximum size and
// committed as it grows, so entries never move and readers index it without a lock.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "mvcc/version.h"
#include "util/vmem.h"

namespace braid::mvcc {

class OidArray {
 public:
  Status init(std::uint64_t max_records, bool huge_pages);

  // An OID whose entry is empty: a released one if there is any (the longest released first),
  // else a never-used one. Busy when the table is full, IOError when memory runs out.
  //
  // First in, first out, because released OIDs arrive in the order their records were
  // reclaimed: where keys come and go in order (a queue, a session store, time-ordered keys),
  // new keys then take OIDs in key order, and a scan in key order (a checkpoint, a range read)
  // walks the OID array in runs. A stack hands out the latest few releases reversed and mixed
  // with the rest, and after some rounds of churn neighbouring keys have OIDs anywhere. The
  // price, a cold entry line per allocation, is paid ahead (pop_free prefetches the next).
  Result<std::uint64_t> allocate() {
    if (free_count_.load(std::memory_order_relaxed) != 0) {
      if (std::uint64_t oid; pop_free(&oid)) return oid;
    }
    return allocate_new();
  }
  // A never-used OID, above every one allocated so far, even while released ones wait: for a
  // bulk load's neighbours, whose rollback takes back what lies above the load's first OID.
  Result<std::uint64_t> allocate_above() { return allocate_new(); }
  // Makes an OID allocatable again. The caller guarantees that its entry is empty (or moved,
  // which this empties) and that no
  // transaction can still reach it: nothing names it (no index entry, no secondary entry) and
  // every transaction that could have found it before has ended (the reclamation epoch has
  // passed the clock read after the last name went; engine/reclaim.cc).
  void release(std::uint64_t oid);
  // OIDs released and not yet allocated again.
  std::uint64_t free_count() const { return free_count_.load(std::memory_order_relaxed); }

  std::atomic<std::uint64_t>& entry(std::uint64_t oid) {
    BRAID_DASSERT(oid < allocated());
    return entries()[oid];
  }
  std::uint64_t allocated() const { return next_.load(std::memory_order_acquire); }
  std::uint64_t capacity() const { return capacity_; }
  // The memory the array's OIDs use: the pages up to the allocation front, less the pages
  // given back (trim) and not touched again since. Not what the arena committed: it commits
  // in 2 MiB steps, which a small table never touches (a budget of a megabyte would count the
  // 2 MiB of a table of 6,000 records and evict everything for them).
  std::size_t used_bytes() const {
    constexpr std::uint64_t kPage = 4096;
    const std::uint64_t front = (allocated() * sizeof(std::uint64_t) + kPage - 1) / kPage * kPage;
    const std::size_t gone = given_back_.load(std::memory_order_relaxed);
    return front > gone ? static_cast<std::size_t>(front - gone) : 0;
  }
  // Pages given back so far, in bytes (a page given back again counts again).
  std::uint64_t released_bytes() const { return released_bytes_.load(std::memory_order_relaxed); }
  bool huge_pages() const { return arena_.huge_pages_advised(); }

 private:
  Result<std::uint64_t> allocate_new();
  bool pop_free(std::uint64_t* oid);
  std::atomic<std::uint64_t>* entries() const {
    return reinterpret_cast<std::atomic<std::uint64_t>*>(arena_.base());
  }
  util::VirtualArena arena_;
  std::uint64_t capacity_ = 0;
  std::atomic<std::uint64_t> next_{0};
  // Released OIDs, a queue. A mutex, not a lock-free list: it is taken once per insert only
  // while reclaimed OIDs wait, and once per released OID; free_count_ keeps a table without
  // removals off it entirely.
  std::mutex free_mutex_;
  std::deque<std::uint64_t> free_;
  std::atomic<std::uint64_t> free_count_{0};
  // Giving pages back (trim, under free_mutex_): a page whose OIDs are all on the free list
  // holds only empty entries and nobody may write one before allocating it, so it can go back
  // to the system (MADV_DONTNEED: it reads as zeros, empty entries, when touched again). Only
  // after many releases, when the free list is a good part of the array (demotions under a
  // budget freed the OIDs a load took, churn shrank the table): trim walks the whole list.
  void trim_locked();
  static constexpr std::uint64_t kOidsPerPage = 4096 / sizeof(std::uint64_t);
  static constexpr std::uint64_t kTrimEvery = std::uint64_t{1} << 16;  // releases, at least
  std::uint64_t released_since_trim_ = 0;
  std::vector<bool> page_given_back_;  // by page: given back and not touched since
  std::atomic<std::size_t> given_back_{0};
  std::atomic<std::uint64_t> released_bytes_{0};
};

}  // namespace braid::mvcc
