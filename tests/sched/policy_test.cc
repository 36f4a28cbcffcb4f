// The scheduling policies' contracts, without a worker: admission per policy, the registry's
// names, and the slot state machine's edges.
#include <gtest/gtest.h>

#include "sched/policy.h"
#include "sched/site.h"
#include "sched/slot_state.h"
#include "util/random.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace braid::sched {
namespace {

constexpr std::uint32_t kSlots = 64;  // the worker's slot count each policy is made for

TEST(Policy, BatchAdmitsOnlyIntoAnEmptyWorker) {
  const auto p = make_batch(ExecOptions{}, kSlots);
  EXPECT_EQ(p->kind(), SchedulerPolicy::kBatch);
  EXPECT_EQ(p->admit_target(0, 8), 8u);
  for (std::uint32_t live = 1; live <= 8; ++live) EXPECT_LE(p->admit_target(live, 8), live);
}

TEST(Policy, PipelineRefillsEveryFreeSlot) {
  const auto p = make_pipeline(ExecOptions{}, kSlots);
  EXPECT_EQ(p->kind(), SchedulerPolicy::kPipeline);
  for (std::uint32_t live = 0; live <= 8; ++live) EXPECT_EQ(p->admit_target(live, 8), 8u);
  EXPECT_EQ(p->admit_target(0, 1), 1u);  // the sequential modes
}

TEST(Policy, OnlyBatchResumesASlotParkedOnARead) {
  EXPECT_TRUE(make_batch(ExecOptions{}, kSlots)->resumes_parked_io());
  EXPECT_FALSE(make_storage_batch(ExecOptions{}, kSlots)->resumes_parked_io());
  EXPECT_FALSE(make_pipeline(ExecOptions{}, kSlots)->resumes_parked_io());
  EXPECT_FALSE(make_dual_queue(ExecOptions{}, kSlots)->resumes_parked_io());
  const auto sb = make_storage_batch(ExecOptions{}, kSlots);
  EXPECT_EQ(sb->kind(), SchedulerPolicy::kStorageBatch);
  EXPECT_EQ(sb->admit_target(0, 8), 8u);
  for (std::uint32_t live = 1; live <= 8; ++live) EXPECT_LE(sb->admit_target(live, 8), live);
}

// A worker's view for the dual-queue tests: slot states the test moves as a worker would, and
// the order the policy asks for.
struct DualQueueRig {
  explicit DualQueueRig(ExecOptions e = {}) : p(make_dual_queue(e, kSlots)) {}
  void launch(std::uint32_t slot) {
    states[slot] = SlotState::kRunnable;
    p->on_launch(slot);
  }
  void set(std::uint32_t slot, SlotState s) {
    const SlotState from = states[slot];
    states[slot] = s;
    if (waiting(from) || waiting(s)) p->on_wait(slot, s);
  }
  void finish(std::uint32_t slot) {
    states[slot] = SlotState::kFree;
    p->on_finish(slot);
  }
  // Slot 0 parked on I/O (so in the cold queue), then slots 1..8 filling the hot queue.
  void one_cold_then_hot_full() {
    (void)p->admit_target(0, 8);
    launch(0);
    set(0, SlotState::kParkedIo);
    for (std::uint32_t i = 1; i <= 8; ++i) launch(i);
  }
  std::vector<std::uint32_t> order() {
    std::uint32_t buf[kSlots];
    const std::uint32_t n = p->order_round(buf, states, sites);
    return {buf, buf + (n == Policy::kSlotOrder ? 0 : n)};
  }
  std::unique_ptr<Policy> p;
  std::vector<SlotState> states = std::vector<SlotState>(kSlots, SlotState::kFree);
  std::vector<std::uint32_t> sites = std::vector<std::uint32_t>(kSlots, kSiteStart);
};

bool has(const std::vector<std::uint32_t>& v, std::uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(DualQueue, SlotsAreTheHotQueueAndTheColdQueue) {
  const auto p = make_dual_queue(ExecOptions{}, kSlots);  // batch 8, cold_slots 16
  EXPECT_EQ(p->kind(), SchedulerPolicy::kDualQueue);
  EXPECT_EQ(p->slots(8), 24u);
  EXPECT_EQ(p->slots(16), 48u);  // kAuto's larger hot queue keeps the 8:16 ratio
  EXPECT_EQ(p->slots(1), 1u);    // sequential modes: synchronous reads, no cold queue
  ExecOptions e;
  e.batch = 4;
  e.cold_slots = 32;
  EXPECT_EQ(make_dual_queue(e, kSlots)->slots(4), 36u);
}

TEST(DualQueue, AReadMovesATransactionToTheColdQueueAndItsHotPlaceRefills) {
  DualQueueRig r;
  EXPECT_EQ(r.p->admit_target(0, 8), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) r.launch(i);
  EXPECT_LE(r.p->admit_target(8, 8), 8u);  // hot queue full: nothing new
  r.set(3, SlotState::kParkedIo);
  EXPECT_EQ(r.p->admit_target(8, 8), 9u);  // slot 3 left the hot queue: one more may start
  r.launch(8);
  std::vector<std::uint32_t> o = r.order();
  EXPECT_FALSE(has(o, 3));  // the cold queue is not looked at while hot work runs
  EXPECT_TRUE(has(o, 8));
  // The read came back: still not resumed until the check is due.
  r.set(3, SlotState::kRunnable);
  EXPECT_FALSE(has(r.order(), 3));
  r.launch(9);  // keeps a hot transaction runnable throughout
  for (std::uint32_t i : {0u, 1u, 2u, 4u, 5u, 6u, 7u}) r.finish(i);
  EXPECT_FALSE(has(r.order(), 3));  // 7 hot completions: not yet
  r.finish(8);
  o = r.order();  // the 8th (cold_check_every): the cold queue's ready members run
  EXPECT_TRUE(has(o, 3));
  EXPECT_FALSE(has(r.order(), 3)) << "looked at again before the next interval";
}

TEST(DualQueue, TheColdQueueIsLookedAtWhenNoHotTransactionCanRun) {
  DualQueueRig r;
  (void)r.p->admit_target(0, 8);
  r.launch(0);
  r.launch(1);
  r.set(0, SlotState::kParkedIo);
  r.set(0, SlotState::kRunnable);
  EXPECT_FALSE(has(r.order(), 0));  // slot 1 can run
  r.set(1, SlotState::kParkedIo);   // now nothing hot can
  EXPECT_TRUE(has(r.order(), 0));
}

// Hot transactions that run on without finishing (each waiting for a free cold load, which
// only the cold members could give back) must not keep a finished read's transaction out for
// good: the cold queue is looked at within 64 rounds whatever the hot queue does.
TEST(DualQueue, TheColdQueueIsLookedAtWithinABoundedNumberOfRounds) {
  DualQueueRig r;
  r.one_cold_then_hot_full();
  r.set(0, SlotState::kRunnable);  // its read is back
  int rounds = 0;
  while (!has(r.order(), 0)) {
    ASSERT_LT(++rounds, 64) << "the cold member waited past the bound";
    for (std::uint32_t i = 1; i <= 8; ++i) r.states[i] = SlotState::kParkedMemory;  // no finish
  }
  EXPECT_GT(rounds, 8) << "looked at before any reason to";
}

TEST(DualQueue, AColdTransactionTurnedMemoryBoundIsStagedAheadOfNewOnes) {
  DualQueueRig r;
  r.one_cold_then_hot_full();
  EXPECT_LE(r.p->admit_target(9, 8), 9u);  // hot full (8), cold 1
  r.set(0, SlotState::kRunnable);
  for (std::uint32_t i = 1; i <= 8; ++i) r.set(i, SlotState::kParkedIo);  // -> cold too
  ASSERT_TRUE(has(r.order(), 0));  // no hot work: the cold queue is checked
  // Resumed, slot 0 suspended at a memory access: memory-bound again, but the hot queue
  // has room (every hot transaction moved to cold), so it goes straight back to hot.
  r.set(0, SlotState::kParkedMemory);
  EXPECT_TRUE(has(r.order(), 0));
  // Fill the hot queue; then a cold member that turns memory-bound must wait in staging, and
  // while it waits no new transaction is admitted.
  for (std::uint32_t i = 9; i < 16; ++i) r.launch(i);
  EXPECT_LE(r.p->admit_target(16, 8), 16u);  // hot full
  r.set(1, SlotState::kRunnable);
  r.set(1, SlotState::kParkedMemory);  // as if resumed by a cold check
  std::vector<std::uint32_t> o = r.order();
  EXPECT_FALSE(has(o, 1)) << "staged, not run";
  r.finish(9);
  EXPECT_LE(r.p->admit_target(15, 8), 15u) << "the staged transaction takes the free hot place";
  EXPECT_TRUE(has(r.order(), 1));
}

TEST(DualQueue, AFullColdQueueLeavesTheTransactionParkedInTheHotQueueUntilThereIsRoom) {
  ExecOptions e;
  e.batch = 4;
  e.cold_slots = 1;
  DualQueueRig r(e);
  (void)r.p->admit_target(0, 4);
  for (std::uint32_t i = 0; i < 4; ++i) r.launch(i);
  r.set(0, SlotState::kParkedIo);          // -> cold (full now)
  EXPECT_EQ(r.p->admit_target(4, 4), 5u);  // its hot place refills
  r.launch(4);
  r.set(1, SlotState::kParkedIo);          // cold full: stays hot
  EXPECT_LE(r.p->admit_target(5, 4), 5u);  // ... and keeps its hot place
  r.set(0, SlotState::kRunnable);
  r.finish(0);      // the cold member ended: room
  (void)r.order();  // slot 1 moves over
  EXPECT_EQ(r.p->admit_target(4, 4), 5u);
}

// Team: sites from sched/site.h; `get` is kind 0, `insert` kind 1.
int kTableA, kTableB;  // only their addresses matter
std::uint32_t at(std::uint32_t kind, const void* table, std::uint32_t step) {
  return op_site(kind, table) + step;
}

TEST(Team, ResumesEachTeamBackToBack) {
  ExecOptions e;  // pipeline admission, team_size 8
  DualQueueRig r(e);
  r.p = make_team(e, kSlots);
  EXPECT_EQ(r.p->kind(), SchedulerPolicy::kTeam);
  EXPECT_EQ(r.p->admit_target(0, 8), 8u);  // pipeline's admission
  EXPECT_EQ(r.p->admit_target(5, 8), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) r.launch(i);
  // Slots 0, 3, 6 wait at the get's second suspension on table A; 1, 4 at its first on B;
  // 2, 5, 7 at an insert's first.
  for (std::uint32_t i : {0u, 3u, 6u}) r.sites[i] = at(0, &kTableA, 2);
  for (std::uint32_t i : {1u, 4u}) r.sites[i] = at(0, &kTableB, 1);
  for (std::uint32_t i : {2u, 5u, 7u}) r.sites[i] = at(1, &kTableA, 1);
  for (std::uint32_t i = 0; i < 8; ++i) r.states[i] = SlotState::kParkedMemory;
  const std::vector<std::uint32_t> o = r.order();
  // Every one runs (8 open, team_size 8), in slot order (none ran before), each pulling in the
  // others at its site.
  EXPECT_EQ(o, (std::vector<std::uint32_t>{0, 3, 6, 1, 4, 2, 5, 7}));
  // Next round: the insert team moved on to a get's step 1 on B, where 1 and 4 still wait: one
  // team of five now, at 1's place (the order they last ran in is kept, so that each has the
  // others' work between its prefetch and its resume).
  for (std::uint32_t i : {2u, 5u, 7u}) r.sites[i] = at(0, &kTableB, 1);
  r.sites[1] = r.sites[4] = at(0, &kTableB, 1);
  for (std::uint32_t i : {0u, 3u, 6u}) r.sites[i] = at(0, &kTableA, 3);
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{0, 3, 6, 1, 4, 2, 5, 7}));
  // 1 and 4 split off to an insert: two teams, each where its first member ran.
  r.sites[1] = r.sites[4] = at(1, &kTableA, 0);
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{0, 3, 6, 1, 4, 2, 5, 7}));
  // 3 reaches the insert too: the team runs at 3's place, which came before 1's.
  r.sites[3] = at(1, &kTableA, 0);
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{0, 6, 3, 1, 4, 2, 5, 7}));
}

