// `team` (STEPS, Harizopoulos & Ailamaki, CIDR 2005): transactions suspended at the same code
// are resumed back-to-back, so the instructions the first one brings into L1-I serve the
// others. STEPS had to build fast context switches and hand-place them in Shore; here every
// suspension already is one (a coroutine resume, ~1.5 ns), and what this policy adds is the
// grouping: by resume site (sched/site.h: operation x table or index x suspension within the
// operation, which follows the tree's depth as STEPS' per-index lists do).
//
// Admission, and which slots may run at all, stay with the inner policy (ExecOptions::
// team_admission: batch, pipeline, storage-batch or dual-queue), so one worker hides memory,
// I/O and instruction latency together. Per round:
//   1. the inner policy names its candidates; those not resumable (a parked read that `batch`
//      lets the transaction look at) are strays and run last, in the inner order;
//   2. the resumable ones are taken in the order they last ran (round-robin: each then has
//      the others' work to hide its prefetch behind), and each one pulls the candidates at its
//      site in behind it, up to team_size: that is its team;
//   3. when there are more than team_size candidates, only some teams run: every team holding
//      a transaction passed over team_wait rounds in a row, then the largest, until team_size
//      transactions are chosen. With batch <= team_size every round resumes everyone, grouped.
// Ordering by site instead (similar code adjacent) moved a team that ran last in one round to
// the front of the next whenever its next site sorted first, and its prefetches had no time
// to arrive: slower than pipeline on TPC-C.
// A stray (waiting on I/O, a conflict's backoff, durability) is not resumable and so belongs
// to no team; it rejoins one at its next suspension. No transaction waits more than team_wait
// rounds while it is resumable and a candidate (max_passed_over() is what a test checks).
//
// Cost: O(candidates) per round (a hash of sites, a counting sort of team sizes), in arrays
// sized once, and less in the rounds that dominate. In most rounds nothing launched,
// finished or began or ended a wait since the last one, all of last round's candidates ran,
// and each site still forms one run in its order: that order is replayed, one branch-free
// pass (unchanged()). Up to kDirect candidates that all run cost less too: when they are last
// round's teams, still one run per site, last round's order stands (same_teams()); otherwise
// pairwise site compares group them.
#include <algorithm>
#include <vector>

#include "sched/policy.h"
#include "util/assert.h"

namespace braid::sched {
namespace {

class Team final : public Policy {
 public:
  Team(const ExecOptions& e, std::uint32_t slots)
      : inner_(policy_info(e.team_admission).make(e, slots)),
        size_(std::max<std::uint32_t>(e.team_size, 1)),
        wait_(e.team_wait) {
    BRAID_ASSERT(e.team_admission != SchedulerPolicy::kTeam);
    allocate(slots);
  }

  SchedulerPolicy kind() const override { return SchedulerPolicy::kTeam; }
  bool uses_sites() const override { return true; }
  std::uint32_t slots(std::uint32_t capacity) const override { return inner_->slots(capacity); }
  std::uint32_t admit_target(std::uint32_t live, std::uint32_t capacity) override {
    return inner_->admit_target(live, capacity);
  }
  bool resumes_parked_io() const override { return inner_->resumes_parked_io(); }
  void on_wait(std::uint32_t slot, SlotState now) override {
    changed_ = true;
    inner_->on_wait(slot, now);
  }
  std::uint32_t max_passed_over() const override { return max_passed_; }
  std::uint64_t teams() const override { return teams_; }
  std::uint64_t team_members() const override { return members_; }

  void on_launch(std::uint32_t slot) override {
    BRAID_ASSERT(slot < passed_.size());
    span_ = std::max(span_, slot + 1);
    passed_[slot] = 0;
    last_[slot] = 0;
    changed_ = true;
    inner_->on_launch(slot);
  }
  void on_finish(std::uint32_t slot) override {
    BRAID_DASSERT(slot < passed_.size());
    passed_[slot] = 0;
    changed_ = true;
    inner_->on_finish(slot);
  }

