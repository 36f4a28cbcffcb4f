// Options::progress: the phases of an open and of Database::checkpoint() are reported on the
// calling thread, each from 0 to its end with done == total, and their totals are the work
// the phase did (the recovery report's figures).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "storage/durability_util.h"

namespace braid::test {
namespace {

struct Heard {
  std::string phase;
  std::string unit;
  std::uint64_t done;
  std::uint64_t total;
  std::thread::id thread;
};

struct Recorder {
  std::vector<Heard> heard;
  std::function<void(const ProgressReport&)> sink() {
    return [this](const ProgressReport& r) {
      heard.push_back({r.phase, r.unit, r.done, r.total, std::this_thread::get_id()});
    };
  }
  // Each phase, in order of its first report.
  std::vector<std::string> phases() const {
    std::vector<std::string> p;
    for (const Heard& h : heard) {
      if (p.empty() || p.back() != h.phase) p.push_back(h.phase);
    }
    return p;
  }
  // The phase's reports (its `n`-th run): starts at 0, never goes back, ends at the total.
  void expect_whole(const std::string& phase, std::uint64_t total, int n = 0) const {
    std::vector<Heard> run;
    int seen = -1;
    for (std::size_t i = 0; i < heard.size(); ++i) {
      if (heard[i].phase != phase) continue;
      if (i == 0 || heard[i - 1].phase != phase) ++seen;
      if (seen == n) run.push_back(heard[i]);
    }
    ASSERT_GE(run.size(), 2u) << phase;
    EXPECT_EQ(run.front().done, 0u) << phase;
    for (std::size_t i = 1; i < run.size(); ++i) {
      EXPECT_GE(run[i].done, run[i - 1].done) << phase;
      EXPECT_LE(run[i].done, run[i].total) << phase;
    }
    EXPECT_EQ(run.back().done, run.back().total) << phase;
    EXPECT_EQ(run.back().total, total) << phase;
    for (const Heard& h : run) EXPECT_EQ(h.thread, std::this_thread::get_id()) << phase;
  }
};

Task<Status> put_one(Tx& tx, Table* t, int i) {
  co_return co_await tx.put(*t, "key" + std::to_string(i), std::string(200, 'v'));
}

TEST(Progress, OpenAndCheckpointReportTheirPhasesOnTheCallingThread) {
  auto fs = std::make_shared<storage::SimFileSystem>(5);
  Options o = wl_options(0);  // no runtime checkpoints: the logs keep what follows the first
  {
    Recorder first;
    o.progress = first.sink();
    auto db = open_sim(o, fs);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    // A new database: nothing to recover, an empty sealing checkpoint.
    EXPECT_EQ(first.phases(), std::vector<std::string>{"checkpoint"});
    first.expect_whole("checkpoint", 0);
    Table* t = *(*db)->create_table("t");
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE((*db)->execute([t, i](Tx& tx) { return put_one(tx, t, i); }).is_ok());
    }
    first.heard.clear();
    ASSERT_TRUE((*db)->checkpoint().is_ok());
    EXPECT_EQ(first.phases(), std::vector<std::string>{"checkpoint"});
    first.expect_whole("checkpoint", 300);  // the table's keys
    for (int i = 300; i < 500; ++i) {
      ASSERT_TRUE((*db)->execute([t, i](Tx& tx) { return put_one(tx, t, i); }).is_ok());
    }
    o.progress = nullptr;  // the recorder goes out of scope before the database
  }
  Recorder again;
  o.progress = again.sink();
  auto db = open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  const DurabilityStats d = (*db)->durability_stats();
  ASSERT_EQ(d.recovered_checkpoint_records, 300u);
  ASSERT_EQ(d.recovered_transactions, 200u);
  EXPECT_EQ(again.phases(),
            (std::vector<std::string>{"recovery: checkpoint", "recovery: log", "checkpoint"}));
  again.expect_whole("recovery: checkpoint", 300);
  again.expect_whole("recovery: log", d.recovery_log_bytes);
  again.expect_whole("checkpoint", 500);
  for (const Heard& h : again.heard) {
    EXPECT_EQ(h.unit, h.phase == "recovery: log" ? "bytes"
                      : h.phase == "checkpoint"  ? "keys"
                                                 : "records");
  }
  EXPECT_GT(d.recovery_log_bytes, 200u * 200u);
}

}  // namespace
}  // namespace braid::test
