#include "sched/auto_tuner.h"

#include <algorithm>
#include <iterator>

#include "runtime/run_delay.h"
#include "util/assert.h"

namespace braid::sched {

void AutoTuner::reset(std::uint32_t max_batch, Clock::time_point now) {
  BRAID_ASSERT(max_batch >= 1);
  const std::uint32_t all[kMaxCandidates] = {1, 4, 8, 16};
  count_ = 0;
  for (std::uint32_t b : all) {
    if (b <= max_batch) candidates_[count_++] = b;
  }
  best_ = 0;
  has_winner_ = false;
  exploit_windows_ = kMinExploit;
  resume(now);
}

std::int64_t AutoTuner::waited() const { return wait_source_ != nullptr ? wait_source_->ns() : 0; }

void AutoTuner::set_wait_source(const runtime::RunDelay* source) {
  wait_source_ = source;
  window_waited_ = waited();
}

void AutoTuner::resume(Clock::time_point now) {
  window_txns_ = 0;
  window_ops_ = 0;
  window_start_ = now;
  window_waited_ = waited();
  std::fill(std::begin(rates_), std::end(rates_), 0.0);
  confirming_ = false;
  // With a winner: exploit it for a whole stretch. Without: explore from the first candidate
  // (windows_left_ is not read while exploring).
  exploring_ = !has_winner_;
  current_ = has_winner_ ? best_ : 0;
  windows_left_ = exploit_windows_;
}

void AutoTuner::check_window(Clock::time_point now, std::int64_t waited_ns) {
  const std::int64_t wall =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - window_start_).count();
  // The worker's own time: a preempted stretch neither counts toward the window nor dilutes
  // its rate. (Clamped: the two clocks are read apart.)
  const std::int64_t ns = std::max<std::int64_t>(wall - (waited_ns - window_waited_), 1);
  if (ns < kWindowNs) return;
  const double rate =
      static_cast<double>(std::max<std::int64_t>(window_ops_, 0)) / static_cast<double>(ns);
  window_txns_ = 0;
  window_ops_ = 0;
  window_start_ = now;
  window_waited_ = waited_ns;
  if (!exploring_) {
    BRAID_ASSERT(windows_left_ > 0);
    if (--windows_left_ != 0) return;
    exploring_ = true;
    current_ = 0;
    return;
  }
  rates_[current_] += rate;
  if (++current_ < count_) return;
  // Every candidate measured: keep the fastest. A repeated winner earns a longer stretch (less
  // time lost measuring losers); a change of winner means the workload moved. Single 2 ms
  // windows are noisy, though, and in TPC-CR batch sizes 4, 8 and 16 run within a few percent
  // of each other: the lead changed hands at nearly every exploration, each change cut the
  // stretch back to kMinExploit, and the tuner spent much of its time re-measuring candidates
  // far slower than the winner. So a standing winner within kTiePercent of
  // the new best is a tie and stays, and a change must be confirmed: the tuner explores again at
  // once and switches only if the sums of both explorations still say so.
  std::size_t best = 0;
  for (std::size_t i = 1; i < count_; ++i) {
    if (rates_[i] > rates_[best]) best = i;
  }
  const bool tie = rates_[best_] * 100.0 >= rates_[best] * (100.0 - kTiePercent);
  if (tie && has_winner_) best = best_;
  if (best != best_ && has_winner_ && !confirming_) {
    confirming_ = true;
    current_ = 0;
    return;
  }
  exploit_windows_ =
      has_winner_ && best == best_ ? std::min(exploit_windows_ * 2, kMaxExploit) : kMinExploit;
  confirming_ = false;
  has_winner_ = true;
  std::fill(std::begin(rates_), std::end(rates_), 0.0);
  best_ = best;
  current_ = best;
  exploring_ = false;
  windows_left_ = exploit_windows_;
  ++decisions_;
}

}  // namespace braid::sched