  std::uint32_t order_round(std::span<std::uint32_t> order, std::span<const SlotState> states,
                            std::span<const std::uint32_t> sites) override {
    const auto n = static_cast<std::uint32_t>(states.size());
    BRAID_DASSERT(sites.size() == states.size());
    BRAID_DASSERT(order.size() >= n);
    BRAID_DASSERT(n == passed_.size());  // the slot count the policy was made for
    std::uint32_t count = inner_->order_round(inner_order_, states, sites);
    const bool slot_order = count == kSlotOrder;
    if (slot_order && !changed_ && repeatable_) {
      const std::uint32_t out = unchanged(order, states, sites);
      if (out != 0) return out;
    }
    changed_ = false;
    if (slot_order) count = std::min(n, span_);  // no slot past span_ was ever launched
    BRAID_DASSERT(count <= n);
    // 1. Candidates (stamped with the round, so that last round's order can tell which of
    // its slots still are), strays apart.
    ++round_;
    std::uint32_t m = 0, strays = 0;
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t s = slot_order ? k : inner_order_[k];
      if (states[s] == SlotState::kFree) continue;
      if (!resumable(states[s])) {
        strays_[strays++] = s;
        continue;
      }
      cand_[m++] = s;
      round_of_[s] = round_;
    }
    std::uint32_t out = 0;
    if (m <= size_ && m <= kDirect) {
      // All of them run. Mostly the teams are last round's, still in its order: the order
      // stands. Otherwise they are few enough that comparing each with the ones after it
      // costs less than hashing them (the common case: batch or pipeline admission of up to
      // team_size).
      out = same_teams(order, sites, m);
      if (out == 0) {
        by_last_resume(m);
        out = group_all(order, sites, m);
      }
    } else {
      by_last_resume(m);
      out = grouped(order, sites, m);
    }
    BRAID_DASSERT(out <= m);
    std::copy_n(order.begin(), out, last_order_.begin());
    last_out_ = out;
    repeatable_ = out == m && strays == 0;
    for (std::uint32_t k = 0; k < strays; ++k) order[out++] = strays_[k];
    return out;
  }

 private:
  struct Group {
    std::uint32_t head, tail;  // members in candidate order, linked through next_
    std::uint32_t size;
    bool overdue;  // holds a member passed over team_wait rounds in a row
    bool run;
  };

  // The candidates in the order they last ran (round-robin: each then has the others' work
  // to hide its prefetch behind); an insertion sort, as they come nearly sorted.
  void by_last_resume(std::uint32_t m) {
    for (std::uint32_t i = 1; i < m; ++i) {
      const std::uint32_t s = cand_[i];
      std::uint32_t j = i;
      for (; j > 0 && last_[cand_[j - 1]] > last_[s]; --j) cand_[j] = cand_[j - 1];
      cand_[j] = s;
    }
  }

  // Steps 2-4 for more candidates than group_all takes.
  std::uint32_t grouped(std::span<std::uint32_t> order, std::span<const std::uint32_t> sites,
                        std::uint32_t m) {
    // 2. Teams: a hash of site -> team (stamped per round instead of cleared), each team a
    // list of its members in candidate order.
    if (++stamp_ == 0) {  // wrapped: no entry may look current
      std::fill(hash_stamp_.begin(), hash_stamp_.end(), 0u);
      stamp_ = 1;
    }
    std::uint32_t teams = 0;
    const std::uint32_t mask = static_cast<std::uint32_t>(hash_site_.size()) - 1;
    for (std::uint32_t i = 0; i < m; ++i) {
      const std::uint32_t s = cand_[i];
      std::uint32_t h = (sites[s] * 0x9E3779B1u) >> hash_shift_;
      while (hash_stamp_[h] == stamp_ && hash_site_[h] != sites[s]) h = (h + 1) & mask;
      std::uint32_t t;
      if (hash_stamp_[h] != stamp_) {
        hash_stamp_[h] = stamp_;
        hash_site_[h] = sites[s];
        hash_team_[h] = t = teams++;
        team_[t] = Group{s, s, 0, false, true};
      } else {
        t = hash_team_[h];
        next_[team_[t].tail] = s;
        team_[t].tail = s;
      }
      ++team_[t].size;
      if (passed_[s] >= wait_) team_[t].overdue = true;
      team_of_[s] = t;
    }
    // 3. Which teams run: all, unless there are more candidates than team_size.
    if (m > size_) choose(teams);
    // 4. Emit in candidate order: a team when its earliest unemitted member comes up, at most
    // team_size members at a time (the rest follow when their first comes up).
    std::uint32_t out = 0;
    for (std::uint32_t i = 0; i < m; ++i) {
      const std::uint32_t s = cand_[i];
      Group& t = team_[team_of_[s]];
      if (!t.run) {
        max_passed_ = std::max(max_passed_, ++passed_[s]);
        continue;
      }
      if (t.head != s) continue;  // emitted with its team already
      std::uint32_t u = s;
      std::uint32_t k = 0;
      for (; k < size_; ++k) {
        emit(order, u, &out);
        if (u == t.tail) break;
        u = next_[u];
      }
      ++teams_;
      members_ += k == size_ ? k : k + 1;
      if (k == size_) t.head = u;  // the cut: the rest is a team of its own
    }
    return out;
  }

