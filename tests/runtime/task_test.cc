// Task<T> and the frame allocator: laziness, results, symmetric transfer, and that every frame
// is freed exactly once — also when a chain is destroyed while suspended.
#include <braid/task.h>
#include <gtest/gtest.h>

#include <coroutine>
#include <string>
#include <vector>

#include "runtime/frame_allocator.h"

namespace braid::runtime {
namespace {

// Installs an allocator as the current thread's for a test's duration.
struct CurrentAllocator {
  FrameAllocator alloc{std::size_t{16} << 20, false};
  CurrentAllocator() { FrameAllocator::set_current(&alloc); }
  ~CurrentAllocator() { FrameAllocator::set_current(nullptr); }
};

// Suspends to whoever resumed the chain, recording the handle to resume.
struct Park {
  std::coroutine_handle<>* sink;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const noexcept { *sink = h; }
  void await_resume() const noexcept {}
};

Task<int> leaf(int x, int* started) {
  ++*started;
  co_return x * 2;
}

Task<int> parent(int x, int* started) {
  const int a = co_await leaf(x, started);
  const int b = co_await leaf(x + 1, started);
  co_return a + b;
}

Task<void> drive(Task<int> t, int* out) { *out = co_await std::move(t); }

TEST(Task, IsLazyAndPassesResults) {
  CurrentAllocator ca;
  int started = 0;
  int out = 0;
  {
    Task<int> p = parent(10, &started);
    EXPECT_EQ(started, 0);  // nothing ran yet
    Task<void> d = drive(std::move(p), &out);
    d.handle().resume();
    EXPECT_TRUE(d.done());
  }
  EXPECT_EQ(started, 2);
  EXPECT_EQ(out, 20 + 22);
  // clang may elide the frames of awaited children into their parent's (HALO), so the count
  // is at most drive + parent + two leaves; what must hold is that everything was freed.
  EXPECT_EQ(ca.alloc.live(), 0u);
  EXPECT_GE(ca.alloc.counters().allocated, 1u);
  EXPECT_LE(ca.alloc.counters().allocated, 4u);
  EXPECT_EQ(ca.alloc.counters().heap_fallbacks, 0u);
}

Task<std::uint64_t> count_down(std::uint64_t n) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    int started = 0;
    sum += static_cast<std::uint64_t>(co_await leaf(1, &started));
  }
  co_return sum;
}

TEST(Task, SymmetricTransferDoesNotGrowTheStack) {
  // A million awaits of child tasks in a loop: with asymmetric resumption each one would nest a
  // resume() frame on the stack of the previous completion.
  CurrentAllocator ca;
  Task<std::uint64_t> t = count_down(1'000'000);
  t.handle().resume();
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.take_result(), 2'000'000u);
  t.reset();
  EXPECT_EQ(ca.alloc.live(), 0u);
  // Frames are recycled: the million children reused one block.
  EXPECT_LE(ca.alloc.counters().chunk_bytes, 4096u);
}

Task<void> deep(int depth, std::coroutine_handle<>* sink, std::string* log) {
  std::string local = "frame " + std::to_string(depth);  // destroyed with the frame
  if (depth == 0) {
    co_await Park{sink};
    log->append("resumed;");
    co_return;
  }
  co_await deep(depth - 1, sink, log);
}

TEST(Task, DestroyingASuspendedChainFreesEveryFrameOnce) {
  CurrentAllocator ca;
  std::coroutine_handle<> sink;
  std::string log;
  {
    Task<void> top = deep(50, &sink, &log);
    top.handle().resume();  // runs down to the innermost frame and parks there
    EXPECT_FALSE(top.done());
    EXPECT_TRUE(sink);
    EXPECT_GE(ca.alloc.live(), 1u);  // up to 51: children's frames may be elided (HALO)
  }  // destroyed while suspended 50 frames deep
  EXPECT_EQ(ca.alloc.live(), 0u);
  EXPECT_EQ(ca.alloc.counters().allocated, ca.alloc.counters().freed);
  EXPECT_TRUE(log.empty());  // it never resumed
}

TEST(Task, ResumedChainFinishesAndReturnsToItsResumer) {
  CurrentAllocator ca;
  std::coroutine_handle<> sink;
  std::string log;
  Task<void> top = deep(5, &sink, &log);
  top.handle().resume();
  ASSERT_FALSE(top.done());
  sink.resume();  // the innermost frame continues; completion flows up by symmetric transfer
  EXPECT_TRUE(top.done());
  EXPECT_EQ(log, "resumed;");
  top.reset();
  EXPECT_EQ(ca.alloc.live(), 0u);
}

TEST(FrameAllocator, SizeClassesRecycleAndLargeFramesFallBack) {
  FrameAllocator a(std::size_t{4} << 20, false);
  std::vector<void*> ps;
  const std::vector<std::size_t> sizes = {1, 64, 65, 500, 4096, 8192};
  for (std::size_t bytes : sizes) {
    void* p = a.allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(a.owns(p));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
    ps.push_back(p);
  }
  const std::uint64_t carved = a.counters().chunk_bytes;
  a.deallocate(ps[3], 500);
  EXPECT_EQ(a.allocate(400), ps[3]);  // same class (512 B), same block
  EXPECT_EQ(a.counters().chunk_bytes, carved);
  a.deallocate(ps[3], 400);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (i != 3) a.deallocate(ps[i], sizes[i]);
  }
  EXPECT_EQ(a.live(), 0u);
  int x = 0;
  EXPECT_FALSE(a.owns(&x));
}

TEST(FrameAllocator, TasksOffWorkersUseTheHeap) {
  ASSERT_EQ(FrameAllocator::current(), nullptr);
  const std::uint64_t before = heap_frames_live();
  int started = 0;
  std::vector<Task<int>> escaped;  // escapes the caller, so its frame cannot be elided
  escaped.push_back(leaf(3, &started));
  EXPECT_EQ(heap_frames_live(), before + 1);
  escaped[0].handle().resume();
  EXPECT_EQ(escaped[0].take_result(), 6);
  escaped.clear();
  EXPECT_EQ(heap_frames_live(), before);
}

}  // namespace
}  // namespace braid::runtime
