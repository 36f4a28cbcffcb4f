#include "progress_line.h"

#include <unistd.h>

#include <cstring>

namespace braid::tools {

std::string with_commas(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

namespace {

// Bytes in MiB (a log is hundreds of millions of them); anything else as a count.
std::string amount(std::uint64_t v, const char* unit) {
  if (std::strcmp(unit, "bytes") == 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(v) / (1 << 20));
    return buf;
  }
  return with_commas(v);
}

const char* unit_name(const char* unit) { return std::strcmp(unit, "bytes") == 0 ? "MiB" : unit; }

}  // namespace

ProgressLine::ProgressLine() : ProgressLine(stderr, ::isatty(STDERR_FILENO) != 0, 2.0) {}

ProgressLine::ProgressLine(std::FILE* out, bool enabled, double quiet_s)
    : out_(out), enabled_(enabled), quiet_s_(quiet_s) {}

ProgressLine& ProgressLine::on_stderr() {
  static ProgressLine line;
  return line;
}

ProgressLine::~ProgressLine() { end_line(); }

void ProgressLine::end_line() {
  if (shown_) std::fprintf(out_, "\n");
  std::fflush(out_);
  shown_ = false;
  phase_.clear();
}

void ProgressLine::report(const ProgressReport& r) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> g(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (phase_ != r.phase) {
    end_line();
    phase_ = r.phase;
    start_ = now;
  }
  const bool last = r.done >= r.total;
  const double secs = std::chrono::duration<double>(now - start_).count();
  // Phases shorter than quiet_s print nothing; longer ones one line, rewritten in place.
  if (secs >= quiet_s_ || (last && shown_)) {
    const double rate = secs > 0 ? static_cast<double>(r.done) / secs : 0;
    const double eta = rate > 0 ? static_cast<double>(r.total - r.done) / rate : 0;
    const double pct =
        r.total == 0 ? 100.0 : 100.0 * static_cast<double>(r.done) / static_cast<double>(r.total);
    std::fprintf(out_, "\r%s: %s of %s %s (%.1f%%), %s %s/s, %s %.0f s   ", r.phase,
                 amount(r.done, r.unit).c_str(), amount(r.total, r.unit).c_str(), unit_name(r.unit),
                 pct, amount(static_cast<std::uint64_t>(rate), r.unit).c_str(), unit_name(r.unit),
                 last ? "took" : "ETA", last ? secs : eta);
    std::fflush(out_);
    shown_ = true;
  }
  if (last) end_line();
}

}  // namespace braid::tools
