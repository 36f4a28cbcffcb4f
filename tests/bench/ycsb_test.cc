#include "ycsb.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace braid::bench {
namespace {

TEST(Ycsb, KeysAreDistinctAndOrderedByRecordNumber) {
  for (std::uint32_t bytes : {4u, 8u, 16u, 64u}) {
    std::string prev;
    for (std::uint64_t i = 0; i < 5000; ++i) {
      std::string k(bytes, '\0');
      make_key(i, bytes, k.data());
      if (i > 0) {
        ASSERT_LT(prev, k) << bytes;
      }
      prev = k;
    }
  }
}

TEST(Ycsb, ZipfFavoursLowRanksAndThetaZeroIsUniform) {
  util::Rng rng(1);
  const std::uint64_t n = 1000;
  Zipf skewed(n, 0.99);
  std::vector<std::uint64_t> hist(n, 0);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t r = skewed.next(rng);
    ASSERT_LT(r, n);
    ++hist[r];
  }
  EXPECT_GT(hist[0], hist[10]);
  EXPECT_GT(hist[10], hist[500]);
  EXPECT_GT(hist[0], 200000u / 20);  // the hottest key takes well over 5 %
  Zipf flat(n, 0.0);
  std::vector<std::uint64_t> h2(n, 0);
  for (int i = 0; i < 200000; ++i) ++h2[flat.next(rng)];
  EXPECT_LT(h2[0], 200000u / n * 2);
}

}  // namespace
}  // namespace braid::bench
