// A worker's I/O ring: two channels over one queue (the simulated disk's, seeded latency and
// completion order), each getting back exactly its own completions with its own tags.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "storage/io_ring.h"
#include "storage/sim_fs.h"

namespace braid::storage {
namespace {

class IoRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.open_dir("/d", true).is_ok());
    Result<FileId> f = fs_.open("/d/f", {.create = true});
    ASSERT_TRUE(f.is_ok());
    file_ = *f;
    Result<std::unique_ptr<IoQueue>> q = fs_.make_queue(64);
    ASSERT_TRUE(q.is_ok());
    ring_ = std::make_unique<IoRing>(std::move(*q));
  }
  IoRequest write(std::uint64_t offset, std::uint64_t user) {
    IoRequest r;
    r.op = IoRequest::Op::kWrite;
    r.file = file_;
    r.offset = offset;
    r.data = data_;
    r.len = sizeof data_;
    r.user = user;
    return r;
  }

  SimFileSystem fs_{5, /*max_latency_polls=*/6};
  FileId file_ = -1;
  std::unique_ptr<IoRing> ring_;
  char data_[64] = {};
};

TEST_F(IoRingTest, EachChannelGetsItsOwnCompletionsWithItsOwnTags) {
  auto log = ring_->channel(IoRing::kLog);
  auto ckpt = ring_->channel(IoRing::kCheckpoint);
  // Same tags on both channels: the ring must not mix them up.
  for (std::uint64_t u = 0; u < 10; ++u) {
    ASSERT_TRUE(log->submit(write(u * 64, u)).is_ok());
    ASSERT_TRUE(ckpt->submit(write(4096 + u * 64, u)).is_ok());
  }
  EXPECT_EQ(log->in_flight(), 10u);
  EXPECT_EQ(ckpt->in_flight(), 10u);
  EXPECT_EQ(ring_->in_flight(), 20u);
  std::set<std::uint64_t> got_log, got_ckpt;
  IoCompletion c[4];
  // The log waits for all of its own first; the checkpoint's completions met on the way wait
  // in its channel.
  while (got_log.size() < 10) {
    const std::size_t n = log->poll(c, 4, true);
    ASSERT_GT(n, 0u);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(c[i].result, 64);
      EXPECT_TRUE(got_log.insert(c[i].user).second) << "completion delivered twice";
    }
  }
  EXPECT_EQ(log->in_flight(), 0u);
  EXPECT_EQ(log->poll(c, 4, true), 0u);  // nothing in flight: a wait answers at once
  while (got_ckpt.size() < 10) {
    ring_->reap();  // the worker's once-per-loop pass
    const std::size_t n = ckpt->poll(c, 4, false);
    for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(got_ckpt.insert(c[i].user).second);
  }
  EXPECT_EQ(ckpt->in_flight(), 0u);
  EXPECT_EQ(ring_->in_flight(), 0u);
  EXPECT_EQ(*got_log.rbegin(), 9u);
  EXPECT_EQ(*got_ckpt.rbegin(), 9u);
}

TEST_F(IoRingTest, AChannelClosedWithRequestsInFlightWaitsForThem) {
  auto log = ring_->channel(IoRing::kLog);
  for (std::uint64_t u = 0; u < 5; ++u) ASSERT_TRUE(log->submit(write(u * 64, u)).is_ok());
  log.reset();  // the client's buffers are safe to free after this
  EXPECT_EQ(ring_->in_flight(), 0u);
  // The channel can be handed out again.
  auto again = ring_->channel(IoRing::kLog);
  EXPECT_EQ(again->in_flight(), 0u);
}

