// Sorted runs (storage/sort_run.h): entries read back as written across chunks; a damaged
// chunk, a run cut short, one longer than its writer said and a failed write or read answer
// Corruption or IOError naming the run, never an entry that was not written.
#include <gtest/gtest.h>

#include <braid/key.h>

#include <string>
#include <tuple>
#include <vector>

#include "storage/log_format.h"
#include "storage/sim_fs.h"
#include "storage/sort_run.h"
#include "util/random.h"

namespace braid::storage {
namespace {

const std::string kDir = "/db";
using Entry = std::tuple<std::string, std::size_t, std::uint64_t>;

std::vector<Entry> entries_of(std::uint64_t seed, int n) {
  util::Rng rng(seed);
  std::vector<Entry> out;
  for (int i = 0; i < n; ++i) {
    std::string k(1 + rng.uniform(kMaxKeyBytes), '\0');
    for (char& c : k) c = static_cast<char>(rng.uniform(256));
    out.emplace_back(k, rng.uniform(k.size() + 1), rng.next());
  }
  return out;
}

void write_run(SimFileSystem* fs, std::uint64_t number, const std::vector<Entry>& entries) {
  SortRunWriter w;
  ASSERT_TRUE(w.open(fs, kDir, number).is_ok());
  for (const auto& [k, len, v] : entries) ASSERT_TRUE(w.add(k, len, v).is_ok());
  ASSERT_TRUE(w.finish().is_ok());
  EXPECT_EQ(w.entries(), entries.size());
}

Status read_run(SimFileSystem* fs, std::uint64_t number, std::uint64_t entries,
                std::vector<Entry>* out) {
  out->clear();
  SortRunReader r;
  if (Status s = r.open(fs, kDir, number, entries); !s.is_ok()) return s;
  for (;;) {
    bool more = false;
    if (Status s = r.next(&more); !s.is_ok()) return s;
    if (!more) return Status::ok();
    out->emplace_back(std::string(r.key()), r.secondary_len(), r.value());
  }
}

class SortRunTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs.open_dir(kDir, true).is_ok()); }
  SimFileSystem fs{5};
};

TEST_F(SortRunTest, EntriesComeBackAsWrittenAcrossChunks) {
  // Keys up to the longest: ~130 bytes each on average, so some 25 chunks.
  const std::vector<Entry> want = entries_of(5, 12000);
  write_run(&fs, 7, want);
  std::vector<Entry> got;
  ASSERT_TRUE(read_run(&fs, 7, want.size(), &got).is_ok());
  EXPECT_EQ(got, want);
  // An empty run is a file of no chunk.
  write_run(&fs, 8, {});
  ASSERT_TRUE(read_run(&fs, 8, 0, &got).is_ok());
  EXPECT_TRUE(got.empty());
  std::uint64_t n = 0;
  EXPECT_TRUE(parse_sort_run_file_name(sort_run_file_name(7), &n));
  EXPECT_EQ(n, 7u);
  EXPECT_FALSE(parse_sort_run_file_name("sidx-7", &n));
}

TEST_F(SortRunTest, ADamagedOrMiscountedRunIsCorruption) {
  const std::vector<Entry> want = entries_of(9, 3000);
  write_run(&fs, 3, want);
  std::vector<Entry> got;
  // Counts that disagree with the file.
  Status s = read_run(&fs, 3, want.size() + 1, &got);
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  EXPECT_NE(s.to_string().find("sort-"), std::string::npos) << s.to_string();
  s = read_run(&fs, 3, want.size() - 1, &got);
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  // A byte flipped in the second chunk's payload: the entries before it may come back, none
  // after it, and none that differs from what was written.
  Result<FileId> f = fs.open(kDir + "/" + sort_run_file_name(3), {});
  ASSERT_TRUE(f.is_ok());
  const std::uint64_t at = chunk_bytes(0) + kSortRunChunkBytes + 100;
  char c = 0;
  std::size_t got_bytes = 0;
  ASSERT_TRUE(fs.read(*f, at, 1, &c, &got_bytes).is_ok());
  c = static_cast<char>(c ^ 0x40);
  ASSERT_TRUE(fs.write(*f, at, &c, 1).is_ok());
  s = read_run(&fs, 3, want.size(), &got);
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  ASSERT_LT(got.size(), want.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
  // Cut short inside its last chunk.
  Result<std::uint64_t> size = fs.size(*f);
  ASSERT_TRUE(size.is_ok());
  ASSERT_TRUE(fs.truncate(*f, *size - 40).is_ok());
  fs.close(*f);
  EXPECT_EQ(read_run(&fs, 3, want.size(), &got).code(), Code::kCorruption);
}

TEST_F(SortRunTest, FailedWritesAndReadsAreIOErrors) {
  const std::vector<Entry> want = entries_of(11, 3000);
  fs.inject(SimFileSystem::Fault::kEio, 2, false);
  SortRunWriter w;
  ASSERT_TRUE(w.open(&fs, kDir, 4).is_ok());
  Status s = Status::ok();
  for (const auto& [k, len, v] : want) {
    s = w.add(k, len, v);
    if (!s.is_ok()) break;
  }
  if (s.is_ok()) s = w.finish();
  EXPECT_EQ(s.code(), Code::kIOError) << s.to_string();
  EXPECT_NE(s.to_string().find("sort-"), std::string::npos) << s.to_string();

  write_run(&fs, 6, want);
  fs.inject(SimFileSystem::Fault::kReadEio, 3, false);
  std::vector<Entry> got;
  EXPECT_EQ(read_run(&fs, 6, want.size(), &got).code(), Code::kIOError);
  ASSERT_TRUE(read_run(&fs, 6, want.size(), &got).is_ok());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace braid::storage
