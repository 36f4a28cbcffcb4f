// Virtual memory reservations that grow in place.
//
// The OID arrays must never move (readers hold no lock while they index them), yet a table's
// size is not known up front. So each array reserves its whole address range once (PROT_NONE
// costs no memory and no commit charge) and makes a prefix readable and writable as it grows.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstddef>
#include <mutex>

namespace braid::util {

// Gives the allocator's free memory back to the system (glibc's malloc_trim, every arena; a
// no-op elsewhere). After a phase that allocated and freed much at once (an open's manifest
// and replay, a bulk load) whose peak a process under a memory budget must not keep: glibc
// trims a thread's arena only from its top, so freed pages below live ones stay resident.
void trim_heap();

class VirtualArena {
 public:
  VirtualArena() = default;
  ~VirtualArena();
  VirtualArena(const VirtualArena&) = delete;
  VirtualArena& operator=(const VirtualArena&) = delete;

  // Reserves `reserve_bytes` of address space (rounded up to 2 MiB). With `huge_pages`, asks
  // for transparent huge pages on what gets committed; a refusal is not an error.
  Status reserve(std::size_t reserve_bytes, bool huge_pages);

  // Makes at least the first `bytes` usable (zero-filled). Thread-safe; commits in 2 MiB steps
  // so growth is rare. IOError past the reservation or when the kernel refuses memory.
  Status ensure_committed(std::size_t bytes);

  // Commits the first `bytes` and makes them resident now (MADV_POPULATE_WRITE; on kernels
  // before 5.14, one write per 4 KiB page), so that later first touches do not fault. Not
  // thread-safe with concurrent users of the arena (call it before handing the arena out).
  // IOError past the reservation, beyond the machine's free memory, or when the kernel cannot
  // supply the memory.
  Status populate(std::size_t bytes);

  char* base() const { return base_; }
  std::size_t reserved() const { return reserved_; }
  std::size_t committed() const { return committed_.load(std::memory_order_acquire); }
  bool huge_pages_advised() const { return huge_advised_; }

 private:
  char* base_ = nullptr;
  std::size_t reserved_ = 0;
  std::atomic<std::size_t> committed_{0};
  bool huge_pages_ = false;
  bool huge_advised_ = false;
  std::mutex grow_mutex_;
};

}  // namespace braid::util
