// Waits bounded by progress (Options::stall_timeout_ms).
//
// Every loop in which an application thread or a worker waits for something another party
// must do — the durable clock to pass a commit, a log block to reach the disk, another
// transaction's certification verdict, a cold read, a checkpoint — keeps a StallWatch and
// feeds it, on each turn, a number that moves whenever the wait comes closer to its end (the
// clock it waits on, combined with completions of the I/O that could move it). When that number
// has stood still for the timeout, the watch reports the wait once through the database's
// StallMonitor, naming it and the state it waits on; it reports again only after the number
// moved and then stood still once more.
//
// A report never ends the wait. The engine cannot tell a wait that will never end from one on
// a device that is merely slow, and a commit that already published its timestamp cannot be
// taken back; so it says what is stuck, counts it, and keeps waiting (a halt still ends every
// wait with IOError).
#pragma once

#include <braid/options.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace braid::util {

class StallMonitor {
 public:
  using Sink = std::function<void(const StallReport&)>;
  // `timeout_ms` 0: nothing is ever reported. An empty sink writes one line to stderr.
  StallMonitor(std::uint32_t timeout_ms, Sink sink)
      : timeout_ns_(std::uint64_t{timeout_ms} * 1'000'000), sink_(std::move(sink)) {}

  bool enabled() const { return timeout_ns_ != 0; }
  std::uint64_t timeout_ns() const { return timeout_ns_; }
  std::uint64_t stalls() const { return stalls_.load(std::memory_order_relaxed); }

  // Counts the stall and hands it to the sink; sink calls are serialized.
  void report(const char* wait, std::uint64_t stalled_ns, std::string detail);

 private:
  const std::uint64_t timeout_ns_;
  const Sink sink_;
  std::mutex sink_mutex_;
  std::atomic<std::uint64_t> stalls_{0};
};

class StallWatch {
 public:
  // `monitor` may be null (nothing is watched); `wait` names the wait in the report and must
  // outlive the watch (a literal).
  StallWatch(StallMonitor* monitor, const char* wait) : monitor_(monitor), wait_(wait) {}

  // One turn of the wait. `detail()` is called only to build a report.
  template <typename Detail>
  void turn(std::uint64_t progress, Detail&& detail) {
    if (monitor_ == nullptr || !monitor_->enabled()) return;
    if (!started_ || progress != progress_) {
      // A moving wait reads no clock: the episode starts at its first turn without progress.
      started_ = true;
      reported_ = false;
      progress_ = progress;
      since_ = 0;
      return;
    }
    if (reported_) return;
    // A clock read can cost a fast turn (a worker's round) as much as the rest of it. Turns
    // that come fast read it sparsely, doubling the stride up to kMaxStride while less than
    // kFastNs passes between reads; a slow turn reads it every time. A stall is then reported
    // late by at most about kFastNs or kMaxStride fast turns.
    if (since_ != 0 && ++skipped_ < stride_) return;
    skipped_ = 0;
    const std::uint64_t now = now_ns();
    if (since_ == 0) {
      since_ = now;
      last_read_ = now;
      stride_ = 1;
      return;
    }
    stride_ = now - last_read_ < kFastNs ? std::min(2 * stride_, kMaxStride) : 1;
    last_read_ = now;
    if (now - since_ < monitor_->timeout_ns()) return;
    reported_ = true;
    monitor_->report(wait_, now - since_, detail());
  }
  // The wait ended (or has nothing to wait for now): the next turn starts a new one.
  void reset() { started_ = false; }
  bool reported() const { return reported_; }

 private:
  static std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

  static constexpr std::uint32_t kMaxStride = 64;
  static constexpr std::uint64_t kFastNs = 1'000'000;

  StallMonitor* monitor_;
  const char* wait_;
  std::uint32_t stride_ = 1;   // turns per clock read
  std::uint32_t skipped_ = 0;  // turns since the last read
  std::uint64_t last_read_ = 0;
  bool started_ = false;
  bool reported_ = false;
  std::uint64_t progress_ = 0;
  std::uint64_t since_ = 0;  // 0: the progress just moved (no clock read yet)
};

// A progress number that moves when either part does (a clock and a completion count).
inline std::uint64_t progress_of(std::uint64_t a, std::uint64_t b) {
  return a * 0x9E3779B97F4A7C15ull + b;
}

}  // namespace braid::util
