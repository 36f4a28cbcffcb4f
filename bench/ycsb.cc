#include "ycsb.h"

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

namespace braid::bench {

namespace {

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
std::vector<std::string> ycsb_modes() {
  std::vector<std::string> m = {"plain"};
  for (const std::string& n : exec_mode_names()) m.push_back(n);
  return m;
}

ExecMode mode_of(const std::string& m) {
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

void pin_to_core(std::uint32_t i) {
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

std::string mix_name(const Config& c) {
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

void fail(ThreadResult* out, const Status& s) {
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
Status plain_body(TxT& tx, TableT& table, const Config& cfg, Picker& pk, const std::vector<Op>& ops,
                  std::string& value, ThreadResult* out) {
#define YCSB_AWAIT(e) (e)
#define YCSB_RETURN return
#include "ycsb_txn.inc"
#undef YCSB_AWAIT
#undef YCSB_RETURN
}

// What the thread-per-transaction loop needs of an engine: BraidDB's Transaction (--mode
// plain) or a peer's session.
// The options a YCSB transaction begins with: the run's isolation, and with
// --declare-read-only, read-only when it only reads and scans.
bool only_reads(const std::vector<Op>& ops) {
  return std::all_of(ops.begin(), ops.end(),
                     [](Op op) { return op == Op::kRead || op == Op::kScan; });
}
TxnOptions txn_options(Isolation iso, bool declare, const std::vector<Op>& ops) {
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
void run_txn_thread(Api& api, const Config& cfg, const Zipf* zipf, std::uint32_t t,
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
Status load_in_transactions(const Config& cfg, MakeApi make_api) {
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

Status load(Database& db, Table& table, const Config& cfg, double* load_seconds) {
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
#include "ycsb_txn.inc"
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

}  // namespace

std::vector<PathStep> btree_path(Table& table) {
  std::vector<PathStep> path;
  for (std::size_t nodes : table.index().level_sizes()) {
    path.push_back({static_cast<double>(nodes * index::kNodeBytes),
                    static_cast<double>(index::kNodeBytes / 64)});
  }
  return path;
}

std::vector<PathStep> engine_get_path(Database& db, Table& table, std::uint64_t records) {
  std::vector<PathStep> path = btree_path(table);
  path.push_back({static_cast<double>(records * sizeof(std::uint64_t)), 1.0});
  path.push_back({static_cast<double>(db.stats().live_version_bytes), 1.0});
  return path;
}

Status ycsb_load(Database& db, Table& table, std::uint64_t records, std::uint32_t key_bytes,
                 std::uint32_t value_bytes, std::uint32_t threads, double* seconds) {
  Config cfg{};
  cfg.records = records;
  cfg.key_bytes = key_bytes;
  cfg.value_bytes = value_bytes;
  cfg.threads = threads;
  return load(db, table, cfg, seconds);
}

const char* ycsb_usage() {
  return R"(usage: braid-bench ycsb [flags]

YCSB-style transactions over one table. Loads --records records, then runs for --seconds.

  --engine E         braid | lmdb | rocksdb (default braid): the peers run the same keys,
                     values and transactions on --threads application threads; a read-only
                     transaction is one LMDB read txn / one RocksDB snapshot, an updating
                     one a write txn / an OptimisticTransactionDB transaction. Without
                     --dir a peer works in a temporary directory with --commit async
  --workload W       a | b | c | d | e | f: YCSB's core workloads, 1 op per transaction:
                     A 50 read/50 update, B 95/5, C read only, F 50 read/50 RMW (Zipf
                     0.99); D 95 read/5 insert, reads skewed to the newest (latest); E 95
                     scans of 1..100 records/5 insert (Zipf). Flags given override
  --records N        records to load (default 1000000)
  --threads T        workers, one per core (default 1)
  --seconds S        measured run time (default 10)
  --txns N           instead: each thread runs N transactions (a fixed amount of work, for
                     instruction counts: scripts/profile-ops.sh)
  --ops-per-txn K    operations per transaction (default 10; 1 with --workload)
  --read R           percent reads           \
  --update U         percent blind updates    |  must sum to 100;
  --rmw M            percent read-modify-write|  default: --read 100
  --scan C           percent scans            |
  --insert I         percent inserts         /
  --scan-length L    records per scan (default 10)
  --dist D           uniform | zipf | latest (default uniform)
  --theta X          Zipf skew in [0, 1) (default 0.99)
  --key-bytes B      key length 4..255 (default 8)
  --key-order O      ordered | hashed: record i's key holds i, or a bijective hash of i
                     (YCSB's insertorder=hashed: keys spread over the key space, loaded in
                     random order; needs --key-bytes 8 or more) (default ordered)
  --value-bytes V    value length 0..65536 (default 8)
  --seed N           random seed (default 1)
  --dir PATH         a durable database in PATH (a new or empty directory); default:
                     in memory
  --commit C         durable | async (default durable; with --dir)
  --log-sync S       fdatasync | dsync | direct: how a log block is made durable
                     (default fdatasync; with --dir)
  --log-flusher F    none | thread: thread is the oversubscribed baseline of MosaicDB
                     Fig. 10, a background thread that submits the logs (default none)
  --sq-poll-cpu C    off | a CPU: a kernel thread pinned to CPU C submits the workers' I/O
                     (io_uring SQPOLL; DurabilityOptions::sq_poll_cpu; default off)
  --checkpoint-mib M checkpoint after the logs grew M MiB (default 1024; 0: never)
  --prefault-mib M   make M MiB of version memory resident at open, so that runs do not
                     pay for first-touch page faults (default 0: faulted in as used)
  --prefault-index-mib M  the same for index nodes, shared by every table's tree
                     (default 0: each tree faults in its own 2 MiB chunks as it grows)
  --l2-kib K         the per-core cache the trees are sized against (Options::l2_cache_bytes;
                     default 0: the machine's L2; valgrind reports 256 KiB, so
                     scripts/profile-ops.sh passes the host's)
  --memory-budget-mib M  bound version memory to M MiB (with --dir): records past it are
                     evicted and read back from the directory (default 0: no bound)
  --reserve-gib G    address space reserved for versions, and for each table's OIDs, in GiB
                     (default: 1024 for versions, 32 per table): small under valgrind
  --load L           txn | bulk: load through transactions of 1000 inserts on --threads
                     threads, or with Database::bulk_load straight to storage (records kept
                     in memory up to the budget, the rest cold; needs --dir). Default: bulk
                     with --memory-budget-mib, txn otherwise
  --mode M           plain | sequential | prefetch | nested | interleaved | auto | all,
                     or a comma-separated list of them (default interleaved). Several
                     modes run on the same loaded data, one after another, and print
                     their ratios; 'all' is every mode. 'plain' is a thread-per-
                     transaction loop over the synchronous API (no workers, no
                     coroutines): the yardstick for 'sequential'.
  --background-load N  N threads walking 64 MiB each at random during the runs (preemption
                     and cache pollution, like a build beside the database; default 0)
  --repeat R         run the mode list R times round-robin (default 1) and print each
                     mode's min / median / max; ratios then compare medians. On a noisy
                     machine this is the fair A/B: every mode sees the same drift.
  --scheduler P      batch | pipeline | storage-batch | dual-queue (default batch)
  --batch N[,N...]   transactions interleaved per worker, 1..64 (default 8); a list
                     runs nested and interleaved once per size (labelled mode@N),
                     round-robin with the other modes on the same data
  --multi-get 0|1    read-only mixes: issue a transaction's reads as one multi_get
                     (default 0)
  --isolation I[,I]  si | ssn: snapshot isolation, or serializable (SSN); a list runs every
                     mode under each, labelled mode/ssn, round-robin on the same data
                     (default si). JSON: isolation, aborts per cause and their rates
  --declare-read-only 0|1  a transaction of only reads and scans declares itself read-only
                     (TxnOptions::read_only; default 0)
  --roof FILE        the roof saved by 'braid-bench roof' (default results/roof.json), or
                     'measure' (a quick one now): results then say what fraction of it
                     their line fetches reached
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl;
                     'none' to skip)
)";
}

Zipf::Zipf(std::uint64_t n, double theta) : n_(n), theta_(theta) {
  // zeta(n) = sum of i^-theta: exactly up to 10^7 terms, the rest by the Euler-Maclaurin
  // integral with its endpoint correction (relative error far below 1e-12 there), so a 2^28-key
  // probe set does not spend ten seconds here.
  constexpr std::uint64_t kExact = 10'000'000;
  zetan_ = 0;
  const std::uint64_t m = std::min(n, kExact);
  for (std::uint64_t i = 1; i <= m; ++i) zetan_ += 1.0 / std::pow(static_cast<double>(i), theta);
  if (n > m) {
    const double a = static_cast<double>(m), b = static_cast<double>(n);
    zetan_ += (std::pow(b, 1 - theta) - std::pow(a, 1 - theta)) / (1 - theta) +
              0.5 * (std::pow(b, -theta) - std::pow(a, -theta));
  }
  const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
  alpha_ = 1.0 / (1.0 - theta);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
  half_pow_theta_ = 1.0 + std::pow(0.5, theta);
}

std::uint64_t Zipf::next(util::Rng& rng) const {
  const double u = rng.unit();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < half_pow_theta_) return std::min<std::uint64_t>(1, n_ - 1);
  const auto r =
      static_cast<std::uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return std::min(r, n_ - 1);
}

void fill_value(char* v, std::uint32_t n, std::uint64_t salt) {
  for (std::uint32_t i = 0; i < n; ++i) v[i] = static_cast<char>('a' + (salt + i) % 26);
}

Status ycsb_bulk_load(Database& db, Table& table, std::uint64_t records, std::uint32_t key_bytes,
                      std::uint32_t value_bytes, const BulkLoadOptions& options, const char* label,
                      double* seconds) {
  std::atomic<std::uint64_t> done{0};
  const auto start = Clock::now();
  Status s;
  {
    Progress progress(label, "records", &done, records);
    std::vector<char> value(value_bytes);
    char key[kMaxKeyBytes];
    std::uint64_t i = 0;
    s = db.bulk_load(
        table,
        [&](std::string_view* k, std::string_view* v) {
          if (i == records) return false;
          make_key(i, key_bytes, key);
          fill_value(value.data(), value_bytes, i);
          *k = {key, key_bytes};
          *v = {value.data(), value.size()};
          if (++i % 4096 == 0) done.store(i, std::memory_order_relaxed);
          return true;
        },
        options);
    done.store(i, std::memory_order_relaxed);
  }
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

void make_key(std::uint64_t i, std::uint32_t bytes, char* out, bool hashed) {
  // On the measured path: one store for the common 8-byte key, so the driver costs little next
  // to the operation it measures.
  if (hashed) {
    BRAID_ASSERT(bytes >= 8);  // parse_flags: a hash needs the whole head to stay distinct
    i = util::mix64(i);
  }
  if (bytes >= 8) {
    const std::uint64_t be = __builtin_bswap64(i);
    std::memcpy(out, &be, 8);
    if (bytes == 8) return;
  } else {
    for (std::uint32_t b = 0; b < bytes; ++b)
      out[b] = static_cast<char>(i >> (8 * (bytes - 1 - b)));
  }
  const std::uint32_t head = std::min<std::uint32_t>(bytes, 8);
  std::uint64_t f = util::mix64(i);
  for (std::uint32_t b = head; b < bytes; ++b) {
    out[b] = static_cast<char>('A' + (f % 26));
    f = f / 26 + 0x9e37;
  }
}

namespace {

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

std::vector<Variant> variants_of(const Config& cfg) {
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
void stop_after(const Config& cfg, std::atomic<bool>& stop) {
  if (cfg.txns != 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
  stop.store(true);
}

// Runs one mode at one batch size for cfg.seconds over the loaded table.
// `inserts`: each thread's next fresh key, carried from run to run.
Status run_mode(Database& db, Table& table, const Config& cfg, const Zipf* zipf, const Variant& var,
                std::vector<std::uint64_t>* inserts, std::uint64_t stream, ModeResult* res) {
  const std::string& mode = var.mode;
  std::atomic<bool> stop{false};
  std::vector<ThreadResult> results(cfg.threads);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    results[t].next_insert = (*inserts)[t];
    results[t].stream = stream;
  }
  const ExecStats before = db.exec_stats();
  const DurabilityStats dbefore = db.durability_stats();
  const DatabaseStats sbefore = db.stats();
  profile_begin();
  const auto start = Clock::now();
  Status status;
  if (mode == "plain") {
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      threads.emplace_back([&, t] {
        PlainApi api{db, table, {}, var.iso, cfg.declare_read_only};
        run_txn_thread(api, cfg, zipf, t, stop, &results[t]);
      });
    }
    stop_after(cfg, stop);
    for (auto& th : threads) th.join();
  } else {
    std::vector<std::unique_ptr<YcsbGenerator>> gens;
    std::vector<TxnGenerator*> ptrs;
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      gens.push_back(
          std::make_unique<YcsbGenerator>(table, cfg, zipf, t, stop, &results[t], var.iso));
      ptrs.push_back(gens.back().get());
    }
    ExecOptions exec;
    exec.mode = mode_of(mode);
    (void)parse_scheduler(cfg.scheduler, &exec.scheduler);  // a name flags.choice accepted
    exec.batch = var.batch;
    exec.seed = cfg.seed;
    std::thread timer([&] { stop_after(cfg, stop); });
    status = db.run(ptrs, exec);
    timer.join();
    std::uint64_t sink = 0;
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      sink += gens[t]->sink();
      results[t].next_insert = gens[t]->next_insert();
    }
    if (sink == 1) std::fprintf(stderr, " ");
  }
  res->run_s = std::chrono::duration<double>(Clock::now() - start).count();
  profile_end(var.label.c_str());
  res->mode = mode;
  for (std::uint32_t t = 0; t < cfg.threads; ++t) (*inserts)[t] = results[t].next_insert;
  for (const ThreadResult& r : results) res->total.add(r);
  res->exec = exec_delta(before, db.exec_stats());
  res->txn_per_s = static_cast<double>(res->total.commits) / res->run_s;
  const DurabilityStats dafter = db.durability_stats();
  res->log_bytes_per_s = static_cast<double>(dafter.log_bytes - dbefore.log_bytes) / res->run_s;
  res->syncs_per_s = static_cast<double>(dafter.log_flushes - dbefore.log_flushes) / res->run_s;
  const DatabaseStats safter = db.stats();
  res->cold = ColdFigures::of(sbefore, safter, res->total.ops, res->run_s);
  res->aborts = AbortCauses::of(sbefore, safter);
  if (dafter.halted) status = Status::io_error(dafter.halt_reason);
  return status;
}

// Parse: the command line into a Config. Answers "" or the error to print above the usage.
std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  cfg->records = flags.u64("records", 1'000'000, 1, std::uint64_t{1} << 36);
  cfg->threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 1024));
  cfg->seconds = flags.f64("seconds", 10, 0.01, 86400);
  cfg->txns = flags.u64("txns", 0, 0, std::uint64_t{1} << 40);
  // YCSB's core workloads (Cooper et al., SoCC'10, Table 2 and the workload files): the mix,
  // the request distribution and, for E, scans of 1..100 records; one operation per
  // transaction. Any flag given still overrides its part.
  cfg->workload = flags.choice("workload", "", {"", "a", "b", "c", "d", "e", "f"});
  struct Preset {
    std::uint32_t read, update, rmw, scan, insert;
    const char* dist;
  } preset{100, 0, 0, 0, 0, "uniform"};
  const std::string& w = cfg->workload;
  if (w == "a") preset = {50, 50, 0, 0, 0, "zipf"};
  if (w == "b") preset = {95, 5, 0, 0, 0, "zipf"};
  if (w == "c") preset = {100, 0, 0, 0, 0, "zipf"};
  if (w == "d") preset = {95, 0, 0, 0, 5, "latest"};
  if (w == "e") preset = {0, 0, 0, 95, 5, "zipf"};
  if (w == "f") preset = {50, 0, 50, 0, 0, "zipf"};
  cfg->ops_per_txn =
      static_cast<std::uint32_t>(flags.u64("ops-per-txn", w.empty() ? 10 : 1, 1, 10000));
  const bool any_mix = flags.has("read") || flags.has("update") || flags.has("rmw") ||
                       flags.has("scan") || flags.has("insert");
  const auto mix = [&](const char* name, std::uint32_t preset_pct) {
    return static_cast<std::uint32_t>(flags.u64(name, any_mix ? 0 : preset_pct, 0, 100));
  };
  cfg->read = mix("read", preset.read);
  cfg->update = mix("update", preset.update);
  cfg->rmw = mix("rmw", preset.rmw);
  cfg->scan = mix("scan", preset.scan);
  cfg->insert = mix("insert", preset.insert);
  cfg->scan_uniform = w == "e" && !flags.has("scan-length");
  cfg->scan_length =
      static_cast<std::uint32_t>(flags.u64("scan-length", w == "e" ? 100 : 10, 1, 1'000'000));
  cfg->dist = flags.choice("dist", preset.dist, {"uniform", "zipf", "latest"});
  cfg->engine = flags.choice("engine", "braid", {"braid", "lmdb", "rocksdb"});
  cfg->theta = flags.f64("theta", 0.99, 0.0, 0.999999);
  cfg->key_bytes = static_cast<std::uint32_t>(flags.u64("key-bytes", 8, 4, kMaxKeyBytes));
  cfg->hashed_keys = flags.choice("key-order", "ordered", {"ordered", "hashed"}) == "hashed";
  cfg->value_bytes = static_cast<std::uint32_t>(flags.u64("value-bytes", 8, 0, kMaxValueBytes));
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->roof = flags.str("roof", "results/roof.json");
  cfg->modes = parse_name_list("mode", flags.str("mode", "interleaved"), ycsb_modes(), &err);
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  cfg->background_load = static_cast<std::uint32_t>(flags.u64("background-load", 0, 0, 256));
  cfg->scheduler = flags.choice("scheduler", "batch", scheduler_names());
  cfg->isolations = parse_name_list("isolation", flags.str("isolation", "si"), {"si", "ssn"}, &err);
  cfg->declare_read_only = flags.u64("declare-read-only", 0, 0, 1) != 0;
  for (std::uint64_t b : flags.u64_list("batch", {8}, 1, 64)) {
    if (std::find(cfg->batches.begin(), cfg->batches.end(), b) != cfg->batches.end()) {
      err = "--batch lists " + std::to_string(b) + " twice";
    }
    cfg->batches.push_back(static_cast<std::uint32_t>(b));
  }
  cfg->multi_get = flags.u64("multi-get", 0, 0, 1) != 0;
  cfg->db = DbFlags::parse(flags);
  // Straight to storage by default under a budget: a table many times the budget never has
  // to pass through memory.
  cfg->load =
      flags.choice("load", cfg->db.dir.empty() || cfg->db.memory_budget_mib == 0 ? "txn" : "bulk",
                   {"txn", "bulk"});
  if (!err.empty() || !flags.finish(&err)) return err;
  if (cfg->load == "bulk" && cfg->db.dir.empty()) return "--load bulk needs --dir";
  const std::uint32_t sum = cfg->read + cfg->update + cfg->rmw + cfg->scan + cfg->insert;
  if (sum != 100) {
    return "--read + --update + --rmw + --scan + --insert must sum to 100, got " +
           std::to_string(sum);
  }
  if (cfg->key_bytes < 8 && cfg->records > (std::uint64_t{1} << (8 * cfg->key_bytes))) {
    return "--key-bytes " + std::to_string(cfg->key_bytes) + " cannot hold " +
           std::to_string(cfg->records) + " distinct keys";
  }
  if (cfg->hashed_keys && cfg->key_bytes < 8) {
    return "--key-order hashed needs --key-bytes 8 or more (a hash fills the key's first 8 bytes)";
  }
  if (cfg->hashed_keys && cfg->load == "bulk") {
    return "--key-order hashed cannot --load bulk (a bulk load takes keys in ascending order)";
  }
  if (cfg->multi_get && cfg->read != 100) return "--multi-get 1 needs a read-only mix (--read 100)";
  if (cfg->engine != "braid") {
    for (const char* f : {"mode", "batch", "scheduler", "multi-get", "memory-budget-mib", "load",
                          "log-flusher", "sq-poll-cpu", "prefault-mib", "prefault-index-mib", "l2-kib", "log-sync",
                          "checkpoint-mib", "reserve-gib", "background-load"}) {
      if (flags.has(f)) return std::string("--") + f + " applies to --engine braid only";
    }
    cfg->modes = {"plain"};  // a peer runs the thread-per-transaction loop
    // In memory unless a directory is given: a temporary one, commits not synced.
    if (cfg->db.dir.empty() && !flags.has("commit")) cfg->db.commit = "async";
  }
  return "";
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

// Load: opens the database and loads the table. Answers 0 or the exit code (after printing why).
int load_database(const Config& cfg, Setup* s) {
  Options options;
  if (std::string e = bench_options(
          cfg.threads, *std::max_element(cfg.batches.begin(), cfg.batches.end()), cfg.db, &options);
      !e.empty()) {
    std::fprintf(stderr, "braid-bench ycsb: %s\n", e.c_str());
    return 2;
  }
  s->db = open_bench_db(options);
  if (s->db == nullptr) return 1;
  Result<Table*> table = s->db->create_table("usertable");
  if (!table.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s\n", table.status().to_string().c_str());
    return 1;
  }
  s->table = *table;
  if (Status st = load(*s->db, *s->table, cfg, &s->load_s); !st.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", st.to_string().c_str());
    return 1;
  }
  // Estimated DRAM lines per operation: the descent (a node's 16 lines at each level the LLC
  // does not hold), the OID entry and the version (see estimate_lines in roof.h).
  s->lines_per_txn = estimate_lines(engine_get_path(*s->db, *s->table, cfg.records)) *
                     static_cast<double>(cfg.ops_per_txn);
  const Roof roof = load_roof(cfg.roof);
  s->roof_rate = roof.known ? roof.for_threads(cfg.threads) : 0;
  if (cfg.dist != "uniform") s->zipf = std::make_unique<Zipf>(cfg.records, cfg.theta);
  return 0;
}

void print_header(const Config& cfg, const Setup& s) {
  std::string batch_list;
  for (std::uint32_t b : cfg.batches) {
    batch_list += (batch_list.empty() ? "" : ",") + std::to_string(b);
  }
  std::printf(
      "braid-bench ycsb: %s records, %u thread%s, %u ops/txn, %s%s, %s%s, key %u B, value %u B, "
      "scheduler %s, batch %s\n",
      with_commas(cfg.records).c_str(), cfg.threads, cfg.threads == 1 ? "" : "s", cfg.ops_per_txn,
      mix_name(cfg).c_str(), cfg.multi_get ? " (multi_get)" : "", cfg.dist.c_str(),
      cfg.dist == "zipf" ? (" theta " + std::to_string(cfg.theta).substr(0, 4)).c_str() : "",
      cfg.key_bytes, cfg.value_bytes, cfg.scheduler.c_str(), batch_list.c_str());
  std::printf("  load (%s): %.2f s (%.0f records/s)\n", cfg.load.c_str(), s.load_s,
              static_cast<double>(cfg.records) / s.load_s);
  if (!cfg.db.dir.empty()) {
    const DurabilityStats ds = s.db->durability_stats();
    std::printf("  durability: %s in %s, commit %s, log sync %s\n", ds.io_backend.c_str(),
                cfg.db.dir.c_str(), cfg.db.commit.c_str(), cfg.db.log_sync.c_str());
    if (cfg.db.log_flusher != "none") std::printf("  log flusher: a background thread\n");
  }
  std::printf("  about %.1f DRAM lines per transaction (estimate)\n", s.lines_per_txn);
  std::printf("  %-14s %12s %12s %10s %9s %9s %10s %8s %8s\n", "mode", "txn_per_s", "ops_per_s",
              "abort_rate", "p50_us", "p99_us", "susp/txn", "vs_seq", "of_roof");
}

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

// The JSON fields every engine's run has: the workload as configured and as run (operations by
// type, attempts included), and its figures. The caller adds the engine's own.
void add_run_fields(JsonObject& o, const Config& cfg, const ModeResult& m, const RunFigures& f,
                    std::uint32_t rep, double load_s) {
  o.add("mode", m.mode).add("workload", cfg.workload);
  o.add("records", cfg.records).add("threads", cfg.threads).add("seconds", cfg.seconds);
  o.add("txns_per_thread", cfg.txns);
  o.add("ops_per_txn", cfg.ops_per_txn).add("read", cfg.read).add("update", cfg.update);
  o.add("rmw", cfg.rmw).add("scan", cfg.scan).add("insert", cfg.insert);
  o.add("scan_length", cfg.scan_length).add("scan_uniform", cfg.scan_uniform ? 1 : 0);
  o.add("dist", cfg.dist).add("theta", cfg.theta);
  o.add("key_bytes", cfg.key_bytes).add("value_bytes", cfg.value_bytes).add("seed", cfg.seed);
  o.add("key_order", cfg.hashed_keys ? "hashed" : "ordered");
  o.add("rep", rep).add("repeat", cfg.repeat).add("background_load", cfg.background_load);
  o.add("txn_per_s", m.txn_per_s).add("ops_per_s", f.ops_per_s).add("abort_rate", f.abort_rate);
  o.add("p50_us", f.p50_us).add("p99_us", f.p99_us).add("load_s", load_s).add("run_s", m.run_s);
  o.add("commits", m.total.commits).add("aborts", m.total.aborts);
  o.add("errors", m.total.errors);
  const auto& n = m.total.by_op;
  o.add("ops_read", n[0]).add("ops_update", n[1]).add("ops_rmw", n[2]);
  o.add("ops_scan", n[3]).add("ops_insert", n[4]);
  o.add("peak_rss_bytes", peak_rss_bytes());
  o.add("peak_rss_mib", static_cast<double>(peak_rss_bytes()) / (1 << 20));
}

// Report, per run: its table row and its JSON line. `seq`: this round's sequential txn/s, or
// 0 before sequential ran. Answers "" or the error of appending the JSON line.
std::string report_run(const Config& cfg, const Setup& s, const Variant& var, const ModeResult& m,
                       std::uint32_t rep, double seq) {
  const RunFigures f = RunFigures::of(m);
  const double susp = m.exec.transactions > 0 ? static_cast<double>(m.exec.suspends) /
                                                    static_cast<double>(m.exec.transactions)
                                              : 0;
  const double line_rate = m.txn_per_s * s.lines_per_txn;
  char vs[32] = "-";
  if (seq > 0) std::snprintf(vs, sizeof vs, "%.2fx", m.txn_per_s / seq);
  char of[32] = "-";
  if (s.roof_rate > 0) std::snprintf(of, sizeof of, "%.0f%%", 100 * line_rate / s.roof_rate);
  std::printf("  %-14s %12.0f %12.0f %10.4f %9.2f %9.2f %10.1f %8s %8s\n", var.label.c_str(),
              m.txn_per_s, f.ops_per_s, f.abort_rate, f.p50_us, f.p99_us, susp, vs, of);
  const double c50 = m.total.commit_latency.quantile(0.50) / 1000.0;
  const double c99 = m.total.commit_latency.quantile(0.99) / 1000.0;
  if (!cfg.db.dir.empty()) {
    std::printf("  %-14s log %.1f MB/s, %.0f syncs/s, commit latency p50 %.0f us, p99 %.0f us\n",
                "", m.log_bytes_per_s / 1e6, m.syncs_per_s, c50, c99);
  }
  if (cfg.db.memory_budget_mib != 0) {
    std::printf(
        "  %-14s hit ratio %.4f, %.0f cold reads/s (%.1f MB/s), io depth %.1f, "
        "%s evictions\n",
        "", m.cold.hit_ratio, m.cold.cold_reads_per_s, m.cold.cold_read_bytes_per_s / 1e6,
        m.cold.io_depth, with_commas(m.cold.evictions).c_str());
  }
  std::fflush(stdout);
  if (cfg.json == "none") return "";

  const DatabaseStats st = s.db->stats();
  JsonObject o;
  o.add("bench", "ycsb").add("time", iso_time());
  o.add("engine", "braid").add("engine_version", BRAID_VERSION);
  add_run_fields(o, cfg, m, f, rep, s.load_s);
  o.add("scheduler", cfg.scheduler).add("batch", var.batch);
  o.add("isolation", std::string(to_string(var.iso)));
  o.add("declare_read_only", cfg.declare_read_only ? 1 : 0);
  m.aborts.add_to(o, m.total.commits + m.total.aborts);
  o.add("multi_get", cfg.multi_get ? 1 : 0).add("load", cfg.load);
  o.add("commit", cfg.db.dir.empty() ? std::string("none") : cfg.db.commit);
  o.add("log_flusher", cfg.db.log_flusher).add("sq_poll_cpu", cfg.db.sq_poll_cpu);
  o.add("prefault_mib", cfg.db.prefault_mib).add("prefault_index_mib", cfg.db.prefault_index_mib);
  o.add("l2_kib", cfg.db.l2_kib);
  if (!cfg.db.dir.empty()) {
    o.add("dir", cfg.db.dir).add("log_sync", cfg.db.log_sync);
    o.add("log_bytes_per_s", m.log_bytes_per_s).add("syncs_per_s", m.syncs_per_s);
    o.add("commit_p50_us", c50).add("commit_p99_us", c99);
  }
  o.add("suspends_per_txn", susp).add("auto_batch", m.exec.auto_batch);
  o.add("auto_decisions", m.exec.auto_decisions).add("live_versions", st.live_versions);
  o.add("memory_budget_mib", cfg.db.memory_budget_mib).add("hit_ratio", m.cold.hit_ratio);
  o.add("cold_reads_per_s", m.cold.cold_reads_per_s).add("io_depth", m.cold.io_depth);
  o.add("cold_read_bytes_per_s", m.cold.cold_read_bytes_per_s);
  o.add("evictions", m.cold.evictions).add("live_version_bytes", st.live_version_bytes);
  o.add("index_nodes", st.index_nodes);
  o.add("lines_per_txn", s.lines_per_txn).add("line_fetches_per_s", line_rate);
  if (s.roof_rate > 0) {
    o.add("roof_lines_per_s", s.roof_rate);
    o.add("roof_fraction", line_rate / s.roof_rate);
  }
  o.add_object("machine", machine_description());
  return append_json_line(cfg.json, o);
}

// Report, at the end: memory, and with several rounds or variants their spread and ratios.
void report_summary(const Setup& s, const std::vector<Variant>& variants,
                    const std::vector<std::vector<double>>& rates) {
  const DatabaseStats st = s.db->stats();
  std::printf("  peak RSS %.1f MiB, %s live versions, %s index nodes\n",
              static_cast<double>(peak_rss_bytes()) / (1 << 20),
              with_commas(st.live_versions).c_str(), with_commas(st.index_nodes).c_str());
  std::vector<std::string> labels;
  for (const Variant& v : variants) labels.push_back(v.label);
  print_rounds_summary(labels, rates, "txn/s");
}

}  // namespace

int peer_main(const Config& cfg);

int ycsb_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    std::fprintf(stderr, "braid-bench ycsb: %s\n\n%s", err.c_str(), ycsb_usage());
    return 2;
  }
  if (cfg.engine != "braid") return peer_main(cfg);
  Setup s;
  if (int rc = load_database(cfg, &s); rc != 0) return rc;
  print_header(cfg, s);

  // Run: every variant once per round, round-robin, so each sees the same drift of a noisy
  // machine. rates[i]: txn/s of variants[i] in each round.
  const std::vector<Variant> variants = variants_of(cfg);
  std::vector<std::vector<double>> rates(variants.size());
  // Fresh keys, disjoint per thread: records + t + k * threads, continued across runs.
  std::vector<std::uint64_t> inserts(cfg.threads);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) inserts[t] = cfg.records + t;
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t stream = 0;
  // After the load: the competition is for the measured runs.
  const auto competing = std::make_unique<BackgroundLoad>(cfg.background_load);
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    double seq = 0;  // this round's sequential figure, once it ran
    for (std::size_t mi = 0; mi < variants.size(); ++mi) {
      const Variant& var = variants[mi];
      ModeResult m;
      if (Status st = run_mode(*s.db, *s.table, cfg, s.zipf.get(), var, &inserts, stream++, &m);
          !st.is_ok()) {
        std::fprintf(stderr, "braid-bench: run failed: %s\n", st.to_string().c_str());
        return 1;
      }
      rates[mi].push_back(m.txn_per_s);
      if (var.mode == "sequential") seq = m.txn_per_s;
      errors += m.total.errors;
      if (first_error.empty()) first_error = m.total.first_error;
      if (std::string e = report_run(cfg, s, var, m, rep, seq); !e.empty()) {
        std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
        return 1;
      }
    }
  }
  report_summary(s, variants, rates);
  if (errors != 0) {
    std::fprintf(stderr, "braid-bench: %s operations failed (first: %s)\n",
                 with_commas(errors).c_str(), first_error.c_str());
    return 1;
  }
  return 0;
}

