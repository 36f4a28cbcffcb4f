// Per-worker coroutine frame allocator.
//
// Every transaction and, in the interleaved modes, every operation is a coroutine frame. The
// global heap would put a lock-free-but-shared allocator on the hot path of every operation, so
// each worker owns a FrameAllocator: power-of-two size classes (64 B .. 8 KiB) with intrusive
// free lists, carved from one reserved virtual range (on huge pages where allowed). A frame is
// freed by the thread that allocated it (transactions never migrate), so no operation here is
// atomic. Frames larger than the biggest class, and frames of Tasks created on threads that are
// not workers, come from the heap; an address-range check tells the two apart on free.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "util/vmem.h"

namespace braid::runtime {

struct FrameCounters {
  std::uint64_t allocated = 0;
  std::uint64_t freed = 0;
  std::uint64_t heap_fallbacks = 0;  // frames above the largest class while this was current
  std::uint64_t chunk_bytes = 0;     // bytes carved from the arena so far
};

class FrameAllocator {
 public:
  static constexpr std::size_t kMinClassBytes = 64;
  static constexpr std::size_t kClasses = 8;  // 64 B .. 8 KiB
  static constexpr std::size_t kMaxClassBytes = kMinClassBytes << (kClasses - 1);

  // `reserve_bytes` bounds the frame memory of one worker: slots * frames per transaction *
  // frame size, with room to spare.
  explicit FrameAllocator(std::size_t reserve_bytes = std::size_t{256} << 20,
                          bool huge_pages = true);
  ~FrameAllocator();
  FrameAllocator(const FrameAllocator&) = delete;
  FrameAllocator& operator=(const FrameAllocator&) = delete;

  // Null when the arena is exhausted (the caller falls back to the heap).
  void* allocate(std::size_t bytes);
  void deallocate(void* p, std::size_t bytes);
  bool owns(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= base_ && a < limit_;
  }

  const FrameCounters& counters() const { return counters_; }
  FrameCounters& counters() { return counters_; }
  std::uint64_t live() const { return counters_.allocated - counters_.freed; }

  // The allocator of the calling thread (a worker), or null.
  static FrameAllocator* current();
  static void set_current(FrameAllocator* a);

 private:
  struct FreeFrame {
    FreeFrame* next;
  };
  // The smallest class holding `bytes`: log2 of the power of two at or above it, counted from
  // kMinClassBytes. One bit scan, not a loop (a loop costs tens of instructions and a
  // mispredicted exit on every allocation).
  static std::size_t class_of(std::size_t bytes) {
    static_assert(std::has_single_bit(kMinClassBytes));
    constexpr int kMinShift = std::countr_zero(kMinClassBytes);
    const int shift = static_cast<int>(std::bit_width(bytes - 1));  // 2^shift >= bytes
    return shift > kMinShift ? static_cast<std::size_t>(shift - kMinShift) : 0;
  }

  util::VirtualArena arena_;
  std::uintptr_t base_ = 0;
  std::uintptr_t limit_ = 0;
  std::size_t cursor_ = 0;  // bytes of the arena carved into frames
  FreeFrame* free_[kClasses] = {};
  FrameCounters counters_;
};

// Frames of tasks created off the workers (heap), process-wide; for lifetime tests.
std::uint64_t heap_frames_live();

}  // namespace braid::runtime