  // The common round: nothing launched, finished, or began or ended a wait since the last one
  // (a memory suspension changes no slot's membership), so under an inner policy that offers
  // every slot the candidates are last round's; when all of them ran then, none was passed
  // over and there were no strays (repeatable_). While each site still forms one run in last
  // round's order, that order is this round's: a pass over it, without the candidates'
  // states and without restamping last_, whose order among them is the order kept (and older
  // for every stray: becoming one is a wait, which ends the streak and restamps). Answers 0
  // when a team has split.
  //
  // Branch-free but for the loop: which teams move on together is data, and a compare per
  // run against the earlier runs mispredicted often enough to make this pass most of the
  // policy's time. A site that starts a run and is in the
  // 64-bit filter of the sites before it may repeat an earlier run; only then are the runs
  // compared.
  std::uint32_t unchanged(std::span<std::uint32_t> order, std::span<const SlotState> states,
                          std::span<const std::uint32_t> sites) {
    const std::uint32_t n = last_out_;
    if (n == 0) return 0;
    std::uint32_t prev = sites[last_order_[0]];
    std::uint64_t seen = site_bit(prev);
    std::uint32_t runs = 1, maybe_split = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t s = last_order_[i];
      BRAID_DASSERT(resumable(states[s]));  // else a change of membership went unreported
      const std::uint32_t site = sites[s];
      const std::uint64_t bit = site_bit(site);
      const std::uint32_t starts = site != prev ? 1 : 0;
      maybe_split |= starts & ((seen & bit) != 0 ? 1 : 0);
      seen |= bit;
      runs += starts;
      prev = site;
      order[i] = s;
    }
    if (maybe_split != 0 && split(order.first(n), sites)) return 0;
    teams_ += runs;
    members_ += n;
    return n;
  }
  static std::uint64_t site_bit(std::uint32_t site) {
    return std::uint64_t{1} << ((site * 0x9E3779B1u) >> 26);
  }
  // Whether a site forms more than one run in `order`.
  static bool split(std::span<const std::uint32_t> order, std::span<const std::uint32_t> sites) {
    for (std::size_t i = 1; i < order.size(); ++i) {
      const std::uint32_t site = sites[order[i]];
      if (site == sites[order[i - 1]]) continue;
      for (std::size_t j = 0; j + 1 < i; ++j) {
        if (sites[order[j]] == site) return true;
      }
    }
    return false;
  }

  // When every candidate ran last round, their order by last resume is last round's order;
  // when, in it, each site still forms one run, grouping changes nothing. Then that order is
  // this round's, and this costs a pass over it; otherwise it answers 0.
  std::uint32_t same_teams(std::span<std::uint32_t> order, std::span<const std::uint32_t> sites,
                           std::uint32_t m) {
    std::uint32_t out = 0;
    for (std::uint32_t i = 0; i < last_out_; ++i) {
      const std::uint32_t s = last_order_[i];
      // Finished, or waits for I/O now; or finished and its slot holds a new transaction
      // (on_launch zeroes last_), which did not run last round.
      if (round_of_[s] != round_ || last_[s] == 0) continue;
      order[out++] = s;
    }
    // Some did not run last round, or a team split: regroup.
    if (out != m || split(order.first(out), sites)) return 0;
    std::uint32_t runs = out == 0 ? 0 : 1;
    for (std::uint32_t i = 0; i < out; ++i) {
      if (i > 0 && sites[order[i]] != sites[order[i - 1]]) ++runs;
      passed_[order[i]] = 0;
      last_[order[i]] = ++clock_;
    }
    teams_ += runs;
    members_ += m;
    return out;
  }

  // Up to this many candidates, all of which run, are grouped by comparing sites pairwise
  // (at most 120 compares) instead of through the hash, which costs more than the compares at
  // this size.
  static constexpr std::uint32_t kDirect = 16;

