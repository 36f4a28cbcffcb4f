// Crash-state enumeration and fail-the-Nth-I/O loops on the simulated file system (after
// SQLite's crash and I/O-error tests and TigerBeetle's simulated storage). Every crash point
// and fault is derived from BRAID_CRASH_SEED (default 1), so a failure replays from its seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "storage/damage_util.h"
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
  // The workload removes keys and writes them again: reclamation runs within the run, so the
  // crash points of the enumeration and the faults below fall among its steps too.
  EXPECT_GT(r.reclaimed, 0u);
  EXPECT_EQ(wl_verify(fs, kTxns, o, "clean"), kTxns);
  // Recovering again (after the recovery's own checkpoint) gives the same state.
  EXPECT_EQ(wl_verify(fs, kTxns, o, "clean, twice"), kTxns);
}

// Damage to one file of the directory, done after the power loss: the damaged-directory cases
// of the damage tests on every crash state. The answer must be every acknowledged commit or
// Corruption.
enum class FileDamage : int {
  kNone,
  kDeleteNewestCheckpoint,
  kFlipNewestCheckpoint,
  kFlipBothCheckpoints,
  kDeleteFirstSegment,
  kDeleteNewestSegment,
  kFlipNewestSegmentHeader,
  kFlipLastBlock,
};
constexpr int kFileDamages = 8;
constexpr const char* kFileDamageNames[kFileDamages] = {
    "none (power loss)", "delete newest ckpt", "flip newest ckpt", "flip both ckpts",
    "delete 1st seg",    "delete newest seg",  "flip seg header",  "flip last block"};

struct Damaged {
  bool applied = false;
  std::string file;
  // Commits the damage may take without an error: a flipped last block of a crashed log cannot
  // be told from a group commit torn in flight (docs/log-format.md, recovery rule 5), so its
  // commits may go, reported as a torn tail.
  int may_lose = 0;
};

Damaged damage_file(SimFileSystem& fs, FileDamage d) {
  const std::vector<std::string> segs = segments(fs, 0);
  Damaged out;
  switch (d) {
    case FileDamage::kNone:
      out.applied = true;
      break;
    case FileDamage::kDeleteNewestCheckpoint:
    case FileDamage::kFlipNewestCheckpoint:
      out.file = newest_checkpoint(fs);
      if (out.file.empty()) break;
      if (d == FileDamage::kDeleteNewestCheckpoint) {
        remove_file(fs, out.file);
      } else {
        flip(fs, out.file, size_of(fs, out.file) / 2);
      }
      out.applied = true;
      break;
    case FileDamage::kFlipBothCheckpoints:
      for (const std::string& ck : checkpoint_slots(fs)) {
        if (size_of(fs, ck) == 0) continue;
        flip(fs, ck, size_of(fs, ck) / 2);
        out.applied = true;
      }
      break;
    case FileDamage::kDeleteFirstSegment:
    case FileDamage::kDeleteNewestSegment:
      if (segs.empty()) break;
      out.file = d == FileDamage::kDeleteFirstSegment ? segs.front() : segs.back();
      remove_file(fs, out.file);
      out.applied = true;
      break;
    case FileDamage::kFlipNewestSegmentHeader:
      if (segs.empty() || size_of(fs, segs.back()) < storage::kSegmentHeaderBytes) break;
      out.file = segs.back();
      flip(fs, out.file, 20);
      out.applied = true;
      break;
    case FileDamage::kFlipLastBlock: {
      if (segs.empty()) break;
      out.file = segs.back();
      std::string img;
      EXPECT_TRUE(fs.peek("/db/" + out.file, &img));
      storage::SegmentScan scan;
      if (!storage::scan_segment(img, &scan, nullptr).is_ok() || scan.last_block == 0) break;
      storage::BlockHeader h{};
      std::memcpy(&h, img.data() + scan.last_block, sizeof h);
      flip(fs, out.file, scan.last_block + (storage::kBlockHeaderBytes + h.payload_len) / 2);
      out.may_lose = static_cast<int>(scan.last_block_txns);
      out.applied = true;
      break;
    }
  }
  return out;
}

// The workload of the enumeration: long enough for >= 2,000 crash points, with a runtime
// checkpoint every 8 KiB of log, so checkpoints race segment retirement many times over.
constexpr int kEnumTxns = 1400;
constexpr std::uint64_t kEnumCheckpointBytes = 8 << 10;

