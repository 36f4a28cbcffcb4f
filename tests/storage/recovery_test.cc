// Recovery's answers to damaged directories, the real backend's kill loop, and the thread
// rule. BRAID_KILLS=N sets the kill loop's length (default 50).
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "storage/durability_util.h"
#include "storage/log_format.h"
#include "util/crc32c.h"
#include "util/random.h"

namespace braid::test {
namespace {

using storage::SimFileSystem;

std::shared_ptr<SimFileSystem> written(int n) {
  auto fs = std::make_shared<SimFileSystem>(7);
  EXPECT_EQ(wl_run(fs, n, wl_options(0)).acked, n);
  return fs;
}

TEST(Recovery, Crc32cKnownAnswer) {
  EXPECT_EQ(util::crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(util::crc32c("", 0), 0u);
}

// The state a crash leaves: no close blocks (a clean close writes one per log).
void strip_close_blocks(SimFileSystem& fs) {
  std::vector<std::string> names;
  ASSERT_TRUE(fs.list("/db", &names).is_ok());
  for (const std::string& n : names) {
    storage::LogName ln{};
    if (!storage::parse_log_file_name(n, &ln)) continue;
    std::string img;
    ASSERT_TRUE(fs.peek("/db/" + n, &img));
    if (img.size() < storage::kSegmentHeaderBytes + storage::kBlockHeaderBytes) continue;
    const auto h =
        storage::load<storage::BlockHeader>(img.data() + img.size() - storage::kBlockHeaderBytes);
    if (h.magic != storage::kBlockMagic ||
        h.kind != static_cast<std::uint32_t>(storage::BlockKind::kClose)) {
      continue;
    }
    Result<storage::FileId> f = fs.open("/db/" + n, {});
    ASSERT_TRUE(f.is_ok());
    ASSERT_TRUE(fs.truncate(*f, img.size() - storage::kBlockHeaderBytes).is_ok());
    ASSERT_TRUE(fs.sync(*f).is_ok());
    fs.close(*f);
  }
}

// The k-th segment (by number) of log `log` in the newest generation: segment numbers are
// database-wide, so a log's segments are not numbered 0, 1, 2.
std::string segment_name(SimFileSystem& fs, std::uint32_t log, std::size_t k) {
  std::vector<std::string> names;
  EXPECT_TRUE(fs.list("/db", &names).is_ok());
  std::uint64_t newest = 0;
  for (const std::string& n : names) {
    storage::LogName ln{};
    if (storage::parse_log_file_name(n, &ln)) newest = std::max(newest, ln.generation);
  }
  std::vector<std::pair<std::uint64_t, std::string>> segs;
  for (const std::string& n : names) {
    storage::LogName ln{};
    if (storage::parse_log_file_name(n, &ln) && ln.generation == newest && ln.log == log) {
      segs.emplace_back(ln.segment, n);
    }
  }
  std::sort(segs.begin(), segs.end());
  EXPECT_LT(k, segs.size());
  return k < segs.size() ? "/db/" + segs[k].second : std::string("/db/none");
}

TEST(Recovery, TornTailIsTheEndOfTheLog) {
  auto fs = written(100);
  strip_close_blocks(*fs);
  const std::string seg = segment_name(*fs, 0, 0);
  std::string img;
  ASSERT_TRUE(fs->peek(seg, &img));
  // Garbage over the last 100 bytes: the last block fails its checksum, as a group commit in
  // flight at a crash would, and no later block vouches for it.
  fs->poke(seg, img.size() - 100, std::string(100, '\x77'), false);
  auto db = open_sim(wl_options(0), fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  EXPECT_EQ((*db)->durability_stats().recovery_torn_tails, 1u);
  const auto state = wl_read(**db);
  const int m = std::stoi(state.at("last")) + 1;
  EXPECT_LT(m, 100);
  EXPECT_EQ(state, wl_model(m));
}

TEST(Recovery, DamagedLastBlockAfterACleanCloseIsCorruption) {
  auto fs = written(100);
  const std::string seg = segment_name(*fs, 0, 0);
  std::string img;
  ASSERT_TRUE(fs->peek(seg, &img));
  // The same damage without a crash: the close blocks vouch for every commit.
  fs->poke(seg, img.size() - 100, std::string(100, '\x77'), false);
  auto db = open_sim(wl_options(0), fs);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kCorruption);
  EXPECT_NE(db.status().message().find(seg.substr(4) + " at offset"), std::string::npos)
      << db.status().to_string();
}

TEST(Recovery, CorruptMiddleIsAnError) {
  auto fs = written(100);
  // One byte inside the first block; good blocks follow it.
  fs->poke(segment_name(*fs, 0, 0), storage::kSegmentHeaderBytes + 40, "\x01", false);
  auto db = open_sim(wl_options(0), fs);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kCorruption);
  EXPECT_NE(db.status().message().find("durable blocks after it"), std::string::npos)
      << db.status().to_string();
}

TEST(Recovery, WrongVersionIsAnError) {
  auto fs = written(20);
  const std::string seg = segment_name(*fs, 0, 0);
  storage::LogName ln{};
  ASSERT_TRUE(storage::parse_log_file_name(seg.substr(4), &ln));
  storage::SegmentHeader h{storage::kSegmentMagic, 99, 0, 1, ln.segment, 1, 0, 0};
  h.crc = util::crc32c(&h, offsetof(storage::SegmentHeader, crc));
  fs->poke(seg, 0, std::string(reinterpret_cast<const char*>(&h), sizeof h), false);
  auto db = open_sim(wl_options(0), fs);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kCorruption);
  EXPECT_NE(db.status().message().find("version 99"), std::string::npos) << db.status().to_string();
}

TEST(Recovery, MissingSegmentOrCatalogIsAnError) {
  auto fs = written(600);  // 64 KiB segments: several per log
  // A middle segment of log 0: its predecessor's kNext block names it.
  ASSERT_TRUE(fs->remove(segment_name(*fs, 0, 1)).is_ok());
  ASSERT_TRUE(fs->sync_dir("/db").is_ok());
  auto db = open_sim(wl_options(0), fs);
  ASSERT_FALSE(db.is_ok());
  EXPECT_EQ(db.code(), Code::kCorruption);
  EXPECT_NE(db.status().message().find("missing"), std::string::npos) << db.status().to_string();

  auto fs2 = written(10);
  ASSERT_TRUE(fs2->remove("/db/CATALOG").is_ok());
  auto db2 = open_sim(wl_options(0), fs2);
  ASSERT_FALSE(db2.is_ok());
  EXPECT_EQ(db2.code(), Code::kCorruption);
  EXPECT_NE(db2.status().message().find("no CATALOG"), std::string::npos);
}

Task<Status> put_one(Tx& tx, Table* t, std::string k) { co_return co_await tx.put(*t, k, "v"); }

Task<Status> get_one(Tx& tx, Table* t, std::string k, std::string* out) {
  Result<std::string_view> v = co_await tx.get(*t, k);
  if (!v.is_ok()) co_return v.status();
  *out = std::string(*v);
  co_return Status::ok();
}

// Threads of this process, without io_uring's kernel workers (iou-wrk-*, iou-sqp-*): the
// kernel creates those to complete queued I/O and they never run engine code.
std::size_t thread_count() {
  std::size_t n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("iou-", 0) != 0) ++n;
  }
  ::closedir(d);
  return n;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/braid-recovery-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d;
}

