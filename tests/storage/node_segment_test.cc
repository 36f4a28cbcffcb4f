// Node segments (storage/node_segment.h): a tree's images written through the writer read back
// whole by address, from a new file table as after an open, on the simulated disk and the real
// one; a block is written once; faults, short files and bad addresses answer IOError or
// Corruption naming the segment.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "index/btree.h"
#include "index/node_image.h"
#include "index/tree_util.h"
#include "storage/cold_address.h"
#include "storage/file_table.h"
#include "storage/log_format.h"
#include "storage/node_segment.h"
#include "storage/sim_fs.h"
#include "util/random.h"

namespace braid::storage {
namespace {

constexpr std::uint32_t kTree = 3;
const std::string kDir = "/db";

struct Block {
  Block() : p(static_cast<char*>(std::aligned_alloc(kDirectAlign, kDirectAlign))) {}
  ~Block() { std::free(p); }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  char* p;
};

// Writes every node of `t` through `w`, flushing after a seeded number of images now and then
// (so blocks end part full); answers the root's address.
std::uint64_t write_tree(const index::BTree& t, NodeSegmentWriter* w, util::Rng* rng) {
  return t.visit_bottom_up([&](const index::Node& n, std::span<const std::uint64_t> children) {
    char* slot = nullptr;
    Result<std::uint64_t> a = w->add(&slot);
    EXPECT_TRUE(a.is_ok()) << a.status().to_string();
    index::encode_node_image(n, kTree, *a, children, slot);
    if (rng->uniform(16) == 0) {
      EXPECT_TRUE(w->flush().is_ok());
    }
    return *a;
  });
}

// The tree read back from storage alone, root first.
Status read_back(FileTable* files, std::uint64_t address,
                 std::vector<std::pair<std::string, std::uint64_t>>* out) {
  Block b;
  Result<const char*> img = read_node_slot(files, address, b.p);
  if (!img.is_ok()) return img.status();
  auto n = std::make_unique<index::Node>();
  if (const char* why = index::decode_node_image(*img, kTree, address, n.get()); why != nullptr) {
    return Status::corruption(why);
  }
  if (n->level == 0) {
    for (unsigned i = 0; i < n->count; ++i)
      out->emplace_back(index::key_of(*n, i), n->tails(n->count)[i].value);
    return Status::ok();
  }
  if (Status s = read_back(files, reinterpret_cast<std::uint64_t>(n->leftmost), out); !s.is_ok()) {
    return s;
  }
  for (unsigned i = 0; i < n->count; ++i) {
    if (Status s = read_back(files, n->tails(n->count)[i].value, out); !s.is_ok()) return s;
  }
  return Status::ok();
}

// A file table as an open would build it: every node segment found in `dir`.
std::unique_ptr<FileTable> table_of(FileSystem* fs, const std::string& dir) {
  auto files = std::make_unique<FileTable>(fs, true);
  std::vector<std::string> names;
  EXPECT_TRUE(fs->list(dir, &names).is_ok());
  std::uint64_t top = 0;
  for (const std::string& name : names) {
    std::uint64_t n = 0;
    if (!parse_node_segment_name(name, &n)) continue;
    files->add(n, dir + "/" + name);
    top = std::max(top, n);
  }
  files->reserve_through(top);
  return files;
}

TEST(NodeSegment, NamesRoundTripAndOthersAreNotTaken) {
  std::uint64_t n = 0;
  ASSERT_TRUE(parse_node_segment_name(node_segment_name(1234567), &n));
  EXPECT_EQ(n, 1234567u);
  EXPECT_EQ(node_segment_name(12), "idx-0000000012");
  EXPECT_FALSE(parse_node_segment_name("ckpt-0000000012", &n));
  EXPECT_FALSE(parse_node_segment_name("idx-000000001x", &n));
  EXPECT_FALSE(parse_node_segment_name("idx-00000000123", &n));
}

TEST(NodeSegment, ATreeWrittenThroughSegmentsReadsBackAfterAPowerLoss) {
  for (const std::uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SimFileSystem fs(seed);
    ASSERT_TRUE(fs.open_dir(kDir, true).is_ok());
    const auto t = index::random_tree(seed, 30'000, 24, 'a', 26);
    util::Rng rng(seed);
    std::uint64_t root = 0;
    std::vector<std::uint64_t> segments;
    {
      FileTable files(&fs, true);
      // Small segments: the tree spans many, and addresses cross files.
      NodeSegmentWriter w(&fs, &files, kDir, 64 * 1024);
      root = write_tree(*t, &w, &rng);
      ASSERT_TRUE(w.sync().is_ok());
      segments = w.segments();
      EXPECT_GT(segments.size(), 3u);
    }
    fs.power_loss(SimFileSystem::Damage::kRandom, seed);  // nothing unsynced is left to damage
    const auto files = table_of(&fs, kDir);
    EXPECT_EQ(files->size(), segments.size());
    std::vector<std::pair<std::string, std::uint64_t>> back;
    const Status s = read_back(files.get(), root, &back);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(back, index::entries_of(*t));
  }
}

TEST(NodeSegment, AFlushEndsItsBlockAndNoBlockIsWrittenTwice) {
  SimFileSystem fs(9);
  ASSERT_TRUE(fs.open_dir(kDir, true).is_ok());
  FileTable files(&fs, true);
  NodeSegmentWriter w(&fs, &files, kDir, 1 << 20);
  std::vector<std::uint64_t> offsets;
  for (int i = 0; i < 11; ++i) {
    char* slot = nullptr;
    Result<std::uint64_t> a = w.add(&slot);
    ASSERT_TRUE(a.is_ok());
    std::memset(slot, 0x11 * (i + 1), kNodeSlotBytes);
    offsets.push_back(cold(*a).offset);
    EXPECT_EQ(cold(*a).size, kNodeSlotBytes);
    if (i == 1 || i == 6) {
      ASSERT_TRUE(w.flush().is_ok());
    }
  }
  ASSERT_TRUE(w.sync().is_ok());
  // Slots 0-1 share block 0; the flush after slot 1 sends slot 2 to block 1, slot 7 to block 2.
  const std::vector<std::uint64_t> want{0,    1024,  4096,  5120,  6144, 7168,
                                        8192, 12288, 13312, 14336, 15360};
  EXPECT_EQ(offsets, want);
  std::string bytes;
  ASSERT_TRUE(fs.peek(kDir + "/" + node_segment_name(w.segments()[0]), &bytes));
  ASSERT_EQ(bytes.size(), 16384u);
  EXPECT_EQ(bytes[2048], 0);  // the rest of a flushed block is zeros
  EXPECT_EQ(static_cast<unsigned char>(bytes[12288]), 0x11u * 8);
}

TEST(NodeSegment, FaultsShortFilesAndBadAddressesAnswerWithTheSegment) {
  SimFileSystem fs(4);
  ASSERT_TRUE(fs.open_dir(kDir, true).is_ok());
  const auto t = index::random_tree(4, 3'000, 12, 'a', 26);
  util::Rng rng(4);
  FileTable files(&fs, true);
  std::uint64_t root = 0;
  std::uint64_t segment = 0;
  {
    NodeSegmentWriter w(&fs, &files, kDir, 1 << 20);
    root = write_tree(*t, &w, &rng);
    ASSERT_TRUE(w.sync().is_ok());
    segment = w.segments()[0];
  }
  Block b;
  const auto status_of = [&](std::uint64_t address) {
    Result<const char*> r = read_node_slot(&files, address, b.p);
    return r.is_ok() ? Status::ok() : r.status();
  };
  // A read that fails.
  fs.inject(SimFileSystem::Fault::kReadEio, 1, false);
  Status s = status_of(root);
  EXPECT_EQ(s.code(), Code::kIOError);
  EXPECT_NE(s.message().find(node_segment_name(segment)), std::string::npos) << s.to_string();
  ASSERT_TRUE(status_of(root).is_ok());  // the fault fired once
  // Addresses that name no slot.
  EXPECT_EQ(status_of(cold_word(segment, 512, kNodeSlotBytes)).code(), Code::kCorruption);
  EXPECT_EQ(status_of(cold_word(segment, 1024, 2048)).code(), Code::kCorruption);
  EXPECT_EQ(status_of(0x1000).code(), Code::kCorruption);
  // A segment nobody knows.
  EXPECT_EQ(status_of(cold_word(segment + 100, 0, kNodeSlotBytes)).code(), Code::kIOError);
  // A file cut short before the image.
  const ColdAddress ra = cold(root);
  Result<FileId> f = fs.open(kDir + "/" + node_segment_name(segment), OpenOptions{});
  ASSERT_TRUE(f.is_ok());
  ASSERT_TRUE(fs.truncate(*f, ra.offset + 512).is_ok());
  fs.close(*f);
  s = status_of(root);
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.message().find("ends before the image"), std::string::npos) << s.to_string();
}

TEST(NodeSegment, AFailedWriteIsReportedAndItsImagesStayStaged) {
  SimFileSystem fs(6);
  ASSERT_TRUE(fs.open_dir(kDir, true).is_ok());
  FileTable files(&fs, true);
  NodeSegmentWriter w(&fs, &files, kDir, 1 << 20);
  char* slot = nullptr;
  Result<std::uint64_t> a = w.add(&slot);
  ASSERT_TRUE(a.is_ok());
  std::memset(slot, 0x42, kNodeSlotBytes);
  fs.inject(SimFileSystem::Fault::kEnospc, 1, false);
  Status s = w.flush();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), Code::kIOError);
  EXPECT_NE(s.message().find("node segment"), std::string::npos) << s.to_string();
  ASSERT_TRUE(w.sync().is_ok());  // the disk has room again: the staged image goes now
  std::string bytes;
  ASSERT_TRUE(fs.peek(kDir + "/" + node_segment_name(w.segments()[0]), &bytes));
  ASSERT_GE(bytes.size(), kNodeSlotBytes);
  EXPECT_EQ(bytes[cold(*a).offset], 0x42);
  // A sync that fails is reported too.
  Result<std::uint64_t> b = w.add(&slot);
  ASSERT_TRUE(b.is_ok());
  std::memset(slot, 0x43, kNodeSlotBytes);
  fs.inject(SimFileSystem::Fault::kSyncEio, 1, false);
  s = w.sync();
  EXPECT_EQ(s.code(), Code::kIOError);
}

TEST(NodeSegment, ASegmentGoesWhenItsLastImageIsReleased) {
  SimFileSystem fs(12);
  ASSERT_TRUE(fs.open_dir(kDir, true).is_ok());
  FileTable files(&fs, true);
  NodeSegmentWriter w(&fs, &files, kDir, 16 * 1024);  // 16 slots a segment
  std::vector<std::uint64_t> addresses;
  for (int i = 0; i < 40; ++i) {
    char* slot = nullptr;
    Result<std::uint64_t> a = w.add(&slot);
    ASSERT_TRUE(a.is_ok());
    std::memset(slot, i, kNodeSlotBytes);
    addresses.push_back(*a);
  }
  ASSERT_TRUE(w.sync().is_ok());
  ASSERT_EQ(w.segments().size(), 3u);
  const auto on_disk = [&] {
    std::vector<std::string> names;
    EXPECT_TRUE(fs.list(kDir, &names).is_ok());
    std::size_t n = 0;
    std::uint64_t number = 0;
    for (const std::string& name : names) n += parse_node_segment_name(name, &number) ? 1 : 0;
    return n;
  };
  EXPECT_EQ(on_disk(), 3u);
  // All but one image of the first segment: it stays.
  for (int i = 0; i < 15; ++i) w.release(addresses[i]);
  ASSERT_TRUE(w.reap().is_ok());
  EXPECT_EQ(on_disk(), 3u);
  Block b;
  ASSERT_TRUE(read_node_slot(&files, addresses[15], b.p).is_ok());
  // Its last one: it goes, and its addresses no longer read.
  w.release(addresses[15]);
  EXPECT_EQ(on_disk(), 3u);  // not before the writer's reap
  ASSERT_TRUE(w.reap().is_ok());
  EXPECT_EQ(on_disk(), 2u);
  EXPECT_EQ(w.live_segments(), 2u);
  EXPECT_EQ(w.segments().size(), 2u);
  Result<const char*> gone = read_node_slot(&files, addresses[15], b.p);
  ASSERT_FALSE(gone.is_ok());
  EXPECT_EQ(gone.status().code(), Code::kIOError);
  // The segment being written stays even when empty; the one before it goes.
  for (int i = 16; i < 40; ++i) w.release(addresses[i]);
  ASSERT_TRUE(w.reap().is_ok());
  EXPECT_EQ(on_disk(), 1u);
  EXPECT_EQ(w.live_segments(), 1u);
  EXPECT_EQ(w.segments().size(), 1u);
  char* slot = nullptr;
  ASSERT_TRUE(w.add(&slot).is_ok());  // and takes more
  std::memset(slot, 0, kNodeSlotBytes);
  ASSERT_TRUE(w.sync().is_ok());
}

TEST(NodeSegment, ATreeReadsBackFromTheRealDisk) {
  char tmpl[] = "/tmp/braid-node-segment-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto fs = make_posix_file_system(true);
  const auto t = index::random_tree(8, 20'000, 40, 'a', 26);
  util::Rng rng(8);
  std::uint64_t root = 0;
  {
    FileTable files(fs.get(), true);
    NodeSegmentWriter w(fs.get(), &files, dir, 256 * 1024);
    root = write_tree(*t, &w, &rng);
    ASSERT_TRUE(w.sync().is_ok());
  }
  const auto files = table_of(fs.get(), dir);
  std::vector<std::pair<std::string, std::uint64_t>> back;
  const Status s = read_back(files.get(), root, &back);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(back, index::entries_of(*t));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace braid::storage
