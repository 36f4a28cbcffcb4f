// util::StallWatch: a wait whose progress stands still for the timeout is reported once per
// episode; progress ends the episode; a zero timeout reports nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "util/stall.h"

namespace braid::util {
namespace {

struct Sink {
  std::vector<StallReport> reports;
  StallMonitor::Sink fn() {
    return [this](const StallReport& r) { reports.push_back(r); };
  }
};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(StallWatch, ReportsOnceWhileProgressStandsStill) {
  Sink sink;
  StallMonitor m(20, sink.fn());
  StallWatch w(&m, "test wait");
  int details = 0;
  const auto detail = [&] {
    ++details;
    return std::string("the state");
  };
  w.turn(7, detail);
  EXPECT_TRUE(sink.reports.empty());
  for (int i = 0; i < 10; ++i) {
    sleep_ms(10);
    w.turn(7, detail);
  }
  ASSERT_EQ(sink.reports.size(), 1u);
  EXPECT_STREQ(sink.reports[0].wait, "test wait");
  EXPECT_GE(sink.reports[0].stalled_ms, 20u);
  EXPECT_EQ(sink.reports[0].detail, "the state");
  EXPECT_EQ(details, 1);  // the detail is built only for the report
  EXPECT_EQ(m.stalls(), 1u);
  EXPECT_TRUE(w.reported());
}

// Turns in a tight loop read the clock sparsely (a worker's round must not pay for one each
// time) and still report the stall soon after the timeout.
TEST(StallWatch, FastTurnsStillReportSoonAfterTheTimeout) {
  Sink sink;
  StallMonitor m(20, sink.fn());
  StallWatch w(&m, "fast wait");
  const auto detail = [] { return std::string(); };
  const auto start = std::chrono::steady_clock::now();
  while (sink.reports.empty() &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    w.turn(3, detail);
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(sink.reports.size(), 1u);
  EXPECT_GE(sink.reports[0].stalled_ms, 20u);
  EXPECT_LT(waited, std::chrono::milliseconds(500));
}

TEST(StallWatch, ProgressEndsTheEpisode) {
  Sink sink;
  StallMonitor m(20, sink.fn());
  StallWatch w(&m, "test wait");
  const auto detail = [] { return std::string(); };
  // Moving every turn: never reported, however long the wait.
  for (std::uint64_t i = 0; i < 8; ++i) {
    w.turn(i, detail);
    sleep_ms(10);
  }
  EXPECT_TRUE(sink.reports.empty());
  // Stuck, reported; moves, then stuck again: a second report.
  for (int i = 0; i < 5; ++i) {
    w.turn(100, detail);
    sleep_ms(10);
  }
  EXPECT_EQ(sink.reports.size(), 1u);
  for (int i = 0; i < 5; ++i) {
    w.turn(101, detail);
    sleep_ms(10);
  }
  EXPECT_EQ(sink.reports.size(), 2u);
  // reset(): the next turn starts a new wait.
  w.reset();
  w.turn(101, detail);
  EXPECT_FALSE(w.reported());
  EXPECT_EQ(m.stalls(), 2u);
}

TEST(StallWatch, ZeroTimeoutAndNoMonitorReportNothing) {
  Sink sink;
  StallMonitor off(0, sink.fn());
  StallWatch w(&off, "off");
  StallWatch none(nullptr, "none");
  for (int i = 0; i < 5; ++i) {
    w.turn(1, [] { return std::string(); });
    none.turn(1, [] { return std::string(); });
    sleep_ms(5);
  }
  EXPECT_TRUE(sink.reports.empty());
  EXPECT_EQ(off.stalls(), 0u);
}

TEST(StallMonitor, WithoutASinkWritesOneLineToStderr) {
  StallMonitor m(1, {});
  ::testing::internal::CaptureStderr();
  m.report("durable commit", 5'000'000'000, "waiting for durable clock >= 9");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "braid: stall: durable commit has not progressed for 5000 ms: waiting for durable "
            "clock >= 9\n");
  EXPECT_EQ(m.stalls(), 1u);
}

}  // namespace
}  // namespace braid::util
