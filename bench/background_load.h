// Competing load for a benchmark's runs (`--background-load N`): N unpinned threads, each
// walking its own 64 MiB buffer at random and writing what it reads, so the measured workers
// are preempted (more runnable threads than cores) and find their caches polluted — what a
// build running beside a database does to it (compiler jobs beside the runs hurt kAuto's choices
// far more than as many pure spin loops did: they also evict the caches).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace braid::bench {

class BackgroundLoad {
 public:
  explicit BackgroundLoad(std::uint32_t threads);
  ~BackgroundLoad();
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;

  // Lines each thread touched (keeps the walk from being optimized away; reported in JSON).
  std::uint64_t touched() const { return touched_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> touched_{0};
  std::vector<std::thread> threads_;
};

}  // namespace braid::bench
