// A checkpoint's run list (storage/checkpoint.h, log_format.h CkptRun): each run is the records
// added for one leaf, side by side in one chunk, split where a chunk ends; the list holds every
// record once, in key order, with the files its references need; a record no run can hold
// leaves the list out; and recovery refuses a list that disagrees with the parts, naming where.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "storage/checkpoint.h"
#include "storage/cold_address.h"
#include "storage/index_file.h"
#include "storage/log_format.h"
#include "storage/recovery.h"
#include "storage/sim_fs.h"
#include "util/crc32c.h"
#include "util/random.h"

namespace braid::storage {
namespace {

const std::string kDir = "/db";
constexpr std::uint64_t kOlderPart = 7;  // the file references point into

std::string key_of(std::uint64_t i) {
  char b[16];
  std::snprintf(b, sizeof b, "key%010llu", static_cast<unsigned long long>(i));
  return b;
}

struct Leaf {
  std::uint32_t table;
  std::vector<std::uint64_t> keys;
};

struct Written {
  std::string manifest;
  std::uint64_t records = 0;
  bool listed = false;
  std::size_t run_list_bytes = 0;  // as the writer reports it
};

// A writer's configuration that lists runs, its parts numbered from *next_file on.
CheckpointConfig runs_config(std::uint64_t* next_file) {
  CheckpointConfig config;
  config.dir = kDir;
  config.part_bytes = 4u << 20;
  config.new_file = [next_file] { return (*next_file)++; };
  config.runs = true;
  return config;
}

// Writes `leaves` as a checkpoint would (a run started at each leaf): every third record a
// reference into kOlderPart, the rest values of `value_bytes`.
Written write_checkpoint(SimFileSystem* fs, const std::vector<Leaf>& leaves,
                         std::size_t value_bytes, std::size_t runs_reserve = 0,
                         std::vector<StoredIndex> indexes = {}) {
  EXPECT_TRUE(fs->open_dir(kDir, true).is_ok());
  Result<std::unique_ptr<IoQueue>> q = fs->make_queue(8);
  EXPECT_TRUE(q.is_ok());
  std::uint64_t next_file = 100;
  const CkptHeader header{kFormatVersion, 2, 1, 50, 1, 0, 0};
  CheckpointConfig config = runs_config(&next_file);
  config.runs_reserve = runs_reserve;
  CheckpointWriter w(fs, q->get(), header, {}, std::move(config));
  Written out;
  const std::string value(value_bytes, 'v');
  for (const Leaf& leaf : leaves) {
    w.start_run();
    for (std::uint64_t k : leaf.keys) {
      const std::string key = key_of(k);
      if (k % 3 == 0) {
        EXPECT_TRUE(w.add_ref(leaf.table, key, cold_word(kOlderPart, k * 16 % 4096, 64)).is_ok());
      } else {
        Result<std::uint64_t> at = w.add(leaf.table, key, value, 40);
        EXPECT_TRUE(at.is_ok());
      }
      ++out.records;
    }
  }
  w.set_indexes(std::move(indexes));
  for (;;) {
    Result<bool> done = w.finish(true);
    EXPECT_TRUE(done.is_ok()) << done.status().to_string();
    if (!done.is_ok() || *done) break;
  }
  out.listed = w.lists_runs();
  out.run_list_bytes = w.run_list_bytes();
  EXPECT_TRUE(read_file(*fs, w.path(), &out.manifest).is_ok());
  return out;
}

// Leaves of 1..40 records over two tables, in key order.
std::vector<Leaf> leaves_of(std::uint64_t seed, std::uint64_t records) {
  util::Rng rnd(seed);
  std::vector<Leaf> leaves;
  std::uint64_t k = 0;
  for (std::uint32_t table = 0; table < 2; ++table) {
    const std::uint64_t end = k + records / 2;
    while (k < end) {
      Leaf leaf{table, {}};
      const std::uint64_t n = 1 + rnd.uniform(40);
      for (std::uint64_t i = 0; i < n && k < end; ++i) leaf.keys.push_back(k++);
      leaves.push_back(std::move(leaf));
    }
  }
  return leaves;
}

std::vector<RunView> runs_of(const CheckpointInfo& info) {
  std::vector<RunView> runs;
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < info.run_count; ++i) runs.push_back(next_run(info.runs, &at));
  EXPECT_EQ(at, info.runs.size());
  return runs;
}

TEST(CheckpointRuns, EachLeafIsARunSplitOnlyWhereAChunkEnds) {
  SimFileSystem fs(1);
  // ~1.4 MiB of records: the first chunk (1 MiB) ends inside some leaf.
  const std::vector<Leaf> leaves = leaves_of(11, 12000);
  const Written w = write_checkpoint(&fs, leaves, 80);
  ASSERT_TRUE(w.listed);
  CheckpointInfo info;
  ASSERT_TRUE(read_checkpoint(w.manifest, &info).is_ok());
  ASSERT_TRUE(info.valid) << info.problem;
  EXPECT_EQ(info.header.version, kFormatVersion);
  const std::vector<RunView> runs = runs_of(info);
  // One run per leaf, and one more where a chunk ended inside a leaf.
  ASSERT_GT(info.parts.front().chunks, 1u);
  EXPECT_GE(runs.size(), leaves.size());
  EXPECT_LE(runs.size(), leaves.size() + info.parts.front().chunks - 1);
  std::size_t leaf = 0;
  std::size_t in_leaf = 0;  // records of `leaf` the runs so far covered
  std::uint64_t records = 0;
  std::uint64_t prev_end = 0;
  std::uint64_t splits = 0;
  for (const RunView& r : runs) {
    ASSERT_LT(leaf, leaves.size());
    // A run starts at its leaf's first key, or where a chunk cut the leaf.
    EXPECT_EQ(r.run.table, leaves[leaf].table);
    EXPECT_EQ(r.key, key_of(leaves[leaf].keys[in_leaf]));
    const ColdAddress a = cold(r.run.address);
    if (in_leaf != 0) {
      // The run before ended its chunk: this one starts past the next chunk's header.
      EXPECT_EQ(a.offset, prev_end + kChunkHeaderBytes) << "a leaf split inside a chunk";
      ++splits;
    }
    prev_end = a.offset + a.size;
    // The references' file is listed wherever the run holds one.
    bool refs = false;
    for (std::uint32_t i = 0; i < r.run.records; ++i)
      refs |= leaves[leaf].keys[in_leaf + i] % 3 == 0;
    ASSERT_EQ(r.run.ref_files, refs ? 1u : 0u);
    if (refs) {
      std::uint64_t f;
      std::memcpy(&f, r.ref_files, 8);
      EXPECT_EQ(f, kOlderPart);
    }
    in_leaf += r.run.records;
    ASSERT_LE(in_leaf, leaves[leaf].keys.size());
    if (in_leaf == leaves[leaf].keys.size()) {
      ++leaf;
      in_leaf = 0;
    }
    records += r.run.records;
  }
  EXPECT_EQ(leaf, leaves.size());
  EXPECT_EQ(records, w.records);
  EXPECT_GT(splits, 0u);
  EXPECT_EQ(runs.size(), leaves.size() + splits);
  // The parts agree with the list, record by record.
  EXPECT_TRUE(read_checkpoint_parts(fs, kDir, info, nullptr).is_ok());
}

// The manifest with its runs chunk's payload replaced (the chunk's checksum made right again),
// as a bug in the writer would leave it.
std::string with_runs(std::string manifest, const std::string& runs) {
  std::size_t at = 0;
  for (;;) {
    ChunkHeader h;
    std::memcpy(&h, manifest.data() + at, sizeof h);
    if (h.magic == kCkptRunsMagic) {
      EXPECT_EQ(runs.size(), h.len);
      std::memcpy(manifest.data() + at + kChunkHeaderBytes, runs.data(), runs.size());
      h.crc = util::crc32c(manifest.data() + at + 4, kChunkHeaderBytes - 4 + h.len);
      std::memcpy(manifest.data() + at, &h.crc, 4);
      return manifest;
    }
    at += chunk_bytes(h.len);
  }
}

// The run list is most of a manifest: the writer builds the manifest around the list's buffer
// (reserved from the last list's size), and a reader given the image keeps its buffer as the
// list. Neither may change a byte of what is written or read.
TEST(CheckpointRuns, TheListIsWrittenAndReadWithoutACopy) {
  const std::vector<Leaf> leaves = leaves_of(5, 9000);
  SimFileSystem fs_a(1);
  const Written a = write_checkpoint(&fs_a, leaves, 24);
  ASSERT_TRUE(a.listed);
  ASSERT_GT(a.run_list_bytes, 0u);
  // Reserved exactly, and reserved short of it (the list then grows as before).
  for (const std::size_t reserve : {a.run_list_bytes, a.run_list_bytes / 3}) {
    SimFileSystem fs_b(1);
    const Written b = write_checkpoint(&fs_b, leaves, 24, reserve);
    EXPECT_EQ(b.run_list_bytes, a.run_list_bytes);
    EXPECT_EQ(b.manifest, a.manifest) << "reserve " << reserve;
  }
  CheckpointInfo copied;
  ASSERT_TRUE(read_checkpoint(std::string_view(a.manifest), &copied).is_ok());
  ASSERT_TRUE(copied.valid) << copied.problem;
  EXPECT_EQ(copied.runs.size(), a.run_list_bytes);
  std::string image = a.manifest;
  const char* buffer = image.data();
  CheckpointInfo moved;
  ASSERT_TRUE(read_checkpoint(std::move(image), &moved).is_ok());
  ASSERT_TRUE(moved.valid) << moved.problem;
  EXPECT_EQ(moved.runs, copied.runs);
  EXPECT_EQ(moved.runs.data(), buffer);
  EXPECT_EQ(moved.run_count, copied.run_count);
  EXPECT_EQ(moved.carried_records, copied.carried_records);
  EXPECT_EQ(moved.trailer.records, copied.trailer.records);
  // A damaged image is refused the same way by both.
  std::string bad = a.manifest;
  bad[bad.size() / 2] ^= 0x40;
  CheckpointInfo bad_copied;
  ASSERT_TRUE(read_checkpoint(std::string_view(bad), &bad_copied).is_ok());
  CheckpointInfo bad_moved;
  ASSERT_TRUE(read_checkpoint(std::move(bad), &bad_moved).is_ok());
  EXPECT_FALSE(bad_copied.valid);
  EXPECT_FALSE(bad_moved.valid);
  EXPECT_EQ(bad_moved.problem, bad_copied.problem);
}

TEST(CheckpointRuns, AListThatDisagreesWithItselfOrItsPartsIsRefused) {
  SimFileSystem fs(2);
  const Written w = write_checkpoint(&fs, leaves_of(12, 600), 30);
  CheckpointInfo good;
  ASSERT_TRUE(read_checkpoint(w.manifest, &good).is_ok());
  ASSERT_TRUE(good.valid) << good.problem;
  ASSERT_GE(good.run_count, 4u);
  const std::vector<RunView> runs = runs_of(good);
  // Offsets into the payload of run i's fixed part.
  std::vector<std::size_t> offsets;
  for (std::size_t at = 0; offsets.size() < runs.size();) {
    offsets.push_back(at);
    (void)next_run(good.runs, &at);
  }
  auto patched = [&](std::size_t run, auto change) {
    std::string payload = good.runs;
    CkptRun r;
    std::memcpy(&r, payload.data() + offsets[run], sizeof r);
    change(&r, payload.data() + offsets[run] + sizeof r + std::size_t{r.ref_files} * 8);
    std::memcpy(payload.data() + offsets[run], &r, sizeof r);
    return payload;
  };
  // A run past the first with two records or more, followed by another, whose first key's
  // last digit can grow by one without a carry: that key is then its second record's.
  std::size_t m = 1;
  while (m + 1 < runs.size() && (runs[m].run.records < 2 || runs[m].key.back() == '9')) ++m;
  ASSERT_LT(m + 1, runs.size());
  // The manifest alone shows these: out of order, outside the parts, counts that do not add up.
  struct Bad {
    std::string payload;
    const char* says;
  };
  const Bad self[] = {
      {patched(m + 1, [](CkptRun*, char* key) { key[0] = 'a'; }), "out of key order"},
      {patched(m, [](CkptRun* r, char*) { r->address = cold_word(999, 0, 64); }),
       "outside the checkpoint's parts"},
      {patched(m, [](CkptRun* r, char*) { ++r->records; }), "does not hold every record"},
  };
  for (const Bad& b : self) {
    CheckpointInfo info;
    ASSERT_TRUE(read_checkpoint(with_runs(w.manifest, b.payload), &info).is_ok());
    EXPECT_FALSE(info.valid) << b.says;
    EXPECT_NE(info.problem.find(b.says), std::string::npos) << info.problem;
  }
  // These only the parts show: the manifest checks, and reading the parts is Corruption.
  std::string moved = patched(m, [](CkptRun* r, char*) { --r->records; });
  {
    CkptRun next;
    std::memcpy(&next, moved.data() + offsets[m + 1], sizeof next);
    ++next.records;  // the record run m lost: the counts still add up
    std::memcpy(moved.data() + offsets[m + 1], &next, sizeof next);
  }
  const Bad parts[] = {
      {moved, "has another size"},
      {patched(m, [](CkptRun* r, char* key) { ++key[r->key_len - 1]; }), "names another key"},
  };
  for (const Bad& b : parts) {
    CheckpointInfo info;
    ASSERT_TRUE(read_checkpoint(with_runs(w.manifest, b.payload), &info).is_ok());
    ASSERT_TRUE(info.valid) << info.problem;
    const Status s = read_checkpoint_parts(fs, kDir, info, nullptr);
    EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
    EXPECT_NE(s.message().find("of the run list " + std::string(b.says)), std::string::npos)
        << s.to_string();
  }
}

// What recovery applies, in order.
class Collect final : public Applier {
 public:
  Status put(std::uint32_t table, std::string_view key, std::string_view, std::uint64_t,
             std::uint64_t) override {
    keys.emplace_back(table, std::string(key));
    return Status::ok();
  }
  Status remove(std::uint32_t, std::string_view, std::uint64_t) override {
    return Status::corruption("a removal in a checkpoint");
  }
  Status ref(std::uint32_t table, std::string_view key, std::uint64_t) override {
    keys.emplace_back(table, std::string(key));
    return Status::ok();
  }
  std::vector<std::pair<std::uint32_t, std::string>> keys;
};

// A checkpoint that carries an earlier one's runs over lists them unread, names their parts as
// files it needs, and holds their records: recovery that reads records (not adopting runs)
// reads them where they lie, and a carried run that does not hold what the list says is
// Corruption.
TEST(CheckpointRuns, ACarriedRunIsTheLaterCheckpointsToo) {
  SimFileSystem fs(5);
  const std::vector<Leaf> leaves = leaves_of(14, 400);
  const Written first = write_checkpoint(&fs, leaves, 30);
  CheckpointInfo a;
  ASSERT_TRUE(read_checkpoint(first.manifest, &a).is_ok());
  ASSERT_TRUE(a.valid) << a.problem;
  const std::vector<RunView> runs = runs_of(a);
  // The second checkpoint carries every other run and writes the rest again.
  Result<std::unique_ptr<IoQueue>> q = fs.make_queue(8);
  ASSERT_TRUE(q.is_ok());
  std::uint64_t next_file = 500;
  CheckpointWriter w(&fs, q->get(), CkptHeader{kFormatVersion, 2, 2, 60, 1, 0, 0}, {},
                     runs_config(&next_file));
  std::uint64_t carried = 0;
  std::size_t leaf = 0;
  std::size_t in_leaf = 0;
  std::vector<std::pair<std::uint32_t, std::string>> want;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunView& r = runs[i];
    if (i % 2 == 0) {
      std::vector<std::uint64_t> refs(r.run.ref_files);
      if (!refs.empty()) std::memcpy(refs.data(), r.ref_files, refs.size() * 8);
      ASSERT_TRUE(w.carry_run(r.run.table, r.key, r.run.address, r.run.records, refs).is_ok());
      carried += r.run.records;
    } else {
      w.start_run();
    }
    for (std::uint32_t k = 0; k < r.run.records; ++k) {
      const std::uint64_t key = leaves[leaf].keys[in_leaf];
      want.emplace_back(leaves[leaf].table, key_of(key));
      if (i % 2 == 1) {
        ASSERT_TRUE(w.add(leaves[leaf].table, key_of(key), "again", 55).is_ok());
      }
      if (++in_leaf == leaves[leaf].keys.size()) {
        ++leaf;
        in_leaf = 0;
      }
    }
  }
  for (;;) {
    Result<bool> done = w.finish(true);
    ASSERT_TRUE(done.is_ok()) << done.status().to_string();
    if (*done) break;
  }
  EXPECT_EQ(w.carried_records(), carried);
  std::string manifest;
  ASSERT_TRUE(read_file(fs, w.path(), &manifest).is_ok());
  CheckpointInfo b;
  ASSERT_TRUE(read_checkpoint(manifest, &b).is_ok());
  ASSERT_TRUE(b.valid) << b.problem;
  EXPECT_EQ(b.run_count, runs.size());
  EXPECT_EQ(b.carried_records, carried);
  EXPECT_EQ(b.trailer.records + b.carried_records, first.records);
  // The first checkpoint's part is a file the second needs.
  const std::uint64_t old_part = a.parts.front().file;
  EXPECT_NE(std::find(b.live.begin(), b.live.end(), old_part), b.live.end());
  Collect got;
  std::uint64_t applied = 0;
  ASSERT_TRUE(read_checkpoint_parts(fs, kDir, b, &got, nullptr, &applied).is_ok());
  EXPECT_EQ(applied, first.records);
  std::sort(got.keys.begin(), got.keys.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got.keys, want);
  // A byte of a carried run's first key flipped on disk: its checksum no longer holds.
  const ColdAddress r0 = cold(runs[0].run.address);
  std::string img;
  ASSERT_TRUE(fs.peek(kDir + "/" + part_file_name(r0.segment), &img));
  const std::size_t at = r0.offset + kRecordHeaderBytes + 1;
  fs.poke(kDir + "/" + part_file_name(r0.segment), at,
          std::string(1, static_cast<char>(img[at] ^ 1)), false);
  const Status s = read_checkpoint_parts(fs, kDir, b, nullptr);
  EXPECT_EQ(s.code(), Code::kCorruption) << s.to_string();
  EXPECT_NE(s.message().find("carried over"), std::string::npos) << s.to_string();
}

