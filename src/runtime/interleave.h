// Round-robin interleaving of independent coroutine lookups (the `coro` technique of the probe
// suite; Killer Nanoseconds Algorithm 3).
//
// A fixed array of `group` slots, each holding one Task. The driver resumes the slots in turn; a
// slot whose task finished hands its result on and takes the next input at once — the `pipeline`
// policy of the workers, without transactions around it. No allocation per suspend: frames come
// from the calling thread's FrameAllocator when one is current (the probe bench installs one).
//
// The lookups are flat: each suspends only in its own body, at a Yield, so the driver resumes the
// task's own handle and no awaiter has to record where it stopped. (The engine's operations nest
// and use Miss, which records the handle; on the hash probe the flat form is what lets coro keep
// up with the hand-written AMAC state machine.)
#pragma once

#include <braid/task.h>

#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "runtime/cpu.h"
#include "util/assert.h"

namespace braid::runtime {

// Prefetches [p, p + bytes) and suspends to the driver (see above: flat lookups only).
struct Yield {
  const void* p;
  std::size_t bytes;
  bool await_ready() const noexcept {
    prefetch_lines(p, bytes);
    return false;
  }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};

inline constexpr std::size_t kMaxGroup = 64;

// make(i) -> Task<T> for input i (lazy: it runs on its first resume); done(i, T) receives the
// result. Inputs start in order; results arrive in completion order.
template <typename T, typename Make, typename Done>
void interleave(std::size_t n, std::size_t group, Make&& make, Done&& done) {
  BRAID_ASSERT(group >= 1);
  BRAID_ASSERT(group <= kMaxGroup);
  Task<T> task[kMaxGroup];
  std::size_t input[kMaxGroup];
  std::size_t next = 0;
  const std::size_t width = std::min(group, n);
  for (std::size_t g = 0; g < width; ++g) {
    input[g] = next++;
    task[g] = make(input[g]);
  }
  // While inputs remain every slot is busy, so the steady-state loop tests nothing but `done`.
  while (next < n) {
    for (std::size_t g = 0; g < width; ++g) {
      task[g].handle().resume();
      if (!task[g].done()) continue;
      done(input[g], task[g].take_result());
      if (next == n) {
        task[g].reset();
        continue;
      }
      input[g] = next++;
      task[g] = make(input[g]);
    }
  }
  // Drain.
  std::size_t left = 0;
  for (std::size_t g = 0; g < width; ++g) left += task[g].valid() ? 1 : 0;
  while (left != 0) {
    for (std::size_t g = 0; g < width; ++g) {
      if (!task[g].valid()) continue;
      task[g].handle().resume();
      if (!task[g].done()) continue;
      done(input[g], task[g].take_result());
      task[g].reset();
      --left;
    }
  }
}

}  // namespace braid::runtime
