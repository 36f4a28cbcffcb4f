// YCSB's workload as braid-bench runs it: the operations of one transaction (OpPlanner) and
// their keys (Picker), the bodies written once for every API (ycsb_txn.inc: the engine's
// blocking and coroutine APIs and the peers'), the thread-per-transaction loop, the workers'
// generator, and the entry points that drive them: the load, one measured run of a mode, a
// peer's run and load. One unit, the machinery in an anonymous namespace: it runs once per
// operation on the measured path, and the inliner treats a function it sees whole and alone
// better than one it must also keep out of line.
#include "ycsb/config.h"

namespace braid::bench::ycsb {

namespace {

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
#include "ycsb/ycsb_txn.inc"
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

}  // namespace

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
  res->cold = ColdFigures::of(sbefore, safter, res->run_s);
  res->cold.with_leaves(sbefore, safter, res->exec);
  res->aborts = AbortCauses::of(sbefore, safter);
  if (dafter.halted) status = Status::io_error(dafter.halt_reason);
  return status;
}

// Parse: the command line into a Config. Answers "" or the error to print above the usage.

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

}  // namespace braid::bench::ycsb

namespace braid::bench {

using namespace ycsb;  // NOLINT(google-build-using-namespace): the sub-command's own names

Status ycsb_load(Database& db, Table& table, std::uint64_t records, std::uint32_t key_bytes,
                 std::uint32_t value_bytes, std::uint32_t threads, double* seconds) {
  Config cfg{};
  cfg.records = records;
  cfg.key_bytes = key_bytes;
  cfg.value_bytes = value_bytes;
  cfg.threads = threads;
  return load(db, table, cfg, seconds);
}

}  // namespace braid::bench
