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
//
// Memory goes back to the system from the central lists only, and only in bulk: a heap whose
// free objects outgrew a quarter of what it holds (a load under a budget keeps the versions'
// peak long after eviction took them; a table emptied by removals) gives back the pages that
// whole runs of free objects cover (release_free). Tracking pages per allocation would add a
// counter's line to every allocation and free; a release instead pays once per large change of
// the live set, off the allocation path.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

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

  // Gives back to the system the pages of the central lists' free objects that lie in runs of
  // whole free objects, highest addresses first, until at most `keep` bytes of free objects
  // stay listed; answers the bytes of pages given back. A given-back run is carved again (from
  // its lowest address) only once the central lists are empty, before fresh memory: a page
  // given back and faulted in at once would be a loss twice over. Any thread; concurrent
  // allocations and frees proceed meanwhile (they see empty central lists, which costs them
  // fresh memory for that moment). Objects in the contexts' caches stay where they are.
  std::size_t release_free(std::size_t keep);
  // Cheap (two relaxed loads): the central lists hold more than a quarter of the heap's
  // resident objects and at least kReleaseFloor, and no release runs.
  bool release_due() const;
  // The first release due gives back all but an eighth of the resident objects. After it, what
  // is free is judged over a window of traffic: the allocations and frees that followed,
  // until they moved an eighth of the resident bytes. Idle is what stayed listed the whole
  // window (its low-water mark), or what is listed beyond the window's allocations, whichever
  // is more (a drop of the live set frees far more than it allocates: nothing of it is in
  // use); only idle memory goes back, and a window with less than kReleaseFloor idle gives
  // back nothing and the next one starts. Without the window, a steady churn (eviction frees
  // versions as loads allocate them) that keeps more than a quarter of the heap free released
  // at every mark: each release a sort of every free object, and the pages given back faulted
  // in again at once (a quarter of a worker's time under a 20 MiB budget).
  void maybe_release();
  static constexpr std::size_t kReleaseFloor = std::size_t{256} << 10;
  // The smallest run of whole free pages given back at once (on 4 KiB pages; on huge pages a
  // release gives back only whole huge pages, below).
  static constexpr std::size_t kMinReleaseRun = std::size_t{16} << 10;

  // Releases give back 4 KiB pages even where the heap has huge pages. For a heap that is
  // mostly free most of the time: where the index pages under a budget, the budget holds the
  // index first and few versions, scattered over every huge page, so whole huge pages never
  // come free (a 100-byte database ten times its budget held 35 MiB for 1–13 MiB of live
  // versions). Elsewhere a split huge page costs every live version on it TLB misses. Set once,
  // before the first release (the runs' page counts assume one granule).
  void set_small_releases(bool on) { small_releases_ = on; }

  std::size_t committed_bytes() const { return arena_.committed(); }
  // Carved so far less the pages given back now: what the heap holds of the system's memory
  // (its resident bytes, up to pages never touched).
  std::size_t resident_bytes() const {
    return cursor_.load(std::memory_order_relaxed) - released_now_.load(std::memory_order_relaxed);
  }
  // Pages given back since init (a page given back twice counts twice).
  std::uint64_t released_bytes() const { return released_total_.load(std::memory_order_relaxed); }
  std::size_t central_free_bytes() const { return central_bytes_.load(std::memory_order_relaxed); }
  const char* base() const { return arena_.base(); }
  bool huge_pages() const { return arena_.huge_pages_advised(); }

  static std::size_t class_of(std::size_t bytes);
  static std::size_t class_bytes(std::size_t c);

 private:
  static std::uint32_t batch_of(std::size_t c);
  // Moves up to `n` objects of class c into the cache (central list first, then a given-back
  // run, then fresh memory).
  bool refill(Cache* cache, std::size_t c);
  // Carves up to `want` objects of `size` bytes from the lowest given-back run that holds one;
  // answers the first (linked), or null. Under mutex_.
  void* carve_run(std::size_t size, std::uint32_t want, std::uint32_t* got);
  void add_central(std::size_t c, void* first, std::uint32_t n);  // under mutex_

  // Free memory whose whole pages went back to the system: arena offsets [begin, end), the
  // pages inside given back (its edges may share a page with live objects).
  struct Run {
    std::size_t begin;
    std::size_t end;
  };
  // What a release gives back in: whole huge pages where the heap has them. Giving back part
  // of one splits it, and every live version left on the split page then costs a TLB miss
  // more: a budget that keeps many versions ran measurably slower on split pages, for a few
  // MiB less memory than whole huge pages keep (docs/results.md).
  // Under mutex_: the arena learns whether it has huge pages as it grows, in refill.
  std::size_t granule() const;
  static std::size_t pages_inside(Run r, std::size_t granule);

  util::VirtualArena arena_;
  bool small_releases_ = false;
  std::mutex mutex_;
  // Written under mutex_; atomic only so the statistics may read it without the mutex.
  std::atomic<std::size_t> cursor_{0};
  void* central_[kClasses] = {};  // per class, a stack of whole batches (version_heap.cc)
  std::vector<Run> runs_;         // guarded by mutex_; by begin, descending (lowest last)
  std::mutex release_mutex_;      // one release at a time
  // Written under mutex_, read without it by release_due and the statistics.
  std::atomic<std::size_t> central_bytes_{0};
  std::atomic<std::size_t> released_now_{0};
  std::atomic<std::uint64_t> released_total_{0};
  std::atomic<bool> releasing_{false};
  // maybe_release()'s window, written under mutex_: the least the central lists held since it
  // began (kNoWindow: no release yet), the bytes refills handed out since, and the bytes freed
  // to the lists since.
  static constexpr std::size_t kNoWindow = ~std::size_t{0};
  std::atomic<std::size_t> window_low_{kNoWindow};
  std::atomic<std::size_t> window_taken_{0};
  std::atomic<std::size_t> window_given_{0};  // bytes frees listed since it began
  void start_window();                        // under mutex_
  void took(std::size_t bytes) {              // under mutex_: a refill handed `bytes` out
    window_taken_.store(window_taken_.load(std::memory_order_relaxed) + bytes,
                        std::memory_order_relaxed);
  }
};

}  // namespace braid::mvcc
