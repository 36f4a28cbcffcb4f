// CRC32C: the three-chain hardware path against the table, over every length class it splits
// (strides of every length, words, the last bytes) and every alignment.
#include "util/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/test_util.h"
#include "util/random.h"

namespace braid::util {
namespace {

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros), 0x8a9136aau);  // RFC 3720, B.4
  const std::string ones(32, '\xff');
  EXPECT_EQ(crc32c(ones), 0x62a8ab43u);
}

TEST(Crc32c, EveryLengthAndAlignmentMatchesTheTable) {
  Rng rng(testing::env_u64("BRAID_CRC_SEED", 7));
  std::string buf(3 * 3 * 1024 + 3 * 128 + 64, '\0');
  for (char& ch : buf) ch = static_cast<char>(rng.uniform(256));
  for (std::size_t n = 0; n + 8 <= buf.size(); n += n < 1200 ? 1 : 13) {
    const std::size_t off = n % 8;
    const std::uint32_t seed = static_cast<std::uint32_t>(rng.next());
    ASSERT_EQ(crc32c_extend(seed, buf.data() + off, n),
              crc32c_extend_portable(seed, buf.data() + off, n))
        << "length " << n << " at offset " << off;
  }
}

TEST(Crc32c, ExtendingInPiecesEqualsTheWhole) {
  Rng rng(testing::env_u64("BRAID_CRC_SEED", 8));
  std::string buf(1 << 20, '\0');
  for (char& ch : buf) ch = static_cast<char>(rng.uniform(256));
  const std::uint32_t whole = crc32c(buf);
  EXPECT_EQ(whole, crc32c_extend_portable(0, buf.data(), buf.size()));
  for (int round = 0; round < 20; ++round) {
    std::uint32_t c = 0;
    std::size_t at = 0;
    while (at < buf.size()) {
      const std::size_t piece = std::min<std::size_t>(buf.size() - at, rng.uniform(20000));
      c = crc32c_extend(c, buf.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(c, whole) << "round " << round;
  }
}

}  // namespace
}  // namespace braid::util