// A durable database in `path` with two workers and a small version arena.
Options two_workers(const std::string& path) {
  Options o;
  o.directory = path;
  o.workers = 2;
  o.huge_pages = false;
  o.max_version_bytes = std::uint64_t{64} << 20;
  return o;
}

// Creates table "t" and commits keys k0..k<n-1>, one transaction each.
void put_keys(Database& db, int n) {
  Table* t = *db.create_table("t");
  for (int i = 0; i < n; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(db.execute([t, k](Tx& tx) { return put_one(tx, t, k); }).is_ok());
  }
}

TEST(Recovery, EngineRunsNoThreadsBesidesItsWorkers) {
  const std::string dir = temp_dir();
  const std::size_t before = thread_count();
  {
    auto db = Database::open(two_workers(dir + "/db"));
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    put_keys(**db, 200);
    ASSERT_TRUE((*db)->checkpoint().is_ok());
    // Group commit, a checkpoint and segment retirement ran: still the workers only.
    EXPECT_EQ(thread_count(), before + 2);
    EXPECT_GE((*db)->durability_stats().checkpoints, 1u);
  }
  EXPECT_EQ(thread_count(), before);
  std::system(("rm -rf " + dir).c_str());
}

// Resident memory of this process, in bytes.
std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

// A log's two buffers cost memory only where its blocks reached: three logs of two 64 MiB
// buffers each (384 MiB) hold a few pages after the open and after small commits, where
// filling them at the open made every database pay for its logs' full size, read-only
// workloads included.
TEST(Recovery, ALogsBuffersCostMemoryOnlyWhereItsBlocksReached) {
  const std::string dir = temp_dir();
  const std::uint64_t before = resident_bytes();
  {
    Options o = two_workers(dir + "/db");
    o.durability.log_buffer_bytes = 64u << 20;
    o.durability.log_segment_bytes = std::uint64_t{128} << 20;
    auto db = Database::open(o);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    put_keys(**db, 200);
    const std::uint64_t grown = resident_bytes() - std::min(before, resident_bytes());
    EXPECT_LT(grown, std::uint64_t{64} << 20) << grown;
  }
  std::system(("rm -rf " + dir).c_str());
}

