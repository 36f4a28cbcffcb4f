#include "util/progress.h"

#include <algorithm>

namespace braid::util {

namespace {
constexpr auto kEvery = std::chrono::milliseconds(100);
}  // namespace

ProgressMeter::ProgressMeter(const Sink& sink, const char* phase, const char* unit,
                             std::uint64_t total)
    : sink_(sink), phase_(phase), unit_(unit), total_(total) {
  if (!enabled()) return;
  last_ = std::chrono::steady_clock::now();
  sink_(ProgressReport{phase_, unit_, 0, total_});
}

void ProgressMeter::update(std::uint64_t done) {
  if (!enabled() || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < kEvery) return;
  last_ = now;
  sink_(ProgressReport{phase_, unit_, std::min(done, total_), total_});
}

void ProgressMeter::finish() {
  if (!enabled() || finished_) return;
  finished_ = true;
  sink_(ProgressReport{phase_, unit_, total_, total_});
}

}  // namespace braid::util