// Each crash state is one of kVariants: the files as the power loss left them (each of the five
// power-loss damages), or one file damage on top of a power-loss damage that rotates with k.
constexpr int kVariants = SimFileSystem::kDamageKinds + kFileDamages - 1;

// How much of the enumeration a build runs. A plain (Release) build visits every crash point
// with every variant (~13 s here). Sanitizer builds are 7x (ASan) to 25x (TSan) slower: ASan
// visits every 2nd crash point with 4 variants drawn per point from the seed, TSan every 8th
// with 3. BRAID_CRASH_STRIDE and BRAID_CRASH_VARIANTS override (1 and 12: the whole
// enumeration, ~100 s under ASan).
struct Sampling {
  std::uint64_t stride = 1;
  int variants = kVariants;
};
Sampling sampling() {
  Sampling s;
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  s.stride = 2;
  s.variants = 4;
#endif
#if __has_feature(thread_sanitizer)
  s.stride = 8;
  s.variants = 3;
#endif
#endif
  if (const char* e = std::getenv("BRAID_CRASH_STRIDE"); e != nullptr) {
    s.stride = std::max<std::uint64_t>(1, std::strtoull(e, nullptr, 10));
  }
  if (const char* e = std::getenv("BRAID_CRASH_VARIANTS"); e != nullptr) {
    s.variants = std::clamp(std::atoi(e), 1, kVariants);
  }
  return s;
}

// The enumeration over one configuration; `stride` multiplies the build's sampling stride.
void enumerate_crashes(const Options& o, std::uint64_t stride, const char* label) {
  // The full run's operation count bounds the crash points.
  auto full = std::make_shared<SimFileSystem>(seed());
  const WlRun run = wl_run(full, kEnumTxns, o);
  ASSERT_EQ(run.acked, kEnumTxns);
  if (o.isolation == Isolation::kSerializable) {
    EXPECT_EQ(run.refused, 3);  // the prologue's write skews were refused, and nothing hung
  }
  // Under a budget, the records keep going cold (about one eviction per commit).
  if (o.memory_budget_bytes != 0) {
    EXPECT_GT(run.evictions, std::uint64_t{kEnumTxns} / 2);
  }
  const std::uint64_t ops = full->ops();
  Sampling sample = sampling();
  sample.stride *= stride;
  std::uint64_t points = 0, states = 0, failures = 0, checked_twice = 0, under_way = 0;
  std::uint64_t tried[kFileDamages] = {}, refused[kFileDamages] = {}, torn[kFileDamages] = {};
  for (std::uint64_t k = 1; k <= ops; k += sample.stride) {
    ++points;
    auto fs = std::make_shared<SimFileSystem>(seed());
    fs->crash_after(k);
    const WlRun r = wl_run(fs, kEnumTxns, o);
    std::array<int, kVariants> order;
    std::iota(order.begin(), order.end(), 0);
    if (sample.variants < kVariants) {
      std::mt19937_64 rng(seed() * 7919 + k);
      std::shuffle(order.begin(), order.end(), rng);
    }
    for (int j = 0; j < sample.variants; ++j) {
      const int v = order[static_cast<std::size_t>(j)];
      const bool power_only = v < SimFileSystem::kDamageKinds;
      const int d = power_only ? v : static_cast<int>(k % SimFileSystem::kDamageKinds);
      const int f = power_only ? 0 : v - SimFileSystem::kDamageKinds + 1;
      std::shared_ptr<SimFileSystem> c = fs->clone(seed() + k);
      c->power_loss(static_cast<SimFileSystem::Damage>(d), seed() * 1000003 + k * 7 + d);
      const Damaged dmg = damage_file(*c, static_cast<FileDamage>(f));
      if (!dmg.applied) continue;
      const std::string what = "crash after op " + std::to_string(k) + ", damage " +
                               std::to_string(d) + ", " + kFileDamageNames[f] + " " + dmg.file +
                               ", seed " + std::to_string(seed());
      DurabilityStats stats;
      const int m = wl_verify(c, r.acked - dmg.may_lose, o, what, /*corruption_ok=*/f != 0, &stats);
      ++states;
      ++tried[f];
      if (m == kWlRefused) {
        ++refused[f];
        continue;
      }
      if (m < 0) {
        ++failures;
        continue;
      }
      if (stats.recovered_checkpoint_under_way) ++under_way;
      if (m < r.acked) {  // only a flipped last block, and never silently: a torn tail there
        ++torn[f];
        bool named = false;
        for (const std::string& t : stats.recovery_torn) {
          named = named || t.find(dmg.file) != std::string::npos;
        }
        EXPECT_TRUE(named) << what << ": lost " << r.acked - m << " without naming the block";
      }
      if (f == 0 && points % 8 == 0) {  // idempotence: the recovered state survives recovery
        EXPECT_EQ(wl_verify(c, m, o, what + ", recovered twice"), m);
        ++checked_twice;
      }
    }
  }
  std::printf("  %-20s %8s %10s %11s %10s\n", "file damage", "states", "all acked", "torn block",
              "Corruption");
  for (int f = 0; f < kFileDamages; ++f) {
    std::printf("  %-20s %8llu %10llu %11llu %10llu\n", kFileDamageNames[f],
                static_cast<unsigned long long>(tried[f]),
                static_cast<unsigned long long>(tried[f] - refused[f] - torn[f]),
                static_cast<unsigned long long>(torn[f]),
                static_cast<unsigned long long>(refused[f]));
  }
  std::printf(
      "crash-state enumeration%s: %llu of %llu crash points x %d of %d variants (%d power-loss "
      "damages, %d file damages) = %llu crash states, %llu failures (%llu recovered twice, "
      "%llu from a checkpoint under way)\n",
      label, static_cast<unsigned long long>(points), static_cast<unsigned long long>(ops),
      sample.variants, kVariants, SimFileSystem::kDamageKinds, kFileDamages - 1,
      static_cast<unsigned long long>(states), static_cast<unsigned long long>(failures),
      static_cast<unsigned long long>(checked_twice), static_cast<unsigned long long>(under_way));
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(refused[0], 0u);  // without file damage, every crash state opens
  EXPECT_EQ(torn[0], 0u);     // ... with every acknowledged commit
  for (int f = 0; f < kFileDamages; ++f) {
    if (f != static_cast<int>(FileDamage::kFlipLastBlock)) {
      EXPECT_EQ(torn[f], 0u) << kFileDamageNames[f];
    }
  }
  EXPECT_GE(ops, 2000u);  // the workload spans group commits, checkpoints and retirements
  for (int f = 1; f < kFileDamages; ++f) EXPECT_GT(tried[f], 0u) << kFileDamageNames[f];
}