TEST(Team, TeamsAreCutAtTeamSize) {
  ExecOptions e;
  e.team_size = 2;
  e.team_wait = 0;  // every candidate is overdue: all run, so only the cut shows
  DualQueueRig r(e);
  r.p = make_team(e, kSlots);
  (void)r.p->admit_target(0, 8);
  for (std::uint32_t i = 0; i < 4; ++i) {
    r.launch(i);
    r.states[i] = SlotState::kParkedMemory;
    r.sites[i] = at(0, &kTableA, 1);
  }
  r.sites[1] = at(0, &kTableB, 1);
  // 0, 2, 3 at one site: 0 pulls in 2, and the team is full; 3 leads a team of its own.
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{0, 2, 1, 3}));
}

TEST(Team, LargestTeamFirstAndNoneWaitsLongerThanTeamWait) {
  ExecOptions e;
  e.batch = 16;
  e.team_size = 4;
  e.team_wait = 2;
  DualQueueRig r(e);
  r.p = make_team(e, kSlots);
  (void)r.p->admit_target(0, 16);
  for (std::uint32_t i = 0; i < 6; ++i) {
    r.launch(i);
    r.states[i] = SlotState::kParkedMemory;
  }
  for (std::uint32_t i : {0u, 1u, 2u, 3u}) r.sites[i] = at(0, &kTableA, 1);
  r.sites[4] = at(0, &kTableA, 3);
  r.sites[5] = at(1, &kTableB, 0);
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{0, 1, 2, 3}));  // the team of four
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{0, 1, 2, 3}));  // 4, 5 passed over twice
  // Overdue: they run, first (they ran longest ago), and the team of four fills the round up
  // to team_size.
  EXPECT_EQ(r.order(), (std::vector<std::uint32_t>{4, 5, 0, 1, 2, 3}));
  EXPECT_EQ(r.p->max_passed_over(), 2u);
}

