#include "background_load.h"

#include <memory>

#include "util/random.h"

namespace braid::bench {

namespace {
constexpr std::size_t kBufferWords = (std::size_t{64} << 20) / sizeof(std::uint64_t);
}  // namespace

BackgroundLoad::BackgroundLoad(std::uint32_t threads) {
  for (std::uint32_t t = 0; t < threads; ++t) {
    threads_.emplace_back([this, t] {
      auto buf = std::make_unique<std::uint64_t[]>(kBufferWords);  // zeroed: faulted in here
      util::Rng rng(0xb16 + t);
      std::uint64_t n = 0;
      while (!stop_.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 4096; ++i) {
          std::uint64_t& w = buf[rng.next() % kBufferWords];
          w = w * 3 + 1;
        }
        n += 4096;
      }
      touched_.fetch_add(n + (buf[n % kBufferWords] & 1), std::memory_order_relaxed);
    });
  }
}

BackgroundLoad::~BackgroundLoad() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
}

}  // namespace braid::bench
