// YCSB's workload as braid-bench runs it, shared by the sub-command's files: the invocation's
// configuration, the operations of one transaction (OpPlanner) and their keys (Picker), the
// transaction bodies written once for every API (ycsb_txn.inc: the engine's blocking and
// coroutine APIs and the peers'), the thread-per-transaction loop, the workers' generator,
// and what a run measures.
#pragma once

#include <braid/braid.h>
#include <braid/tx.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "background_load.h"
#include "bench_db.h"
#include "engine/table.h"
#include "flags.h"
#include "peer.h"
#include "profile_marks.h"
#include "report.h"
#include "roof.h"

#include "ycsb/ycsb.h"

namespace braid::bench::ycsb {

using Clock = std::chrono::steady_clock;

struct Config {
  std::uint64_t records;
  std::uint32_t threads;
  double seconds;
  std::uint64_t txns;  // per thread, instead of `seconds` (0: run for `seconds`)
  std::uint32_t ops_per_txn;
  std::uint32_t read, update, rmw, scan, insert;  // percent
  std::uint32_t scan_length;
  bool scan_uniform;     // scans of 1..scan_length records, uniformly (YCSB E), or exactly that
  std::string dist;      // uniform | zipf | latest
  std::string workload;  // a..f (YCSB's core workloads), or "" for the flags' own mix
  std::string engine;    // braid | lmdb | rocksdb
  double theta;
  std::uint32_t key_bytes;
  // --key-order hashed: record i's key is a bijective hash of i (YCSB's insertorder=hashed), so
  // keys are spread over the key space and loaded in random order; ordered: i itself.
  bool hashed_keys;
  std::uint32_t value_bytes;
  std::uint64_t seed;
  std::string json;
  std::string roof;
  std::vector<std::string> modes;       // in the order given; every mode for --mode all
  std::vector<std::string> isolations;  // --isolation: si | ssn, one or a list (alternated)
  bool declare_read_only;         // a transaction of reads and scans declares itself read-only
  std::uint32_t repeat;           // rounds over `modes`, round-robin
  std::uint32_t background_load;  // competing threads during the runs (bench/background_load.h)
  std::string scheduler;
  std::vector<std::uint32_t> batches;  // --batch, one or a list (swept for interleaving modes)
  bool multi_get;
  std::string load;  // "txn" | "bulk"
  DbFlags db;
};

// Execution modes by name; "plain" is the bench's own thread-per-transaction loop over the
// synchronous API: no workers, no coroutines — the yardstick `sequential` must match.
inline std::vector<std::string> ycsb_modes() {
  std::vector<std::string> m = {"plain"};
  for (const std::string& n : exec_mode_names()) m.push_back(n);
  return m;
}

inline ExecMode mode_of(const std::string& m) {
  ExecMode mode = ExecMode::kSequential;  // "plain" runs no engine mode
  (void)parse_exec_mode(m, &mode);
  return mode;
}

enum class Op : std::uint8_t { kRead, kUpdate, kRmw, kScan, kInsert };

struct ThreadResult {
  std::uint64_t commits = 0;
  std::uint64_t aborts = 0;
  std::uint64_t ops = 0;
  std::array<std::uint64_t, 5> by_op{};  // ops by Op: the mix as run
  std::uint64_t errors = 0;
  std::string first_error;
  Histogram latency;
  Histogram commit_latency;  // commit to acknowledgement (databases with a directory)
  // The thread's next fresh key: set before a run, left where the run stopped, so the next
  // mode's inserts continue past every key an earlier mode inserted.
  std::uint64_t next_insert = 0;
  // Which run of the invocation this is: each run draws its own keys. Replaying one stream
  // would hand later runs the records earlier ones read back (under a memory budget, a hit
  // ratio of 0.75 at a 25 % budget in the second round).
  std::uint64_t stream = 0;