// Random sites, states and arrivals (seeded): every resumable slot runs at least once every
// team_wait + 1 rounds, the order names each slot at most once, and only open ones.
TEST(Team, NoResumableTransactionWaitsMoreThanTheBound) {
  for (const SchedulerPolicy admission :
       {SchedulerPolicy::kPipeline, SchedulerPolicy::kBatch, SchedulerPolicy::kDualQueue}) {
    for (std::uint32_t wait : {0u, 1u, 3u}) {
      ExecOptions e;
      e.batch = 12;
      e.team_size = 3;
      e.team_wait = wait;
      e.team_admission = admission;
      DualQueueRig r(e);
      r.p = make_team(e, kSlots);
      util::Rng rng(wait * 31 + static_cast<std::uint32_t>(admission) + 1);
      const std::uint32_t n = r.p->slots(12);
      int tables[3];
      for (int round = 0; round < 2000; ++round) {
        std::uint32_t live = 0;
        for (std::uint32_t i = 0; i < n; ++i) live += r.states[i] != SlotState::kFree ? 1 : 0;
        std::uint32_t target = r.p->admit_target(live, 12);
        for (std::uint32_t i = 0; i < n && live < target; ++i) {
          if (r.states[i] != SlotState::kFree) continue;
          r.launch(i);
          ++live;
        }
        const std::vector<std::uint32_t> o = r.order();
        std::vector<bool> ran(64, false);
        for (std::uint32_t s : o) {
          ASSERT_LT(s, n);
          ASSERT_FALSE(ran[s]) << "slot " << s << " named twice";
          ran[s] = true;
          ASSERT_NE(r.states[s], SlotState::kFree);
        }
        // Run what was named, as the worker does: finish, suspend elsewhere, or park on I/O.
        for (std::uint32_t s : o) {
          if (!resumable(r.states[s])) continue;
          const std::uint64_t x = rng.uniform(20);
          if (x == 0) {
            r.finish(s);
          } else if (x == 1 && admission != SchedulerPolicy::kBatch) {
            r.set(s, SlotState::kParkedIo);
          } else {
            r.set(s, SlotState::kParkedMemory);
            r.sites[s] = at(static_cast<std::uint32_t>(rng.uniform(3)), &tables[rng.uniform(3)],
                            static_cast<std::uint32_t>(rng.uniform(3)));
          }
        }
        for (std::uint32_t i = 0; i < n; ++i) {  // reads come back
          if (r.states[i] == SlotState::kParkedIo && rng.uniform(4) == 0) {
            r.set(i, SlotState::kRunnable);
          }
        }
      }
      EXPECT_LE(r.p->max_passed_over(), wait) << to_string(admission) << " wait " << wait;
    }
  }
}