TEST(Crash, EveryCrashPointEveryDamage) {
  enumerate_crashes(wl_options(kEnumCheckpointBytes), 1, "");
}

// The same under a one-byte memory budget: every record is evicted as soon as its commit is
// durable, checkpoints refer to records in parts and copy them out of segments, segments stay
// while cold entries need them, and recovery installs addresses that the check then reads
// back. Every other crash point (the runs are slower: each read of the check is a cold read).
Options budget_options(std::uint64_t checkpoint_bytes) {
  Options o = wl_options(checkpoint_bytes);
  o.memory_budget_bytes = 1;
  o.page_index_leaves = true;
  return o;
}

TEST(Crash, EveryCrashPointEveryDamageUnderAMemoryBudget) {
  enumerate_crashes(budget_options(kEnumCheckpointBytes), 2, " under a memory budget");
}

// Serializable: every commit certifies through SSN, and each run begins with commits SSN
// refuses after they took their timestamps (wl_refusal_prologue). Liveness: a crash point
// anywhere in them, or in the workload after them, neither hangs the run nor the recovery.
// Every 4th crash point (the snapshot-isolation enumeration above covers every one).
Options serializable_options(std::uint64_t checkpoint_bytes) {
  Options o = wl_options(checkpoint_bytes);
  o.isolation = Isolation::kSerializable;
  return o;
}

TEST(Crash, EveryCrashPointEveryDamageSerializable) {
  enumerate_crashes(serializable_options(kEnumCheckpointBytes), 4, " serializable");
}

