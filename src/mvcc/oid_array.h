// A table's indirection array: OID → tagged entry. Reserved virtually at its maximum size and
// committed as it grows, so entries never move and readers index it without a lock.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstdint>

#include "mvcc/version.h"
#include "util/vmem.h"

namespace braid::mvcc {

class OidArray {
 public:
  Status init(std::uint64_t max_records, bool huge_pages);

  // A fresh OID whose entry is empty. Busy when the table is full, IOError when memory runs out.
  Result<std::uint64_t> allocate();

  std::atomic<std::uint64_t>& entry(std::uint64_t oid) {
    BRAID_DASSERT(oid < allocated());
    return entries()[oid];
  }
  std::uint64_t allocated() const { return next_.load(std::memory_order_acquire); }
  std::uint64_t capacity() const { return capacity_; }
  bool huge_pages() const { return arena_.huge_pages_advised(); }

 private:
  std::atomic<std::uint64_t>* entries() const {
    return reinterpret_cast<std::atomic<std::uint64_t>*>(arena_.base());
  }
  util::VirtualArena arena_;
  std::uint64_t capacity_ = 0;
  std::atomic<std::uint64_t> next_{0};
};

}  // namespace braid::mvcc