// Cold reads go through the same ring as the log's writes, on their own channel: each read
// gets back the bytes last written there (durable or not: what a read of the file sees),
// fewer at the end of the file, nothing beyond it.
TEST_F(IoRingTest, ColdReadsShareTheRingAndSeeWhatWasWritten) {
  auto log = ring_->channel(IoRing::kLog);
  auto cold = ring_->channel(IoRing::kColdRead);
  char pattern[8][64];
  for (std::uint64_t u = 0; u < 8; ++u) {
    std::memset(pattern[u], static_cast<int>('a' + u), sizeof pattern[u]);
    IoRequest w = write(u * 64, u);
    w.data = pattern[u];
    ASSERT_TRUE(log->submit(w).is_ok());
  }
  IoCompletion c[8];
  for (std::size_t done = 0; done < 8;) done += log->poll(c, 8, true);
  char out[10][64] = {};
  // Log writes in flight meanwhile go to another file: this one's end must stay put.
  Result<FileId> other = fs_.open("/d/g", {.create = true});
  ASSERT_TRUE(other.is_ok());
  for (std::uint64_t u = 0; u < 10; ++u) {
    IoRequest r;
    r.op = IoRequest::Op::kRead;
    r.file = file_;
    r.offset = u < 8 ? u * 64 : (u == 8 ? 8 * 64 - 16 : 100 * 64);  // 8: the last 16 bytes
    r.out = out[u];
    r.len = 64;
    r.user = 100 + u;
    ASSERT_TRUE(cold->submit(r).is_ok());
    IoRequest w = write(u * 64, u);
    w.file = *other;
    ASSERT_TRUE(log->submit(w).is_ok());
  }
  std::map<std::uint64_t, std::int64_t> results;
  while (results.size() < 10) {
    ring_->reap();
    const std::size_t n = cold->poll(c, 8, false);
    for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(results.emplace(c[i].user, c[i].result).second);
  }
  for (std::uint64_t u = 0; u < 8; ++u) {
    EXPECT_EQ(results[100 + u], 64);
    EXPECT_EQ(std::string(out[u], 64), std::string(pattern[u], 64)) << u;
  }
  EXPECT_EQ(results[108], 16);  // short only at the end of the file
  EXPECT_EQ(std::string(out[8], 16), std::string(pattern[7], 16));
  EXPECT_EQ(results[109], 0);
  while (log->in_flight() > 0) log->poll(c, 8, true);
}

TEST_F(IoRingTest, AFailedReadIsReportedToItsRequestOnly) {
  auto cold = ring_->channel(IoRing::kColdRead);
  ASSERT_TRUE(fs_.write(file_, 0, data_, sizeof data_).is_ok());
  fs_.inject(SimFileSystem::Fault::kReadEio, 2, false);  // the second read fails
  char out[3][64];
  for (std::uint64_t u = 0; u < 3; ++u) {
    IoRequest r;
    r.op = IoRequest::Op::kRead;
    r.file = file_;
    r.out = out[u];
    r.len = 64;
    r.user = u;
    ASSERT_TRUE(cold->submit(r).is_ok());
    IoCompletion c;
    ASSERT_EQ(cold->poll(&c, 1, true), 1u);  // one at a time: the n-th read is this one
    EXPECT_EQ(c.user, u);
    EXPECT_EQ(c.result, u == 1 ? -EIO : 64) << u;
  }
  EXPECT_EQ(fs_.faults_fired(), 1u);
}

// The real backends to test: io_uring when this kernel has it, and the synchronous fallback.
std::vector<bool> real_backends() {
  std::string why;
  if (probe_io_uring(&why)) return {true, false};
  std::fprintf(stderr, "io_uring unavailable (%s): testing the fallback only\n", why.c_str());
  return {false};
}

// A file on a real backend holding `data`; it and its directory go with the test.
// Its bytes: `size` of them, byte i = i * mul + add.
struct RealFile {
  RealFile(bool uring, std::size_t size, int mul, int add) : fs(make_posix_file_system(uring)) {
    data.resize(size);
    for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<char>(i * mul + add);
    if (::mkdtemp(dir) == nullptr) return;
    path = std::string(dir) + "/f";
    Result<FileId> f = fs->open(path, {.create = true});
    if (!f.is_ok()) return;
    file = *f;
    if (!fs->write(file, 0, data.data(), data.size()).is_ok()) file = -1;
  }
  ~RealFile() {
    if (file >= 0) fs->close(file);
    std::remove(path.c_str());
    ::rmdir(dir);
  }
  RealFile(const RealFile&) = delete;
  RealFile& operator=(const RealFile&) = delete;
  std::unique_ptr<IoQueue> queue(std::uint32_t depth) {
    Result<std::unique_ptr<IoQueue>> q = fs->make_queue(depth);
    return q.is_ok() ? std::move(*q) : nullptr;
  }

  std::unique_ptr<FileSystem> fs;
  std::string data;
  char dir[32] = "/tmp/braid-ioXXXXXX";
  std::string path;
  FileId file = -1;  // -1: the set-up failed
};