// Checkpoints that pass the previous one's parts (DurabilityOptions::checkpoint_part_bytes):
// 2,400 keys of short values, so a checkpoint scans for several steps, writes dozens of 4 KiB
// parts and publishes manifests under way between the steps. A crash anywhere recovers every
// acknowledged commit, whether from a manifest under way or a whole one.
constexpr int kPassKeys = 2400;
constexpr int kPassTxns = 3600;
std::string pass_key(int k) {
  char b[16];
  std::snprintf(b, sizeof b, "p%05d", k);
  return b;
}
std::string pass_value(int i) {
  return std::string(static_cast<std::size_t>(8 + i % 24), static_cast<char>('a' + i % 26)) +
         std::to_string(i);
}
Task<Status> pass_txn(Tx& tx, Table* t, int i) {
  if (Status s = co_await tx.put(*t, pass_key(i % kPassKeys), pass_value(i)); !s.is_ok()) {
    co_return s;
  }
  if (i % 3 == 0) {
    Status s = co_await tx.remove(*t, pass_key((7 * i + 5) % kPassKeys));
    if (!s.is_ok() && s != Code::kNotFound) co_return s;
  }
  co_return co_await tx.put(*t, "last", std::to_string(i));
}
std::map<std::string, std::string> pass_model(int m) {
  std::map<std::string, std::string> s;
  for (int i = 0; i < m; ++i) {
    s[pass_key(i % kPassKeys)] = pass_value(i);
    if (i % 3 == 0) s.erase(pass_key((7 * i + 5) % kPassKeys));
    s["last"] = std::to_string(i);
  }
  return s;
}

// About 300 crash points spread over a run of `txns` transactions of `w` whose whole run took
// `ops` file operations (fewer under the sanitizers): each crashes a fresh run after its point,
// applies one kind of power-loss damage (the point's, modulo the kinds) and checks that every
// acknowledged commit recovers; `seen(run, stats)` is told each crashed run and its recovery.
// Returns the crash states checked.
template <typename Seen>
std::uint64_t crash_spread(const Options& o, const Workload& w, int txns, std::uint64_t ops,
                           Seen seen) {
  const std::uint64_t stride = std::max<std::uint64_t>(1, ops / 300) * sampling().stride;
  std::uint64_t states = 0;
  for (std::uint64_t k = stride / 2 + 1; k <= ops; k += stride) {
    auto fs = std::make_shared<SimFileSystem>(seed());
    fs->crash_after(k);
    const WlRun r = wl_run(fs, txns, o, w);
    const int d = static_cast<int>(k % SimFileSystem::kDamageKinds);
    fs->power_loss(static_cast<SimFileSystem::Damage>(d), seed() * 1000003 + k);
    const std::string what = "crash after op " + std::to_string(k) + " of " + std::to_string(ops) +
                             ", damage " + std::to_string(d) + ", seed " + std::to_string(seed());
    DurabilityStats stats;
    EXPECT_GE(wl_verify(fs, r.acked, o, what, false, &stats, w), r.acked) << what;
    ++states;
    seen(r, stats);
  }
  return states;
}

TEST(Crash, CrashesWhileACheckpointPassesThePreviousOnesParts) {
  const Options o = wl_options(48 << 10);
  const Workload w{pass_txn, pass_model};
  auto full = std::make_shared<SimFileSystem>(seed());
  const WlRun run = wl_run(full, kPassTxns, o, w);
  ASSERT_EQ(run.acked, kPassTxns);
  EXPECT_GT(run.parts_passed, 0u);
  EXPECT_EQ(wl_verify(full, kPassTxns, o, "clean", false, nullptr, w), kPassTxns);
  std::uint64_t under_way = 0;
  const std::uint64_t states =
      crash_spread(o, w, kPassTxns, full->ops(), [&](const WlRun&, const DurabilityStats& d) {
        if (d.recovered_checkpoint_under_way) ++under_way;
      });
  std::printf(
      "checkpoints passing parts: %llu parts passed in the full run; %llu crash states, "
      "%llu recovered from a manifest under way\n",
      static_cast<unsigned long long>(run.parts_passed), static_cast<unsigned long long>(states),
      static_cast<unsigned long long>(under_way));
  EXPECT_GT(under_way, 0u);
}

