#include "mvcc/oid_array.h"

#include <sys/mman.h>

#include <algorithm>
#include <string>
#include <vector>

#include "util/assert.h"

namespace braid::mvcc {

static_assert(sizeof(std::atomic<std::uint64_t>) == 8);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

Status OidArray::init(std::uint64_t max_records, bool huge_pages) {
  capacity_ = max_records;
  return arena_.reserve(max_records * sizeof(std::uint64_t), huge_pages);
}

void OidArray::release(std::uint64_t oid) {
  BRAID_ASSERT(oid < allocated());
  // A demoted record's OID still reads moved (entry::kMoved) for the stale holders that may
  // meet it until the horizon passes; none is left now, and the next allocation expects empty.
  std::atomic<std::uint64_t>& e = entry(oid);
  if (entry::is_moved(e.load(std::memory_order_relaxed))) {
    e.store(entry::kEmpty, std::memory_order_relaxed);
  }
  BRAID_DASSERT(e.load(std::memory_order_relaxed) == entry::kEmpty);
  std::lock_guard<std::mutex> g(free_mutex_);
  free_.push_back(oid);
  free_count_.store(free_.size(), std::memory_order_relaxed);
  if (++released_since_trim_ >= std::max(kTrimEvery, allocated() / 8) &&
      free_.size() >= allocated() / 4) {
    trim_locked();
  }
}

void OidArray::trim_locked() {
  released_since_trim_ = 0;
  const std::uint64_t pages = allocated() / kOidsPerPage;  // whole pages only
  std::vector<std::uint16_t> free_in(pages, 0);
  for (std::uint64_t oid : free_) {
    if (oid / kOidsPerPage < pages) ++free_in[oid / kOidsPerPage];
  }
  if (page_given_back_.size() < pages) page_given_back_.resize(pages, false);
  char* base = arena_.base();
  std::size_t gave = 0;
  for (std::uint64_t p = 0; p < pages;) {
    if (free_in[p] != kOidsPerPage || page_given_back_[p]) {
      ++p;
      continue;
    }
    std::uint64_t e = p;
    while (e < pages && free_in[e] == kOidsPerPage && !page_given_back_[e]) {
      page_given_back_[e] = true;
      ++e;
    }
    ::madvise(base + p * 4096, (e - p) * 4096, MADV_DONTNEED);
    gave += (e - p) * 4096;
    p = e;
  }
  given_back_.fetch_add(gave, std::memory_order_relaxed);
  released_bytes_.fetch_add(gave, std::memory_order_relaxed);
}

bool OidArray::pop_free(std::uint64_t* oid) {
  std::lock_guard<std::mutex> g(free_mutex_);
  if (free_.empty()) return false;
  *oid = free_.front();
  free_.pop_front();
  if (const std::uint64_t page = *oid / kOidsPerPage;
      page < page_given_back_.size() && page_given_back_[page]) {
    page_given_back_[page] = false;  // the insert's write faults it in again
    given_back_.fetch_sub(4096, std::memory_order_relaxed);
  }
  // The next OID out was released long ago (the queue's whole length), so its entry's line
  // is cold; the insert that takes it writes it at once. Fetched now, with intent to write,
  // it arrives while this insert runs.
  if (!free_.empty()) __builtin_prefetch(&entries()[free_.front()], 1, 3);
  free_count_.store(free_.size(), std::memory_order_relaxed);
  BRAID_DASSERT(entry(*oid).load(std::memory_order_relaxed) == entry::kEmpty);
  return true;
}

Result<std::uint64_t> OidArray::allocate_new() {
  std::uint64_t oid = next_.load(std::memory_order_relaxed);
  do {
    if (oid >= capacity_) {
      return Status::busy("table is full: " + std::to_string(capacity_) +
                          " records (Options::max_records_per_table)");
    }
    // Commit memory before publishing the OID, so every allocated entry is backed.
    Status s = arena_.ensure_committed((oid + 1) * sizeof(std::uint64_t));
    if (!s.is_ok()) return s;
  } while (!next_.compare_exchange_weak(oid, oid + 1, std::memory_order_acq_rel));
  return oid;
}

}  // namespace braid::mvcc
