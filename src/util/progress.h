// Reporting a long phase's progress to Options::progress without flooding it: one report per
// ~100 ms at most, and one at the end. Runs on the thread doing (or waiting for) the work.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "braid/options.h"

namespace braid::util {

class ProgressMeter {
 public:
  using Sink = std::function<void(const ProgressReport&)>;

  // `sink` may be empty (nothing is reported) and must outlive the meter.
  ProgressMeter(const Sink& sink, const char* phase, const char* unit, std::uint64_t total);

  bool enabled() const { return static_cast<bool>(sink_); }

  // `done` so far (clamped to the total); reported when the last report is 100 ms old. Cheap
  // enough to call per chunk of work, not per record.
  void update(std::uint64_t done);
  // Raises the total (a phase that finds more work than it first knew of).
  void set_total(std::uint64_t total) { total_ = total; }
  // The end: a last report with done == total (once; later calls do nothing).
  void finish();

 private:
  const Sink& sink_;
  const char* phase_;
  const char* unit_;
  std::uint64_t total_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace braid::util
