#include "runtime/cpu.h"

#include <pthread.h>
#include <sched.h>

namespace braid::runtime {

bool pin_current_thread(std::uint32_t i) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  const int n = CPU_COUNT(&allowed);
  if (n <= 0) return false;
  int want = static_cast<int>(i % static_cast<std::uint32_t>(n));
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (want-- == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    }
  }
  return false;
}

}  // namespace braid::runtime
