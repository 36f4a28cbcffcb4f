// braid-bench contention: MosaicDB §6.4 (Fig. 12). Every transaction inserts one record with the
// next key of one shared, monotonically increasing sequence, so every worker writes the same
// rightmost leaf: the index's latch (here: the OLC version a writer upgrades) is the bottleneck.
// Interleaving bounds how many writers contend at once to the number of workers, where threads
// oversubscribing the cores would contend at every preemption. Runs each worker count (more than
// the cores included) in sequential and in interleaved at each batch size, in memory (MosaicDB
// used tmpfs so that I/O stays out of it), and reports throughput and contention: descents
// restarted per transaction and the share of the workers' time spent backing off.
#include "contention.h"
#include "command.h"

#include <braid/braid.h>
#include <braid/tx.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_db.h"
#include "flags.h"
#include "report.h"
#include "ycsb/ycsb.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::vector<std::uint32_t> workers;
  std::vector<std::uint32_t> batches;
  std::vector<std::string> modes;
  std::uint64_t records;
  double seconds;
  std::uint32_t repeat;
  std::uint32_t value_bytes;
  std::string json;
};

struct Variant {
  std::string mode;
  std::uint32_t batch;  // 1 for the sequential modes
  std::string label;
};

bool interleaves(const std::string& mode) { return mode != "sequential" && mode != "prefetch"; }

std::vector<Variant> variants_of(const Config& cfg) {
  std::vector<Variant> out;
  for (const std::string& m : cfg.modes) {
    if (!interleaves(m)) {
      out.push_back({m, 1, m});
      continue;
    }
    for (std::uint32_t b : cfg.batches) out.push_back({m, b, m + "@" + std::to_string(b)});
  }
  return out;
}

class InsertGenerator : public TxnGenerator {
 public:
  InsertGenerator(Table& table, std::atomic<std::uint64_t>* next_key, std::uint32_t value_bytes,
                  const std::atomic<bool>& stop)
      : table_(table), next_key_(next_key), value_(value_bytes, 'v'), stop_(stop) {}
  bool next(Tx& tx, Task<Status>* task) override {
    if (stop_.load(std::memory_order_relaxed)) return false;
    *task = insert(tx, next_key_->fetch_add(1, std::memory_order_relaxed));
    return true;
  }
  void finished(const Status& s, std::uint64_t) override { outcomes.count(s); }
  Outcomes outcomes;

 private:
  Task<Status> insert(Tx& tx, std::uint64_t k) {
    char key[8];
    make_key(k, 8, key);
    co_return co_await tx.insert(table_, std::string_view(key, 8), value_);
  }
  Table& table_;
  std::atomic<std::uint64_t>* next_key_;
  const std::string value_;
  const std::atomic<bool>& stop_;
};

struct RunResult {
  double txn_per_s = 0;
  double restarts_per_txn = 0;
  double wait_share = 0;  // backoff time over the workers' run time
  double abort_rate = 0;
  std::uint64_t commits = 0, errors = 0;
  std::string first_error;
};

Status run_variant(Database& db, Table& table, const Config& cfg, std::uint32_t workers,
                   const Variant& v, std::atomic<std::uint64_t>* next_key, RunResult* out) {
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<InsertGenerator>> gens;
  std::vector<TxnGenerator*> ptrs;
  for (std::uint32_t t = 0; t < workers; ++t) {
    gens.push_back(std::make_unique<InsertGenerator>(table, next_key, cfg.value_bytes, stop));
    ptrs.push_back(gens.back().get());
  }
  ExecOptions e;
  (void)parse_exec_mode(v.mode, &e.mode);
  e.scheduler = SchedulerPolicy::kBatch;  // MosaicDB §6.4 reports its batch variant
  e.batch = v.batch;
  const ExecStats before = db.exec_stats();
  const auto start = Clock::now();
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
    stop.store(true);
  });
  Status s = db.run(ptrs, e);
  timer.join();
  const double run_s = std::chrono::duration<double>(Clock::now() - start).count();
  const ExecStats d = exec_delta(before, db.exec_stats());
  std::uint64_t aborts = 0;
  for (const auto& g : gens) {
    out->commits += g->outcomes.commits;
    aborts += g->outcomes.aborts;
    out->errors += g->outcomes.errors;
    if (out->first_error.empty()) out->first_error = g->outcomes.first_error;
  }
  out->txn_per_s = static_cast<double>(out->commits) / run_s;
  const double attempts = static_cast<double>(out->commits + aborts);
  out->abort_rate = attempts > 0 ? static_cast<double>(aborts) / attempts : 0;
  out->restarts_per_txn = attempts > 0 ? static_cast<double>(d.index_restarts) / attempts : 0;
  out->wait_share = static_cast<double>(d.index_backoff_ns) / (run_s * 1e9 * workers);
  return s;
}

