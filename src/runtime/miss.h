// The awaiter placed before a likely cache miss in the coroutine modes.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "runtime/cpu.h"

namespace braid::runtime {

// Prefetches [p, p + bytes) and suspends, leaving the handle in *sink for the scheduler, which
// resumes it after running the other open transactions — by then the lines have arrived. With
// bytes == 0 it only suspends (after prefetches issued by the caller). The prefetch happens in
// await_ready so that it is issued before any suspension bookkeeping, and it targets L2: the
// lines are read only after the other transactions ran (see CacheLevel).
//
// *site counts the operation's suspensions: the operation set it to its own site (kind and
// table, engine::Worker::note_op) when it began, so the value names the code the transaction
// resumes in — what the `team` scheduler groups transactions by (sched/team.cc).
struct Miss {
  static constexpr CacheLevel kPrefetchTo = CacheLevel::kL2;
  const void* p;
  std::size_t bytes;
  std::coroutine_handle<>* sink;
  std::uint64_t* suspends;
  std::uint32_t* site;

  bool await_ready() const noexcept {
    if (bytes != 0) prefetch_lines<kPrefetchTo>(p, bytes);
    return false;
  }
  void await_suspend(std::coroutine_handle<> h) const noexcept {
    *sink = h;
    ++*suspends;
    ++*site;
  }
  void await_resume() const noexcept {}
};

}  // namespace braid::runtime