// A model of the order when every candidate runs (no more candidates than team_size, none
// cut): the resumable slots by their last resume (never resumed first, in slot order), each
// pulling in the later ones at its site, then the strays in slot order. Random sites, arrivals,
// finishes and I/O waits (seeded); mostly a team moves on together, to where another may be
// going too. Up to 32 candidates, so each of order_round's ways to this order (nothing
// reported since last round and its teams whole; last round's teams unchanged; pairwise up to
// 16; hashed above) is held to it. Quiet spells (no arrivals, finishes or waits; the strays
// come back at once) give runs of rounds in which only the sites move.
TEST(Team, EveryCandidateRunsGroupedByItsSiteInTheOrderTheyLastRan) {
  ExecOptions e;
  e.batch = 32;
  e.team_size = 32;
  DualQueueRig r(e);
  r.p = make_team(e, kSlots);
  util::Rng rng(22);
  int tables[2];
  std::vector<std::uint64_t> last(64, 0);
  std::uint64_t clock = 0;
  std::uint32_t direct = 0, hashed = 0, unchanged = 0, quiet_repeats = 0;
  std::vector<std::uint32_t> before;  // last round's order, strays left out
  bool reported = true;               // a launch, finish or wait since last round's order
  bool last_strays = false;
  for (int round = 0; round < 3600; ++round) {
    // Spells of up to 12 open and of up to 32 (finishing drains a spell's extra slots).
    const std::uint32_t cap = (round / 300) % 2 == 0 ? 12 : 32;
    const bool quiet = round % 40 >= 20;
    const std::uint32_t want = quiet ? 0 : static_cast<std::uint32_t>(rng.uniform(cap + 1));
    std::uint32_t live = 0;
    for (std::uint32_t i = 0; i < 32; ++i) live += r.states[i] != SlotState::kFree ? 1 : 0;
    for (std::uint32_t i = 0; i < cap && live < want; ++i) {
      if (r.states[i] != SlotState::kFree) continue;
      reported = true;
      r.launch(i);
      r.sites[i] = kSiteStart;
      last[i] = 0;
      ++live;
    }
    std::vector<std::uint32_t> cand, strays;
    for (std::uint32_t i = 0; i < 32; ++i) {
      if (r.states[i] == SlotState::kFree) continue;
      (resumable(r.states[i]) ? cand : strays).push_back(i);
    }
    std::sort(cand.begin(), cand.end(), [&](std::uint32_t a, std::uint32_t b) {
      return last[a] != last[b] ? last[a] < last[b] : a < b;  // ties: never resumed
    });
    std::vector<std::uint32_t> expect;
    std::vector<bool> taken(64, false);
    for (std::size_t i = 0; i < cand.size(); ++i) {
      if (taken[cand[i]]) continue;
      for (std::size_t j = i; j < cand.size(); ++j) {
        if (!taken[cand[j]] && r.sites[cand[j]] == r.sites[cand[i]]) {
          taken[cand[j]] = true;
          expect.push_back(cand[j]);
        }
      }
    }
    (cand.size() <= 16 ? direct : hashed) += 1;
    std::vector<std::uint32_t> kept;
    for (std::uint32_t x : before) {
      if (std::find(cand.begin(), cand.end(), x) != cand.end()) kept.push_back(x);
    }
    unchanged += kept == expect && !expect.empty() ? 1 : 0;
    quiet_repeats += !reported && !last_strays && before == expect && !expect.empty() ? 1 : 0;
    reported = false;
    last_strays = !strays.empty();
    before = expect;
    expect.insert(expect.end(), strays.begin(), strays.end());
    ASSERT_EQ(r.order(), expect) << "round " << round;
    for (std::size_t k = 0; k < cand.size(); ++k) last[expect[k]] = ++clock;  // as resumed
    // Each runs: finishes, parks on I/O, or suspends at a site: its team's next one, or
    // (one in sixteen) a site of its own choosing.
    auto random_site = [&] {
      return at(static_cast<std::uint32_t>(rng.uniform(2)), &tables[rng.uniform(2)],
                static_cast<std::uint32_t>(rng.uniform(3)));
    };
    std::map<std::uint32_t, std::uint32_t> next_site;
    for (std::uint32_t s : cand) {
      if (!next_site.count(r.sites[s])) next_site[r.sites[s]] = random_site();
    }
    for (std::uint32_t s : cand) {
      const std::uint64_t x = quiet ? 3 + rng.uniform(29) : rng.uniform(32);
      if (x < 2) {
        r.finish(s);
        reported = true;
      } else if (x == 2) {
        r.set(s, SlotState::kParkedIo);
        reported = true;
      } else {
        r.set(s, SlotState::kParkedMemory);
        r.sites[s] = x < 5 ? random_site() : next_site[r.sites[s]];
      }
    }
    for (std::uint32_t s : strays) {
      if (quiet || rng.uniform(3) == 0) {
        r.set(s, SlotState::kRunnable);
        reported = true;
      }
    }
  }
  EXPECT_EQ(r.p->max_passed_over(), 0u);
  EXPECT_GT(direct, 100u);  // every way was exercised
  EXPECT_GT(hashed, 100u);
  EXPECT_GT(unchanged, 100u);
  EXPECT_GT(quiet_repeats, 100u);
}