  // A run's total: the counts and histograms of every thread.
  void add(const ThreadResult& r) {
    commits += r.commits;
    aborts += r.aborts;
    ops += r.ops;
    for (std::size_t k = 0; k < by_op.size(); ++k) by_op[k] += r.by_op[k];
    errors += r.errors;
    if (first_error.empty()) first_error = r.first_error;
    latency.merge(r.latency);
    commit_latency.merge(r.commit_latency);
  }
};

inline void pin_to_core(std::uint32_t i) {
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(i % n, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort
}

// The operations of one transaction. When every percentage of ops_per_txn is a whole number the
// counts are exact ("2 RMW + 8 reads" is --ops-per-txn 10 --rmw 20 --read 80), in random order;
// otherwise each operation is drawn independently.
class OpPlanner {
 public:
  explicit OpPlanner(const Config& c) : c_(c) {
    const std::uint32_t pct[5] = {c.read, c.update, c.rmw, c.scan, c.insert};
    exact_ = true;
    for (std::uint32_t p : pct) exact_ = exact_ && (p * c.ops_per_txn) % 100 == 0;
    if (exact_) {
      for (std::uint32_t k = 0; k < 5; ++k) {
        for (std::uint32_t i = 0; i < pct[k] * c.ops_per_txn / 100; ++i) {
          base_.push_back(static_cast<Op>(k));
        }
      }
      mixed_ = std::adjacent_find(base_.begin(), base_.end(), std::not_equal_to<>()) != base_.end();
    }
  }
  void plan(util::Rng& rng, std::vector<Op>* out) const {
    out->clear();
    if (exact_) {
      *out = base_;
      // A plan of one kind (read-only, update-only: the common mixes) has no order to draw.
      // The shuffle cost ~33 instructions per operation, ~2.5 % of a 10-get transaction over
      // 10^4 records (scripts/profile-ops.sh).
      if (!mixed_) return;
      for (std::size_t i = out->size(); i > 1; --i)
        std::swap((*out)[i - 1], (*out)[rng.uniform(i)]);
      return;
    }
    for (std::uint32_t i = 0; i < c_.ops_per_txn; ++i) {
      std::uint32_t r = static_cast<std::uint32_t>(rng.uniform(100));
      Op op = Op::kInsert;
      if (r < c_.read) {
        op = Op::kRead;
      } else if ((r -= c_.read) < c_.update) {
        op = Op::kUpdate;
      } else if ((r -= c_.update) < c_.rmw) {
        op = Op::kRmw;
      } else if ((r -= c_.rmw) < c_.scan) {
        op = Op::kScan;
      }
      out->push_back(op);
    }
  }

 private:
  const Config& c_;
  bool exact_;
  bool mixed_ = false;  // exact_ and base_ holds more than one kind
  std::vector<Op> base_;
};

inline std::string mix_name(const Config& c) {
  std::string s;
  auto part = [&](const char* n, std::uint32_t p) {
    if (p == 0) return;
    if (!s.empty()) s += "/";
    s += n + std::to_string(p);
  };
  part("read", c.read);
  part("update", c.update);
  part("rmw", c.rmw);
  part("scan", c.scan);
  part("insert", c.insert);
  return s;
}

// Everything one run of one worker (or plain thread) needs to pick keys and values.
struct Picker {
  Picker(const Config& cfg, const Zipf* zipf, std::uint32_t t, const ThreadResult& run)
      : cfg(cfg),
        zipf(zipf),
        rng(cfg.seed * 1000003 + run.stream * 65537 + t + 1),
        next_insert(run.next_insert),
        first_insert(cfg.records + t),
        latest_dist(cfg.dist == "latest") {}
  std::uint64_t pick() {
    if (latest_dist) return latest();
    if (zipf != nullptr) return util::mix64(zipf->next(rng)) % cfg.records;
    return rng.uniform(cfg.records);
  }
  // YCSB's `latest`: Zipf over recency, rank 0 the newest record. What this thread knows to
  // exist are the loaded records and its own inserts, so ranks run through its inserts
  // (newest first), then down from the last loaded record. Like YCSB's acknowledged-insert
  // counter, it skips keys whose inserts may still be open: a worker has at most 64
  // transactions in flight (bench_options), each reserving at most ops_per_txn keys.
  std::uint64_t latest() {
    const std::uint64_t z = zipf->next(rng);
    const std::uint64_t reserved = (next_insert - first_insert) / cfg.threads;
    const std::uint64_t in_flight = std::uint64_t{64} * cfg.ops_per_txn;
    const std::uint64_t mine = reserved > in_flight ? reserved - in_flight : 0;
    if (z < mine) return first_insert + (mine - 1 - z) * cfg.threads;
    const std::uint64_t back = z - mine;
    return back < cfg.records ? cfg.records - 1 - back : 0;
  }
  std::uint32_t scan_length() {
    if (!cfg.scan_uniform) return cfg.scan_length;
    return 1 + static_cast<std::uint32_t>(rng.uniform(cfg.scan_length));
  }
  std::uint64_t fresh() {  // disjoint per thread: records + t + k*threads
    const std::uint64_t k = next_insert;
    next_insert += cfg.threads;
    return k;
  }
  const Config& cfg;
  const Zipf* zipf;
  util::Rng rng;
  std::uint64_t next_insert;
  const std::uint64_t first_insert;  // this thread's first fresh key
  const bool latest_dist;
  std::uint64_t salt = 0;
  std::uint64_t sink = 0;
};

inline void fail(ThreadResult* out, const Status& s) {
  ++out->errors;
  if (out->first_error.empty()) out->first_error = s.to_string();
}

// A peer engine's session with the calls the shared body makes (the table is the engine's
// one key space).
struct PeerTable {};
struct PeerTx {
  PeerSession& s;
  Result<std::string_view> get(PeerTable&, std::string_view k) { return s.get(k); }
  Status update(PeerTable&, std::string_view k, std::string_view v) { return s.put(k, v); }
  Status insert(PeerTable&, std::string_view k, std::string_view v) { return s.insert(k, v); }
  Status scan(PeerTable&, std::string_view from, std::string_view, std::size_t limit,
              ScanCallback f) {
    return s.scan(from, limit, f);
  }
};

// One transaction's operations in plain calls: over BraidDB's synchronous API (Transaction,
// Table: --mode plain) or a peer's session (PeerTx, PeerTable).
template <typename TxT, typename TableT>
inline Status plain_body(TxT& tx, TableT& table, const Config& cfg, Picker& pk,
                         const std::vector<Op>& ops, std::string& value, ThreadResult* out) {
#define YCSB_AWAIT(e) (e)
#define YCSB_RETURN return
#include "ycsb/ycsb_txn.inc"
#undef YCSB_AWAIT
#undef YCSB_RETURN
}

// What the thread-per-transaction loop needs of an engine: BraidDB's Transaction (--mode
// plain) or a peer's session.
// The options a YCSB transaction begins with: the run's isolation, and with
// --declare-read-only, read-only when it only reads and scans.
inline bool only_reads(const std::vector<Op>& ops) {
  return std::all_of(ops.begin(), ops.end(),
                     [](Op op) { return op == Op::kRead || op == Op::kScan; });
}
inline TxnOptions txn_options(Isolation iso, bool declare, const std::vector<Op>& ops) {
  return TxnOptions::with(iso, declare && only_reads(ops));
}

struct PlainApi {
  Database& db;
  Table& table;
  std::optional<Transaction> tx;
  Isolation iso = Isolation::kSnapshot;
  bool declare = false;
  Status begin(const std::vector<Op>& ops) {
    Result<Transaction> r = db.begin(txn_options(iso, declare, ops));
    if (!r.is_ok()) return r.status();
    tx.emplace(*std::move(r));
    return Status::ok();
  }
  Status body(const Config& cfg, Picker& pk, const std::vector<Op>& ops, std::string& value,
              ThreadResult* out) {
    return plain_body(*tx, table, cfg, pk, ops, value, out);
  }
  Status commit() { return tx->commit(); }
  void abort() {
    if (tx) tx->abort();  // none when begin failed
  }
  Status load_put(std::string_view k, std::string_view v) { return tx->insert(table, k, v); }
};
struct PeerApi {
  PeerSession& session;
  PeerTable table;
  // A transaction of reads and scans is a peer's read-only transaction.
  Status begin(const std::vector<Op>& ops) { return session.begin(only_reads(ops)); }
  Status body(const Config& cfg, Picker& pk, const std::vector<Op>& ops, std::string& value,
              ThreadResult* out) {
    PeerTx tx{session};
    return plain_body(tx, table, cfg, pk, ops, value, out);
  }
  Status commit() { return session.commit(); }
  void abort() { session.abort(); }
  Status load_put(std::string_view k, std::string_view v) { return session.put(k, v); }
};

// The thread-per-transaction loop: --mode plain over the synchronous API (no workers, no
// coroutine frames anywhere), and every peer engine.
template <typename Api>
inline void run_txn_thread(Api& api, const Config& cfg, const Zipf* zipf, std::uint32_t t,
                           const std::atomic<bool>& stop, ThreadResult* out) {
  pin_to_core(t);
  Picker pk(cfg, zipf, t, *out);
  OpPlanner planner(cfg);
  std::vector<Op> ops;
  std::string value(cfg.value_bytes, '\0');
  for (std::uint64_t n = 0;
       !stop.load(std::memory_order_relaxed) && (cfg.txns == 0 || n < cfg.txns); ++n) {
    const auto t0 = Clock::now();
    planner.plan(pk.rng, &ops);
    if (Status s = api.begin(ops); !s.is_ok()) {
      fail(out, s);
      return;
    }
    Status s = api.body(cfg, pk, ops, value, out);
    if (s.is_ok()) {
      s = api.commit();
      if (s.is_ok()) {
        ++out->commits;
        out->latency.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
        continue;
      }
    } else {
      api.abort();  // a Conflict has aborted BraidDB's transaction already; abort is idempotent
    }
    if (s != Code::kConflict) fail(out, s);
    ++out->aborts;
  }
  out->next_insert = pk.next_insert;
  if (pk.sink == 1) std::fprintf(stderr, " ");  // keep the reads observable to the optimizer
}

// Loads records 0..records-1 in key order, in transactions of 1000, on cfg.threads threads
// (each a contiguous range; `make_api(t)` gives thread t's engine handle), with a progress
// line. Answers the first failure.
const std::vector<Op> kLoadOps = {Op::kInsert};  // a load transaction writes

template <typename MakeApi>
inline Status load_in_transactions(const Config& cfg, MakeApi make_api) {
  std::atomic<std::uint64_t> done{0};
  std::vector<std::thread> threads;
  std::vector<Status> status(cfg.threads);
  Progress progress("loading", "records", &done, cfg.records);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    threads.emplace_back([&, t] {
      pin_to_core(t);
      auto api = make_api(t);
      const std::uint64_t lo = cfg.records * t / cfg.threads;
      const std::uint64_t hi = cfg.records * (t + 1) / cfg.threads;
      std::vector<char> value(cfg.value_bytes);
      char key[kMaxKeyBytes];
      for (std::uint64_t i = lo; i < hi;) {
        const std::uint64_t end = std::min(hi, i + 1000);
        Status s = api->begin(kLoadOps);
        for (std::uint64_t j = i; s.is_ok() && j < end; ++j) {
          make_key(j, cfg.key_bytes, key, cfg.hashed_keys);
          fill_value(value.data(), cfg.value_bytes, j);
          s = api->load_put({key, cfg.key_bytes}, {value.data(), value.size()});
        }
        if (s.is_ok()) s = api->commit();
        if (!s.is_ok()) {
          api->abort();
          status[t] = s;
          return;
        }
        done.fetch_add(end - i, std::memory_order_relaxed);
        i = end;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& s : status) {
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

inline Status load(Database& db, Table& table, const Config& cfg, double* load_seconds) {
  if (cfg.load == "bulk") {
    return ycsb_bulk_load(db, table, cfg.records, cfg.key_bytes, cfg.value_bytes, {},
                          "loading to storage", load_seconds);
  }
  const auto start = Clock::now();
  const Status s = load_in_transactions(
      cfg, [&](std::uint32_t) { return std::make_unique<PlainApi>(PlainApi{db, table, {}}); });
  *load_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

// The coroutine modes: each worker runs YCSB transactions made by its generator.
class YcsbGenerator : public TxnGenerator {
 public:
  YcsbGenerator(Table& table, const Config& cfg, const Zipf* zipf, std::uint32_t t,
                const std::atomic<bool>& stop, ThreadResult* out, Isolation iso)
      : table_(table),
        cfg_(cfg),
        pk_(cfg, zipf, t, *out),
        planner_(cfg),
        stop_(stop),
        out_(out),
        iso_(iso) {}

  bool next(Tx& tx, Task<Status>* task) override {
    if (stop_.load(std::memory_order_relaxed)) return false;
    if (cfg_.txns != 0 && issued_++ == cfg_.txns) return false;
    std::vector<Op> ops;
    planner_.plan(pk_.rng, &ops);
    if (Status s = tx.configure(txn_options(iso_, cfg_.declare_read_only, ops)); !s.is_ok()) {
      fail(out_, s);
    }
    *task = transaction(tx, std::move(ops));
    return true;
  }
  void finished(const Status& s, std::uint64_t latency_ns) override {
    if (s.is_ok()) {
      ++out_->commits;
      out_->latency.record(latency_ns);
      return;
    }
    if (s != Code::kConflict) fail(out_, s);
    ++out_->aborts;
  }
  void committed(std::uint64_t ns) override { out_->commit_latency.record(ns); }
  std::uint64_t sink() const { return pk_.sink; }
  std::uint64_t next_insert() const { return pk_.next_insert; }

 private:
  // Parameters by value (lifetime rule of <braid/task.h>); keys and values live in the frame.
  Task<Status> transaction(Tx& tx, std::vector<Op> ops) {
    std::string value(cfg_.value_bytes, '\0');
    if (cfg_.multi_get && cfg_.read == 100) {
      // All reads of the transaction in one multi_get (CORO-MK; Hybrid across transactions).
      std::vector<char> keys(ops.size() * cfg_.key_bytes);
      std::vector<std::string_view> views(ops.size());
      std::vector<GetResult> results(ops.size());
      for (std::size_t k = 0; k < ops.size(); ++k) {
        make_key(pk_.pick(), cfg_.key_bytes, &keys[k * cfg_.key_bytes], cfg_.hashed_keys);
        views[k] = {&keys[k * cfg_.key_bytes], cfg_.key_bytes};
      }
      Status s = co_await tx.multi_get(table_, views, results);
      out_->ops += ops.size();
      out_->by_op[static_cast<std::size_t>(Op::kRead)] += ops.size();
      if (!s.is_ok()) co_return s;
      for (const GetResult& r : results) {
        if (!r.is_ok()) co_return Status(r.code);
        pk_.sink += r.value.size();
      }
      co_return Status::ok();
    }
    Table& table = table_;
    const Config& cfg = cfg_;
    Picker& pk = pk_;
    ThreadResult* out = out_;
#define YCSB_AWAIT(e) (co_await e)
#define YCSB_RETURN co_return
#include "ycsb/ycsb_txn.inc"
#undef YCSB_AWAIT
#undef YCSB_RETURN
  }

  Table& table_;
  const Config& cfg_;
  Picker pk_;
  OpPlanner planner_;
  const std::atomic<bool>& stop_;
  ThreadResult* out_;
  Isolation iso_;
  std::uint64_t issued_ = 0;
};

// One measured configuration: a mode, and for the interleaving modes a batch size. With a
// --batch list each interleaving mode runs once per size, labelled mode@size, so a sweep (and
// every mode at its own best size, CoroBase §5's methodology) shares one load and one
// round-robin.
// With an --isolation list each runs under every isolation, labelled mode/ssn, side by side.
struct Variant {
  std::string mode;
  std::uint32_t batch;
  std::string label;
  Isolation iso = Isolation::kSnapshot;
};

inline std::vector<Variant> variants_of(const Config& cfg) {
  std::vector<Variant> out;
  for (const std::string& m : cfg.modes) {
    // Only nested and interleaved interleave exactly `batch` transactions: sequential,
    // prefetch and plain run one at a time, and auto picks its own size.
    const bool sweeps = (m == "nested" || m == "interleaved") && cfg.batches.size() > 1;
    const std::vector<std::uint32_t> batches =
        sweeps ? cfg.batches : std::vector<std::uint32_t>{cfg.batches.front()};
    for (std::uint32_t b : batches) {
      for (const std::string& iso_name : cfg.isolations) {
        Variant v{m, b, sweeps ? m + "@" + std::to_string(b) : m};
        (void)parse_isolation(iso_name, &v.iso);  // a name the parser accepted
        if (cfg.isolations.size() > 1 || v.iso != Isolation::kSnapshot) v.label += "/" + iso_name;
        out.push_back(v);
      }
    }
  }
  return out;
}

struct ModeResult {
  std::string mode;
  AbortCauses aborts;
  double txn_per_s = 0;
  ThreadResult total;
  double run_s = 0;
  ExecStats exec;
  double log_bytes_per_s = 0;
  double syncs_per_s = 0;
  ColdFigures cold;
};

// A run's end: after --seconds, or (--txns) when every thread has run its transactions and
// `stop` is set by whoever saw that.
inline void stop_after(const Config& cfg, std::atomic<bool>& stop) {
  if (cfg.txns != 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
  stop.store(true);
}

// What every run of one invocation shares: the loaded database and the figures of its load.
struct Setup {
  std::unique_ptr<Database> db;
  Table* table = nullptr;
  double load_s = 0;
  double lines_per_txn = 0;  // estimated DRAM lines per transaction
  double roof_rate = 0;      // the machine's line rate at cfg.threads, 0 if unknown
  std::unique_ptr<Zipf> zipf;
};

// A run's figures every engine reports.
struct RunFigures {
  double abort_rate, ops_per_s, p50_us, p99_us;
  static RunFigures of(const ModeResult& m) {
    const double attempts = static_cast<double>(m.total.commits + m.total.aborts);
    return {attempts > 0 ? static_cast<double>(m.total.aborts) / attempts : 0,
            static_cast<double>(m.total.ops) / m.run_s, m.total.latency.quantile(0.50) / 1000.0,
            m.total.latency.quantile(0.99) / 1000.0};
  }
};

// run.cc: one mode at one batch size for cfg.seconds over the loaded table. `inserts`: each
// thread's next fresh key, carried from run to run.
Status run_mode(Database& db, Table& table, const Config& cfg, const Zipf* zipf, const Variant& var,
                std::vector<std::uint64_t>* inserts, std::uint64_t stream, ModeResult* res);
// parse.cc: the flags; an error message, or "" when they parse.
std::string parse_config(int argc, char** argv, int first, Config* cfg);
// main.cc: opens and loads the database every run of the invocation shares (an exit code).
int load_database(const Config& cfg, Setup* s);
// report.cc: the table and the JSON lines.
void print_header(const Config& cfg, const Setup& s);
// The JSON fields every engine's run has; the caller adds the engine's own.
void add_run_fields(JsonObject& o, const Config& cfg, const ModeResult& m, const RunFigures& f,
                    std::uint32_t rep, double load_s);
std::string report_run(const Config& cfg, const Setup& s, const Variant& var, const ModeResult& m,
                       std::uint32_t rep, double seq);
void report_summary(const Setup& s, const std::vector<Variant>& variants,
                    const std::vector<std::vector<double>>& rates);
// peers.cc: the same workload on LMDB or RocksDB (--engine).
int peer_main(const Config& cfg);

}  // namespace braid::bench::ycsb