namespace {

// A peer's run: cfg.threads threads in the thread-per-transaction loop for cfg.seconds.
ModeResult run_peer(PeerEngine& engine, const Config& cfg, const Zipf* zipf,
                    std::vector<std::uint64_t>* inserts, std::uint64_t stream) {
  std::atomic<bool> stop{false};
  std::vector<ThreadResult> results(cfg.threads);
  std::vector<std::thread> threads;
  profile_begin();
  const auto start = Clock::now();
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    results[t].next_insert = (*inserts)[t];
    results[t].stream = stream;
    threads.emplace_back([&, t] {
      std::unique_ptr<PeerSession> session = engine.session();
      PeerApi api{*session, {}};
      run_txn_thread(api, cfg, zipf, t, stop, &results[t]);
    });
  }
  stop_after(cfg, stop);
  for (auto& th : threads) th.join();
  ModeResult res;
  res.run_s = std::chrono::duration<double>(Clock::now() - start).count();
  profile_end(cfg.engine.c_str());
  res.mode = "plain";
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    (*inserts)[t] = results[t].next_insert;
    res.total.add(results[t]);
  }
  res.txn_per_s = static_cast<double>(res.total.commits) / res.run_s;
  return res;
}

// The peer's load: as BraidDB's, through each thread's session, then the engine settles.
Status load_peer(PeerEngine& engine, const Config& cfg) {
  struct Loader {
    std::unique_ptr<PeerSession> session;
    PeerApi api;
    explicit Loader(PeerEngine& e) : session(e.session()), api{*session, {}} {}
    PeerApi* operator->() { return &api; }
  };
  if (Status s = load_in_transactions(cfg, [&](std::uint32_t) { return Loader(engine); });
      !s.is_ok()) {
    return s;
  }
  return engine.settle();
}

}  // namespace

