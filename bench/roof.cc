#include "roof.h"
#include "command.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "flags.h"
#include "report.h"
#include "runtime/cpu.h"
#include "util/assert.h"
#include "util/random.h"
#include "util/vmem.h"

namespace braid::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kLine = 64;

// Chain counts with a compiled chase loop (K must be a constant so the K cursors live in
// registers and the K loads of a round are independent instructions).
constexpr std::uint64_t kChainChoices[] = {1,  2,  4,  6,  8,  10, 12, 14,
                                           16, 20, 24, 28, 32, 40, 48, 64};

// One line of the buffer: the index of the next line of the single random cycle.
struct alignas(kLine) Line {
  std::uint64_t next;
  char pad[kLine - sizeof(std::uint64_t)];
};
static_assert(sizeof(Line) == kLine);

class Buffer {
 public:
  // A random cyclic permutation (Sattolo) over `lines` lines, on huge pages or on 4 KiB pages.
  bool build(std::size_t lines, bool huge, std::uint64_t seed, std::string* err) {
    bytes_ = lines * kLine;
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      *err = "cannot map " + std::to_string(bytes_ >> 20) + " MiB: " + std::strerror(errno);
      return false;
    }
    // Refusals are not fatal: THP may be off, in which case both rows measure 4 KiB pages.
    (void)::madvise(p, bytes_, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    lines_ = static_cast<Line*>(p);
    n_ = lines;
    for (std::size_t i = 0; i < n_; ++i) lines_[i].next = i;
    util::Rng rng(seed);
    for (std::size_t i = n_ - 1; i > 0; --i) std::swap(lines_[i].next, lines_[rng.uniform(i)].next);
    return true;
  }
  ~Buffer() {
    if (lines_ != nullptr) ::munmap(lines_, bytes_);
  }
  const Line* lines() const { return lines_; }
  std::size_t size() const { return n_; }

 private:
  Line* lines_ = nullptr;
  std::size_t n_ = 0;
  std::size_t bytes_ = 0;
};

template <std::size_t K>
std::uint64_t chase(const Line* lines, std::size_t n, std::uint64_t seed, double seconds) {
  std::uint64_t cur[K];
  util::Rng rng(seed);
  for (auto& c : cur) c = rng.uniform(n);  // distinct positions of one cycle never merge
  std::uint64_t rounds = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    for (int r = 0; r < 1024; ++r) {
      for (std::size_t k = 0; k < K; ++k) cur[k] = lines[cur[k]].next;
    }
    rounds += 1024;
  } while (Clock::now() < end);
  std::uint64_t sink = 0;
  for (auto c : cur) sink += c;
  if (sink == ~std::uint64_t{0}) std::fprintf(stderr, " ");
  return rounds * K;
}

std::uint64_t chase_k(std::uint64_t k, const Buffer& b, std::uint64_t seed, double seconds) {
  switch (k) {
#define BRAID_CHASE(K) \
  case K:              \
    return chase<K>(b.lines(), b.size(), seed, seconds);
    BRAID_CHASE(1)
    BRAID_CHASE(2)
    BRAID_CHASE(4)
    BRAID_CHASE(6)
    BRAID_CHASE(8)
    BRAID_CHASE(10)
    BRAID_CHASE(12)
    BRAID_CHASE(14)
    BRAID_CHASE(16)
    BRAID_CHASE(20)
    BRAID_CHASE(24)
    BRAID_CHASE(28)
    BRAID_CHASE(32)
    BRAID_CHASE(40)
    BRAID_CHASE(48)
    BRAID_CHASE(64)
#undef BRAID_CHASE
  }
  return 0;
}

// Lines per second with `threads` threads of `k` chains each (pinned, one per core).
double measure(const Buffer& b, std::uint64_t k, std::uint32_t threads, double seconds,
               std::uint64_t seed) {
  std::vector<std::uint64_t> lines(threads);
  std::vector<std::thread> ts;
  std::atomic<std::uint32_t> ready{0};
  const auto start = Clock::now();
  for (std::uint32_t t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      runtime::pin_current_thread(t);
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      lines[t] = chase_k(k, b, seed * 1000 + t, seconds);
    });
  }
  for (auto& th : ts) th.join();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  std::uint64_t total = 0;
  for (auto l : lines) total += l;
  return static_cast<double>(total) / s;
}

// The number after "key": in a flat JSON text, or -1.
double json_number(const std::string& text, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + needle.size(), nullptr);
}