// Records in table `name`, counted by one scan (-1 if it fails).
int records_of(Database& db, const std::string& name) {
  Result<Table*> t = db.open_table(name);
  Result<Transaction> tx = db.begin();
  if (!t.is_ok() || !tx.is_ok()) return -1;
  int n = 0;
  const Status s = tx->scan(**t, "", "", 0, [&](std::string_view, std::string_view) {
    ++n;
    return true;
  });
  return s.is_ok() && tx->commit().is_ok() ? n : -1;
}

// Three application threads each put `per_thread` keys k<thread>-<i> through execute, pausing
// 6 ms every `pause_every` puts (0: never). Answers how many failed.
int put_from_threads(Database& db, Table* t, int per_thread, int pause_every) {
  std::vector<std::thread> apps;
  std::atomic<int> failed{0};
  for (int a = 0; a < 3; ++a) {
    apps.emplace_back([&, a] {
      for (int i = 0; i < per_thread; ++i) {
        const std::string k = "k" + std::to_string(a) + "-" + std::to_string(i);
        if (!db.execute([t, k](Tx& tx) { return put_one(tx, t, k); }).is_ok()) ++failed;
        if (pause_every != 0 && i % pause_every == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(6));
        }
      }
    });
  }
  for (auto& th : apps) th.join();
  return failed.load();
}

// DurabilityOptions::flusher_thread (the oversubscribed baseline of MosaicDB Fig. 10): exactly
// one thread more than the workers, and it alone makes the workers' commits durable — submitted
// from several application threads, acknowledged, a checkpoint taken — so that after a reopen
// every acknowledged commit is there.
TEST(Recovery, AFlusherThreadMakesTheWorkersCommitsDurable) {
  const std::string dir = temp_dir();
  const std::size_t before = thread_count();
  constexpr int kPerThread = 150;
  Options o = two_workers(dir + "/db");
  o.durability.flusher_thread = true;
  {
    auto db = Database::open(o);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    Table* t = *(*db)->create_table("t");
    EXPECT_EQ(thread_count(), before + 3);  // the workers and the flusher
    EXPECT_EQ(put_from_threads(**db, t, kPerThread, 0), 0);
    ASSERT_TRUE((*db)->checkpoint().is_ok());
    for (int i = 0; i < 50; ++i) {  // after the checkpoint too
      const std::string k = "late" + std::to_string(i);
      ASSERT_TRUE((*db)->execute([t, k](Tx& tx) { return put_one(tx, t, k); }).is_ok());
    }
  }
  EXPECT_EQ(thread_count(), before);
  o.durability.flusher_thread = false;
  auto db = Database::open(o);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  EXPECT_EQ(records_of(**db, "t"), 3 * kPerThread + 50);
  o.durability.flusher_interval_us = 0;
  o.durability.flusher_thread = true;
  o.directory = dir + "/other";
  EXPECT_EQ(Database::open(o).status().code(), Code::kInvalidArgument);
  std::system(("rm -rf " + dir).c_str());
}

std::size_t submit_poll_threads() {
  std::size_t n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = ::readdir(d)) {
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("iou-sqp-", 0) == 0) ++n;
  }
  ::closedir(d);
  return n;
}

