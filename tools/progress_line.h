// The command-line tools' progress line (braid-bench, braid): one line on stderr, rewritten in
// place, for phases that last more than ~2 s, and only when stderr is a terminal, so JSON
// output and logs stay clean. Fed by Options::progress (the engine's phases) or by a poller
// (braid-bench's load and warm-up).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>

#include "braid/options.h"

namespace braid::tools {

class ProgressLine {
 public:
  // Draws on stderr when it is a terminal.
  ProgressLine();
  // The process's line on stderr, shared by everything that reports (one line at a time).
  static ProgressLine& on_stderr();
  // Tests: draws on `out` when `enabled`, once a phase is `quiet_s` seconds old.
  ProgressLine(std::FILE* out, bool enabled, double quiet_s);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }

  // One report; a new phase (another name) ends the line of the one before. done == total
  // ends the phase (its line then says how long it took). Thread-safe.
  void report(const ProgressReport& r);
  // Options::progress drawing on this line (which must outlive the database's open and its
  // checkpoints).
  std::function<void(const ProgressReport&)> sink() {
    return [this](const ProgressReport& r) { report(r); };
  }

 private:
  void end_line();

  std::mutex mutex_;
  std::FILE* out_;
  bool enabled_;
  double quiet_s_;
  std::string phase_;  // empty: none running
  std::chrono::steady_clock::time_point start_;
  bool shown_ = false;
};

// "1,234,567"
std::string with_commas(std::uint64_t v);

}  // namespace braid::tools
