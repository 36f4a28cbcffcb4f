// runtime::RunDelay reads this thread's preempted time: it grows while other threads take the
// thread's core, and never goes back.
#include "runtime/run_delay.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace braid::runtime {
namespace {

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
}

TEST(RunDelay, GrowsWhileOtherThreadsShareTheCore) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  std::int64_t before = 0;
  std::int64_t after = 0;
  std::thread measured([&] {
    pin_to(cpu);
    const RunDelay delay;
    if (!delay.available()) GTEST_SKIP() << "no /proc/thread-self/schedstat on this kernel";
    std::atomic<bool> stop{false};
    std::vector<std::thread> rivals;
    for (int i = 0; i < 3; ++i) {
      rivals.emplace_back([&] {
        pin_to(cpu);
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    }
    before = delay.ns();
    // 200 ms of spinning on a core shared with three spinners: it waits most of that time.
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < end) {
    }
    after = delay.ns();
    stop.store(true);
    for (auto& t : rivals) t.join();
  });
  measured.join();
  if (before == 0 && after == 0) return;  // skipped
  EXPECT_GE(after, before);
  EXPECT_GT(after - before, 50'000'000) << "waited only " << (after - before) << " ns";
}

}  // namespace
}  // namespace braid::runtime
