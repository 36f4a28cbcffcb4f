// Helpers for tests of coroutine transactions: the execution variants every test runs in, and a
// generator that runs a fixed list of transaction bodies.
#pragma once

#include <braid/braid.h>
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace braid::testing {

struct ExecCase {
  ExecMode mode;
  SchedulerPolicy scheduler;
  bool force_suspend = false;
  bool shuffle = false;
  bool flat_storage = false;  // StoragePath::kFlattened
  // Under SchedulerPolicy::kTeam: its admission, and teams small enough (2, passed over at
  // most one round) that rounds hold transactions back whenever more than two are open.
  SchedulerPolicy team_admission = SchedulerPolicy::kPipeline;
  bool small_teams = false;
};

// Test-name spelling of the public names: "Interleaved", "Pipeline", "DualQueue".
inline std::string title(std::string_view name) {
  std::string t;
  bool upper = true;
  for (char c : name) {
    if (c == '-') {
      upper = true;
      continue;
    }
    t += upper ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return t;
}
inline std::string mode_name(ExecMode m) { return title(to_string(m)); }

inline std::string case_name(const ::testing::TestParamInfo<ExecCase>& info) {
  const ExecCase& c = info.param;
  std::string team;
  if (c.scheduler == SchedulerPolicy::kTeam) {
    team = title(to_string(c.team_admission)) + (c.small_teams ? "SmallTeams" : "");
  }
  return mode_name(c.mode) + title(to_string(c.scheduler)) + team +
         (c.force_suspend ? "Forced" : "") + (c.shuffle ? "Shuffled" : "") +
         (c.flat_storage ? "FlatStorage" : "");
}

// Every mode under batch and pipeline; the storage-aware policies (storage-batch, dual-queue)
// in the modes that interleave (the sequential ones open one transaction at a time, so every
// policy is the same there); and the debug switches on a sequential and on interleaved modes.
inline std::vector<ExecCase> all_cases() {
  std::vector<ExecCase> cases;
  for (ExecMode m : {ExecMode::kSequential, ExecMode::kPrefetch, ExecMode::kNested,
                     ExecMode::kInterleaved, ExecMode::kAuto}) {
    for (SchedulerPolicy p : {SchedulerPolicy::kBatch, SchedulerPolicy::kPipeline,
                              SchedulerPolicy::kStorageBatch, SchedulerPolicy::kDualQueue}) {
      const bool interleaves = m != ExecMode::kSequential && m != ExecMode::kPrefetch;
      const bool storage_aware =
          p == SchedulerPolicy::kStorageBatch || p == SchedulerPolicy::kDualQueue;
      if (storage_aware && !interleaves) continue;
      cases.push_back({m, p, false, false});
    }
  }
  cases.push_back({ExecMode::kSequential, SchedulerPolicy::kBatch, true, true});
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kPipeline, true, true});
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kDualQueue, true, true});
  cases.push_back({ExecMode::kNested, SchedulerPolicy::kBatch, false, true});
  // The storage path inlined into the operation's coroutine (MosaicDB Fig. 11's "flattened").
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kBatch, false, false, true});
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kDualQueue, true, true, true});
  // STEPS teams over the other policies' admission (in the modes that suspend).
  for (ExecMode m : {ExecMode::kNested, ExecMode::kInterleaved, ExecMode::kAuto}) {
    cases.push_back({m, SchedulerPolicy::kTeam});
  }
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kTeam, false, false, false,
                   SchedulerPolicy::kBatch, true});
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kTeam, false, false, false,
                   SchedulerPolicy::kDualQueue, true});
  cases.push_back({ExecMode::kInterleaved, SchedulerPolicy::kTeam, true, true, false,
                   SchedulerPolicy::kDualQueue});
  // Whole teams over batch admission: the rounds where nothing but the sites moved, which
  // replay the last order (sched/team.cc), under forced suspension and shuffled resumes.
  cases.push_back(
      {ExecMode::kInterleaved, SchedulerPolicy::kTeam, true, true, false, SchedulerPolicy::kBatch});
  return cases;
}

// DatabaseStats::records is exact only while no reclamation runs, and workers that wait for
// the next run reclaim what the last one queued (removals' OIDs, demoted records' OIDs): a
// count read meanwhile may be one off. This reads it until it is `want`, for at most ten
// seconds, and returns the last count read, so a count that stays wrong still fails.
inline std::uint64_t settled_records(Database& db, std::uint64_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::uint64_t n = db.stats().records;
  while (n != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = db.stats().records;
  }
  return n;
}

inline ExecOptions exec_of(const ExecCase& c, std::uint32_t batch, std::uint64_t seed = 1) {
  ExecOptions e;
  e.mode = c.mode;
  e.scheduler = c.scheduler;
  e.batch = batch;
  e.force_suspend = c.force_suspend;
  e.shuffle_resume = c.shuffle;
  e.storage_path = c.flat_storage ? StoragePath::kFlattened : StoragePath::kNested;
  e.team_admission = c.team_admission;
  if (c.small_teams) {
    e.team_size = 2;
    e.team_wait = 1;
  }
  e.seed = seed;
  return e;
}

// Runs the given bodies as transactions (admitted in order) and records their final Status.
class ListGenerator : public TxnGenerator {
 public:
  using Body = std::function<Task<Status>(Tx&)>;
  explicit ListGenerator(std::vector<Body> bodies) : bodies_(std::move(bodies)) {}
  bool next(Tx& tx, Task<Status>* out) override {
    if (next_ == bodies_.size()) return false;
    *out = bodies_[next_++](tx);
    return true;
  }
  void finished(const Status& s, std::uint64_t) override { outcomes.push_back(s.code()); }
  std::vector<Code> outcomes;

 private:
  std::vector<Body> bodies_;
  std::size_t next_ = 0;
};

}  // namespace braid::testing
