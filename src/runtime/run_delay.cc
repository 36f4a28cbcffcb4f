#include "runtime/run_delay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace braid::runtime {

RunDelay::RunDelay() { fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC); }

RunDelay::~RunDelay() {
  if (fd_ >= 0) ::close(fd_);
}

std::int64_t RunDelay::ns() const {
  if (fd_ < 0) return 0;
  // "<time on the cpu> <time waiting on a runqueue> <timeslices>\n", in nanoseconds.
  char buf[96];
  const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char* end = nullptr;
  (void)std::strtoll(buf, &end, 10);
  if (end == buf) return 0;
  return std::strtoll(end, nullptr, 10);
}

}  // namespace braid::runtime