// DurabilityOptions::sq_poll_cpu: one polling kernel thread for all the workers' rings, and
// everything the rings carry still works through it — durable commits from several application
// threads, a checkpoint, and cold reads (a budget of one byte evicts every record it may, so
// the reads back go to storage) — with every acknowledged commit there after a reopen.
TEST(Recovery, SubmissionPollingCarriesCommitsCheckpointsAndColdReads) {
  const std::string dir = temp_dir();
  constexpr int kPerThread = 100;
  Options o = two_workers(dir + "/db");
  o.memory_budget_bytes = 1;
  o.page_index_leaves = true;
  o.durability.sq_poll_cpu = 0;
  o.durability.sq_poll_idle_ms = 5;  // sleeps between the phases too: the wake-up path runs
  ASSERT_EQ(submit_poll_threads(), 0u);
  {
    auto db = Database::open(o);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    EXPECT_EQ(submit_poll_threads(), 1u);  // one thread, however many rings
    Table* t = *(*db)->create_table("t");
    EXPECT_EQ(put_from_threads(**db, t, kPerThread, 10), 0);
    ASSERT_TRUE((*db)->checkpoint().is_ok());
    const std::uint64_t cold_before = (*db)->stats().cold_reads;
    for (int a = 0; a < 3; ++a) {
      for (int i = 0; i < kPerThread; i += 7) {
        std::string v;
        const std::string k = "k" + std::to_string(a) + "-" + std::to_string(i);
        ASSERT_TRUE((*db)->execute([t, k, &v](Tx& tx) { return get_one(tx, t, k, &v); }).is_ok());
        EXPECT_EQ(v, "v") << k;
      }
    }
    EXPECT_GT((*db)->stats().cold_reads, cold_before);
  }
  // The kernel tears a ring down asynchronously: its thread leaves shortly after the close.
  for (int i = 0; i < 500 && submit_poll_threads() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(submit_poll_threads(), 0u);
  o.durability.sq_poll_cpu = -1;
  auto db = Database::open(o);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  EXPECT_EQ(submit_poll_threads(), 0u);
  EXPECT_EQ(records_of(**db, "t"), 3 * kPerThread);
  std::system(("rm -rf " + dir).c_str());
}

// Backpressure of durable commits: a worker admits a transaction only while every open one
// could still join its ring of commits waiting for the disk. With a ring of 2, a batch of 8 and
// the disk stalled, the 8 transactions of a batch used to end into a ring that held 2 (an
// assertion; found by the flusher baseline, whose acknowledgements lag). Now the run finishes
// once the disk answers, every commit durable.
TEST(Recovery, AStalledDiskNeverOverflowsTheCommitWaiters) {
  auto fs = std::make_shared<SimFileSystem>(13);
  Options o = wl_options(0);
  o.slots_per_worker = 8;
  o.exec.mode = ExecMode::kInterleaved;
  o.exec.batch = 8;
  o.durability.max_commit_waiters = 2;
  auto db = open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  struct Puts : TxnGenerator {
    Table* t;
    int made = 0, ok = 0;
    bool next(Tx& tx, Task<Status>* out) override {
      if (made == 40) return false;
      *out = put_one(tx, t, "k" + std::to_string(made++));
      return true;
    }
    void finished(const Status& s, std::uint64_t) override { ok += s.is_ok() ? 1 : 0; }
  } gen;
  gen.t = t;
  fs->hold_io(true);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fs->hold_io(false);
  });
  TxnGenerator* gens[] = {&gen};
  EXPECT_TRUE((*db)->run(gens, o.exec).is_ok());
  release.join();
  EXPECT_EQ(gen.ok, 40);
  EXPECT_GE((*db)->durability_stats().durable_clock, 40u);
}

