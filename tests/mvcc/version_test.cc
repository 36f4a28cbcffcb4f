#include <gtest/gtest.h>

#include "mvcc/version.h"
#include "util/random.h"

namespace braid::mvcc {
namespace {

TEST(Stamp, OwnerTagsAndTimestampsAreDisjoint) {
  EXPECT_FALSE(is_owner_stamp(1));
  EXPECT_FALSE(is_owner_stamp(kInvisible));
  const std::uint64_t s = owner_stamp((5ull << 16) | 3);
  EXPECT_TRUE(is_owner_stamp(s));
  EXPECT_EQ(stamp_xid(s), (5ull << 16) | 3);
  // kInvisible is a commit timestamp no snapshot reaches.
  EXPECT_GT(kInvisible, std::uint64_t{1} << 62);
}

TEST(Entry, TagsDistinguishEmptyHotAndCold) {
  alignas(16) static char storage[64];
  auto* v = reinterpret_cast<Version*>(storage);
  const std::uint64_t hot = entry::from_version(v);
  EXPECT_TRUE(entry::is_hot(hot));
  EXPECT_FALSE(entry::is_cold(hot));
  EXPECT_EQ(entry::hot(hot), v);
  EXPECT_TRUE(entry::is_empty(entry::kEmpty));
  EXPECT_FALSE(entry::is_hot(entry::kEmpty));
}

TEST(Entry, ColdAddressesRoundTrip) {
  util::Rng rng(5);
  for (int i = 0; i < 10000; ++i) {
    entry::ColdAddress a{
        static_cast<std::uint32_t>(rng.uniform(entry::kMaxColdSegment + 1)),
        rng.uniform(entry::kMaxColdOffset / 16) * 16,
        static_cast<std::uint32_t>(1 + rng.uniform(entry::kMaxColdSize / 16)) * 16};
    ASSERT_TRUE(entry::cold_encodable(a));
    const std::uint64_t e = entry::from_cold(a);
    ASSERT_TRUE(entry::is_cold(e));
    ASSERT_FALSE(entry::is_hot(e));
    const entry::ColdAddress b = entry::cold(e);
    ASSERT_EQ(b.segment, a.segment);
    ASSERT_EQ(b.offset, a.offset);
    ASSERT_EQ(b.size, a.size);
  }
  EXPECT_FALSE(entry::cold_encodable({0, 8, 16}));                        // misaligned
  EXPECT_FALSE(entry::cold_encodable({0, 0, entry::kMaxColdSize + 16}));  // too large
  EXPECT_FALSE(entry::cold_encodable({0, entry::kMaxColdOffset, 16}));
}

}  // namespace
}  // namespace braid::mvcc
