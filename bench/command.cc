#include "command.h"

#include <cstdio>

#include "report.h"

namespace braid::bench {

int usage_error(const char* command, const std::string& error, const char* usage) {
  std::fprintf(stderr, "braid-bench %s: %s\n\n%s", command, error.c_str(), usage);
  return 2;
}

int run_exit(std::uint64_t failed, const std::string& first_error, const char* what) {
  if (failed == 0) return 0;
  std::fprintf(stderr, "braid-bench: %s %s failed (first: %s)\n", with_commas(failed).c_str(), what,
               first_error.c_str());
  return 1;
}

void Outcomes::count(const Status& s) {
  if (s.is_ok()) {
    ++commits;
  } else if (s == Code::kConflict) {
    ++aborts;
  } else {
    ++errors;
    if (first_error.empty()) first_error = s.to_string();
  }
}

double peak_rss_mib() { return static_cast<double>(peak_rss_bytes()) / (1 << 20); }

}  // namespace braid::bench