TEST(Policy, RegistryNamesEveryPolicyOnce) {
  for (const PolicyInfo& info : policies()) {
    EXPECT_EQ(&policy_info(info.kind), &info);
    EXPECT_EQ(find_policy(info.name), &info) << info.name;
    EXPECT_EQ(info.make(ExecOptions{}, kSlots)->kind(), info.kind) << info.name;
  }
  EXPECT_EQ(policies().size(), 5u);
  EXPECT_EQ(find_policy("batch")->kind, SchedulerPolicy::kBatch);
  EXPECT_EQ(find_policy("pipeline")->kind, SchedulerPolicy::kPipeline);
  EXPECT_EQ(find_policy("Batch"), nullptr);
  EXPECT_EQ(find_policy(""), nullptr);
}

TEST(SlotState, OnlyTheDocumentedEdgesExist) {
  using S = SlotState;
  const S all[] = {S::kFree, S::kRunnable, S::kParkedMemory, S::kParkedIo, S::kWaitingDurable};
  int edges = 0;
  for (S from : all) {
    for (S to : all) edges += valid_transition(from, to) ? 1 : 0;
  }
  // free->runnable; runnable, parked-memory -> free, parked-memory, parked-io, waiting-durable;
  // parked-io, waiting-durable -> runnable.
  EXPECT_EQ(edges, 1 + 2 * 4 + 2);
  EXPECT_TRUE(valid_transition(S::kFree, S::kRunnable));
  EXPECT_FALSE(valid_transition(S::kFree, S::kParkedMemory));
  EXPECT_FALSE(valid_transition(S::kWaitingDurable, S::kFree));  // never freed while it waits
  EXPECT_FALSE(valid_transition(S::kParkedIo, S::kParkedMemory));
  EXPECT_FALSE(valid_transition(S::kWaitingDurable, S::kParkedIo));
  EXPECT_TRUE(valid_transition(S::kParkedIo, S::kRunnable));
  for (S s : all) {
    EXPECT_EQ(resumable(s), s == S::kRunnable || s == S::kParkedMemory) << slot_state_name(s);
    EXPECT_EQ(waiting(s), s == S::kParkedIo || s == S::kWaitingDurable) << slot_state_name(s);
  }
}

}  // namespace
}  // namespace braid::sched