  // Every candidate runs: each team in turn when its earliest member comes up, its members in
  // candidate order. The same order as steps 2-4 produce when nothing is cut or passed over.
  std::uint32_t group_all(std::span<std::uint32_t> order, std::span<const std::uint32_t> sites,
                          std::uint32_t m) {
    static constexpr std::uint32_t kTaken = ~std::uint32_t{0};
    std::uint32_t out = 0;
    for (std::uint32_t i = 0; i < m; ++i) {
      const std::uint32_t s = cand_[i];
      if (s == kTaken) continue;
      const std::uint32_t site = sites[s];
      emit(order, s, &out);
      for (std::uint32_t j = i + 1; j < m; ++j) {
        const std::uint32_t u = cand_[j];
        if (u != kTaken && sites[u] == site) {
          emit(order, u, &out);
          cand_[j] = kTaken;
        }
      }
      ++teams_;
    }
    members_ += m;
    return out;
  }
  void emit(std::span<std::uint32_t> order, std::uint32_t s, std::uint32_t* out) {
    order[(*out)++] = s;
    passed_[s] = 0;
    last_[s] = ++clock_;
  }

  // More candidates than team_size: the overdue teams, then the largest (a counting sort by
  // size), until team_size transactions are chosen.
  void choose(std::uint32_t teams) {
    std::uint32_t chosen = 0;
    std::fill(by_size_.begin(), by_size_.end(), 0u);
    for (std::uint32_t t = 0; t < teams; ++t) {
      Group& g = team_[t];
      g.run = g.overdue;
      if (g.run) {
        chosen += g.size;
      } else {
        ++by_size_[g.size];
      }
    }
    if (chosen >= size_) return;
    // Prefix sums from the largest size down: where each size's teams start in sorted_.
    std::uint32_t at = 0;
    for (std::size_t z = by_size_.size(); z-- > 1;) {
      const std::uint32_t c = by_size_[z];
      by_size_[z] = at;
      at += c;
    }
    for (std::uint32_t t = 0; t < teams; ++t) {
      if (!team_[t].run) sorted_[by_size_[team_[t].size]++] = t;
    }
    for (std::uint32_t k = 0; k < at && chosen < size_; ++k) {
      team_[sorted_[k]].run = true;
      chosen += team_[sorted_[k]].size;
    }
  }

  // Per-slot arrays for the worker's `n` slots: once, when the policy is made.
  void allocate(std::uint32_t n) {
    BRAID_ASSERT(n >= 1);
    inner_order_.resize(n);
    cand_.resize(n);
    strays_.resize(n);
    next_.resize(n);
    team_of_.resize(n);
    team_.resize(n);
    sorted_.resize(n);
    by_size_.assign(n + 1, 0);
    passed_.resize(n, 0);
    last_.resize(n, 0);
    round_of_.resize(n, 0);
    last_order_.resize(n);
    std::uint32_t bits = 1;
    while ((1u << bits) < 2 * n) ++bits;
    hash_site_.assign(std::size_t{1} << bits, 0);
    hash_team_.assign(std::size_t{1} << bits, 0);
    hash_stamp_.assign(std::size_t{1} << bits, 0);
    hash_shift_ = 32 - bits;
  }

  std::unique_ptr<Policy> inner_;
  const std::uint32_t size_;
  const std::uint32_t wait_;
  std::vector<std::uint32_t> passed_;  // per slot: rounds passed over in a row while resumable
  std::vector<std::uint64_t> last_;    // per slot: clock_ at its last resume (0: never resumed)
  std::uint64_t clock_ = 0;
  std::uint32_t max_passed_ = 0;
  std::uint32_t span_ = 0;  // 1 + the highest slot ever launched
  std::uint64_t round_ = 0;
  std::vector<std::uint64_t> round_of_;    // per slot: the last round it was a candidate in
  std::vector<std::uint32_t> last_order_;  // last round's order, strays left out
  std::uint32_t last_out_ = 0;
  bool changed_ = true;      // a slot launched, finished, or began or ended a wait since last round
  bool repeatable_ = false;  // last round ran every candidate and had no strays
  std::uint64_t teams_ = 0, members_ = 0;
  // Per-round scratch, sized once for the worker's slots.
  std::vector<std::uint32_t> inner_order_, cand_, strays_, next_, team_of_, sorted_, by_size_;
  std::vector<Group> team_;
  std::vector<std::uint32_t> hash_site_, hash_team_, hash_stamp_;
  std::uint32_t hash_shift_ = 31;
  std::uint32_t stamp_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_team(const ExecOptions& exec, std::uint32_t slots) {
  return std::make_unique<Team>(exec, slots);
}

}  // namespace braid::sched