TEST(CheckpointRuns, ARecordNoRunCanHoldLeavesTheListOut) {
  SimFileSystem fs(3);
  std::vector<Leaf> leaves = {{0, {1, 2}}, {0, {4, 5}}};
  // A value of 64 KiB makes a record past what a cold word addresses.
  const Written w = write_checkpoint(&fs, leaves, 64 * 1024);
  EXPECT_FALSE(w.listed);
  CheckpointInfo info;
  ASSERT_TRUE(read_checkpoint(w.manifest, &info).is_ok());
  ASSERT_TRUE(info.valid) << info.problem;
  EXPECT_EQ(info.run_count, 0u);
  EXPECT_TRUE(read_checkpoint_parts(fs, kDir, info, nullptr).is_ok());
}

// Makes the manifest's header chunk say `version`, its checksum made right.
void set_manifest_version(std::string* manifest, std::uint32_t version) {
  ChunkHeader h;
  std::memcpy(&h, manifest->data(), sizeof h);
  std::memcpy(manifest->data() + kChunkHeaderBytes, &version, 4);
  h.crc = util::crc32c(manifest->data() + 4, kChunkHeaderBytes - 4 + h.len);
  std::memcpy(manifest->data(), &h.crc, 4);
}

TEST(CheckpointRuns, AVersionFourManifestCannotListRuns) {
  SimFileSystem fs(4);
  const Written w = write_checkpoint(&fs, leaves_of(13, 100), 30);
  std::string manifest = w.manifest;
  // The header chunk says version 4: a runs chunk is then out of place.
  set_manifest_version(&manifest, 4);
  CheckpointInfo info;
  ASSERT_TRUE(read_checkpoint(manifest, &info).is_ok());
  EXPECT_FALSE(info.valid);
  EXPECT_NE(info.problem.find("out of place"), std::string::npos) << info.problem;
  // A version this build does not know is refused by its number.
  set_manifest_version(&manifest, kFormatVersion + 1);
  const Status s = read_checkpoint(manifest, &info);
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.message().find("versions 4 to " + std::to_string(kFormatVersion)), std::string::npos)
      << s.to_string();
}

