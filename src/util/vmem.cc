#include "util/vmem.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "util/assert.h"

namespace braid::util {

namespace {
constexpr std::size_t kStep = std::size_t{2} << 20;  // 2 MiB: one transparent huge page
std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }
}  // namespace

VirtualArena::~VirtualArena() {
  if (base_ != nullptr) ::munmap(base_, reserved_);
}

Status VirtualArena::reserve(std::size_t reserve_bytes, bool huge_pages) {
  BRAID_ASSERT(base_ == nullptr);
  if (reserve_bytes == 0) return Status::invalid_argument("empty reservation");
  const std::size_t bytes = round_up(reserve_bytes, kStep);
  // Over-reserve by one step so the usable range can start on a 2 MiB boundary: THP only backs
  // aligned 2 MiB extents.
  void* p =
      ::mmap(nullptr, bytes + kStep, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Status::io_error("cannot reserve " + std::to_string(bytes) +
                            " bytes of address space: " + std::strerror(errno));
  }
  auto raw = reinterpret_cast<std::uintptr_t>(p);
  auto aligned = round_up(raw, kStep);
  if (aligned > raw) ::munmap(p, aligned - raw);
  const std::size_t tail = (raw + bytes + kStep) - (aligned + bytes);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  base_ = reinterpret_cast<char*>(aligned);
  reserved_ = bytes;
  huge_pages_ = huge_pages;
  return Status::ok();
}

Status VirtualArena::ensure_committed(std::size_t bytes) {
  if (bytes <= committed_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> guard(grow_mutex_);
  const std::size_t have = committed_.load(std::memory_order_relaxed);
  if (bytes <= have) return Status::ok();
  if (bytes > reserved_) {
    return Status::io_error("arena limit reached: need " + std::to_string(bytes) +
                            " bytes, reserved " + std::to_string(reserved_));
  }
  // Grow geometrically (at least 2 MiB, at most doubling) so a table loaded row by row takes
  // O(log n) trips into the kernel.
  std::size_t target = round_up(bytes, kStep);
  target = std::max(target, std::min(reserved_, have * 2));
  if (::mprotect(base_ + have, target - have, PROT_READ | PROT_WRITE) != 0) {
    return Status::io_error("cannot commit arena memory: " + std::string(std::strerror(errno)));
  }
  if (huge_pages_) {
    // Quiet fallback: a kernel without THP (or with it set to "never") answers EINVAL, and the
    // arena simply stays on 4 KiB pages.
    if (::madvise(base_ + have, target - have, MADV_HUGEPAGE) == 0) huge_advised_ = true;
  }
  committed_.store(target, std::memory_order_release);
  return Status::ok();
}

Status VirtualArena::populate(std::size_t bytes) {
  if (bytes == 0) return Status::ok();
  // Faulting in more than the machine has free would not fail cleanly: the OOM killer answers,
  // not madvise. Refuse up front instead.
  const auto free_bytes = static_cast<std::size_t>(::sysconf(_SC_AVPHYS_PAGES)) *
                          static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes > free_bytes) {
    return Status::io_error("cannot make " + std::to_string(bytes) +
                            " bytes resident: the machine has " + std::to_string(free_bytes) +
                            " bytes free");
  }
  if (Status s = ensure_committed(bytes); !s.is_ok()) return s;
  const std::size_t len = std::min(round_up(bytes, kStep), committed());
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack the name
#endif
  if (::madvise(base_, len, MADV_POPULATE_WRITE) == 0) return Status::ok();
  if (errno != EINVAL) {
    return Status::io_error("cannot make " + std::to_string(len) +
                            " bytes of arena memory resident: " + std::strerror(errno));
  }
  // A kernel without MADV_POPULATE_WRITE: fault the pages in by hand. The memory is fresh and
  // zero-filled, so writing a zero changes nothing but residency.
  for (std::size_t off = 0; off < len; off += 4096) {
    static_cast<volatile char*>(base_)[off] = 0;
  }
  return Status::ok();
}

void trim_heap() {
#if defined(__GLIBC__)
  (void)malloc_trim(0);
#endif
}

}  // namespace braid::util
