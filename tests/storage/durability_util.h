// A deterministic durable workload on the simulated file system, and its reference model.
//
// One worker in sequential mode: transaction i commits i-th, so the state after any crash must
// equal the model after the first m transactions for some m at least the number acknowledged.
// Transaction i puts k(i % 23) := value(i), removes k(3i % 23) when i % 5 == 0, and puts
// "last" := i, so "last" names m - 1.
#pragma once

#include <braid/braid.h>
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/worker_pool.h"
#include "storage/sim_fs.h"

namespace braid::test {

inline std::string wl_key(int k) { return "k" + std::to_string(k); }
inline std::string wl_value(int i) {
  return std::string(static_cast<std::size_t>(200 + i % 300), static_cast<char>('a' + i % 26)) +
         std::to_string(i);
}
inline void wl_apply(std::map<std::string, std::string>* m, int i) {
  (*m)[wl_key(i % 23)] = wl_value(i);
  if (i % 5 == 0) m->erase(wl_key(3 * i % 23));
  (*m)["last"] = std::to_string(i);
}
// The state after the first m transactions. The crash-state enumeration asks ~10^4 times, for
// m up to ~1,400: every 64th state is kept and the rest replayed from the nearest.
inline std::map<std::string, std::string> wl_model(int m) {
  constexpr int kEvery = 64;
  static std::mutex mu;
  static std::vector<std::map<std::string, std::string>> kept(1);
  std::lock_guard<std::mutex> g(mu);
  while (static_cast<int>(kept.size()) <= m / kEvery) {
    std::map<std::string, std::string> s = kept.back();
    const int from = static_cast<int>(kept.size() - 1) * kEvery;
    for (int i = from; i < from + kEvery; ++i) wl_apply(&s, i);
    kept.push_back(std::move(s));
  }
  std::map<std::string, std::string> s = kept[static_cast<std::size_t>(m / kEvery)];
  for (int i = m / kEvery * kEvery; i < m; ++i) wl_apply(&s, i);
  return s;
}

inline Task<Status> wl_txn(Tx& tx, Table* t, int i) {
  const std::string a = wl_key(i % 23), b = wl_key(3 * i % 23), v = wl_value(i),
                    last = std::to_string(i);
  if (Status s = co_await tx.put(*t, a, v); !s.is_ok()) co_return s;
  if (i % 5 == 0) {
    Status s = co_await tx.remove(*t, b);
    if (!s.is_ok() && s != Code::kNotFound) co_return s;
  }
  co_return co_await tx.put(*t, "last", last);
}

// A workload of this shape: transaction i of `txn`, and the state after the first m of them.
// Each puts "last" := i last, so "last" names m - 1.
struct Workload {
  Task<Status> (*txn)(Tx&, Table*, int) = wl_txn;
  std::map<std::string, std::string> (*model)(int) = wl_model;
};

class WlGenerator final : public TxnGenerator {
 public:
  WlGenerator(Table* t, int n, Workload w = {}) : t_(t), n_(n), w_(w) {}
  bool next(Tx& tx, Task<Status>* out) override {
    if (stopped_ || next_ >= n_) return false;
    *out = w_.txn(tx, t_, next_++);
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    if (s.is_ok() && !stopped_) {
      ++acked_;
    } else {
      stopped_ = true;  // after a failure nothing may be acknowledged: stop producing
      if (!s.is_ok()) saw_error_ = true;
    }
  }
  int acked() const { return acked_; }
  bool saw_error() const { return saw_error_; }