std::vector<StoredIndex> two_indexes() {
  StoredIndex a;
  a.name = "by_group";
  a.desc = {1, static_cast<std::uint32_t>(a.name.size()), 3, 200, 1234, 201, 17};
  StoredIndex b;
  b.name = std::string(kMaxTableNameBytes, 'n');
  b.desc = {0, static_cast<std::uint32_t>(b.name.size()), 1, 202, 0, 0, 0};
  return {a, b};
}

// The indexes chunk comes back as written, beside a run list and without one; a version-5
// manifest cannot hold it.
TEST(CheckpointIndexes, TheManifestNamesItsStoredIndexes) {
  for (const bool runs : {true, false}) {
    SimFileSystem fs(4);
    // A 64 KiB value leaves the run list out.
    const Written w =
        write_checkpoint(&fs, leaves_of(5, 60), runs ? 30 : 64 * 1024, 0, two_indexes());
    EXPECT_EQ(w.listed, runs);
    CheckpointInfo info;
    ASSERT_TRUE(read_checkpoint(w.manifest, &info).is_ok());
    ASSERT_TRUE(info.valid) << info.problem;
    ASSERT_EQ(info.indexes.size(), 2u);
    const std::vector<StoredIndex> expect = two_indexes();
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(info.indexes[i].name, expect[i].name);
      EXPECT_EQ(std::memcmp(&info.indexes[i].desc, &expect[i].desc, sizeof(CkptIndex)), 0) << i;
    }
    std::string manifest = w.manifest;
    set_manifest_version(&manifest, 5);
    ASSERT_TRUE(read_checkpoint(manifest, &info).is_ok());
    EXPECT_FALSE(info.valid);
    EXPECT_NE(info.problem.find("out of place"), std::string::npos) << info.problem;
  }
}