// One thread at each K (row(1, k, rate) after each), then the best K on `threads` threads
// (row(threads, k, rate) when threads > 1). K = 1, when tried, gives the latency.
template <typename Row>
Roof roof_of(const Buffer& b, const std::vector<std::uint64_t>& chains, std::uint32_t threads,
             double seconds, std::uint64_t seed, Row* row) {
  Roof r;
  std::uint64_t best_k = chains.front();
  for (std::uint64_t k : chains) {
    const double rate = measure(b, k, 1, seconds, seed);
    if (k == 1) r.latency_ns = 1e9 / rate;
    if (rate > r.per_core_lines_per_s) {
      r.per_core_lines_per_s = rate;
      best_k = k;
    }
    if (row != nullptr) (*row)(1, k, rate);
  }
  r.all_cores_lines_per_s = r.per_core_lines_per_s;
  if (threads > 1) {
    r.all_cores_lines_per_s = measure(b, best_k, threads, seconds, seed);
    if (row != nullptr) (*row)(threads, best_k, r.all_cores_lines_per_s);
  }
  r.cores = threads;
  r.best_chains = best_k;
  r.known = true;
  return r;
}

struct NoRow {
  void operator()(std::uint32_t, std::uint64_t, double) const {}
};

// ---- Translation reach ---------------------------------------------------------------------
// A dependent chase over kReachLines lines (256 KiB, L2-resident after one lap) placed in D
// distinct 4 KiB pages, all of them spread over the same kReachHuge huge pages. With 2 MiB
// translations every row needs kReachHuge TLB entries and costs the same. Where the hypervisor
// backs the guest's huge pages with 4 KiB pages, the TLB holds 4 KiB translations: once D
// exceeds its entries, a lap in a fixed order evicts every page before its next visit, and
// each load of the D = kReachLines row pays a page walk. This is what the coroutine modes meet
// on every node, OID entry and version of a large table (docs/internals/benchmarks.md, "The roof").
constexpr std::size_t kReachLines = 4096;
constexpr std::size_t kReachHuge = 8;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kReachPages[] = {64, 512, kReachLines};

class ReachBuffer {
 public:
  // kReachHuge huge pages, 2 MiB-aligned and resident (a THP refusal leaves 4 KiB pages: then
  // every row measures those).
  Status build() {
    if (Status s = arena_.reserve(kReachHuge * kHugePage, true); !s.is_ok()) return s;
    return arena_.populate(kReachHuge * kHugePage);
  }
  // Links kReachLines lines of `pages` distinct pages (evenly spaced over the huge pages,
  // distinct random lines within each) into one random cycle; returns a line of it.
  char* link(std::size_t pages, util::Rng& rng) {
    BRAID_ASSERT(kReachLines % pages == 0);
    const std::size_t per_page = kReachLines / pages;
    BRAID_ASSERT(per_page <= kPage / kLine);
    const std::size_t stride = kReachHuge * kHugePage / kPage / pages;  // in 4 KiB pages
    std::vector<char*> lines;
    lines.reserve(kReachLines);
    for (std::size_t pg = 0; pg < pages; ++pg) {
      std::size_t slot[kPage / kLine];
      for (std::size_t i = 0; i < kPage / kLine; ++i) slot[i] = i;
      for (std::size_t i = 0; i < per_page; ++i) {  // a partial Fisher-Yates: distinct lines
        std::swap(slot[i], slot[i + rng.uniform(kPage / kLine - i)]);
        lines.push_back(arena_.base() + pg * stride * kPage + slot[i] * kLine);
      }
    }
    for (std::size_t i = lines.size() - 1; i > 0; --i) std::swap(lines[i], lines[rng.uniform(i)]);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      *reinterpret_cast<char**>(lines[i]) = lines[(i + 1) % lines.size()];
    }
    return lines[0];
  }

 private:
  util::VirtualArena arena_;
};

// Nanoseconds per dependent load around the cycle that starts at `p`, after a warm-up lap.
double reach_chase(char* p, double seconds) {
  for (std::size_t i = 0; i < kReachLines; ++i) p = *reinterpret_cast<char* volatile*>(p);
  std::uint64_t loads = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  do {
    for (int i = 0; i < 1024; ++i) p = *reinterpret_cast<char* volatile*>(p);
    loads += 1024;
  } while (Clock::now() < end);
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  if (p == nullptr) std::fprintf(stderr, " ");  // keeps the chase
  return ns / static_cast<double>(loads);
}

