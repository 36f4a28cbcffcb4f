// braid-bench ycsb: YCSB-style key-value transactions over one table (CoroBase §5.2).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <braid/database.h>

#include "roof.h"
#include "util/random.h"

namespace braid::bench {

// Runs the sub-command; returns the process exit code (2 on a usage error).
int ycsb_main(int argc, char** argv, int first);
const char* ycsb_usage();

// Zipfian ranks over [0, n) after Gray et al., "Quickly generating billion-record synthetic
// databases" (SIGMOD'94), as YCSB does; theta in [0, 1). Rank 0 is the most popular; callers
// scatter ranks over keys so hot keys are not neighbours.
class Zipf {
 public:
  Zipf(std::uint64_t n, double theta);
  // Inline: it runs once per key drawn, on the measured path.
  std::uint64_t next(util::Rng& rng) const;

 private:
  std::uint64_t n_;
  double alpha_, zetan_, eta_, half_pow_theta_;
};

// Loads records 0..records-1 (ycsb's keys and values) into `table` with `threads` loaders.
Status ycsb_load(Database& db, Table& table, std::uint64_t records, std::uint32_t key_bytes,
                 std::uint32_t value_bytes, std::uint32_t threads, double* seconds);

// Database::bulk_load of the same records (0..records-1, ycsb's keys and values) in key order,
// from one thread, with a progress line labelled `label`.
Status ycsb_bulk_load(Database& db, Table& table, std::uint64_t records, std::uint32_t key_bytes,
                      std::uint32_t value_bytes, const BulkLoadOptions& options, const char* label,
                      double* seconds);

// Record `salt`'s value bytes (n of them): letters derived from the salt.
void fill_value(char* v, std::uint32_t n, std::uint64_t salt);

// The memory path of a descent of `table`'s B+-tree (a step per level, root first, 16 lines per
// node), and of an engine get: the descent, then the OID entry and the version. For the
// line-fetch estimate (estimate_lines in roof.h).
std::vector<PathStep> btree_path(Table& table);
std::vector<PathStep> engine_get_path(Database& db, Table& table, std::uint64_t records);

// Record i's key of `bytes` bytes: i big-endian in the first 8 (hashed: a bijective hash of i;
// needs bytes >= 8), then letters derived from it.
void make_key(std::uint64_t i, std::uint32_t bytes, char* out, bool hashed = false);

inline std::uint64_t Zipf::next(util::Rng& rng) const {
  const double u = rng.unit();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < half_pow_theta_) return std::min<std::uint64_t>(1, n_ - 1);
  const auto r =
      static_cast<std::uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return std::min(r, n_ - 1);
}

}  // namespace braid::bench
