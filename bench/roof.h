// braid-bench roof: the machine's memory-level-parallelism roof. K independent random pointer
// chases over a buffer far larger than the last-level cache; the best rate over K is the most
// random cache lines one core (or all cores) can fetch per second, and K = 1 gives the
// dependent-load latency. Measured with 4 KiB pages and with transparent huge pages.
//
// Other sub-commands (probe, ycsb) read the saved roof to say what fraction of it they reached.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::bench {

int roof_main(int argc, char** argv, int first);
const char* roof_usage();

// The roof as saved by `braid-bench roof` (huge pages: every big arena of ours is on them).
struct Roof {
  bool known = false;
  double per_core_lines_per_s = 0;   // best K, one thread
  double all_cores_lines_per_s = 0;  // best K, one thread per core
  double latency_ns = 0;             // K = 1 (0 when not measured)
  std::uint32_t cores = 0;           // threads of the all-core figure
  std::uint64_t best_chains = 0;     // the K of the per-core figure
  // The roof for `threads` threads: per-core rate times threads, capped by the all-core rate.
  double for_threads(std::uint32_t threads) const;
};

// Reads the roof file; known == false when it is missing or unreadable ("none" never reads).
// "measure" measures a quick huge-page roof now (measure_roof), for machines whose memory speed
// drifts between a saved roof and the run.
Roof load_roof(const std::string& path);

// A quick huge-page roof in-process: a 512 MiB cycle, K in {16, 24, 28, 32}, `seconds` each,
// then the best K on every core. Unknown when the buffer cannot be mapped.
Roof measure_roof(double seconds);

// Bytes of the last-level cache (sysfs), or 32 MiB when it cannot be read.
std::uint64_t llc_bytes();

// One step of an operation's path through memory, for the line-fetch estimate: the step touches
// one random place of a region of `bytes` bytes and, when that misses, fetches `lines` lines.
struct PathStep {
  double bytes;
  double lines;
};

// Estimated random cache lines an operation fetches from DRAM. The LLC is handed out greedily to
// the steps in order (list the hottest first: a tree's upper levels before its leaves); a step
// whose region fits in what is left never misses, a step that partly fits misses in proportion.
// Uniform access is assumed, so this overstates misses under skew.
double estimate_lines(const std::vector<PathStep>& path);

}  // namespace braid::bench