// An index file reads back entry by entry across chunks; a flipped byte, a file cut short, a
// count the manifest disagrees with, or a file of another number is Corruption.
TEST(CheckpointIndexes, IndexFilesReadBackAndRefuseDamage) {
  SimFileSystem fs(4);
  ASSERT_TRUE(fs.open_dir(kDir, true).is_ok());
  util::Rng rnd(9);
  std::vector<std::pair<std::string, std::size_t>> entries;
  IndexFileWriter w;
  ASSERT_TRUE(w.open(&fs, kDir, 300).is_ok());
  for (int i = 0; i < 120000; ++i) {
    const std::string key =
        key_of(static_cast<std::uint64_t>(i)) + std::string(rnd.next() % 20, 'p');
    const std::size_t secondary = rnd.next() % (key.size() + 1);
    ASSERT_TRUE(w.add(key, secondary).is_ok());
    entries.emplace_back(key, secondary);
  }
  ASSERT_TRUE(w.finish().is_ok());
  ASSERT_GT(w.bytes(), std::uint64_t{2} * kIndexChunkBytes) << "the test wants several chunks";
  std::size_t at = 0;
  auto check = [&](std::string_view key, std::size_t secondary) {
    EXPECT_LT(at, entries.size());
    if (at < entries.size()) {
      EXPECT_EQ(key, entries[at].first);
      EXPECT_EQ(secondary, entries[at].second);
    }
    ++at;
    return Status::ok();
  };
  ASSERT_TRUE(read_index_file(&fs, kDir, 300, entries.size(), check).is_ok());
  EXPECT_EQ(at, entries.size());
  auto none = [](std::string_view, std::size_t) { return Status::ok(); };
  EXPECT_EQ(read_index_file(&fs, kDir, 300, entries.size() + 1, none).code(), Code::kCorruption);
  EXPECT_EQ(read_index_file(&fs, kDir, 301, entries.size(), none).code(), Code::kCorruption);
  const std::string path = std::string(kDir) + "/" + index_file_name(300);
  std::string image;
  ASSERT_TRUE(read_file(fs, path, &image).is_ok());
  auto rewrite = [&](const std::string& bytes) {
    Result<FileId> f = fs.open(path, {});
    ASSERT_TRUE(f.is_ok());
    ASSERT_TRUE(fs.truncate(*f, 0).is_ok());
    ASSERT_TRUE(fs.write(*f, 0, bytes.data(), bytes.size()).is_ok());
    fs.close(*f);
  };
  std::string flipped = image;
  flipped[kIndexChunkBytes + 500] ^= 0x10;
  rewrite(flipped);
  Status s = read_index_file(&fs, kDir, 300, entries.size(), none);
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.message().find("sidx-"), std::string::npos) << s.to_string();
  rewrite(image.substr(0, image.size() - 100));
  EXPECT_EQ(read_index_file(&fs, kDir, 300, entries.size(), none).code(), Code::kCorruption);
}

}  // namespace
}  // namespace braid::storage