namespace braid {
namespace {

TEST(Names, EveryModeAndSchedulerRoundTrips) {
  const std::vector<std::string> modes = exec_mode_names();
  EXPECT_EQ(modes.size(), 5u);
  for (const std::string& n : modes) {
    ExecMode m{};
    ASSERT_TRUE(parse_exec_mode(n, &m)) << n;
    EXPECT_EQ(to_string(m), n);
  }
  EXPECT_EQ(to_string(ExecMode::kInterleaved), "interleaved");
  for (const std::string& n : scheduler_names()) {
    SchedulerPolicy p{};
    ASSERT_TRUE(parse_scheduler(n, &p)) << n;
    EXPECT_EQ(to_string(p), n);
  }
  ExecMode m = ExecMode::kNested;
  EXPECT_FALSE(parse_exec_mode("plain", &m));  // braid-bench's own loop, not an engine mode
  EXPECT_FALSE(parse_exec_mode("", &m));
  EXPECT_EQ(m, ExecMode::kNested);  // untouched on failure
  SchedulerPolicy p = SchedulerPolicy::kPipeline;
  EXPECT_FALSE(parse_scheduler("steps", &p));
  EXPECT_EQ(p, SchedulerPolicy::kPipeline);
  EXPECT_EQ(to_string(static_cast<ExecMode>(9)), "?");
}

}  // namespace
}  // namespace braid
