// kAuto's controller against a simulated workload: time is driven by the test, each candidate
// batch size has a known rate, so every decision is deterministic.
#include "sched/auto_tuner.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace braid::sched {
namespace {

using Clock = AutoTuner::Clock;

class Sim {
 public:
  explicit Sim(std::uint32_t max_batch) { tuner.reset(max_batch, now); }

  // One window at the current candidate, its operations at rate(batch) per nanosecond.
  void window(const std::function<double(std::uint32_t)>& rate) {
    tuner.on_ops(static_cast<std::uint32_t>(rate(tuner.batch()) * AutoTuner::kWindowNs));
    now += std::chrono::nanoseconds(AutoTuner::kWindowNs);
    tuner.check_window(now);
  }
  // Windows until the tuner starts an exploration (the length of the exploit stretch).
  std::uint32_t exploit(const std::function<double(std::uint32_t)>& rate) {
    EXPECT_FALSE(tuner.exploring());
    std::uint32_t n = 0;
    while (!tuner.exploring()) {
      window(rate);
      ++n;
      if (n > 10 * AutoTuner::kMaxExploit) {
        ADD_FAILURE() << "exploit stretch never ends";
        break;
      }
    }
    return n;
  }
  // The windows of one exploration, each measured at rate().
  void explore(const std::function<double(std::uint32_t)>& rate, std::size_t candidates) {
    EXPECT_TRUE(tuner.exploring());
    for (std::size_t i = 0; i < candidates; ++i) window(rate);
  }

  AutoTuner tuner;
  Clock::time_point now{std::chrono::seconds(1)};
};

std::function<double(std::uint32_t)> rates(std::map<std::uint32_t, double> by_batch) {
  return [by_batch](std::uint32_t b) { return by_batch.at(b); };
}

const auto kInterleavingPays = rates({{1, 1.0}, {4, 2.0}, {8, 2.5}, {16, 2.2}});

// After its first exploration of kInterleavingPays: batch 8 is the standing winner.
Sim settled_at_8() {
  Sim sim(64);
  sim.explore(kInterleavingPays, 4);
  EXPECT_EQ(sim.tuner.choice(), 8u);
  return sim;
}

TEST(AutoTuner, ExploresEveryCandidateThenKeepsTheFastest) {
  Sim sim(64);
  EXPECT_EQ(sim.tuner.batch(), 1u);  // starts measuring sequential
  std::vector<std::uint32_t> measured;
  for (int i = 0; i < 4; ++i) {
    measured.push_back(sim.tuner.batch());
    sim.window(kInterleavingPays);
  }
  EXPECT_EQ(measured, (std::vector<std::uint32_t>{1, 4, 8, 16}));
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.batch(), 8u);
  EXPECT_EQ(sim.tuner.choice(), 8u);
  EXPECT_EQ(sim.tuner.decisions(), 1u);
}

TEST(AutoTuner, AWindowEndsOnlyAfterItsLength) {
  Sim sim(64);
  sim.tuner.on_ops(1000);
  sim.now += std::chrono::nanoseconds(AutoTuner::kWindowNs - 1);
  sim.tuner.check_window(sim.now);
  EXPECT_EQ(sim.tuner.batch(), 1u);  // still the first candidate's window
  sim.now += std::chrono::nanoseconds(1);
  sim.tuner.check_window(sim.now);
  EXPECT_EQ(sim.tuner.batch(), 4u);
}

TEST(AutoTuner, CandidatesStopAtTheSlotCount) {
  Sim sim(4);
  sim.explore(kInterleavingPays, 2);
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.choice(), 4u);
}

TEST(AutoTuner, AStandingWinnerEarnsDoublingStretchesUpToTheCap) {
  Sim sim(64);
  sim.explore(kInterleavingPays, 4);
  std::uint32_t expect = AutoTuner::kMinExploit;
  for (int round = 0; round < 8; ++round) {
    EXPECT_EQ(sim.exploit(kInterleavingPays), expect) << "round " << round;
    sim.explore(kInterleavingPays, 4);
    EXPECT_EQ(sim.tuner.choice(), 8u);
    expect = std::min(expect * 2, AutoTuner::kMaxExploit);
  }
  EXPECT_EQ(expect, AutoTuner::kMaxExploit);
}

TEST(AutoTuner, ANearTieKeepsTheStandingWinner) {
  Sim sim = settled_at_8();
  // 16 now leads by 2 %, inside the tie band: no change, no confirmation, and the stretch
  // still doubles.
  const auto near_tie = rates({{1, 1.0}, {4, 2.0}, {8, 2.5}, {16, 2.55}});
  EXPECT_EQ(sim.exploit(near_tie), AutoTuner::kMinExploit);
  sim.explore(near_tie, 4);
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.choice(), 8u);
  EXPECT_EQ(sim.exploit(near_tie), 2 * AutoTuner::kMinExploit);
}

TEST(AutoTuner, OneNoisyWindowDoesNotMoveTheWinner) {
  Sim sim = settled_at_8();
  EXPECT_EQ(sim.exploit(kInterleavingPays), AutoTuner::kMinExploit);
  // One exploration in which batch 4 reads 8 % above 8: the tuner explores again at once ...
  sim.explore(rates({{1, 1.0}, {4, 2.7}, {8, 2.5}, {16, 2.2}}), 4);
  EXPECT_TRUE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.decisions(), 1u);
  // ... and the sum of both says 8 still leads: it stays, and its stretch keeps growing.
  sim.explore(kInterleavingPays, 4);
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.choice(), 8u);
  EXPECT_EQ(sim.tuner.decisions(), 2u);
  EXPECT_EQ(sim.exploit(kInterleavingPays), 2 * AutoTuner::kMinExploit);
}