std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::uint64_t> def_workers;
  for (std::uint64_t w = 1; w <= 4 * cores; w *= 2) def_workers.push_back(w);
  for (std::uint64_t w : flags.u64_list("workers", def_workers, 1, 256)) {
    cfg->workers.push_back(static_cast<std::uint32_t>(w));
  }
  for (std::uint64_t b : flags.u64_list("batch", {4, 8}, 1, 64)) {
    cfg->batches.push_back(static_cast<std::uint32_t>(b));
  }
  cfg->modes =
      parse_name_list("mode", flags.str("mode", "sequential,interleaved"), exec_mode_names(), &err);
  cfg->records = flags.u64("records", 1'000'000, 0, std::uint64_t{1} << 34);
  cfg->seconds = flags.f64("seconds", 2, 0.01, 86400);
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  cfg->value_bytes = static_cast<std::uint32_t>(flags.u64("value-bytes", 8, 0, 4000));
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  if (!err.empty() || !flags.finish(&err)) return err;
  return "";
}

}  // namespace

const char* contention_usage() {
  return R"(usage: braid-bench contention [flags]

MosaicDB's high-contention microbenchmark (§6.4): single-insert transactions whose keys come
from one shared increasing sequence, so every worker inserts into the same leaf. For each
worker count (a fresh in-memory database, preloaded), sequential and interleaved at each
batch size, alternated --repeat times. Reports txn/s, index restarts per transaction and the
share of the workers' time spent backing off after a restart.

  --workers W[,W]    worker counts; more than the cores oversubscribes them
                     (default 1,2,4,...,4x the cores)
  --mode M[,M]       execution modes (default sequential,interleaved)
  --batch N[,N]      batch sizes of the interleaving modes (default 4,8)
  --records N        records loaded before the runs (default 1000000)
  --seconds S        per run (default 2)
  --repeat R         rounds over the variants (default 1)
  --value-bytes V    value length (default 8)
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl;
                     'none' to skip)
)";
}

int contention_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    return usage_error("contention", err, contention_usage());
  }
  const std::vector<Variant> variants = variants_of(cfg);
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf(
      "braid-bench contention: single-insert transactions, increasing keys, %s records "
      "preloaded, %u cores\n",
      with_commas(cfg.records).c_str(), cores);
  std::printf("  %7s %-16s %12s %12s %10s %10s\n", "workers", "variant", "txn_per_s",
              "restarts/txn", "wait_share", "abort_rate");
  std::uint64_t errors = 0;
  std::string first_error;
  for (std::uint32_t workers : cfg.workers) {
    const std::uint32_t max_batch = *std::max_element(cfg.batches.begin(), cfg.batches.end());
    Options options;
    if (std::string e = bench_options(workers, max_batch, DbFlags{}, &options); !e.empty()) {
      std::fprintf(stderr, "braid-bench contention: %s\n", e.c_str());
      return 2;
    }
    // Oversubscribed workers share cores: pinning two to one core would only add to it.
    options.pin_workers = workers <= cores;
    std::unique_ptr<Database> db = open_bench_db(options);
    if (db == nullptr) return 1;
    Result<Table*> table = db->create_table("inserts");
    if (!table.is_ok()) {
      std::fprintf(stderr, "braid-bench: %s\n", table.status().to_string().c_str());
      return 1;
    }
    double load_s = 0;
    if (cfg.records != 0) {
      if (Status s = ycsb_load(*db, **table, cfg.records, 8, cfg.value_bytes,
                               std::min(workers, cores), &load_s);
          !s.is_ok()) {
        std::fprintf(stderr, "braid-bench: load failed: %s\n", s.to_string().c_str());
        return 1;
      }
    }
    std::atomic<std::uint64_t> next_key{cfg.records};
    std::vector<std::vector<double>> rates(variants.size());
    for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
      for (std::size_t i = 0; i < variants.size(); ++i) {
        RunResult r;
        if (Status s = run_variant(*db, **table, cfg, workers, variants[i], &next_key, &r);
            !s.is_ok()) {
          std::fprintf(stderr, "braid-bench: run failed: %s\n", s.to_string().c_str());
          return 1;
        }
        rates[i].push_back(r.txn_per_s);
        errors += r.errors;
        if (first_error.empty()) first_error = r.first_error;
        std::printf("  %7u %-16s %12.0f %12.3f %10.4f %10.4f\n", workers, variants[i].label.c_str(),
                    r.txn_per_s, r.restarts_per_txn, r.wait_share, r.abort_rate);
        std::fflush(stdout);
        if (cfg.json == "none") continue;
        JsonObject o;
        o.add("bench", "contention").add("time", iso_time());
        o.add("workers", workers)
            .add("cores", cores)
            .add("oversubscribed", workers > cores ? 1 : 0);
        o.add("mode", variants[i].mode).add("batch", variants[i].batch);
        o.add("txn_per_s", r.txn_per_s).add("restarts_per_txn", r.restarts_per_txn);
        o.add("wait_share", r.wait_share).add("abort_rate", r.abort_rate);
        o.add("commits", r.commits).add("errors", r.errors);
        o.add("records", cfg.records).add("seconds", cfg.seconds).add("rep", rep);
        o.add("repeat", cfg.repeat).add("load_s", load_s);
        o.add_object("machine", machine_description());
        if (std::string e = append_json_line(cfg.json, o); !e.empty()) {
          std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
          return 1;
        }
      }
    }
    if (cfg.repeat > 1) {
      std::vector<std::string> labels;
      for (const Variant& v : variants) labels.push_back(std::to_string(workers) + "w " + v.label);
      print_rounds_summary(labels, rates, "txn/s");
    }
  }
  return run_exit(errors, first_error);
}

}  // namespace braid::bench
