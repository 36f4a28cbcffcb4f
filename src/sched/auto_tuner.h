// ExecMode::kAuto's controller (no seed paper has one). It alternates short
// measurement windows over candidate batch sizes — 1 meaning sequential, plain calls, no
// suspension — keeps the fastest for a stretch that doubles while the winner stands, then
// measures again, so it follows a workload that moves into or out of the cache.
//
// Single-threaded: one per worker, driven from the worker's scheduler loop. Time is passed in
// (`now`) so tests can drive it; the worker passes steady_clock::now().
//
// A window's length is the worker's own time: wall time less the time it waited preempted
// (runtime/run_delay.h), so a window that another process's threads took the core from is
// neither shorter in work nor blamed on its candidate. With wall time on a busy machine,
// preempted windows rated whichever candidate they fell on low, at random, and kAuto chose
// badly.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace braid::runtime {
class RunDelay;
}

namespace braid::sched {

class AutoTuner {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::int64_t kWindowNs = 2'000'000;  // one measurement window
  static constexpr std::uint32_t kMinExploit = 16;      // windows to keep a new winner
  static constexpr std::uint32_t kMaxExploit = 512;     // ... at most (about a second)
  static constexpr std::size_t kMaxCandidates = 4;
  // A standing winner within this much of a new best keeps its place: the tolerance
  // for auto against the best fixed mode, so a tie costs at most what the target allows.
  static constexpr double kTiePercent = 3.0;
  // Transactions between clock reads: a window ends at the first check after kWindowNs.
  static constexpr std::uint64_t kCheckEvery = 32;

  // Candidates: 1 (sequential) and interleaving at the batch sizes CoroBase found best, 4-16,
  // those not above max_batch. Starts exploring with the first.
  void reset(std::uint32_t max_batch, Clock::time_point now);
  // Continues after a pause (the worker ran other modes, or nothing) with the standing winner
  // for a whole stretch of its current length, then explores as usual; without a winner yet,
  // starts the first exploration over. Nothing measured across the pause counts.
  void resume(Clock::time_point now);

  // The batch size to run now (1: sequential).
  std::uint32_t batch() const { return candidates_[current_]; }

  // The tuner rates a candidate by operations per second, credited as they start: TPC-C's
  // transactions differ in length by 100x, so a window's count of finished transactions mostly
  // measures how many long ones it happened to hold. Operations of a transaction that ends in
  // a Conflict are taken back when it ends: a batch size that interleaves conflicting
  // transactions does more operations but wastes them.
  void on_ops(std::uint32_t n) { window_ops_ += n; }
  void on_finished(bool useful, std::uint32_t ops) {
    if (!useful) window_ops_ -= static_cast<std::int64_t>(ops);
    if (++window_txns_ % kCheckEvery == 0) check_window(Clock::now());
  }
  // Ends the current window if it has lasted kWindowNs by `now`, and decides when the last
  // candidate of an exploration has been measured. `waited_ns` is the worker's total preempted
  // time so far (the source's reading; tests pass their own).
  void check_window(Clock::time_point now) {
    // The worker's own time is at most the wall time: until that reaches a window, the window
    // cannot have ended, and the preempted time (a syscall) need not be read.
    if (now - window_start_ < std::chrono::nanoseconds(kWindowNs)) return;
    check_window(now, waited());
  }
  void check_window(Clock::time_point now, std::int64_t waited_ns);

  // Where the worker's preempted time is read (null: none is discounted). Set on the worker's
  // thread, before the first window it should discount.
  void set_wait_source(const runtime::RunDelay* source);

  std::uint64_t decisions() const { return decisions_; }
  // The batch size the last decision chose (1 before the first).
  std::uint32_t choice() const { return candidates_[best_]; }
  bool exploring() const { return exploring_; }

 private:
  std::uint32_t candidates_[kMaxCandidates] = {1};
  double rates_[kMaxCandidates] = {};  // summed over the explorations of one decision
  std::size_t count_ = 1;
  std::size_t current_ = 0;
  bool exploring_ = true;
  bool has_winner_ = false;  // a decision since reset (best_ means something)
  bool confirming_ = false;  // exploring again to confirm a change of winner
  std::size_t best_ = 0;
  std::uint32_t exploit_windows_ = kMinExploit;
  std::uint32_t windows_left_ = 0;
  std::uint64_t window_txns_ = 0;
  std::int64_t window_ops_ = 0;  // may dip below zero when a conflict takes back earlier ops
  Clock::time_point window_start_{};
  std::int64_t window_waited_ = 0;  // the source's reading at the window's start
  const runtime::RunDelay* wait_source_ = nullptr;
  std::int64_t waited() const;
  std::uint64_t decisions_ = 0;
};

}  // namespace braid::sched
