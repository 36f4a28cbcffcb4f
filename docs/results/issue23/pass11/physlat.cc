// Per guest-physical-GiB latency and MLP throughput of random line fetches.
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>
#include <map>
#include <random>
#include <chrono>
#include <algorithm>
int main(int argc, char** argv) {
  size_t gib = argc > 1 ? atol(argv[1]) : 8;
  size_t bytes = gib << 30;
  char* base = (char*)mmap(nullptr, bytes + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  base = (char*)(((uintptr_t)base + (2u << 20) - 1) & ~uintptr_t((2u << 20) - 1));
  madvise(base, bytes, MADV_HUGEPAGE);
  for (size_t o = 0; o < bytes; o += 4096) base[o] = 1;
  int fd = open("/proc/self/pagemap", O_RDONLY);
  std::map<uint64_t, std::vector<size_t>> buckets;  // phys GiB -> chunk indices
  size_t nchunks = bytes >> 21;
  for (size_t c = 0; c < nchunks; ++c) {
    uint64_t e; uintptr_t va = (uintptr_t)(base + (c << 21));
    pread(fd, &e, 8, (va / 4096) * 8);
    uint64_t pfn = e & ((1ull << 55) - 1);
    buckets[(pfn << 12) >> 30].push_back(c);
  }
  std::mt19937_64 rng(42);
  std::vector<uint64_t> order; for (auto& kv : buckets) order.push_back(kv.first);
  int passes = argc > 3 ? atoi(argv[3]) : 2;
  std::mt19937_64 orng(argc > 2 ? atol(argv[2]) : 1);
  for (int pass = 0; pass < passes; ++pass) { std::shuffle(order.begin(), order.end(), orng);
  for (uint64_t g : order) { auto& chunks = buckets[g];
    if (chunks.size() < 32) { printf("pass %d GiB %3lu: %zu chunks (skip)\n", g, chunks.size()); continue; }
    // random cycle over 1<<20 lines within these chunks
    size_t n = 1 << 20;
    std::vector<char*> lines(n);
    for (size_t i = 0; i < n; ++i) {
      size_t c = chunks[rng() % chunks.size()];
      lines[i] = base + (c << 21) + (rng() % 32768) * 64;
    }
    std::sort(lines.begin(), lines.end()); lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    std::shuffle(lines.begin(), lines.end(), rng);
    n = lines.size();
    for (size_t i = 0; i < n; ++i) *(char**)lines[i] = lines[(i + 1) % n];
    // latency: one chain
    char* p = lines[0]; size_t steps = 1 << 21;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < steps; ++i) p = *(char**)p;
    auto t1 = std::chrono::steady_clock::now();
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / steps;
    // MLP: 16 chains
    char* q[16]; for (int k = 0; k < 16; ++k) q[k] = lines[k * (n / 16)];
    size_t s2 = 1 << 19;
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < s2; ++i) for (int k = 0; k < 16; ++k) q[k] = *(char**)q[k];
    t1 = std::chrono::steady_clock::now();
    double mps = 16.0 * s2 / std::chrono::duration<double>(t1 - t0).count() / 1e6;
    printf("pass %d GiB %3lu: %5zu chunks  %6.1f ns/load  %6.1f M lines/s %p %p\n", g, chunks.size(), ns, mps, (void*)p, (void*)q[0]);
    fflush(stdout);
  }}
}