TEST(AutoTuner, ARealChangeSwitchesAfterOneConfirmation) {
  Sim sim = settled_at_8();
  for (int i = 0; i < 3; ++i) {
    sim.exploit(kInterleavingPays);
    sim.explore(kInterleavingPays, 4);
  }
  // The data now fits in cache: sequential is fastest (the 10^4-record YCSB case).
  const auto in_cache = rates({{1, 3.0}, {4, 2.6}, {8, 2.5}, {16, 2.4}});
  sim.exploit(in_cache);
  sim.explore(in_cache, 4);
  EXPECT_TRUE(sim.tuner.exploring());  // confirming
  sim.explore(in_cache, 4);
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.choice(), 1u);
  EXPECT_EQ(sim.tuner.batch(), 1u);
  // A new winner starts over with the shortest stretch.
  EXPECT_EQ(sim.exploit(in_cache), AutoTuner::kMinExploit);
}

TEST(AutoTuner, ConflictsTakeTheirOperationsBack) {
  Sim sim(64);
  // Batch 16 starts the most operations but they all end in Conflict.
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t b = sim.tuner.batch();
    const std::uint32_t ops = b == 16 ? 9000 : 1000 * b;
    sim.tuner.on_ops(ops);
    if (b == 16) sim.tuner.on_finished(false, ops);
    sim.now += std::chrono::nanoseconds(AutoTuner::kWindowNs);
    sim.tuner.check_window(sim.now);
  }
  EXPECT_EQ(sim.tuner.choice(), 8u);
}

TEST(AutoTuner, ResumeContinuesWithTheStandingWinnerForAWholeStretch) {
  Sim sim = settled_at_8();
  sim.exploit(kInterleavingPays);
  sim.explore(kInterleavingPays, 4);  // 8 again: the stretch doubles
  for (int i = 0; i < 5; ++i) sim.window(kInterleavingPays);
  const std::uint64_t decisions = sim.tuner.decisions();
  // A pause (another mode ran): its time and operations count for nothing.
  sim.now += std::chrono::seconds(10);
  sim.tuner.on_ops(12345);
  sim.tuner.resume(sim.now);
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.batch(), 8u);
  EXPECT_EQ(sim.exploit(kInterleavingPays), 2 * AutoTuner::kMinExploit);
  EXPECT_EQ(sim.tuner.decisions(), decisions);
  sim.explore(kInterleavingPays, 4);
  EXPECT_EQ(sim.tuner.choice(), 8u);
}

TEST(AutoTuner, ResumeBeforeAnyDecisionExploresFromTheStart) {
  Sim sim(64);
  sim.window(kInterleavingPays);  // sequential measured, then a pause
  sim.tuner.on_ops(1u << 30);     // counted during the pause: must not make batch 4 win
  sim.now += std::chrono::seconds(10);
  sim.tuner.resume(sim.now);
  EXPECT_TRUE(sim.tuner.exploring());
  std::vector<std::uint32_t> measured;
  for (int i = 0; i < 4; ++i) {
    measured.push_back(sim.tuner.batch());
    sim.window(kInterleavingPays);
  }
  EXPECT_EQ(measured, (std::vector<std::uint32_t>{1, 4, 8, 16}));
  EXPECT_EQ(sim.tuner.choice(), 8u);
}

TEST(AutoTuner, ResetForgetsTheWinner) {
  Sim sim = settled_at_8();
  sim.tuner.reset(64, sim.now);
  EXPECT_TRUE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.batch(), 1u);
  // No standing winner after a reset: the first exploration decides without confirmation.
  sim.explore(rates({{1, 3.0}, {4, 2.6}, {8, 2.5}, {16, 2.4}}), 4);
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.choice(), 1u);
}

}  // namespace
}  // namespace braid::sched

namespace braid::sched {
namespace {

// A window another thread preempted: its candidate is rated by the worker's own time, so a
// preemption on the best candidate's window does not hand the decision to a worse one (with
// wall time it did: interleaving at 8, preempted for 3/4 of its window, rated 2.5 / 4 < 1).
TEST(AutoTuner, PreemptedTimeNeitherEndsAWindowNorLowersItsRate) {
  Sim sim(64);
  std::int64_t waited = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t b = sim.tuner.batch();
    sim.tuner.on_ops(static_cast<std::uint32_t>(kInterleavingPays(b) * AutoTuner::kWindowNs));
    if (b == 8) {
      // Preempted for three window lengths, then runs its window's work.
      sim.now += std::chrono::nanoseconds(3 * AutoTuner::kWindowNs);
      waited += 3 * AutoTuner::kWindowNs;
      sim.tuner.check_window(sim.now, waited);
      EXPECT_EQ(sim.tuner.batch(), 8u) << "a preempted stretch ended the window";
    }
    sim.now += std::chrono::nanoseconds(AutoTuner::kWindowNs);
    sim.tuner.check_window(sim.now, waited);
  }
  EXPECT_FALSE(sim.tuner.exploring());
  EXPECT_EQ(sim.tuner.choice(), 8u);
}

}  // namespace
}  // namespace braid::sched