TEST(PosixQueue, ReadsReturnWhatAWriteLeft) {
  for (const bool uring : real_backends()) {
    RealFile rf(uring, 10000, 7, 0);
    ASSERT_GE(rf.file, 0) << "cannot make a file in /tmp";
    std::unique_ptr<IoQueue> q = rf.queue(8);
    ASSERT_NE(q, nullptr);
    const std::string& data = rf.data;
    char out[4][512];
    const std::uint64_t offsets[4] = {0, 4096, 9600, 20000};
    for (std::uint64_t u = 0; u < 4; ++u) {
      IoRequest r;
      r.op = IoRequest::Op::kRead;
      r.file = rf.file;
      r.offset = offsets[u];
      r.out = out[u];
      r.len = 512;
      r.user = u;
      ASSERT_TRUE(q->submit(r).is_ok());
    }
    std::map<std::uint64_t, std::int64_t> got;
    IoCompletion c[4];
    while (got.size() < 4) {
      const std::size_t n = q->poll(c, 4, true);
      ASSERT_GT(n, 0u);
      for (std::size_t i = 0; i < n; ++i) got[c[i].user] = c[i].result;
    }
    EXPECT_EQ(got[0], 512);
    EXPECT_EQ(got[1], 512);
    EXPECT_EQ(got[2], 400);
    EXPECT_EQ(got[3], 0);
    EXPECT_EQ(std::string(out[0], 512), data.substr(0, 512)) << uring;
    EXPECT_EQ(std::string(out[1], 512), data.substr(4096, 512)) << uring;
    EXPECT_EQ(std::string(out[2], 400), data.substr(9600, 400)) << uring;
  }
}

// A registered buffer: reads that name it land in it like any read (io_uring pins it once);
// a backend without registration says so and the caller reads as before.
TEST(PosixQueue, ReadsIntoARegisteredBufferThroughTheRing) {
  for (const bool uring : real_backends()) {
    RealFile rf(uring, 3 * 4096, 13, 1);
    ASSERT_GE(rf.file, 0) << "cannot make a file in /tmp";
    std::unique_ptr<IoQueue> q = rf.queue(8);
    ASSERT_NE(q, nullptr);
    const std::string& data = rf.data;
    IoRing ring(std::move(q));
    std::unique_ptr<IoQueue> ch = ring.channel(IoRing::kColdRead);
    std::unique_ptr<IoQueue> other = ring.channel(IoRing::kLog);
    constexpr std::size_t kBytes = 4 * 4096;
    char* block = static_cast<char*>(std::aligned_alloc(4096, kBytes));
    ASSERT_NE(block, nullptr);
    std::memset(block, 0, kBytes);
    const std::int32_t index = ch->register_buffer(block, kBytes);
    if (!uring) {
      EXPECT_EQ(index, -1);  // nothing to register with: reads go as before
    } else {
      ASSERT_EQ(index, 0) << "the ring refused to register 16 KiB";
      // The ring's blocks are one table for its channels: the next block, through any
      // channel, takes the next index, until the table is full (one block on kernels
      // before 5.19, whose rings take no table to fill later).
      std::int32_t next = other->register_buffer(block, 4096);
      if (next != -1) {
        EXPECT_EQ(next, 1);
        while (next != -1) {
          const std::int32_t more = ch->register_buffer(block + 4096, 4096);
          if (more != -1) {
            EXPECT_EQ(more, next + 1);
          }
          next = more;
        }
      }
      EXPECT_EQ(ch->register_buffer(block, kBytes), -1) << "a full table takes no more";
    }
    // Three reads into the block's pages in reverse order, one short at the end of the file.
    const std::uint64_t offsets[3] = {8192, 4096, 10000};
    for (std::uint64_t u = 0; u < 3; ++u) {
      IoRequest r;
      r.op = IoRequest::Op::kRead;
      r.file = rf.file;
      r.offset = offsets[u];
      r.out = block + (2 - u) * 4096;
      r.len = 4096;
      r.fixed_buffer = index;
      r.user = u;
      ASSERT_TRUE(ch->submit(r).is_ok());
    }
    ASSERT_TRUE(ch->flush().is_ok());
    std::map<std::uint64_t, std::int64_t> got;
    IoCompletion c[3];
    while (got.size() < 3) {
      const std::size_t n = ch->poll(c, 3, true);
      ASSERT_GT(n, 0u);
      for (std::size_t i = 0; i < n; ++i) got[c[i].user] = c[i].result;
    }
    EXPECT_EQ(got[0], 4096);
    EXPECT_EQ(got[1], 4096);
    EXPECT_EQ(got[2], static_cast<std::int64_t>(data.size() - 10000));
    EXPECT_EQ(std::string(block + 2 * 4096, 4096), data.substr(8192, 4096)) << uring;
    EXPECT_EQ(std::string(block + 4096, 4096), data.substr(4096, 4096)) << uring;
    EXPECT_EQ(std::string(block, data.size() - 10000), data.substr(10000)) << uring;
    // Let go, the ring takes a registration again.
    ch->unregister_buffers();
    if (uring) {
      EXPECT_EQ(ch->register_buffer(block, kBytes), 0);
      ch->unregister_buffers();
    }
    ch.reset();
    other.reset();
    std::free(block);
  }
}

}  // namespace
}  // namespace braid::storage