// The translation-reach rows (printed, and appended to `json` unless "none"); 0, or 1 after
// printing why it failed.
int measure_translation(std::uint64_t seed, double seconds, const std::string& json) {
  ReachBuffer buf;
  if (Status s = buf.build(); !s.is_ok()) {
    std::fprintf(stderr, "braid-bench roof: translation reach: %s\n", s.to_string().c_str());
    return 1;
  }
  util::Rng rng(seed);
  double ns[std::size(kReachPages)];
  for (std::size_t i = 0; i < std::size(kReachPages); ++i) {
    ns[i] = reach_chase(buf.link(kReachPages[i], rng), seconds);
    std::printf(
        "  translation: %s lines in %s distinct 4 KiB pages of %zu huge pages: %.1f ns "
        "per dependent load\n",
        with_commas(kReachLines).c_str(), with_commas(kReachPages[i]).c_str(), kReachHuge, ns[i]);
    if (json == "none") continue;
    JsonObject o;
    o.add("bench", "roof").add("time", iso_time()).add("kind", "translation");
    o.add("lines", kReachLines).add("pages_4k", kReachPages[i]).add("huge_pages", kReachHuge);
    o.add("seconds", seconds).add("ns_per_load", ns[i]);
    o.add_object("machine", machine_description());
    if (std::string e = append_json_line(json, o); !e.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
      return 1;
    }
  }
  // 1.5x: an L1-TLB miss that hits the second-level TLB costs a few cycles; a walk, tens.
  const double ratio = ns[std::size(kReachPages) - 1] / ns[0];
  std::printf("  translation: %.2fx the cost with %s pages as with %s: %s\n", ratio,
              with_commas(kReachLines).c_str(), with_commas(kReachPages[0]).c_str(),
              ratio > 1.5 ? "translations are cached per 4 KiB page here (huge pages backed by "
                            "small ones below the guest, or THP off), so every access to "
                            "a page outside the TLB's reach pays a page walk"
                          : "huge-page translations hold");
  return 0;
}

}  // namespace

const char* roof_usage() {
  return R"(usage: braid-bench roof [flags]

The memory-level-parallelism roof: K independent random pointer chases over a buffer much
larger than the last-level cache, with 4 KiB pages and with huge pages. Prints the random
cache-line fetch rate for each K with one thread, then the best K on every core, and the
dependent-load latency (K = 1). Saves the huge-page roof for 'probe' and 'ycsb' to read.

  --mib M          buffer size in MiB (default 1024; at least 8x the LLC is sensible)
  --chains LIST    chain counts K to try, comma-separated, from 1,2,4,6,8,10,12,14,16,20,
                   24,28,32,40,48,64 (default all of them)
  --threads T      threads for the all-core row (default: every core)
  --pages P        4k | huge | both (default both)
  --seconds S      per measurement (default 0.3)
  --seed N         random seed of the cycle and the starting points (default 1)
  --translation T  on | off (default on): also measure translation reach, a dependent chase
                   over 4096 L2-resident lines in 64, 512 or 4096 distinct 4 KiB pages of the
                   same 8 huge pages. Equal costs: huge-page translations hold. The 4096-page
                   row dearer: the TLB caches 4 KiB translations (a hypervisor backing the
                   guest's huge pages with small ones), so each page beyond its reach costs a
                   page walk
  --save FILE      where to save the roof (default results/roof.json; 'none' to skip)
  --json FILE      append results as JSON lines (default results/braid-bench.jsonl; 'none')
)";
}

double Roof::for_threads(std::uint32_t threads) const {
  const double linear = per_core_lines_per_s * threads;
  return all_cores_lines_per_s > 0
             ? std::min(linear, std::max(all_cores_lines_per_s, per_core_lines_per_s))
             : linear;
}

Roof measure_roof(double seconds) {
  Roof r;
  Buffer buf;
  std::string err;
  if (!buf.build((std::size_t{512} << 20) / kLine, true, 1, &err)) return r;
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  return roof_of(buf, {1, 16, 24, 28, 32}, cores, seconds, 1, static_cast<NoRow*>(nullptr));
}

Roof load_roof(const std::string& path) {
  Roof r;
  if (path == "none") return r;
  if (path == "measure") return measure_roof(0.2);
  std::ifstream in(path);
  if (!in) return r;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  r.per_core_lines_per_s = json_number(text, "per_core_lines_per_s");
  r.all_cores_lines_per_s = json_number(text, "all_cores_lines_per_s");
  r.latency_ns = json_number(text, "latency_ns");
  const double cores = json_number(text, "cores");
  r.cores = cores > 0 ? static_cast<std::uint32_t>(cores) : 0;
  r.known = r.per_core_lines_per_s > 0;
  return r;
}

