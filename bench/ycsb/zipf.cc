// YCSB's Zipfian generator (Gray et al., "Quickly generating billion-record synthetic
// databases", SIGMOD 1994), as YCSB's own ZipfianGenerator computes it.
#include "ycsb/ycsb.h"

#include <algorithm>
#include <cmath>

namespace braid::bench {

Zipf::Zipf(std::uint64_t n, double theta) : n_(n) {
  // zeta(n) = sum of i^-theta: exactly up to 10^7 terms, the rest by the Euler-Maclaurin
  // integral with its endpoint correction (relative error far below 1e-12 there), so a 2^28-key
  // probe set does not spend ten seconds here.
  constexpr std::uint64_t kExact = 10'000'000;
  zetan_ = 0;
  const std::uint64_t m = std::min(n, kExact);
  for (std::uint64_t i = 1; i <= m; ++i) zetan_ += 1.0 / std::pow(static_cast<double>(i), theta);
  if (n > m) {
    const double a = static_cast<double>(m), b = static_cast<double>(n);
    zetan_ += (std::pow(b, 1 - theta) - std::pow(a, 1 - theta)) / (1 - theta) +
              0.5 * (std::pow(b, -theta) - std::pow(a, -theta));
  }
  const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
  alpha_ = 1.0 / (1.0 - theta);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
  half_pow_theta_ = 1.0 + std::pow(0.5, theta);
}

}  // namespace braid::bench
