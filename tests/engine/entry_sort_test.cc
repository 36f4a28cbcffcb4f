// The external sort of index entries (engine/entry_sort.h): every entry added comes out once,
// in key order, whether it stayed in memory, went to one run, or went through the merge's
// extra passes; a failed write or read and a sink's error end the sort with that error; no
// run outlives the sorter, whatever the outcome. Seeded.
#include <gtest/gtest.h>

#include <braid/key.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "engine/entry_sort.h"
#include "storage/file_table.h"
#include "storage/sim_fs.h"
#include "storage/sort_run.h"
#include "util/random.h"

namespace braid::engine {
namespace {

const std::string kDir = "/db";
using Entry = std::tuple<std::string, std::size_t, std::uint64_t>;

// Keys from a small alphabet, so that many share long prefixes (past the sorter's 8-byte
// heads) and some repeat whole.
std::vector<Entry> entries_of(std::uint64_t seed, int n) {
  util::Rng rng(seed);
  std::vector<Entry> out;
  for (int i = 0; i < n; ++i) {
    std::string k(1 + rng.uniform(24), '\0');
    for (char& c : k) c = static_cast<char>('a' + rng.uniform(3));
    out.emplace_back(k, rng.uniform(k.size() + 1), rng.next());
  }
  return out;
}

std::size_t runs_in_dir(storage::SimFileSystem* fs) {
  std::vector<std::string> names;
  EXPECT_TRUE(fs->list(kDir, &names).is_ok());
  std::uint64_t n = 0;
  return static_cast<std::size_t>(std::count_if(names.begin(), names.end(), [&](const auto& s) {
    return storage::parse_sort_run_file_name(s, &n);
  }));
}

class EntrySortTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs.open_dir(kDir, true).is_ok()); }
  storage::SimFileSystem fs{13};
  storage::FileTable files{&fs, false};
};

// Sorts `in` with a buffer of `memory` bytes; answers the runs it wrote.
std::uint64_t sort_and_check(storage::SimFileSystem* fs, storage::FileTable* files,
                             std::size_t memory, const std::vector<Entry>& in) {
  EntrySorter sorter(fs, kDir, files, memory);
  for (const auto& [k, len, v] : in) EXPECT_TRUE(sorter.add(k, len, v).is_ok());
  EXPECT_EQ(sorter.entries(), in.size());
  std::vector<Entry> got;
  Status s = sorter.drain([&](std::string_view k, std::size_t len, std::uint64_t v) {
    got.emplace_back(std::string(k), len, v);
    return Status::ok();
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(runs_in_dir(fs), 0u) << "runs outlived the merge";
  // In key order; among equal keys any order, so compare as multisets too.
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), [](const Entry& a, const Entry& b) {
    return std::get<0>(a) < std::get<0>(b);
  }));
  std::vector<Entry> want = in;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  return sorter.runs_written();
}

TEST_F(EntrySortTest, EveryEntryComesOutOnceInKeyOrder) {
  const std::vector<Entry> in = entries_of(13, 20000);
  // All in memory.
  EXPECT_EQ(sort_and_check(&fs, &files, 64u << 20, in), 0u);
  // A few runs, merged with the buffer in one pass.
  const std::uint64_t few = sort_and_check(&fs, &files, 256u << 10, in);
  EXPECT_GT(few, 1u);
  EXPECT_LT(few, EntrySorter::kMaxFanIn);
  // More runs than one merge reads: extra passes write runs of their own.
  const std::uint64_t many = sort_and_check(&fs, &files, 4096, in);
  EXPECT_GT(many, EntrySorter::kMaxFanIn + 1);
  // Nothing added.
  EXPECT_EQ(sort_and_check(&fs, &files, 4096, {}), 0u);
}

TEST_F(EntrySortTest, AFailedWriteOrReadOrSinkEndsTheSortAndLeavesNoRun) {
  const std::vector<Entry> in = entries_of(17, 20000);
  // The fault is armed before the first add, or (`at_drain`) before the merge.
  const auto run = [&](storage::SimFileSystem::Fault fault, std::uint64_t nth, bool at_drain,
                       bool sink_fails) {
    fs.fault_only("sort-");
    if (!at_drain) fs.inject(fault, nth, false);
    Status s = Status::ok();
    {
      EntrySorter sorter(&fs, kDir, &files, 4096);
      for (const auto& [k, len, v] : in) {
        s = sorter.add(k, len, v);
        if (!s.is_ok()) break;
      }
      std::uint64_t seen = 0;
      if (s.is_ok()) {
        EXPECT_GT(sorter.runs_written(), EntrySorter::kMaxFanIn);
        if (at_drain) fs.inject(fault, nth, false);
        s = sorter.drain([&](std::string_view, std::size_t, std::uint64_t) {
          return ++seen == 100 && sink_fails ? Status::invalid_argument("the sink's")
                                             : Status::ok();
        });
      }
    }
    fs.inject(storage::SimFileSystem::Fault::kNone, 0, false);
    EXPECT_EQ(runs_in_dir(&fs), 0u) << "a run outlived its sorter";
    return s;
  };
  using Fault = storage::SimFileSystem::Fault;
  // The 5th run's write fails while entries are added; a merge pass's first write; a merge's
  // 50th read; the sink's own error.
  EXPECT_EQ(run(Fault::kEio, 5, false, false).code(), Code::kIOError);
  EXPECT_EQ(run(Fault::kEnospc, 1, true, false).code(), Code::kIOError);
  EXPECT_EQ(run(Fault::kReadEio, 50, true, false).code(), Code::kIOError);
  EXPECT_EQ(run(Fault::kNone, 0, true, true).code(), Code::kInvalidArgument);
  // The disk answers again: the same sort goes through.
  sort_and_check(&fs, &files, 4096, in);
}

}  // namespace
}  // namespace braid::engine
