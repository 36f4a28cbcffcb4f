#include "util/stall.h"

#include <cstdio>

namespace braid::util {

void StallMonitor::report(const char* wait, std::uint64_t stalled_ns, std::string detail) {
  stalls_.fetch_add(1, std::memory_order_relaxed);
  const StallReport r{wait, stalled_ns / 1'000'000, std::move(detail)};
  std::lock_guard<std::mutex> g(sink_mutex_);
  if (sink_) {
    sink_(r);
    return;
  }
  std::fprintf(stderr, "braid: stall: %s has not progressed for %llu ms: %s\n", r.wait,
               static_cast<unsigned long long>(r.stalled_ms), r.detail.c_str());
  std::fflush(stderr);
}

}  // namespace braid::util
