// Damaged database directories: a database of 600 acknowledged one-key commits over
// two logs, closed cleanly, then one file damaged. Open must recover every acknowledged commit
// or answer Corruption naming the damage, never open an older state. The sweep covers every
// file x {delete, truncate to 0, truncate to half, flip a byte at the start, middle, end}.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "storage/damage_util.h"
#include "storage/durability_util.h"
#include "storage/log_format.h"

namespace braid::test {
namespace {

using storage::SimFileSystem;

constexpr int kCommits = 600;

std::string dkey(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "key%05d", i);
  return b;
}
std::string dvalue(int i) { return std::string(350 + i % 100, static_cast<char>('a' + i % 26)); }

Task<Status> put_one(Tx& tx, Table* t, int i) { co_return co_await tx.put(*t, dkey(i), dvalue(i)); }

// Runtime checkpoints every 100 KiB of log retire segments as the logs grow (0: only the
// checkpoint of the open).
// The logs roll before each checkpoint and lose what lies before it once it is durable: a
// checkpoint every 160 KiB of log leaves each log more than one segment after the last one,
// so that the damage cases below meet closed segments too.
Options damage_options(std::uint64_t checkpoint_bytes = 160 << 10) {
  Options o = wl_options(checkpoint_bytes);
  o.exec.mode = ExecMode::kInterleaved;
  return o;
}

// Even commits through a worker (log 0), odd ones from this thread (log 1, the application
// threads' log); every one acknowledged before the next.
std::shared_ptr<SimFileSystem> build(const Options& o) {
  auto fs = std::make_shared<SimFileSystem>(17);
  auto db = open_sim(o, fs);
  EXPECT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  for (int i = 0; i < kCommits; ++i) {
    if (i % 2 == 0) {
      EXPECT_TRUE((*db)->execute([t, i](Tx& tx) { return put_one(tx, t, i); }).is_ok());
    } else {
      Transaction tx = (*db)->begin().value();
      EXPECT_TRUE(tx.put(*t, dkey(i), dvalue(i)).is_ok());
      EXPECT_TRUE(tx.commit().is_ok());
    }
  }
  if (o.durability.checkpoint_log_bytes != 0) {
    EXPECT_GE((*db)->durability_stats().checkpoints, 1u);
  }
  return fs;
}

enum class Outcome { kAll, kCorruption, kLess, kOther };

struct Opened {
  Outcome outcome;
  std::string detail;
};

// Opens strictly and classifies: every commit back, Corruption, or something worse.
Opened reopen(std::shared_ptr<SimFileSystem> fs) {
  auto db = open_sim(damage_options(), fs);
  if (!db.is_ok()) {
    if (db.code() == Code::kCorruption && db.status().message().find("/db") != std::string::npos) {
      return {Outcome::kCorruption, db.status().to_string()};
    }
    return {Outcome::kOther, db.status().to_string()};
  }
  Result<Table*> t = (*db)->open_table("t");
  if (!t.is_ok()) return {Outcome::kLess, "table t is gone"};
  Transaction tx = (*db)->begin().value();
  int found = 0;
  for (int i = 0; i < kCommits; ++i) {
    Result<std::string_view> v = tx.get(**t, dkey(i));
    if (v.is_ok() && *v == dvalue(i)) ++found;
  }
  if (found != kCommits) {
    return {Outcome::kLess, std::to_string(found) + " of " + std::to_string(kCommits) + " left"};
  }
  return {Outcome::kAll, ""};
}

class Damaged : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { base_ = build(damage_options()); }
  static void TearDownTestSuite() { base_.reset(); }
  std::shared_ptr<SimFileSystem> copy() { return base_->clone(3); }
  static std::shared_ptr<SimFileSystem> base_;
};
std::shared_ptr<SimFileSystem> Damaged::base_;

void expect_corruption(std::shared_ptr<SimFileSystem> fs, const std::string& names) {
  const Opened o = reopen(fs);
  EXPECT_EQ(o.outcome, Outcome::kCorruption) << o.detail;
  EXPECT_NE(o.detail.find(names), std::string::npos) << o.detail;
}

TEST_F(Damaged, UndamagedRecoversEverything) {
  const Opened o = reopen(copy());
  EXPECT_EQ(o.outcome, Outcome::kAll) << o.detail;
  // Both logs hold commits and more than one segment each: the cases below are real.
  EXPECT_GE(segments(*base_, 0).size(), 2u);
  EXPECT_GE(segments(*base_, 1).size(), 2u);
}

TEST_F(Damaged, NewestCheckpointCorruptTruncatedOrDeletedIsCorruption) {
  const std::string ck = newest_checkpoint(*base_);
  ASSERT_FALSE(ck.empty());
  auto a = copy();
  flip(*a, ck, size_of(*a, ck) / 2);
  expect_corruption(a, "/db/");
  auto b = copy();
  truncate_file(*b, ck, size_of(*b, ck) / 2);
  expect_corruption(b, "/db/");
  auto c = copy();
  remove_file(*c, ck);
  expect_corruption(c, "/db/");
}

