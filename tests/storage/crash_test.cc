// Crash-state enumeration and fail-the-Nth-I/O loops on the simulated file system (after
// SQLite's crash and I/O-error tests and TigerBeetle's simulated storage). Every crash point
// and fault is derived from BRAID_CRASH_SEED (default 1), so a failure replays from its seed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "storage/durability_util.h"

namespace braid::test {
namespace {

using storage::SimFileSystem;

std::uint64_t seed() {
  const char* s = std::getenv("BRAID_CRASH_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : 1;
}

constexpr int kTxns = 200;

TEST(Crash, CleanRunRecoversEverything) {
  auto fs = std::make_shared<SimFileSystem>(seed());
  const Options o = wl_options();
  const WlRun r = wl_run(fs, kTxns, o);
  ASSERT_TRUE(r.opened);
  EXPECT_EQ(r.acked, kTxns);
  EXPECT_FALSE(r.halted);
  EXPECT_EQ(wl_verify(fs, kTxns, o, "clean"), kTxns);
  // Recovering again (after the recovery's own checkpoint) gives the same state.
  EXPECT_EQ(wl_verify(fs, kTxns, o, "clean, twice"), kTxns);
}

TEST(Crash, EveryCrashPointEveryDamage) {
  const Options o = wl_options();
  // The full run's operation count bounds the crash points.
  auto full = std::make_shared<SimFileSystem>(seed());
  ASSERT_EQ(wl_run(full, kTxns, o).acked, kTxns);
  const std::uint64_t ops = full->ops();
  std::uint64_t states = 0, failures = 0, checked_twice = 0;
  for (std::uint64_t k = 1; k <= ops; ++k) {
    auto fs = std::make_shared<SimFileSystem>(seed());
    fs->crash_after(k);
    const WlRun r = wl_run(fs, kTxns, o);
    for (int d = 0; d < SimFileSystem::kDamageKinds; ++d) {
      std::shared_ptr<SimFileSystem> c = fs->clone(seed() + k);
      c->power_loss(static_cast<SimFileSystem::Damage>(d), seed() * 1000003 + k * 7 + d);
      const std::string what = "crash after op " + std::to_string(k) + ", damage " +
                               std::to_string(d) + ", seed " + std::to_string(seed());
      const int m = wl_verify(c, r.acked, o, what);
      ++states;
      if (m < 0) {
        ++failures;
        continue;
      }
      if (k % 16 == 0) {  // idempotence: the recovered state survives another recovery
        EXPECT_EQ(wl_verify(c, m, o, what + ", recovered twice"), m);
        ++checked_twice;
      }
    }
  }
  std::printf(
      "crash-state enumeration: %llu crash points x %d damage variants = %llu crash "
      "states, %llu failures (%llu recovered twice)\n",
      static_cast<unsigned long long>(ops), SimFileSystem::kDamageKinds,
      static_cast<unsigned long long>(states), static_cast<unsigned long long>(failures),
      static_cast<unsigned long long>(checked_twice));
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(ops, 100u);  // the workload spans group commits, checkpoints and retirements
}

struct FaultCase {
  SimFileSystem::Fault fault;
  const char* name;
};

TEST(Crash, FailTheNthIo) {
  const Options o = wl_options();
  const FaultCase cases[] = {{SimFileSystem::Fault::kEio, "EIO"},
                             {SimFileSystem::Fault::kEnospc, "ENOSPC"},
                             {SimFileSystem::Fault::kShortWrite, "short write"},
                             {SimFileSystem::Fault::kSyncEio, "EIO on sync"}};
  const std::uint64_t nths[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
  int runs = 0, halts = 0;
  for (const FaultCase& fc : cases) {
    for (const bool forever : {false, true}) {
      for (std::uint64_t nth : nths) {
        auto fs = std::make_shared<SimFileSystem>(seed() + nth);
        fs->inject(fc.fault, nth, forever);
        const WlRun r = wl_run(fs, kTxns, o);
        const std::string what = std::string(fc.name) + (forever ? " forever" : " once") +
                                 " at I/O " + std::to_string(nth);
        ++runs;
        if (fc.fault == SimFileSystem::Fault::kShortWrite) {
          // Short writes are completed, not errors.
          EXPECT_TRUE(r.opened) << what;
          EXPECT_EQ(r.acked, kTxns) << what;
          EXPECT_FALSE(r.halted) << what << ": " << r.why;
        }
        if (r.halted) {
          ++halts;
          EXPECT_LT(r.acked, kTxns) << what;
        }
        // Reboot: only what was durable survives; recovery is the way back.
        fs->power_loss(SimFileSystem::Damage::kDropAll, nth);
        wl_verify(fs, r.acked, o, what);
      }
    }
  }
  std::printf(
      "fail-the-Nth-I/O: %d runs, %d halted the engine; every acknowledged commit recovered\n",
      runs, halts);
  EXPECT_GT(halts, 0);
}

TEST(Crash, OpenWithAFailingDiskIsAClearError) {
  const Options o = wl_options();
  auto fs = std::make_shared<SimFileSystem>(seed());
  ASSERT_EQ(wl_run(fs, 50, o).acked, 50);
  // Recovery must write its checkpoint: a disk that fails every write refuses the open.
  fs->inject(SimFileSystem::Fault::kEio, 1, true);
  auto db = open_sim(o, fs);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kIOError);
  fs->power_loss(SimFileSystem::Damage::kDropAll, 1);
  EXPECT_EQ(wl_verify(fs, 50, o, "after a failed open"), 50);
}

TEST(Crash, CheckpointPlusReplayEqualsFullReplay) {
  auto with = std::make_shared<SimFileSystem>(seed());
  auto without = std::make_shared<SimFileSystem>(seed());
  const Options oc = wl_options(16 << 10);
  const Options on = wl_options(0);
  ASSERT_EQ(wl_run(with, kTxns, oc).acked, kTxns);
  ASSERT_EQ(wl_run(without, kTxns, on).acked, kTxns);
  std::map<std::string, std::string> a, b;
  {
    auto db = open_sim(oc, with);
    ASSERT_TRUE(db.is_ok());
    a = wl_read(**db);
    EXPECT_GT((*db)->durability_stats().recovered_checkpoint_records, 0u);
  }
  {
    auto db = open_sim(on, without);
    ASSERT_TRUE(db.is_ok());
    b = wl_read(**db);
    EXPECT_EQ((*db)->durability_stats().recovered_checkpoint_records, 0u);
    EXPECT_GE((*db)->durability_stats().recovered_transactions, static_cast<std::uint64_t>(kTxns));
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, wl_model(kTxns));
}

TEST(Crash, TornNewestCheckpointFallsBackToThePreviousOne) {
  const Options o = wl_options(0);
  auto fs = std::make_shared<SimFileSystem>(seed());
  ASSERT_EQ(wl_run(fs, 60, o).acked, 60);  // checkpoint #1 (slot 1), generation 1
  ASSERT_EQ(wl_run(fs, 30, o).acked, 30);  // the open writes #2 (slot 0), generation 2
  // A crash while a runtime checkpoint #3 was being written into slot 1 leaves a torn image
  // there, with every generation-2 segment still in place (retired only once #3 is durable).
  std::string good;
  ASSERT_TRUE(fs->peek("/db/CHECKPOINT-0", &good));
  fs->poke("/db/CHECKPOINT-1", 0, good.substr(0, good.size() / 2), true);
  auto db = open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  EXPECT_EQ((*db)->durability_stats().recovery_checkpoint_fallbacks, 1u);
  const auto state = wl_read(**db);
  EXPECT_EQ(state.at("last"), "29");  // wl_run numbers each run from 0
}

TEST(Crash, LostNewestCheckpointOfAnOpenIsCorruption) {
  const Options o = wl_options(0);
  auto fs = std::make_shared<SimFileSystem>(seed());
  ASSERT_EQ(wl_run(fs, 60, o).acked, 60);
  ASSERT_EQ(wl_run(fs, 30, o).acked, 30);
  // Slot 0 holds #2, which the second open wrote before it deleted generation 1's logs: the
  // older slot cannot be continued, and the catalog knows generation 2 was reached.
  std::string good;
  ASSERT_TRUE(fs->peek("/db/CHECKPOINT-0", &good));
  fs->poke("/db/CHECKPOINT-0", good.size() / 2, "\x5a", false);
  auto db = open_sim(o, fs);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kCorruption);
  EXPECT_NE(db.status().message().find("CHECKPOINT-0"), std::string::npos)
      << db.status().to_string();
}

}  // namespace
}  // namespace braid::test