 private:
  Table* t_;
  int n_;
  Workload w_;
  int next_ = 0;
  int acked_ = 0;
  bool stopped_ = false;
  bool saw_error_ = false;
};

inline Options wl_options(std::uint64_t checkpoint_bytes = 32 << 10) {
  Options o;
  o.directory = "/db";
  o.workers = 1;
  o.slots_per_worker = 4;
  o.external_transactions = 4;
  o.exec.mode = ExecMode::kSequential;
  o.exec.batch = 1;
  o.max_version_bytes = std::uint64_t{64} << 20;
  o.max_records_per_table = 1 << 16;
  o.huge_pages = false;
  o.durability.log_buffer_bytes = 16 << 10;
  o.durability.log_segment_bytes = 64 << 10;
  o.durability.checkpoint_log_bytes = checkpoint_bytes;
  // Parts of a few records: each checkpoint writes several (a checkpoint of this workload is
  // written in one step, too few for it to pass the previous one's parts: the crash test
  // CrashesWhileACheckpointPassesThePreviousOnesParts does that).
  o.durability.checkpoint_part_bytes = 4 << 10;
  o.durability.max_commit_waiters = 64;
  return o;
}

inline Result<std::unique_ptr<Database>> open_sim(const Options& o,
                                                  std::shared_ptr<storage::SimFileSystem> fs) {
  Result<std::unique_ptr<engine::DatabaseImpl>> impl = engine::DatabaseImpl::open(o, fs);
  if (!impl.is_ok()) return impl.status();
  return engine::WorkerPool::wrap(std::move(impl).value());
}

struct WlRun {
  bool opened = false;
  int acked = 0;
  bool halted = false;
  std::string why;
  std::uint64_t evictions = 0;        // under a memory budget
  std::uint64_t leaf_evictions = 0;   // where the index pages, index leaves sent to storage
  std::uint64_t inner_evictions = 0;  // and inner nodes
  std::uint64_t reclaimed = 0;        // removed records whose key, versions and OID went
  std::uint64_t parts_passed = 0;     // the previous checkpoint's parts deleted mid-checkpoint
  int refused = 0;                    // serializable runs: the prologue's refused commits
};

// Serializable runs (Options::isolation) begin with refused commits on the application
// threads' log: write skews on table "skew", each second committer refused by SSN after it took
// its timestamp, then a read-only commit whose snapshot covers that timestamp — the sequence
// that once left the durable clock stuck. One thread and an idle worker, so the file operations
// stay deterministic; every error is tolerated (a crash point or fault may land in here).
inline int wl_refusal_prologue(Database& db, int rounds = 3) {
  Table* t = nullptr;
  if (Result<Table*> found = db.open_table("skew"); found.is_ok()) {
    t = *found;
  } else if (Result<Table*> made = db.create_table("skew"); made.is_ok()) {
    t = *made;
  } else {
    return 0;
  }
  {
    Result<Transaction> tx = db.begin();
    if (!tx.is_ok()) return 0;
    (void)tx->put(*t, "a", "0");
    (void)tx->put(*t, "b", "0");
    if (!tx->commit().is_ok()) return 0;
  }
  int refused = 0;
  for (int i = 0; i < rounds; ++i) {
    Result<Transaction> t1 = db.begin();
    Result<Transaction> t2 = db.begin();
    if (!t1.is_ok() || !t2.is_ok()) return refused;
    for (Transaction* tx : {&*t1, &*t2}) {
      (void)tx->get(*t, "a");
      (void)tx->get(*t, "b");
    }
    (void)t1->put(*t, "a", std::to_string(i));
    (void)t2->put(*t, "b", std::to_string(i));
    if (!t1->commit().is_ok()) return refused;
    if (t2->commit().code() == Code::kConflict) ++refused;
    Result<Transaction> r = db.begin();
    if (!r.is_ok()) return refused;
    (void)r->get(*t, "a");
    if (!r->commit().is_ok()) return refused;
  }
  return refused;
}

// Opens (creating table "t" when missing), runs n transactions, closes.
inline WlRun wl_run(std::shared_ptr<storage::SimFileSystem> fs, int n, const Options& o,
                    Workload w = {}) {
  WlRun r;
  auto db = open_sim(o, fs);
  if (!db.is_ok()) return r;
  r.opened = true;
  if (o.isolation == Isolation::kSerializable) r.refused = wl_refusal_prologue(**db);
  Table* t = nullptr;
  if (Result<Table*> found = (*db)->open_table("t"); found.is_ok()) {
    t = *found;
  } else if (Result<Table*> made = (*db)->create_table("t"); made.is_ok()) {
    t = *made;
  } else {
    return r;
  }
  WlGenerator gen(t, n, w);
  TxnGenerator* g = &gen;
  EXPECT_TRUE((*db)->run({&g, 1}, o.exec).is_ok());
  r.acked = gen.acked();
  r.halted = (*db)->durability_stats().halted;
  r.why = (*db)->durability_stats().halt_reason;
  r.evictions = (*db)->stats().evictions;
  r.leaf_evictions = (*db)->stats().index_leaf_evictions;
  r.inner_evictions = (*db)->stats().index_inner_evictions;
  r.reclaimed = (*db)->stats().records_reclaimed;
  r.parts_passed = (*db)->durability_stats().checkpoint_parts_passed;
  return r;
}

// Everything in table "t" (empty when the table does not exist). Under a memory budget the
// scan reads cold records back: a damaged one fails it, and *scan says how (null: a failed
// scan fails the test).
inline std::map<std::string, std::string> wl_read(Database& db, Status* scan = nullptr) {
  std::map<std::string, std::string> out;
  Result<Table*> t = db.open_table("t");
  if (!t.is_ok()) return out;
  Transaction tx = db.begin().value();
  Status s = tx.scan(**t, "", "", 0, [&](std::string_view k, std::string_view v) {
    out.emplace(std::string(k), std::string(v));
    return true;
  });
  if (scan != nullptr) {
    *scan = std::move(s);
  } else {
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return out;
}

// wl_verify's answer when the directory was damaged and the open refused it (Corruption).
constexpr int kWlRefused = -2;

// Recovers `fs` and checks the state is the model of a prefix that holds every acknowledged
// transaction. Returns the prefix length (-1 on failure, with the test failed). With
// `corruption_ok` (a file was damaged on purpose), a Corruption naming a file of the database
// is an accepted answer (kWlRefused) — from the open, or under a memory budget from the read
// of a cold record the damage hit; opening with less than was acknowledged never is.
// `stats` (optional) receives the open's durability statistics.
inline int wl_verify(std::shared_ptr<storage::SimFileSystem> fs, int acked, const Options& o,
                     const std::string& what, bool corruption_ok = false,
                     DurabilityStats* stats = nullptr, Workload w = {}) {
  auto db = open_sim(o, fs);
  if (!db.is_ok()) {
    if (corruption_ok && db.code() == Code::kCorruption &&
        db.status().message().find(o.directory) != std::string::npos) {
      return kWlRefused;
    }
    ADD_FAILURE() << what << ": recovery failed: " << db.status().to_string();
    return -1;
  }
  if (stats != nullptr) *stats = (*db)->durability_stats();
  Status scan;
  const auto state = wl_read(**db, &scan);
  if (!scan.is_ok()) {
    if (corruption_ok && scan.code() == Code::kCorruption) return kWlRefused;
    ADD_FAILURE() << what << ": reading the recovered state failed: " << scan.to_string();
    return -1;
  }
  auto it = state.find("last");
  const int m = it == state.end() ? 0 : std::stoi(it->second) + 1;
  if (m < acked) {
    ADD_FAILURE() << what << ": " << acked << " acknowledged but only " << m << " recovered";
    return -1;
  }
  if (state != w.model(m)) {
    ADD_FAILURE() << what << ": state is not the model of the first " << m << " transactions";
    return -1;
  }
  return m;
}

}  // namespace braid::test