int peer_main(const Config& cfg) {
  // The peer's directory: --dir (new or empty), or a temporary one removed at the end.
  std::string dir = cfg.db.dir;
  const bool temporary = dir.empty();
  std::error_code ec;
  if (temporary) {
    char tmpl[] = "/tmp/braid-bench-peer-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::fprintf(stderr, "braid-bench ycsb: cannot create a temporary directory\n");
      return 1;
    }
    dir = tmpl;
  } else if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    std::fprintf(stderr, "braid-bench ycsb: --dir %s exists and is not empty; give a new path\n",
                 dir.c_str());
    return 2;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) std::filesystem::remove_all(dir, e);
    }
  } cleanup{temporary ? dir : std::string()};
  PeerConfig pc;
  pc.dir = dir;
  pc.durable = cfg.db.commit == "durable";
  pc.records = cfg.records;
  pc.key_bytes = cfg.key_bytes;
  pc.value_bytes = cfg.value_bytes;
  Result<std::unique_ptr<PeerEngine>> opened = open_peer(cfg.engine, pc);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "braid-bench ycsb: --engine %s: %s\n", cfg.engine.c_str(),
                 opened.status().to_string().c_str());
    return opened.code() == Code::kNotFound ? 3 : 1;
  }
  PeerEngine& engine = **opened;
  const auto t0 = Clock::now();
  if (Status s = load_peer(engine, cfg); !s.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s load failed: %s\n", cfg.engine.c_str(),
                 s.to_string().c_str());
    return 1;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::unique_ptr<Zipf> zipf;
  if (cfg.dist != "uniform") zipf = std::make_unique<Zipf>(cfg.records, cfg.theta);
  std::printf(
      "braid-bench ycsb --engine %s (%s %s): %s records, %u thread%s, %u ops/txn, %s, %s, key %u "
      "B, value %u B, commit %s\n",
      cfg.engine.c_str(), engine.name().c_str(), engine.version().c_str(),
      with_commas(cfg.records).c_str(), cfg.threads, cfg.threads == 1 ? "" : "s", cfg.ops_per_txn,
      mix_name(cfg).c_str(), cfg.dist.c_str(), cfg.key_bytes, cfg.value_bytes,
      cfg.db.commit.c_str());
  std::printf("  load: %.2f s (%.0f records/s), directory %s%s\n", load_s,
              static_cast<double>(cfg.records) / load_s, dir.c_str(),
              temporary ? " (temporary)" : "");
  std::printf("  %-14s %12s %12s %10s %9s %9s\n", "engine", "txn_per_s", "ops_per_s", "abort_rate",
              "p50_us", "p99_us");
  std::vector<std::uint64_t> inserts(cfg.threads);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) inserts[t] = cfg.records + t;
  std::vector<std::vector<double>> rates(1);
  std::uint64_t errors = 0;
  std::string first_error;
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    const ModeResult m = run_peer(engine, cfg, zipf.get(), &inserts, rep);
    rates[0].push_back(m.txn_per_s);
    errors += m.total.errors;
    if (first_error.empty()) first_error = m.total.first_error;
    const RunFigures f = RunFigures::of(m);
    std::printf("  %-14s %12.0f %12.0f %10.4f %9.2f %9.2f\n", cfg.engine.c_str(), m.txn_per_s,
                f.ops_per_s, f.abort_rate, f.p50_us, f.p99_us);
    std::fflush(stdout);
    if (cfg.json == "none") continue;
    JsonObject o;
    o.add("bench", "ycsb").add("time", iso_time());
    o.add("engine", engine.name()).add("engine_version", engine.version());
    add_run_fields(o, cfg, m, f, rep, load_s);
    o.add("commit", cfg.db.commit).add("dir", dir);
    o.add_object("machine", machine_description());
    if (std::string e = append_json_line(cfg.json, o); !e.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
      return 1;
    }
  }
  std::printf("  peak RSS %.1f MiB\n", static_cast<double>(peak_rss_bytes()) / (1 << 20));
  print_rounds_summary({cfg.engine}, rates, "txn/s");
  if (errors != 0) {
    std::fprintf(stderr, "braid-bench: %s operations failed (first: %s)\n",
                 with_commas(errors).c_str(), first_error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace braid::bench
