#include "ycsb/ycsb.h"

#include <gtest/gtest.h>

#include <set>
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

// --key-order hashed: a bijective hash of the record number, so the keys stay distinct but
// spread over the key space instead of rising with the record number.
TEST(Ycsb, HashedKeysAreDistinctAndSpreadOverTheKeySpace) {
  for (std::uint32_t bytes : {8u, 16u}) {
    std::set<std::string> keys;
    std::set<unsigned char> first_bytes;
    std::size_t descents = 0;
    std::string prev;
    for (std::uint64_t i = 0; i < 5000; ++i) {
      std::string k(bytes, '\0');
      make_key(i, bytes, k.data(), true);
      ASSERT_TRUE(keys.insert(k).second) << "record " << i << " repeats a key";
      first_bytes.insert(static_cast<unsigned char>(k[0]));
      if (i > 0 && k < prev) ++descents;
      prev = k;
    }
    EXPECT_GT(first_bytes.size(), 200u) << bytes;  // of 256: spread, where ordered keys use 1
    EXPECT_GT(descents, 2000u) << bytes;           // about half, where ordered keys have none
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
