#include "runtime/frame_allocator.h"

#include <braid/task.h>

#include <atomic>
#include <new>

#include "util/assert.h"

namespace braid::runtime {

namespace {
thread_local FrameAllocator* t_current = nullptr;
std::atomic<std::int64_t> g_heap_frames{0};
}  // namespace

FrameAllocator::FrameAllocator(std::size_t reserve_bytes, bool huge_pages) {
  // A failed reservation leaves an empty range: every frame then comes from the heap.
  if (arena_.reserve(reserve_bytes, huge_pages).is_ok()) {
    base_ = reinterpret_cast<std::uintptr_t>(arena_.base());
    limit_ = base_ + arena_.reserved();
  }
}

FrameAllocator::~FrameAllocator() {
  // Frames still alive here would dangle into the unmapped arena.
  BRAID_ASSERT(live() == 0);
  if (t_current == this) t_current = nullptr;
}

FrameAllocator* FrameAllocator::current() { return t_current; }
void FrameAllocator::set_current(FrameAllocator* a) { t_current = a; }

void* FrameAllocator::allocate(std::size_t bytes) {
  BRAID_DASSERT(bytes > 0);  // a frame holds at least its resume and destroy pointers
  BRAID_DASSERT(bytes <= kMaxClassBytes);
  const std::size_t c = class_of(bytes);
  if (FreeFrame* f = free_[c]; f != nullptr) [[likely]] {
    free_[c] = f->next;
    ++counters_.allocated;
    return f;
  }
  const std::size_t size = kMinClassBytes << c;
  if (base_ == 0 || cursor_ + size > arena_.reserved()) return nullptr;
  if (!arena_.ensure_committed(cursor_ + size).is_ok()) return nullptr;
  void* p = arena_.base() + cursor_;
  cursor_ += size;
  counters_.chunk_bytes = cursor_;
  ++counters_.allocated;
  return p;
}

void FrameAllocator::deallocate(void* p, std::size_t bytes) {
  BRAID_DASSERT(owns(p));
  const std::size_t c = class_of(bytes);
  auto* f = static_cast<FreeFrame*>(p);
  f->next = free_[c];
  free_[c] = f;
  ++counters_.freed;
}

std::uint64_t heap_frames_live() {
  return static_cast<std::uint64_t>(g_heap_frames.load(std::memory_order_relaxed));
}

}  // namespace braid::runtime

namespace braid::detail {

void* frame_allocate(std::size_t bytes) {
  runtime::FrameAllocator* a = runtime::t_current;
  if (a != nullptr) {
    if (bytes <= runtime::FrameAllocator::kMaxClassBytes) [[likely]] {
      if (void* p = a->allocate(bytes); p != nullptr) [[likely]]
        return p;
    }
    ++a->counters().heap_fallbacks;
  }
  runtime::g_heap_frames.fetch_add(1, std::memory_order_relaxed);
  return ::operator new(bytes);
}

void frame_deallocate(void* frame, std::size_t bytes) noexcept {
  runtime::FrameAllocator* a = runtime::t_current;
  if (a != nullptr && a->owns(frame)) [[likely]] {
    a->deallocate(frame, bytes);
    return;
  }
  runtime::g_heap_frames.fetch_sub(1, std::memory_order_relaxed);
  ::operator delete(frame, bytes);
}

}  // namespace braid::detail