// Under kDurable a commit is visible once installed, before its log block is on disk. A
// read-only transaction that read it must not be acknowledged until it is durable: a crash
// in between would lose what the reader was told (seen in 7 of ~2,200 kill
// cycles before). The simulated disk stalls with one writer's commit in flight; readers on
// both paths (an application thread's Transaction, a worker's execute) must wait for it.
TEST(Recovery, ReadOnlyCommitWaitsUntilItsSnapshotIsDurable) {
  auto fs = std::make_shared<SimFileSystem>(11);
  Options o = wl_options(0);
  o.exec.mode = ExecMode::kInterleaved;  // the worker runs a reader while the writer waits
  auto db = open_sim(o, fs);
  ASSERT_TRUE(db.is_ok()) << db.status().to_string();
  Table* t = *(*db)->create_table("t");
  auto durable = [&] { return (*db)->durability_stats().durable_clock; };

  fs->hold_io(true);
  std::atomic<bool> written{false};
  std::thread writer([&] {
    EXPECT_TRUE((*db)->execute([t](Tx& tx) { return put_one(tx, t, "k"); }).is_ok());
    written = true;
  });
  // The write becomes visible while the disk holds it.
  std::optional<Transaction> reader;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!reader && std::chrono::steady_clock::now() < deadline) {
    Transaction tx = (*db)->begin().value();
    if (tx.get(*t, "k").is_ok()) {
      reader.emplace(std::move(tx));
    } else {
      tx.abort();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ASSERT_TRUE(reader.has_value()) << "the write never became visible";
  const std::uint64_t snapshot = reader->snapshot();
  EXPECT_FALSE(written);
  EXPECT_LT(durable(), snapshot);

  std::atomic<bool> app_done{false}, worker_done{false};
  std::thread app([&] {
    EXPECT_TRUE(reader->commit().is_ok());
    EXPECT_GE(durable(), snapshot);
    app_done = true;
  });
  std::thread on_worker([&] {
    std::string v;
    EXPECT_TRUE((*db)->execute([t, &v](Tx& tx) { return get_one(tx, t, "k", &v); }).is_ok());
    EXPECT_EQ(v, "v");
    EXPECT_GE(durable(), snapshot);
    worker_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(app_done) << "an application thread's read-only commit returned before the "
                            "version it read was durable";
  EXPECT_FALSE(worker_done) << "a worker's read-only commit returned before the version it "
                               "read was durable";
  EXPECT_FALSE(written);
  fs->hold_io(false);
  writer.join();
  app.join();
  on_worker.join();
  EXPECT_TRUE(written);
  EXPECT_TRUE(app_done);
  EXPECT_TRUE(worker_done);
}

// ---- Process-kill loop on the real backend
// -------------------------------------------------------

constexpr int kAccounts = 16;
constexpr long kInitial = 1000;
constexpr int kFillers = 4000;  // under a budget

std::string acct(int i) { return "a" + std::to_string(100 + i); }

// Transfers form chains, one per submitting slot ("R.S.K": round R, batch S, slot K) and per
// application thread ("R.tT.N"). Each transfer inserts its marker "p<id>" and removes the
// marker of the chain's last committed transfer, so the bank keeps a queue of markers that
// come and go, and reclamation (keys out of the index, OIDs reused) runs all through the loop.
// A chain's key and its transfer's place in it:
std::pair<std::string, long> chain_of(const std::string& id) {
  const std::size_t a = id.find('.');
  const std::size_t b = id.find('.', a + 1);
  if (id[a + 1] == 't') return {id.substr(0, b), std::stol(id.substr(b + 1))};
  return {id.substr(0, a) + id.substr(b), std::stol(id.substr(a + 1, b - a - 1))};
}

// `prev`: the chain's last committed transfer (empty: none yet).
Task<Status> transfer(Tx& tx, Table* t, int from, int to, long amount, std::string id, int audit,
                      std::string prev) {
  if (audit >= 0) {
    auto c = co_await tx.get(*t, acct(audit));
    if (!c.is_ok()) co_return c.status();
  }
  auto a = co_await tx.get(*t, acct(from));
  if (!a.is_ok()) co_return a.status();
  auto b = co_await tx.get(*t, acct(to));
  if (!b.is_ok()) co_return b.status();
  const long va = std::stol(std::string(*a)) - amount;
  const long vb = std::stol(std::string(*b)) + amount;
  if (Status s = co_await tx.put(*t, acct(from), std::to_string(va)); !s.is_ok()) co_return s;
  if (Status s = co_await tx.put(*t, acct(to), std::to_string(vb)); !s.is_ok()) co_return s;
  // The chain's marker moves on.
  if (!prev.empty()) {
    if (Status s = co_await tx.remove(*t, "p" + prev); !s.is_ok()) co_return s;
  }
  if (Status s = co_await tx.insert(*t, "p" + id, "m"); !s.is_ok()) co_return s;
  // The history record: which transfer this was, so a recovered state can be re-derived.
  co_return co_await tx.insert(
      *t, "h" + id, std::to_string(from) + " " + std::to_string(to) + " " + std::to_string(amount));
}

// The same through the blocking API on an application thread; OK: committed (durable).
Status blocking_transfer(Database& db, Table* t, int from, int to, long amount,
                         const std::string& id, int audit, const std::string& prev,
                         std::uint64_t* cts) {
  Result<Transaction> begun = db.begin();
  if (!begun.is_ok()) return begun.status();
  Transaction& tx = *begun;
  if (audit >= 0) {
    if (auto c = tx.get(*t, acct(audit)); !c.is_ok()) return c.status();
  }
  auto a = tx.get(*t, acct(from));
  if (!a.is_ok()) return a.status();
  const long va = std::stol(std::string(*a)) - amount;
  auto b = tx.get(*t, acct(to));
  if (!b.is_ok()) return b.status();
  const long vb = std::stol(std::string(*b)) + amount;
  if (Status s = tx.put(*t, acct(from), std::to_string(va)); !s.is_ok()) return s;
  if (Status s = tx.put(*t, acct(to), std::to_string(vb)); !s.is_ok()) return s;
  if (!prev.empty()) {
    if (Status s = tx.remove(*t, "p" + prev); !s.is_ok()) return s;
  }
  if (Status s = tx.insert(*t, "p" + id, "m"); !s.is_ok()) return s;
  if (Status s =
          tx.insert(*t, "h" + id,
                    std::to_string(from) + " " + std::to_string(to) + " " + std::to_string(amount));
      !s.is_ok()) {
    return s;
  }
  Status s = tx.commit();
  *cts = tx.commit_timestamp();
  return s;
}

// The child: durable transfers; each acknowledgement goes to `acks` (synced) before the next
// batch is submitted. Serializable: every transfer also reads a third account, and two
// application threads run blocking transfers beside the workers' (the configuration in which
// refused serializable commits once stopped the durable clock). Never returns.
[[noreturn]] void child(const std::string& dir, int round, std::uint64_t budget,
                        bool serializable) {
  Options o;
  o.directory = dir;
  o.isolation = serializable ? Isolation::kSerializable : Isolation::kSnapshot;
  o.memory_budget_bytes = budget;
  o.page_index_leaves = budget != 0;  // the kill loop with leaves going out too
  o.workers = 2;
  o.huge_pages = false;
  o.max_version_bytes = std::uint64_t{256} << 20;
  o.durability.log_buffer_bytes = 256 << 10;
  o.durability.log_segment_bytes = 1 << 20;
  o.durability.checkpoint_log_bytes = 512 << 10;
  auto db = Database::open(o);
  if (!db.is_ok()) {
    std::fprintf(stderr, "child: open: %s\n", db.status().to_string().c_str());
    std::_Exit(3);
  }
  Table* t;
  if (auto found = (*db)->open_table("bank"); found.is_ok()) {
    t = *found;
  } else {
    t = *(*db)->create_table("bank");
    Transaction tx = (*db)->begin().value();
    for (int i = 0; i < kAccounts; ++i) (void)tx.insert(*t, acct(i), std::to_string(kInitial));
    // Under a budget, filler records enough for an index of three levels from the start, so
    // that leaves and the inner nodes above them go to storage all through the loop.
    for (int i = 0; budget != 0 && i < kFillers; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "f%05d", i);
      (void)tx.insert(*t, key, "filler");
    }
    if (!tx.commit().is_ok()) std::_Exit(4);
  }
  FILE* acks = std::fopen((dir + "/../acks").c_str(), "a");
  std::mutex acks_mutex;
  const auto ack = [&](const std::string& lines) {
    std::lock_guard<std::mutex> g(acks_mutex);
    std::fwrite(lines.data(), 1, lines.size(), acks);
    std::fflush(acks);
    ::fdatasync(::fileno(acks));
  };
  const auto audit_of = [&](util::Rng& r, int from, int to) {
    if (!serializable) return -1;
    int c = static_cast<int>(r.uniform(kAccounts));
    while (c == from || c == to) c = (c + 1) % kAccounts;
    return c;
  };
  if (serializable) {
    for (int thread = 0; thread < 2; ++thread) {
      std::thread([&, thread] {
        util::Rng r(static_cast<std::uint64_t>(round) * 104729 +
                    static_cast<std::uint64_t>(thread));
        std::string last;  // the chain's last committed transfer
        for (std::uint64_t n = 0;; ++n) {
          const int from = static_cast<int>(r.uniform(kAccounts));
          const int to = (from + 1 + static_cast<int>(r.uniform(kAccounts - 1))) % kAccounts;
          const std::string id =
              std::to_string(round) + ".t" + std::to_string(thread) + "." + std::to_string(n);
          std::uint64_t cts = 0;
          if (blocking_transfer(**db, t, from, to, static_cast<long>(r.uniform(50)), id,
                                audit_of(r, from, to), last, &cts)
                  .is_ok()) {
            ack(id + " " + std::to_string(cts) + "\n");
            last = id;
          }
        }
      }).detach();
    }
  }
  util::Rng rng(static_cast<std::uint64_t>(round) * 7919 + 1);
  std::string last[8];  // each slot's chain: its last committed transfer
  for (std::uint64_t seq = 0;; ++seq) {
    std::vector<std::pair<std::string, Pending>> batch;
    for (int k = 0; k < 8; ++k) {
      const int from = static_cast<int>(rng.uniform(kAccounts));
      const int to = (from + 1 + static_cast<int>(rng.uniform(kAccounts - 1))) % kAccounts;
      const long amount = static_cast<long>(rng.uniform(50));
      const std::string id =
          std::to_string(round) + "." + std::to_string(seq) + "." + std::to_string(k);
      const int audit = audit_of(rng, from, to);
      const std::string prev = last[k];
      auto p =
          (*db)->submit([=](Tx& tx) { return transfer(tx, t, from, to, amount, id, audit, prev); },
                        {.worker = -1, .conflict_retries = 100});
      if (p.is_ok()) batch.emplace_back(id, std::move(*p));
    }
    std::string lines;
    for (auto& [id, p] : batch) {
      if (p.wait().is_ok()) {
        lines += id + " " + std::to_string(p.commit_timestamp()) + "\n";
        last[std::stoi(id.substr(id.rfind('.') + 1))] = id;
      }
    }
    ack(lines);
  }
}

std::uint64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

// Cuts `path` back to its last whole line. A SIGKILL can cut a child's last write of
// acknowledgements short (the kernel stops a write between pages once a fatal signal is
// pending): that line was never acknowledged whole, and the next child's lines would run on
// from it ("36.0.0 457" and "37.0.0 ..." read back as 36.0.0 at 45737, once in CI).
void cut_partial_line(const std::string& path) {
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.empty() || text.back() == '\n') return;
  const std::size_t end = text.rfind('\n');
  std::filesystem::resize_file(path, end == std::string::npos ? 0 : end + 1);
}

// `budget`: Options::memory_budget_bytes of the child and the check (1: every record evicted
// as soon as it may be, so transfers read accounts back from the log and recovery installs
// addresses that the check's scan reads).
// `serializable`: the child runs serializable with application threads beside the workers,
// and each round is also a liveness check: the child is killed only after it acknowledged a
// transfer since it (re)opened, and one that acknowledges nothing for 60 s fails the test.
void kill_loop(std::uint64_t budget, int default_kills, bool serializable = false) {
  const char* env = std::getenv("BRAID_KILLS");
  const int kills = env != nullptr ? std::atoi(env) : default_kills;
  std::uint64_t cold_reads = 0;
  std::uint64_t leaf_loads = 0;  // index leaves the checks read back (under a budget)
  std::size_t keys_max = 0;
  std::size_t markers_max = 0;
  const std::string root = temp_dir();
  const std::string dir = root + "/db";
  util::Rng rng(12345);
  std::uint64_t acked_total = 0;
  double recovery_max = 0;
  for (int round = 0; round < kills; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    const std::uint64_t acks_before = file_bytes(root + "/acks");
    if (pid == 0) child(dir, round, budget, serializable);
    if (serializable) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (file_bytes(root + "/acks") == acks_before &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (file_bytes(root + "/acks") == acks_before) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        FAIL() << "round " << round << ": the child acknowledged nothing for 60 s (hung)";
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng.uniform(100000)));
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20000 + rng.uniform(180000)));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);
    cut_partial_line(root + "/acks");

    // Reopen and check.
    Options o;
    o.directory = dir;
    o.memory_budget_bytes = budget;
    o.page_index_leaves = budget != 0;
    o.workers = 1;
    o.huge_pages = false;
    o.max_version_bytes = std::uint64_t{256} << 20;
    auto db = Database::open(o);
    ASSERT_TRUE(db.is_ok()) << "round " << round << ": " << db.status().to_string();
    recovery_max = std::max(recovery_max, (*db)->durability_stats().recovery_seconds);
    auto bank = (*db)->open_table("bank");
    if (!bank.is_ok()) continue;  // killed before the accounts were created
    std::map<std::string, std::string> state;
    {
      Transaction tx = (*db)->begin().value();
      ASSERT_TRUE(tx.scan(**bank, "", "", 0, [&](std::string_view k, std::string_view v) {
                      state.emplace(k, v);
                      return true;
                    }).is_ok());
    }
    if (state.empty()) continue;
    // Balances re-derived from the history records equal the balances: no partial transfer.
    std::vector<long> derived(kAccounts, kInitial);
    long total = 0;
    std::size_t history = 0;
    for (const auto& [k, v] : state) {
      if (k[0] == 'h') {
        std::istringstream in(v);
        int from, to;
        long amount;
        in >> from >> to >> amount;
        derived[static_cast<std::size_t>(from)] -= amount;
        derived[static_cast<std::size_t>(to)] += amount;
        ++history;
      }
    }
    for (int i = 0; i < kAccounts; ++i) {
      ASSERT_EQ(std::stol(state.at(acct(i))), derived[static_cast<std::size_t>(i)])
          << "round " << round << ": account " << i;
      total += derived[static_cast<std::size_t>(i)];
    }
    ASSERT_EQ(total, kAccounts * kInitial) << "round " << round;
    // Markers went in and out with their transfers: each chain keeps exactly the marker of
    // its last recovered transfer.
    std::map<std::string, long> newest;  // chain -> its last recovered transfer's place
    std::map<std::string, std::vector<long>> marked;
    std::size_t markers = 0;
    for (const auto& [k, v] : state) {
      if (k[0] == 'h') {
        const auto [chain, at] = chain_of(k.substr(1));
        newest[chain] = std::max(newest.count(chain) != 0 ? newest[chain] : at, at);
      } else if (k[0] == 'p') {
        ASSERT_EQ(state.count("h" + k.substr(1)), 1u) << "round " << round << ": " << k;
        const auto [chain, at] = chain_of(k.substr(1));
        marked[chain].push_back(at);
        ++markers;
      }
    }
    for (const auto& [chain, at] : newest) {
      ASSERT_EQ(marked[chain], std::vector<long>{at}) << "round " << round << ": chain " << chain;
    }
    ASSERT_EQ(marked.size(), newest.size()) << "round " << round;
    markers_max = std::max(markers_max, markers);
    // Every acknowledged transfer is present, and nothing after the recovered clock.
    const std::uint64_t clock = (*db)->stats().commit_clock;
    std::ifstream acks(root + "/acks");
    std::string id;
    std::uint64_t cts;
    std::uint64_t acked = 0;
    while (acks >> id >> cts) {
      ++acked;
      ASSERT_LE(cts, clock) << "round " << round << ": acknowledged " << id << " at " << cts
                            << " beyond the recovered clock " << clock;
      ASSERT_EQ(state.count("h" + id), 1u)
          << "round " << round << ": acknowledged " << id << " is missing";
    }
    ASSERT_LE(acked, history);
    acked_total = acked;
    cold_reads += (*db)->stats().cold_reads;
    leaf_loads += (*db)->stats().index_leaf_loads;
    keys_max = std::max(keys_max, state.size());
  }
  std::printf(
      "kill loop%s: %d SIGKILLs, %llu acknowledged transfers all recovered, bank total "
      "conserved, at most %zu chain markers left, slowest recovery %.3f s, up to %zu keys, "
      "%llu index leaves read back by the checks\n",
      budget != 0    ? " under a memory budget"
      : serializable ? " serializable"
                     : "",
      kills, static_cast<unsigned long long>(acked_total), markers_max, recovery_max, keys_max,
      static_cast<unsigned long long>(leaf_loads));
  // Recovery under the budget installed addresses: the check's scans read records back, and
  // the index (its history keys never leave) outgrew one leaf, so each check's open adopted
  // the leaves the checkpoints listed and its scan read them back.
  if (budget != 0) {
    EXPECT_GT(cold_reads, 0u);
    EXPECT_GT(leaf_loads, 0u);
  }
  std::system(("rm -rf " + root).c_str());
}

TEST(Recovery, KillLoop) { kill_loop(0, 50); }
TEST(Recovery, KillLoopUnderAMemoryBudget) { kill_loop(1, 30); }
TEST(Recovery, KillLoopSerializable) { kill_loop(0, 30, true); }

}  // namespace
}  // namespace braid::test