// Under a one-byte budget where the index pages, with keys enough for a tree of three levels
// (twice the keys of the workload above, two puts a transaction: some 200 leaves under five
// inner nodes once every key is in), so leaves and the inner nodes above them go to storage
// and come back all through the run; the 23 keys of the enumeration above make a tree that is
// its root alone, which never leaves. A crash anywhere, with any power-loss damage, recovers
// every acknowledged commit, read back through leaves the open adopted from the checkpoint's
// runs.
constexpr int kPagingKeys = 2 * kPassKeys;
Task<Status> paging_txn(Tx& tx, Table* t, int i) {
  for (const int k : {i % kPagingKeys, (i + kPassKeys) % kPagingKeys}) {
    if (Status s = co_await tx.put(*t, pass_key(k), pass_value(i)); !s.is_ok()) co_return s;
  }
  if (i % 3 == 0) {
    Status s = co_await tx.remove(*t, pass_key((7 * i + 5) % kPagingKeys));
    if (!s.is_ok() && s != Code::kNotFound) co_return s;
  }
  co_return co_await tx.put(*t, "last", std::to_string(i));
}
std::map<std::string, std::string> paging_model(int m) {
  std::map<std::string, std::string> s;
  for (int i = 0; i < m; ++i) {
    for (const int k : {i % kPagingKeys, (i + kPassKeys) % kPagingKeys}) {
      s[pass_key(k)] = pass_value(i);
    }
    if (i % 3 == 0) s.erase(pass_key((7 * i + 5) % kPagingKeys));
    s["last"] = std::to_string(i);
  }
  return s;
}

TEST(Crash, CrashesWhileIndexNodesGoToStorageAndBack) {
  const Options o = budget_options(48 << 10);
  ASSERT_TRUE(o.page_index_inner);  // the default
  const Workload w{paging_txn, paging_model};
  auto full = std::make_shared<SimFileSystem>(seed());
  const WlRun run = wl_run(full, kPassTxns, o, w);
  ASSERT_EQ(run.acked, kPassTxns);
  EXPECT_GT(run.leaf_evictions, 100u);
  EXPECT_GT(run.inner_evictions, 0u);
  EXPECT_EQ(wl_verify(full, kPassTxns, o, "clean", false, nullptr, w), kPassTxns);
  std::uint64_t inner_out = 0;
  const std::uint64_t states =
      crash_spread(o, w, kPassTxns, full->ops(), [&](const WlRun& r, const DurabilityStats&) {
        if (r.inner_evictions != 0) ++inner_out;
      });
  std::printf(
      "index nodes paging: the full run sent %llu leaves and %llu inner nodes to storage; %llu "
      "crash states, %llu of them after inner nodes had gone out\n",
      static_cast<unsigned long long>(run.leaf_evictions),
      static_cast<unsigned long long>(run.inner_evictions), static_cast<unsigned long long>(states),
      static_cast<unsigned long long>(inner_out));
  EXPECT_GT(inner_out, 0u);
}

struct FaultCase {
  SimFileSystem::Fault fault;
  const char* name;
};

void fail_the_nth_io(const Options& o, std::span<const FaultCase> cases, const char* label) {
  const std::uint64_t nths[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
  int runs = 0, halts = 0, read_errors = 0;
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
        if (fc.fault == SimFileSystem::Fault::kReadEio) {
          // A failed cold read fails its transaction, never the engine.
          EXPECT_TRUE(r.opened) << what;
          EXPECT_FALSE(r.halted) << what << ": " << r.why;
          if (r.acked < kTxns) ++read_errors;
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
      "fail-the-Nth-I/O%s: %d runs, %d halted the engine, %d stopped at a failed cold read; "
      "every acknowledged commit recovered\n",
      label, runs, halts, read_errors);
  EXPECT_GT(halts, 0);
  if (o.memory_budget_bytes != 0) {
    EXPECT_GT(read_errors, 0);
  }
}

constexpr FaultCase kWriteFaults[] = {{SimFileSystem::Fault::kEio, "EIO"},
                                      {SimFileSystem::Fault::kEnospc, "ENOSPC"},
                                      {SimFileSystem::Fault::kShortWrite, "short write"},
                                      {SimFileSystem::Fault::kSyncEio, "EIO on sync"}};

TEST(Crash, FailTheNthIo) { fail_the_nth_io(wl_options(), kWriteFaults, ""); }

TEST(Crash, FailTheNthIoSerializable) {
  fail_the_nth_io(serializable_options(32 << 10), kWriteFaults, " serializable");
}

// Under a one-byte budget the workload's writes read their records back first, so reads fail
// too: the transaction that met the error fails (IOError), the engine runs on.
TEST(Crash, FailTheNthIoUnderAMemoryBudget) {
  std::vector<FaultCase> cases(std::begin(kWriteFaults), std::end(kWriteFaults));
  cases.push_back({SimFileSystem::Fault::kReadEio, "EIO on read"});
  fail_the_nth_io(budget_options(32 << 10), cases, " under a memory budget");
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
