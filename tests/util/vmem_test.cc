#include <gtest/gtest.h>

#include <cstring>

#include "mvcc/oid_array.h"
#include "util/vmem.h"

namespace braid::util {
namespace {

TEST(VirtualArena, GrowsInPlaceAndZeroFills) {
  VirtualArena a;
  ASSERT_TRUE(a.reserve(std::size_t{1} << 30, true).is_ok());
  char* base = a.base();
  ASSERT_TRUE(a.ensure_committed(100).is_ok());
  std::memset(base, 7, 100);
  ASSERT_TRUE(a.ensure_committed(std::size_t{64} << 20).is_ok());
  EXPECT_EQ(a.base(), base);  // never moves
  EXPECT_EQ(base[99], 7);
  EXPECT_EQ(base[(std::size_t{64} << 20) - 1], 0);
  EXPECT_GE(a.committed(), std::size_t{64} << 20);
}

TEST(VirtualArena, RefusesToGrowPastTheReservation) {
  VirtualArena a;
  ASSERT_TRUE(a.reserve(std::size_t{2} << 20, false).is_ok());
  Status s = a.ensure_committed((std::size_t{2} << 20) + 1);
  EXPECT_EQ(s.code(), Code::kIOError);
  EXPECT_NE(s.message().find("arena limit"), std::string_view::npos);
}

TEST(OidArray, AllocatesDenselyUntilFull) {
  mvcc::OidArray oids;
  ASSERT_TRUE(oids.init(1000, true).is_ok());
  for (std::uint64_t i = 0; i < 1000; ++i) {
    Result<std::uint64_t> r = oids.allocate();
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(*r, i);
    EXPECT_EQ(oids.entry(i).load(), mvcc::entry::kEmpty);
  }
  Result<std::uint64_t> full = oids.allocate();
  EXPECT_EQ(full.code(), Code::kBusy);
}

}  // namespace
}  // namespace braid::util
