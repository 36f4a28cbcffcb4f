// Secondary trees page where the index pages (Options::page_index_leaves under a budget): their
// leaves go to storage with the primary tree's, lookups read them back in every mode, a write
// whose entry's leaf cannot be read fails and its transaction cannot commit, an abort removes
// the entries it added, and a checkpoint stores an index whose leaves are on storage. Seeded;
// deterministic values.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/entry_sort.h"
#include "engine/exec_test_util.h"
#include "engine/table.h"
#include "engine/test_util.h"
#include "storage/durability_util.h"
#include "storage/sort_run.h"
#include "util/random.h"

namespace braid {
namespace {

using testing::ExecCase;

constexpr int kRecords = 3000;
constexpr int kGroups = 30;

std::string key_of(int i) {
  char k[16];
  std::snprintf(k, sizeof k, "k%05d", i);
  return k;
}
std::string group_name(int g) { return "g" + std::to_string(g); }
// The value's group is what the index keys (testing::group_of: the bytes before ':').
std::string value_in(int g, int i) { return group_name(g) + ":" + std::to_string(i) + "-xxxxxxxx"; }
std::string group_key(int g) {
  Key k;
  k.str(group_name(g));
  return std::string(k.view());
}

Options paging_options(std::uint64_t budget) {
  Options o = test::wl_options(0);
  o.workers = 1;
  o.slots_per_worker = 8;
  o.memory_budget_bytes = budget;
  o.page_index_leaves = true;
  o.durability.log_buffer_bytes = 256 << 10;
  o.durability.log_segment_bytes = 1 << 20;
  return o;
}

struct Indexed {
  std::unique_ptr<Database> db;
  Table* t = nullptr;
  Index* idx = nullptr;
  std::vector<int> group;  // each record's group, as committed
};

// Opens a database on `fs`, loads kRecords records (record i in group i % kGroups) and builds
// the index over them.
void open_indexed(std::shared_ptr<storage::SimFileSystem> fs, const Options& o, Indexed* out) {
  auto opened = test::open_sim(o, std::move(fs));
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  out->db = std::move(opened).value();
  out->t = testing::make_table(*out->db, "t");
  out->group.assign(kRecords, 0);
  for (int i = 0; i < kRecords; i += 100) {
    Transaction tx = testing::begin(*out->db);
    for (int k = i; k < i + 100; ++k) {
      out->group[k] = k % kGroups;
      ASSERT_TRUE(tx.put(*out->t, key_of(k), value_in(out->group[k], k)).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  Result<Index*> idx = out->db->create_index(*out->t, "by_group", testing::group_of);
  ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
  out->idx = *idx;
}

// The primary keys an application-thread transaction finds under group `g`.
Status lookup(Database& db, Index& idx, int g, std::vector<std::string>* keys) {
  keys->clear();
  Transaction tx = testing::begin(db);
  Status s = tx.lookup_index(idx, group_key(g), 0, [&](std::string_view pk, std::string_view v) {
    EXPECT_EQ(v.substr(0, v.find(':')), group_name(g)) << pk;
    keys->emplace_back(pk);
    return true;
  });
  tx.abort();
  return s;
}

// Every group's lookup answers exactly the records the model puts there, in key order.
void expect_groups(Indexed& x) {
  std::map<int, std::vector<std::string>> want;
  for (int k = 0; k < static_cast<int>(x.group.size()); ++k) want[x.group[k]].push_back(key_of(k));
  for (int g = 0; g < kGroups; ++g) {
    std::vector<std::string> got;
    ASSERT_TRUE(lookup(*x.db, *x.idx, g, &got).is_ok()) << "group " << g;
    EXPECT_EQ(got, want[g]) << "group " << g;
  }
}

// Evicts the secondary leaf that holds group g's entry for record k (or finds it out already).
void evict_entry_leaf(Indexed& x, int g, int k) {
  bool evicted = false;
  const std::string entry = group_key(g) + key_of(k);
  ASSERT_TRUE(x.idx->tree().evict_leaf(entry, &evicted).is_ok());
  ASSERT_GT(x.idx->tree().stored_leaves(), 0u);
}

class SecondaryPaging : public ::testing::TestWithParam<ExecCase> {};

// Under a budget of a byte the hand takes the secondary tree's leaves as it takes the primary's;
// lookups in every mode (through the ring where a coroutine waits, in place elsewhere) and on
// application threads read them back, and moves between groups, with every fourth transaction
// aborted after its writes, leave each record under its committed group only.
TEST_P(SecondaryPaging, LeavesGoOutAndEveryModeReadsThemBack) {
  auto fs = std::make_shared<storage::SimFileSystem>(61);
  Indexed x;
  open_indexed(fs, paging_options(1), &x);
  ASSERT_TRUE(x.idx->tree().pages());
  const DatabaseStats before = x.db->stats();
  const std::uint64_t loads = x.idx->tree().loads();
  EXPECT_GT(before.secondary_leaf_evictions, 0u) << "create_index's catch-up took no leaf";
  EXPECT_GT(before.secondary_leaves_stored, 0u);
  EXPECT_LE(before.secondary_leaves_stored, before.index_leaves_stored);

  // Lookups of every group on the workers, then moves between groups, then the lookups again.
  const auto worker_lookups = [&] {
    std::vector<testing::ListGenerator::Body> bodies;
    std::atomic<int> wrong{0};
    for (int g = 0; g < kGroups; ++g) {
      const auto want = static_cast<std::size_t>(std::count(x.group.begin(), x.group.end(), g));
      bodies.push_back([&, g, want](Tx& tx) -> Task<Status> {
        std::size_t n = 0;
        Status s = co_await tx.lookup_index(
            *x.idx, group_key(g), 0, [&](std::string_view pk, std::string_view v) {
              if (v.substr(0, v.find(':')) != group_name(g)) ++wrong;
              if (x.group[std::stoi(std::string(pk.substr(1)))] != g) ++wrong;
              ++n;
              return true;
            });
        if (!s.is_ok()) co_return s;
        if (n != want) ++wrong;
        co_return co_await tx.commit();
      });
    }
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE(x.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    ASSERT_EQ(gen.outcomes.size(), static_cast<std::size_t>(kGroups));
    for (const Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
    EXPECT_EQ(wrong.load(), 0) << "a worker's lookup found a record under another group";
  };
  worker_lookups();

  util::Rng rng(61);
  std::vector<testing::ListGenerator::Body> moves;
  std::vector<int> moved = x.group;
  constexpr int kMoves = 200;
  for (int i = 0; i < kMoves; ++i) {
    const int k = (i * 37 + 11) % kRecords;  // distinct records: no two moves conflict
    const int to = static_cast<int>(rng.uniform(kGroups));
    const bool abort = i % 4 == 3;
    if (!abort) moved[k] = to;
    moves.push_back([&, k, to, abort](Tx& tx) -> Task<Status> {
      if (Status s = co_await tx.put(*x.t, key_of(k), value_in(to, k)); !s.is_ok()) co_return s;
      if (abort) co_return Status::invalid_argument("aborted by the test");
      co_return co_await tx.commit();
    });
  }
  {
    testing::ListGenerator gen(std::move(moves));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE(x.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    ASSERT_EQ(gen.outcomes.size(), static_cast<std::size_t>(kMoves));
    // Every fourth aborted by the test, after its write added the entry (outcomes come in
    // the order transactions end).
    EXPECT_EQ(std::count(gen.outcomes.begin(), gen.outcomes.end(), Code::kOk), kMoves / 4 * 3);
    EXPECT_EQ(std::count(gen.outcomes.begin(), gen.outcomes.end(), Code::kInvalidArgument),
              kMoves / 4);
  }
  x.group = moved;
  worker_lookups();
  // The leaves that went out came back: the secondary tree loaded leaves.
  EXPECT_GT(x.idx->tree().loads(), loads);
  EXPECT_GT(x.db->stats().index_leaf_loads, before.index_leaf_loads);
  expect_groups(x);
}

// A write on a worker whose new entry's leaf is on storage: in the coroutine modes the leaf is
// read through the ring before the record is installed (DatabaseStats::index_leaf_loads_async),
// while the worker runs its other transactions, so the insert finds it in memory; the plain
// modes read it in place during the insert. Either way every entry lands. The leaves leave only
// when the test evicts them (a budget nothing reaches), and only the moves' target leaves.
TEST_P(SecondaryPaging, AWritesEntryLeafIsReadThroughTheRingInCoroutineModes) {
  const ExecMode mode = GetParam().mode;
  auto fs = std::make_shared<storage::SimFileSystem>(79);
  Indexed x;
  open_indexed(fs, paging_options(std::uint64_t{1} << 30), &x);
  ASSERT_EQ(x.idx->tree().stored_leaves(), 0u);
  constexpr int kMoves = 60;
  std::vector<testing::ListGenerator::Body> moves;
  for (int i = 0; i < kMoves; ++i) {
    const int k = (i * 53 + 5) % kRecords;
    const int to = (x.group[k] + 1 + i % (kGroups - 1)) % kGroups;  // another group
    evict_entry_leaf(x, to, k);
    x.group[k] = to;
    moves.push_back([&, k, to](Tx& tx) -> Task<Status> {
      if (Status s = co_await tx.put(*x.t, key_of(k), value_in(to, k)); !s.is_ok()) co_return s;
      co_return co_await tx.commit();
    });
  }
  const std::uint64_t stored = x.idx->tree().stored_leaves();
  ASSERT_GT(stored, 10u);
  const DatabaseStats before = x.db->stats();
  {
    testing::ListGenerator gen(std::move(moves));
    TxnGenerator* gens[] = {&gen};
    ASSERT_TRUE(x.db->run(gens, testing::exec_of(GetParam(), 8)).is_ok());
    ASSERT_EQ(gen.outcomes.size(), static_cast<std::size_t>(kMoves));
    for (const Code c : gen.outcomes) EXPECT_EQ(c, Code::kOk);
  }
  const DatabaseStats after = x.db->stats();
  // Every leaf that went out holds a new entry now, so every one came back.
  EXPECT_EQ(x.idx->tree().stored_leaves(), 0u);
  const std::uint64_t loads = after.index_leaf_loads - before.index_leaf_loads;
  const std::uint64_t async = after.index_leaf_loads_async - before.index_leaf_loads_async;
  EXPECT_GE(loads, stored);
  if (mode == ExecMode::kNested || mode == ExecMode::kInterleaved) {
    EXPECT_GE(async, stored) << async << " of " << loads << " loads through the ring";
  } else if (mode != ExecMode::kAuto) {
    EXPECT_EQ(async, 0u);
  }
  expect_groups(x);
}

// A lookup that meets a secondary leaf it cannot read answers IOError; a transaction whose
// write cannot add its entry (the entry's leaf cannot be read) gets IOError from the write and
// from its commit, which aborts it, removing the entries its earlier writes added. Once the
// disk answers again, every group reads as committed.
TEST(SecondaryPagingFaults, AFailedLeafReadFailsTheLookupAndTheWriteAbortsItsTransaction) {
  auto fs = std::make_shared<storage::SimFileSystem>(67);
  Indexed x;
  // A budget nothing reaches: leaves leave only when the test evicts them.
  open_indexed(fs, paging_options(std::uint64_t{1} << 30), &x);
  ASSERT_EQ(x.idx->tree().stored_leaves(), 0u);

  const int k = 7;  // in group 7
  evict_entry_leaf(x, 7, k);
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  std::vector<std::string> got;
  EXPECT_EQ(lookup(*x.db, *x.idx, 7, &got).code(), Code::kIOError);
  EXPECT_EQ(fs->faults_fired(), 1u);
  ASSERT_TRUE(lookup(*x.db, *x.idx, 7, &got).is_ok());
  EXPECT_NE(std::find(got.begin(), got.end(), key_of(k)), got.end());

  // Record 1 moves to group 9 (its leaf in memory), then record 7 to group 8, whose entry's
  // leaf is on storage: first the read fails (IOError), then the image does not verify
  // (Corruption, which the API does not take as a failed write: the engine refuses the
  // commit itself, since the record is installed and its entry is not).
  const int first = 1;
  evict_entry_leaf(x, 8, k);
  {
    Transaction tx = testing::begin(*x.db);
    ASSERT_TRUE(tx.put(*x.t, key_of(first), value_in(9, first)).is_ok());
    fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
    EXPECT_EQ(tx.put(*x.t, key_of(k), value_in(8, k)).code(), Code::kIOError);
    EXPECT_EQ(tx.commit().code(), Code::kIOError) << "a write missing its entry committed";
  }
  EXPECT_EQ(fs->faults_fired(), 2u);
  expect_groups(x);           // nothing moved: record 1's entry under group 9 went with the abort
  evict_entry_leaf(x, 8, k);  // the lookups read it back
  testing::LeafImageDamage damage;
  ASSERT_TRUE(damage.damage(*fs, x.idx->tree()));
  {
    Transaction tx = testing::begin(*x.db);
    ASSERT_TRUE(tx.put(*x.t, key_of(first), value_in(9, first)).is_ok());
    EXPECT_EQ(tx.put(*x.t, key_of(k), value_in(8, k)).code(), Code::kCorruption);
    EXPECT_EQ(tx.commit().code(), Code::kIOError) << "a write missing its entry committed";
  }
  damage.restore();
  expect_groups(x);

  // The same write commits once the leaf reads again.
  {
    Transaction tx = testing::begin(*x.db);
    ASSERT_TRUE(tx.put(*x.t, key_of(k), value_in(8, k)).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
    x.group[k] = 8;
  }
  expect_groups(x);
  EXPECT_FALSE(x.db->durability_stats().halted);
}

// On a worker in a coroutine mode, the write reads its entry's leaf through the ring before it
// installs its record: a read that fails fails the write there, with nothing installed, and the
// transaction that returns it ends with IOError; a damaged image, with Corruption. The same
// move commits once the leaf reads again.
TEST(SecondaryPagingFaults, AWorkersWriteWhoseEntryLeafFailsInstallsNothing) {
  auto fs = std::make_shared<storage::SimFileSystem>(83);
  Indexed x;
  open_indexed(fs, paging_options(std::uint64_t{1} << 30), &x);
  const int k = 13;  // in group 13
  const auto move = [&](Code want) {
    std::vector<testing::ListGenerator::Body> bodies;
    bodies.push_back([&](Tx& tx) -> Task<Status> {
      if (Status s = co_await tx.put(*x.t, key_of(k), value_in(4, k)); !s.is_ok()) co_return s;
      co_return co_await tx.commit();
    });
    testing::ListGenerator gen(std::move(bodies));
    TxnGenerator* gens[] = {&gen};
    ExecOptions e;
    e.mode = ExecMode::kInterleaved;
    e.scheduler = SchedulerPolicy::kPipeline;
    e.batch = 4;
    ASSERT_TRUE(x.db->run(gens, e).is_ok());
    ASSERT_EQ(gen.outcomes.size(), 1u);
    EXPECT_EQ(gen.outcomes[0], want);
  };
  evict_entry_leaf(x, 4, k);
  const std::uint64_t async = x.db->stats().index_leaf_loads_async;
  fs->inject(storage::SimFileSystem::Fault::kReadEio, 1, false);
  move(Code::kIOError);
  EXPECT_EQ(fs->faults_fired(), 1u);
  expect_groups(x);           // record 13 is still in group 13 only
  evict_entry_leaf(x, 4, k);  // the lookups read it back
  {
    testing::LeafImageDamage damage;
    ASSERT_TRUE(damage.damage(*fs, x.idx->tree()));
    move(Code::kCorruption);
    damage.restore();
  }
  expect_groups(x);
  evict_entry_leaf(x, 4, k);
  move(Code::kOk);
  x.group[k] = 4;
  EXPECT_GT(x.db->stats().index_leaf_loads_async, async);
  expect_groups(x);
  EXPECT_FALSE(x.db->durability_stats().halted);
}

// A checkpoint stores an index (created with a key version) whose leaves are on storage: it
// reads them through their images, and the next open attaches to what it wrote.
TEST(SecondaryPagingStore, ACheckpointStoresAnIndexWhoseLeavesAreOut) {
  auto fs = std::make_shared<storage::SimFileSystem>(71);
  Options o = paging_options(1);
  // Past a few of the attach's looks at its share (DatabaseImpl::kAttachShrinkEvery), so the
  // attach sends leaves out before the index is published, and the entries of the keys written
  // after the checkpoint are then added over leaves on storage.
  constexpr int kStored = 12000;
  constexpr int kWrittenAfter = 100;
  std::vector<int> group;
  {
    auto opened = test::open_sim(o, fs);
    ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
    std::unique_ptr<Database> db = std::move(opened).value();
    Table* t = testing::make_table(*db, "t");
    group.assign(kStored, 0);
    for (int i = 0; i < kStored; i += 100) {
      Transaction tx = testing::begin(*db);
      for (int k = i; k < i + 100; ++k) {
        group[k] = k % kGroups;
        ASSERT_TRUE(tx.put(*t, key_of(k), value_in(group[k], k)).is_ok());
      }
      ASSERT_TRUE(tx.commit().is_ok());
    }
    Result<Index*> idx = db->create_index(*t, "by_group", testing::group_of, IndexOptions{3});
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    ASSERT_GT((*idx)->tree().stored_leaves(), 0u);
    ASSERT_TRUE(db->checkpoint().is_ok());
    // The log tail: records that move after the entries were stored.
    Transaction tx = testing::begin(*db);
    for (int i = 0; i < kWrittenAfter; ++i) {
      const int k = i * 97 % kStored;
      group[k] = (group[k] + 1) % kGroups;
      ASSERT_TRUE(tx.put(*t, key_of(k), value_in(group[k], k)).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  auto opened = test::open_sim(o, fs);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  Indexed x;
  x.db = std::move(opened).value();
  x.t = *x.db->open_table("t");
  Result<Index*> idx =
      x.db->create_index(*x.t, "by_group", testing::group_of, IndexOptions{3, true});
  ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
  x.idx = *idx;
  x.group = group;
  EXPECT_EQ(x.db->stats().indexes_attached, 1u);
  EXPECT_EQ(x.db->stats().index_entries_attached,
            static_cast<std::uint64_t>(kStored - kWrittenAfter));
  EXPECT_GT(x.idx->tree().stored_leaves(), 0u);
  expect_groups(x);
}

// Moves records between groups on one worker's half of the keys: each transaction moves two
// records, and every fifth is aborted by its body after its writes added their entries.
class Mover : public TxnGenerator {
 public:
  Mover(Indexed& x, std::uint64_t seed, int first, int txns)
      : x_(x), rng_(seed), first_(first), left_(txns) {}
  bool next(Tx& tx, Task<Status>* out) override {
    if (left_-- == 0) return false;
    *out = move(tx, left_ % 5 == 0);
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    if (s.is_ok()) {
      ++commits;
    } else if (s != Code::kConflict && s != Code::kInvalidArgument) {
      ADD_FAILURE() << s.to_string();
    }
  }
  std::uint64_t commits = 0;

 private:
  Task<Status> move(Tx& tx, bool abort) {
    for (int i = 0; i < 2; ++i) {
      const int k = first_ + static_cast<int>(rng_.uniform(kRecords / 2));
      const int to = static_cast<int>(rng_.uniform(kGroups));
      if (Status s = co_await tx.put(*x_.t, key_of(k), value_in(to, k)); !s.is_ok()) co_return s;
    }
    if (abort) co_return Status::invalid_argument("aborted by the test");
    co_return Status::ok();
  }
  Indexed& x_;
  util::Rng rng_;
  int first_;
  int left_;
};

// Two workers move records between groups under a budget of a byte, so that the hand takes the
// secondary leaves (and the primary's) constantly and writes, aborts and lookups load them back,
// while an application thread reads every group in one snapshot: each record is found exactly
// once, under the group its visible value names. Also under TSan.
TEST(SecondaryPagingStress, WorkersMoveRecordsWhileASnapshotFindsEachOnce) {
  auto fs = std::make_shared<storage::SimFileSystem>(73);
  Options o = paging_options(1);
  o.workers = 2;
  o.durability.commit = CommitMode::kAsync;
  Indexed x;
  open_indexed(fs, o, &x);
  std::atomic<bool> done{false};
  std::atomic<int> snapshots{0};
  std::thread scanner([&] {
    while (!done.load()) {
      Transaction tx = testing::begin(*x.db);
      std::vector<int> seen(kRecords, 0);
      for (int g = 0; g < kGroups; ++g) {
        Status s =
            tx.lookup_index(*x.idx, group_key(g), 0, [&](std::string_view pk, std::string_view v) {
              EXPECT_EQ(v.substr(0, v.find(':')), group_name(g)) << pk;
              ++seen[std::stoi(std::string(pk.substr(1)))];
              return true;
            });
        ASSERT_TRUE(s.is_ok()) << s.to_string();
      }
      tx.abort();
      for (int k = 0; k < kRecords; ++k) ASSERT_EQ(seen[k], 1) << key_of(k);
      ++snapshots;
    }
  });
  const std::uint64_t evictions = x.db->stats().secondary_leaf_evictions;
  const std::uint64_t loads = x.idx->tree().loads();
  std::uint64_t commits = 0;
  Status ran = Status::ok();
  for (int round = 0; round < 8 && ran.is_ok(); ++round) {
    Mover w0(x, 31 + 2 * round, 0, 300);
    Mover w1(x, 32 + 2 * round, kRecords / 2, 300);
    TxnGenerator* gens[] = {&w0, &w1};
    ExecOptions e;
    e.mode = ExecMode::kInterleaved;
    e.scheduler = SchedulerPolicy::kPipeline;
    e.batch = 8;
    ran = x.db->run(gens, e);
    commits += w0.commits + w1.commits;
    if (x.db->stats().secondary_leaf_evictions > evictions + 50 &&
        x.idx->tree().loads() > loads + 50 && snapshots.load() > 2) {
      break;
    }
  }
  done = true;
  scanner.join();
  ASSERT_TRUE(ran.is_ok()) << ran.to_string();
  EXPECT_GT(commits, 300u);
  EXPECT_GT(snapshots.load(), 0);
  EXPECT_GT(x.db->stats().secondary_leaf_evictions, evictions + 50);
  EXPECT_GT(x.idx->tree().loads(), loads + 50);
  EXPECT_EQ(x.db->stats().index_leaf_write_errors, 0u);
}

// A build from the table where the index pages under a budget sorts its entries first
// (Options::index_build_sort_bytes, here small enough for more runs than one merge reads) and
// fills the tree in key order, sending leaves out as it fills it; the index then answers every
// group, and no run is left in the directory. A failed write of a run fails create_index with
// IOError (the index is not created, and a later create_index builds it), and a run a crash
// left is removed by the next open.
TEST(SecondaryPagingBuild, ASortedBuildShedsLeavesAsItFillsAndLeavesNoRun) {
  auto fs = std::make_shared<storage::SimFileSystem>(83);
  Options o = paging_options(1);
  o.index_build_sort_bytes = 4096;
  constexpr int kMany = 12000;
  const auto sort_runs_in_dir = [&] {
    std::vector<std::string> names;
    EXPECT_TRUE(fs->list(o.directory, &names).is_ok());
    return std::count_if(names.begin(), names.end(),
                         [](const std::string& n) { return n.rfind("sort-", 0) == 0; });
  };
  Indexed x;
  {
    auto opened = test::open_sim(o, fs);
    ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
    x.db = std::move(opened).value();
  }
  x.t = testing::make_table(*x.db, "t");
  x.group.assign(kMany, 0);
  for (int i = 0; i < kMany; i += 100) {
    Transaction tx = testing::begin(*x.db);
    for (int k = i; k < i + 100; ++k) {
      x.group[k] = (k * 7) % kGroups;  // the table's order is not the index's
      ASSERT_TRUE(tx.put(*x.t, key_of(k), value_in(x.group[k], k)).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  ASSERT_GT(x.db->stats().evictions, 0u);  // the build reads cold records as well as hot

  fs->fault_only("sort-");
  fs->inject(storage::SimFileSystem::Fault::kEio, 3, false);
  Result<Index*> failed = x.db->create_index(*x.t, "by_group", testing::group_of);
  fs->inject(storage::SimFileSystem::Fault::kNone, 0, false);
  fs->fault_only("");
  ASSERT_FALSE(failed.is_ok());
  EXPECT_EQ(failed.status().code(), Code::kIOError) << failed.status().to_string();
  EXPECT_EQ(sort_runs_in_dir(), 0);
  EXPECT_EQ(x.db->stats().indexes_built, 0u);

  Result<Index*> idx = x.db->create_index(*x.t, "by_group", testing::group_of);
  ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
  x.idx = *idx;
  const DatabaseStats s = x.db->stats();
  EXPECT_EQ(s.indexes_built, 1u);
  EXPECT_GT(s.index_sort_runs, engine::EntrySorter::kMaxFanIn + 1) << "no merge pass of its own";
  EXPECT_GT(s.index_leaves_shed, 0u) << "the fill sent no leaf out before the index was published";
  EXPECT_GT(x.idx->tree().stored_leaves(), 0u);
  EXPECT_EQ(sort_runs_in_dir(), 0);
  expect_groups(x);

  // A run a crash left behind goes with the next open.
  x.db.reset();
  {
    Result<storage::FileId> f =
        fs->open(o.directory + "/" + storage::sort_run_file_name(999999), {.create = true});
    ASSERT_TRUE(f.is_ok());
    ASSERT_TRUE(fs->write(*f, 0, "left", 4).is_ok());
    fs->close(*f);
  }
  ASSERT_EQ(sort_runs_in_dir(), 1);
  auto opened = test::open_sim(o, fs);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  EXPECT_EQ(sort_runs_in_dir(), 0);
}

INSTANTIATE_TEST_SUITE_P(All, SecondaryPaging, ::testing::ValuesIn(testing::all_cases()),
                         testing::case_name);

// Where the index pages, a build keeps a begun context for its whole length (the leaves it
// sheds read the versions their entries name). With every application-thread context taken it
// answers Busy and creates nothing; once one is free the same call builds the index.
TEST(SecondaryPagingBuild, ABuildWithEveryApplicationContextTakenIsBusy) {
  Options o = paging_options(1);
  o.external_transactions = 2;
  auto opened = test::open_sim(o, std::make_shared<storage::SimFileSystem>(89));
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  Indexed x;
  x.db = std::move(opened).value();
  x.t = testing::make_table(*x.db, "t");
  x.group.assign(400, 0);
  {
    Transaction tx = testing::begin(*x.db);
    for (int k = 0; k < 400; ++k) {
      x.group[k] = k % kGroups;
      ASSERT_TRUE(tx.put(*x.t, key_of(k), value_in(x.group[k], k)).is_ok());
    }
    ASSERT_TRUE(tx.commit().is_ok());
  }
  {
    Transaction a = testing::begin(*x.db);
    Transaction b = testing::begin(*x.db);
    Result<Index*> busy = x.db->create_index(*x.t, "by_group", testing::group_of);
    ASSERT_EQ(busy.code(), Code::kBusy) << busy.status().to_string();
    EXPECT_NE(busy.status().to_string().find("external_transactions"), std::string::npos);
    a.abort();
    b.abort();
  }
  EXPECT_EQ(x.db->stats().indexes_built, 0u);
  Result<Index*> idx = x.db->create_index(*x.t, "by_group", testing::group_of);
  ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
  x.idx = *idx;
  expect_groups(x);
}

}  // namespace
}  // namespace braid