std::uint64_t llc_bytes() {
  std::uint64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string s;
    if (!(in >> s) || s.empty()) continue;
    std::uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
    if (s.back() == 'K') v <<= 10;
    if (s.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  return best != 0 ? best : std::uint64_t{32} << 20;
}

double estimate_lines(const std::vector<PathStep>& path) {
  double left = static_cast<double>(llc_bytes());
  double lines = 0;
  for (const PathStep& s : path) {
    if (s.bytes <= 0) continue;
    const double cached = std::min(left, s.bytes);
    left -= cached;
    lines += s.lines * (1.0 - cached / s.bytes);
  }
  return lines;
}

int roof_main(int argc, char** argv, int first) {
  Flags flags;
  std::string err;
  std::uint64_t mib = 0, seed = 0;
  std::vector<std::uint64_t> chains;
  std::uint32_t threads = 0;
  std::string pages, save, json, translation;
  double seconds = 0;
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (flags.parse(argc, argv, first, &err)) {
    mib = flags.u64("mib", 1024, 1, std::uint64_t{1} << 20);
    chains = flags.u64_list("chains", {std::begin(kChainChoices), std::end(kChainChoices)}, 1, 64);
    threads = static_cast<std::uint32_t>(flags.u64("threads", cores, 1, 1024));
    pages = flags.choice("pages", "both", {"4k", "huge", "both"});
    seconds = flags.f64("seconds", 0.3, 0.001, 3600);
    seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
    translation = flags.choice("translation", "on", {"on", "off"});
    save = flags.str("save", "results/roof.json");
    json = flags.str("json", "results/braid-bench.jsonl");
    if (flags.finish(&err)) {
      for (std::uint64_t k : chains) {
        if (std::find(std::begin(kChainChoices), std::end(kChainChoices), k) ==
            std::end(kChainChoices)) {
          err = "--chains: " + std::to_string(k) +
                " is not one of 1,2,4,6,8,10,12,14,16,20,24,28,32,40,48,64";
          break;
        }
      }
    }
  }
  if (!err.empty()) {
    return usage_error("roof", err, roof_usage());
  }
  const std::size_t lines = static_cast<std::size_t>(mib << 20) / kLine;
  std::printf("braid-bench roof: %s MiB buffer (%s lines), LLC %s MiB, %u thread%s for all-core\n",
              with_commas(mib).c_str(), with_commas(lines).c_str(),
              with_commas(llc_bytes() >> 20).c_str(), threads, threads == 1 ? "" : "s");
  std::printf("  %-5s %7s %8s %14s %12s\n", "pages", "threads", "chains", "lines_per_s",
              "ns_per_line");

  Roof huge_roof;
  for (const char* kind : {"4k", "huge"}) {
    if (pages != "both" && pages != kind) continue;
    const bool huge = std::strcmp(kind, "huge") == 0;
    Buffer buf;
    if (!buf.build(lines, huge, seed, &err)) {
      std::fprintf(stderr, "braid-bench roof: %s\n", err.c_str());
      return 1;
    }
    std::string row_error;  // the first failure to append a JSON line
    const auto emit = [&](std::uint32_t t, std::uint64_t k, double rate) {
      // How long one chain waits for each of its lines; at K = 1, the dependent-load latency.
      const double ns = 1e9 * static_cast<double>(t * k) / rate;
      std::printf("  %-5s %7u %8llu %14.0f %12.1f\n", kind, t, static_cast<unsigned long long>(k),
                  rate, ns);
      std::fflush(stdout);
      if (json == "none" || !row_error.empty()) return;
      JsonObject o;
      o.add("bench", "roof").add("time", iso_time()).add("pages", kind).add("mib", mib);
      o.add("threads", t).add("chains", k).add("seconds", seconds).add("lines_per_s", rate);
      o.add("ns_per_line", ns).add("llc_bytes", llc_bytes());
      o.add_object("machine", machine_description());
      row_error = append_json_line(json, o);
    };
    const Roof r = roof_of(buf, chains, threads, seconds, seed, &emit);
    if (!row_error.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", row_error.c_str());
      return 1;
    }
    std::printf(
        "  %s pages: roof %.1f M lines/s per core (K = %llu), %.1f M lines/s on %u "
        "threads%s\n",
        kind, r.per_core_lines_per_s / 1e6, static_cast<unsigned long long>(r.best_chains),
        r.all_cores_lines_per_s / 1e6, threads,
        r.latency_ns > 0
            ? (", latency " + std::to_string(static_cast<int>(r.latency_ns)) + " ns").c_str()
            : "");
    if (huge) huge_roof = r;
  }
  if (translation == "on") {
    if (int rc = measure_translation(seed, seconds, json); rc != 0) return rc;
  }
  if (huge_roof.known && save != "none") {
    JsonObject o;
    o.add("bench", "roof").add("time", iso_time()).add("pages", "huge").add("mib", mib);
    o.add("per_core_lines_per_s", huge_roof.per_core_lines_per_s);
    o.add("all_cores_lines_per_s", huge_roof.all_cores_lines_per_s);
    o.add("latency_ns", huge_roof.latency_ns).add("cores", huge_roof.cores);
    o.add("llc_bytes", llc_bytes());
    std::remove(save.c_str());
    if (std::string e = append_json_line(save, o); !e.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
      return 1;
    }
    std::printf("  saved to %s\n", save.c_str());
  }
  return 0;
}

}  // namespace braid::bench