TEST_F(Damaged, FirstSegmentOfALogDeletedIsCorruption) {
  for (std::uint32_t log : {0u, 1u}) {
    auto fs = copy();
    const std::string first = segments(*fs, log).front();
    remove_file(*fs, first);
    expect_corruption(fs, first);
  }
}

TEST_F(Damaged, NewestSegmentDamageIsCorruption) {
  for (std::uint32_t log : {0u, 1u}) {
    const std::string seg = segments(*base_, log).back();
    std::string img;
    ASSERT_TRUE(base_->peek("/db/" + seg, &img));
    auto header = copy();
    flip(*header, seg, 20);  // the segment header
    expect_corruption(header, seg);
    auto block = copy();
    flip(*block, seg, storage::kSegmentHeaderBytes + 8);  // the first block's header
    expect_corruption(block, seg);
    auto last = copy();
    flip(*last, seg, img.size() - storage::kBlockHeaderBytes - 3);  // the last data block
    expect_corruption(last, seg);
    auto gone = copy();
    remove_file(*gone, seg);
    expect_corruption(gone, seg);
  }
}

TEST(Salvage, OpensTheWholePrefixAndSaysWhatWasLost) {
  // Every commit in the logs (no runtime checkpoint): the newest segment of log 0 holds some.
  auto fs = build(damage_options(0));
  const std::string seg = segments(*fs, 0).back();
  remove_file(*fs, seg);
  expect_corruption(fs, seg);
  Options o = damage_options(0);
  o.recovery = RecoveryMode::kSalvage;
  auto db = open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  const DurabilityStats d = (*db)->durability_stats();
  ASSERT_FALSE(d.recovery_problems.empty());
  EXPECT_NE(d.recovery_problems.front().find(seg), std::string::npos) << d.recovery_problems[0];
  EXPECT_LT(d.recovery_cutoff, d.recovery_acked);
  // What it opened is a prefix of the commit order: keys 0..m-1, nothing after.
  Table* t = *(*db)->open_table("t");
  Transaction tx = (*db)->begin().value();
  int m = 0;
  while (m < kCommits && tx.get(*t, dkey(m)).is_ok()) ++m;
  EXPECT_LT(m, kCommits);
  for (int i = m; i < kCommits; ++i) EXPECT_FALSE(tx.get(*t, dkey(i)).is_ok()) << i;
  tx.abort();
  db->reset();
  // The salvaged state is now the database: a strict open accepts it.
  auto again = open_sim(damage_options(0), fs);
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
}

TEST_F(Damaged, Sweep) {
  const char* kinds[] = {"delete", "trunc0", "trunc/2", "flip@0", "flip@mid", "flip@end"};
  std::printf("  %-28s %9s", "file", "bytes");
  for (const char* k : kinds) std::printf(" %9s", k);
  std::printf("\n");
  int cases = 0, all = 0, corruption = 0, worse = 0;
  for (const std::string& name : files_of(*base_)) {
    const std::uint64_t size = size_of(*base_, name);
    std::printf("  %-28s %9llu", name.c_str(), static_cast<unsigned long long>(size));
    for (int k = 0; k < 6; ++k) {
      if (k >= 3 && size == 0) {
        std::printf(" %9s", "-");
        continue;
      }
      auto fs = copy();
      switch (k) {
        case 0:
          remove_file(*fs, name);
          break;
        case 1:
          truncate_file(*fs, name, 0);
          break;
        case 2:
          truncate_file(*fs, name, size / 2);
          break;
        case 3:
          flip(*fs, name, 0);
          break;
        case 4:
          flip(*fs, name, size / 2);
          break;
        case 5:
          flip(*fs, name, size - 1);
          break;
      }
      const Opened o = reopen(fs);
      ++cases;
      const char* cell = "?";
      switch (o.outcome) {
        case Outcome::kAll:
          ++all;
          cell = "all";
          break;
        case Outcome::kCorruption:
          ++corruption;
          cell = "Corrupt";
          break;
        case Outcome::kLess:
        case Outcome::kOther:
          ++worse;
          cell = "FAIL";
          ADD_FAILURE() << name << " " << kinds[k] << ": " << o.detail;
          break;
      }
      std::printf(" %9s", cell);
    }
    std::printf("\n");
  }
  std::printf(
      "directory-damage sweep: %zu files x 6 damages = %d cases: %d recovered every commit, "
      "%d Corruption, %d opened with less\n",
      files_of(*base_).size(), cases, all, corruption, worse);
  EXPECT_EQ(worse, 0);
  EXPECT_GT(corruption, 0);
}

}  // namespace
}  // namespace braid::test
