// Bad input gets InvalidArgument (or the documented status), never a crash.
#include <gtest/gtest.h>

#include <string>

#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::make_table;
using testing::open_db;

TEST(BadInput, KeysMustBeOneTo255Bytes) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  const std::string too_long(kMaxKeyBytes + 1, 'k');
  const std::string longest(kMaxKeyBytes, 'k');
  for (std::string_view bad : {std::string_view(), std::string_view(too_long)}) {
    EXPECT_EQ(tx.get(*t, bad).code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.insert(*t, bad, "v").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.update(*t, bad, "v").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.put(*t, bad, "v").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.remove(*t, bad).code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(tx.scan(*t, too_long, "", 0, [](auto, auto) { return true; }).code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(tx.is_active());  // bad input does not end the transaction
  EXPECT_TRUE(tx.put(*t, longest, "v").is_ok());
  Key k;
  k.append_bytes(too_long);
  EXPECT_FALSE(k.valid());
  EXPECT_EQ(tx.put(*t, k, "v").code(), Code::kInvalidArgument);
  // The failed writes failed the transaction: all or nothing.
  EXPECT_EQ(tx.commit().code(), Code::kInvalidArgument);
  Transaction check = begin(*db);
  EXPECT_EQ(check.get(*t, longest).code(), Code::kNotFound);
}

TEST(BadInput, OverlongKeysNeverCollide) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  const std::string x(300, 'x');
  Key a, b;
  a.str(x).u32(1);
  b.str(x).u32(2);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(a.size(), kMaxKeyBytes + 1);  // never a truncated key
  EXPECT_EQ(tx.put(*t, a, "1").code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.put(*t, b, "2").code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.get(*t, a).code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.remove(*t, b).code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.scan(*t, a, "", 0, [](auto, auto) { return true; }).code(), Code::kInvalidArgument);
  tx.abort();
  Transaction none = begin(*db);
  std::size_t n = 0;
  EXPECT_TRUE(none.scan(*t, "", "", 0, [&](auto, auto) { return ++n, true; }).is_ok());
  EXPECT_EQ(n, 0u);
}

TEST(BadInput, ValuesAreLimitedTo64KiB) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  const std::string big(kMaxValueBytes + 1, 'v');
  EXPECT_EQ(tx.insert(*t, "k", big).code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.put(*t, "k", big).code(), Code::kInvalidArgument);
  EXPECT_EQ(tx.update(*t, "k", big).code(), Code::kInvalidArgument);
  Status s = tx.put(*t, "k", big);
  EXPECT_NE(s.message().find("65537"), std::string_view::npos) << s.to_string();
  EXPECT_EQ(tx.commit().code(), Code::kInvalidArgument);
}

TEST(BadInput, UnknownAndBadTableNames) {
  auto db = open_db();
  EXPECT_EQ(db->open_table("nope").code(), Code::kNotFound);
  EXPECT_EQ(db->create_table("").code(), Code::kInvalidArgument);
  EXPECT_EQ(db->create_table(std::string(kMaxTableNameBytes + 1, 'n')).code(),
            Code::kInvalidArgument);
  Options o;
  o.max_tables = 1;
  auto small = open_db(o);
  EXPECT_TRUE(small->create_table("one").is_ok());
  EXPECT_EQ(small->create_table("two").code(), Code::kBusy);
}

TEST(BadInput, OperationsAfterCommitOrAbort) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  for (bool commit : {true, false}) {
    Transaction tx = begin(*db);
    if (commit) {
      ASSERT_TRUE(tx.commit().is_ok());
    } else {
      tx.abort();
    }
    EXPECT_EQ(tx.get(*t, "k").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.put(*t, "k", "v").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.insert(*t, "k", "v").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.update(*t, "k", "v").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.remove(*t, "k").code(), Code::kInvalidArgument);
    EXPECT_EQ(tx.scan(*t, "", "", 0, [](auto, auto) { return true; }).code(),
              Code::kInvalidArgument);
    Status s = tx.commit();
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_NE(s.message().find("not active"), std::string_view::npos);
    tx.abort();  // harmless
  }
}

TEST(BadInput, ReentryFromAScanCallbackIsRefused) {
  auto db = open_db();
  Table* t = make_table(*db, "t");
  Transaction tx = begin(*db);
  ASSERT_TRUE(tx.put(*t, "a", "1").is_ok());
  Status inner;
  Status commit_inside;
  ASSERT_TRUE(tx.scan(*t, "", "", 0, [&](std::string_view, std::string_view) {
                  inner = tx.scan(*t, "", "", 0, [](auto, auto) { return true; });
                  commit_inside = tx.commit();
                  return true;
                }).is_ok());
  EXPECT_EQ(inner.code(), Code::kInvalidArgument);
  EXPECT_EQ(commit_inside.code(), Code::kInvalidArgument);
  EXPECT_TRUE(tx.commit().is_ok());
}

TEST(BadInput, OptionsAreValidated) {
  auto bad = [](auto mutate) {
    Options o;
    mutate(o);
    return Database::open(o).code();
  };
  EXPECT_EQ(bad([](Options& o) { o.workers = 0; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.slots_per_worker = 0; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) {
              o.workers = 1000;
              o.slots_per_worker = 1000;
            }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.max_tables = 0; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) {
              o.max_version_bytes = std::uint64_t{64} << 20;
              o.prefault_version_bytes = (std::uint64_t{64} << 20) + 1;
            }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.prefault_index_bytes = (std::uint64_t{1} << 40) + 1; }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.l2_cache_bytes = (std::uint64_t{64} << 10) - 1; }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.l2_cache_bytes = (std::uint64_t{1} << 30) + 1; }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.max_records_per_table = 0; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.max_txn_writes = 0; }), Code::kInvalidArgument);
  // A memory budget needs a log to read evicted records back from, and segments a cold
  // address can reach (256 MiB). Any size is allowed: a tiny one evicts all it can.
  EXPECT_EQ(bad([](Options& o) { o.memory_budget_bytes = std::uint64_t{1} << 30; }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) {
              o.directory = "/nonexistent-braid-dir";
              o.memory_budget_bytes = std::uint64_t{1} << 30;
              o.durability.log_segment_bytes = std::uint64_t{512} << 20;
            }),
            Code::kInvalidArgument);
  // Leaves leave memory only under a budget; without one the option (on by default) is idle.
  EXPECT_EQ(bad([](Options& o) { o.page_index_leaves = true; }), Code::kOk);
  // A scan's reads ahead are bounded (a fixed array per scan); 0 and the bound itself are fine.
  EXPECT_EQ(bad([](Options& o) { o.scan_read_ahead = 33; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.scan_read_ahead = 32; }), Code::kOk);
  EXPECT_EQ(bad([](Options& o) { o.scan_read_ahead = 0; }), Code::kOk);
  EXPECT_EQ(bad([](Options& o) { o.scan_extent_bytes = 4095; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.scan_extent_bytes = kMaxScanExtentBytes + 4096; }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.scan_extent_bytes = kMaxScanExtentBytes; }), Code::kOk);
  EXPECT_EQ(bad([](Options& o) { o.index_build_sort_bytes = 4095; }), Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.index_build_sort_bytes = (std::uint64_t{1} << 30) + 1; }),
            Code::kInvalidArgument);
  EXPECT_EQ(bad([](Options& o) { o.index_build_sort_bytes = 4096; }), Code::kOk);
  EXPECT_EQ(bad([](Options& o) { o.scan_extent_bytes = 0; }), Code::kOk);
}

}  // namespace
}  // namespace braid
