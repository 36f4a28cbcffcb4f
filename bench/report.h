// Benchmark reporting: machine description, latency histogram, JSON lines, progress bar.
#pragma once

#include <braid/database.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "progress_line.h"

namespace braid::bench {

const char* build_commit();
const char* build_compiler();
const char* build_type();
bool build_native();

// Log-linear latency histogram (16 sub-buckets per power of two: <= 6.25% error), mergeable.
class Histogram {
 public:
  void record(std::uint64_t ns);
  void merge(const Histogram& other);
  std::uint64_t count() const { return count_; }
  // Value at quantile q in [0, 1], in nanoseconds (bucket midpoint).
  double quantile(double q) const;

 private:
  static constexpr int kSub = 16;
  static constexpr int kBuckets = 64 * kSub;
  static int bucket(std::uint64_t ns);
  static double midpoint(int b);
  std::vector<std::uint64_t> counts_ = std::vector<std::uint64_t>(kBuckets, 0);
  std::uint64_t count_ = 0;
};

// Builds one JSON object, flat key order as added.
class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value);
  JsonObject& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, std::uint64_t value);
  JsonObject& add(std::string_view key, std::int64_t value);
  JsonObject& add(std::string_view key, int value) {
    return add(key, static_cast<std::int64_t>(value));
  }
  JsonObject& add(std::string_view key, unsigned value) {
    return add(key, static_cast<std::uint64_t>(value));
  }
  JsonObject& add_bool(std::string_view key, bool value);
  JsonObject& add_object(std::string_view key, const JsonObject& value);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(std::string_view k);
  std::string body_;
};

std::string json_escape(std::string_view s);

// CPU model, cores, memory, kernel, THP mode, compiler, build type, git commit.
JsonObject machine_description();

// Appends one line to `path` (creating its directory). Returns an error message or "".
std::string append_json_line(const std::string& path, const JsonObject& obj);

std::uint64_t peak_rss_bytes();
// The process's resident memory now (/proc/self/statm), 0 where it cannot be read.
std::uint64_t rss_bytes();

// The "memory:" line every workload prints at its end: the version heap (live, given back),
// the index's frames, the OIDs, the run list, what the budget counts, and under a budget where
// the rest of the process's resident memory sits beside it (the version heap's free objects,
// and what no stat names: the process's floor, rings, log buffers, the allocator's arenas).
void print_memory_line(const DatabaseStats& st);

// A progress line on stderr while `done` approaches `total` (tools/progress_line.h: done,
// rate, ETA, at the end the time taken; only on a terminal, only past ~2 s), polled by a thread
// of its own every 200 ms (the phase's work runs on the workers). It stops reporting once
// `done` reaches `total`, so that what follows (a bulk load's checkpoint) has the line.
class Progress {
 public:
  Progress(std::string label, const char* unit, const std::atomic<std::uint64_t>* done,
           std::uint64_t total);
  ~Progress();

 private:
  std::string label_;
  const char* unit_;
  const std::atomic<std::uint64_t>* done_;
  std::uint64_t total_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The current UTC time, ISO 8601 ("2026-11-21T14:00:00Z"), for result records.
std::string iso_time();

// The median of a non-empty sample.
double median(std::vector<double> v);

// The end of a run of several rounds over several variants (one rate per variant per round):
// with more than one round, each variant's min / median / max; with more than one variant, the
// ratio of every variant's median to every other's (row / column), measured on the same data
// in the same process. `unit` names the rate ("txn/s").
void print_rounds_summary(const std::vector<std::string>& labels,
                          const std::vector<std::vector<double>>& rates, const char* unit);

using tools::with_commas;  // "1,234,567"

// A run's execution counters: `after` with its cumulative counters less `before`'s (the
// gauges, auto_batch, as they are after).
ExecStats exec_delta(const ExecStats& before, const ExecStats& after);

}  // namespace braid::bench
