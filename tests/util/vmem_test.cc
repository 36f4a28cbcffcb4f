#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

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

// Residency as the kernel reports it: pages of [p, p + bytes) that mincore() finds in memory.
std::size_t resident_pages(const char* p, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  if (::mincore(const_cast<char*>(p), bytes, v.data()) != 0) return 0;
  std::size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST(VirtualArena, PopulateMakesMemoryResidentAndZeroFilled) {
  VirtualArena a;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  ASSERT_TRUE(a.reserve(64 * kMiB, true).is_ok());
  ASSERT_TRUE(a.ensure_committed(16 * kMiB).is_ok());
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(resident_pages(a.base(), 16 * kMiB), 0u);  // committed is not resident
  ASSERT_TRUE(a.populate(5 * kMiB).is_ok());           // rounds up to 6 MiB
  EXPECT_EQ(resident_pages(a.base(), 6 * kMiB), 6 * kMiB / page);
  EXPECT_EQ(resident_pages(a.base() + 6 * kMiB, 10 * kMiB), 0u);
  for (std::size_t off = 0; off < 6 * kMiB; off += 4096) ASSERT_EQ(a.base()[off], 0);
  EXPECT_EQ(a.populate(65 * kMiB).code(), Code::kIOError);  // past the reservation
  // More than the machine has: an error, not the OOM killer. (Twice the physical memory: a
  // reservation that sanitizer builds, whose shadow takes much of the address space, still get.)
  const std::size_t too_much = 2 * static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) * page;
  VirtualArena huge;
  ASSERT_TRUE(huge.reserve(too_much, false).is_ok());
  Status s = huge.populate(too_much);
  EXPECT_EQ(s.code(), Code::kIOError);
  EXPECT_NE(s.message().find("free"), std::string_view::npos) << s.to_string();
  EXPECT_TRUE(a.populate(0).is_ok());
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

// Released OIDs whose pages hold nothing else give those pages back once many were released;
// OIDs taken from them again read empty, take writes, and bring their pages back.
TEST(OidArray, GivesBackPagesOfReleasedOids) {
  constexpr std::uint64_t kOids = 400'000;
  mvcc::OidArray oids;
  ASSERT_TRUE(oids.init(kOids, false).is_ok());
  for (std::uint64_t i = 0; i < kOids; ++i) {
    Result<std::uint64_t> r = oids.allocate();
    ASSERT_TRUE(r.is_ok());
    oids.entry(*r).store(0x1000 + i * 16);  // any non-empty word: the page is written
  }
  const std::size_t full = oids.used_bytes();
  ASSERT_GE(full, kOids * 8);
  // Keep every 5000th OID in use (in one page of ten), release the rest.
  for (std::uint64_t i = 0; i < kOids; ++i) {
    if (i % 5000 == 0) continue;
    oids.entry(i).store(mvcc::entry::kEmpty);
    oids.release(i);
  }
  // Trimmed every 64 Ki releases once a quarter is free: the pages of all but the last ones.
  const std::size_t used = kOids * 8;
  EXPECT_GT(oids.released_bytes(), used * 6 / 10) << "the pages of released OIDs stayed";
  EXPECT_LT(oids.used_bytes(), full - used * 6 / 10);
  for (std::uint64_t i = 0; i < kOids; i += 5000) EXPECT_EQ(oids.entry(i).load(), 0x1000 + i * 16);
  // Taken again (in release order): empty, writable, their pages counted again.
  const std::size_t trimmed = oids.used_bytes();
  for (int k = 0; k < 10'000; ++k) {
    Result<std::uint64_t> r = oids.allocate();
    ASSERT_TRUE(r.is_ok());
    ASSERT_EQ(oids.entry(*r).load(), mvcc::entry::kEmpty) << *r;
    oids.entry(*r).store(7);
    EXPECT_EQ(oids.entry(*r).load(), 7u);
  }
  EXPECT_GT(oids.used_bytes(), trimmed);
}

}  // namespace
}  // namespace braid::util
