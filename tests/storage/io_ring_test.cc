// A worker's I/O ring: two channels over one queue (the simulated disk's, seeded latency and
// completion order), each getting back exactly its own completions with its own tags.
#include <gtest/gtest.h>

#include <map>
#include <set>

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

}  // namespace
}  // namespace braid::storage
