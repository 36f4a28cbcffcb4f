// How long the calling thread has waited runnable but not running — preempted by other threads
// on its core — in total since it started: the second field of /proc/thread-self/schedstat
// (Linux's sched_info accounting). Time blocked on I/O or asleep is not in it, so wall time
// less this is the time the thread had the core or chose to wait: what ExecMode::kAuto's tuner
// rates a candidate by (sched/auto_tuner.h), so that a preempted measurement window is not
// blamed on the batch size it measured.
#pragma once

#include <cstdint>

namespace braid::runtime {

class RunDelay {
 public:
  // Opens the calling thread's file: construct on the thread to be measured.
  RunDelay();
  ~RunDelay();
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;

  // False when the kernel keeps no such account (then ns() is always 0).
  bool available() const { return fd_ >= 0; }
  // Nanoseconds waited so far (one pread of a few bytes, ~1 us: read once per window).
  std::int64_t ns() const;

 private:
  int fd_ = -1;
};

}  // namespace braid::runtime
