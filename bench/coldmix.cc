// braid-bench coldmix: MosaicDB's larger-than-memory microbenchmarks (§6.2, Figs. 6-8) at this
// machine's scale. A hot table lives in memory; a cold table is loaded straight to storage and,
// with --cache-cold off (MosaicDB's setup), never kept: every access to it is a read. A
// memory-bound transaction reads 10 hot records; a storage-bound one, --cold-pct percent of
// them, reads 8 hot and 2 cold ones, in a random order. --rw makes half of the transactions
// read-modify-writes of the same records (a cold update is a cold read, then an update).
#include "coldmix.h"
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
#include "util/random.h"
#include "ycsb/ycsb.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kOpsPerTxn = 10;
constexpr std::uint32_t kColdOpsPerTxn = 2;  // of a storage-bound transaction's 10

struct Config {
  std::uint64_t hot_records;
  std::uint64_t cold_records;
  std::vector<std::uint32_t> cold_pcts;
  bool cache_cold;
  bool profile_stages;
  std::uint32_t read_batch;
  std::uint32_t read_window_us;
  bool rw;
  std::uint32_t threads;
  double seconds;
  std::uint32_t value_bytes;
  std::uint64_t seed;
  std::vector<std::string> modes;
  std::vector<std::string> schedulers;
  std::vector<std::string> storage_paths;  // interleaved only: nested | flattened
  std::uint32_t repeat;
  std::uint32_t batch;                    // batch, storage-batch
  std::uint32_t pipeline_slots;           // pipeline (MosaicDB §6.2: a queue of 16)
  std::uint32_t hot_slots;                // dual-queue
  std::vector<std::uint32_t> cold_slots;  // dual-queue: one variant per size
  std::uint32_t check_every;
  std::string json;
  DbFlags db;
};

// One measured combination. The sequential modes open one transaction at a time, so the
// scheduler means nothing there: they run once, scheduler "none".
struct Variant {
  std::string mode;
  std::string scheduler;
  std::uint32_t cold_pct;
  std::string label;
  std::string storage_path = "nested";
  std::uint32_t cold_slots = 0;  // dual-queue
};

bool interleaves(const std::string& mode) { return mode != "sequential" && mode != "prefetch"; }

std::vector<Variant> variants_of(const Config& cfg) {
  std::vector<Variant> out;
  for (std::uint32_t pct : cfg.cold_pcts) {
    for (const std::string& m : cfg.modes) {
      if (!interleaves(m)) {
        out.push_back({m, "none", pct, m + " " + std::to_string(pct) + "%"});
        continue;
      }
      for (const std::string& s : cfg.schedulers) {
        // The storage path's structure is a choice of interleaved only (nested nests it all).
        const bool paths = m == "interleaved" && cfg.storage_paths.size() > 1;
        for (const std::string& sp : cfg.storage_paths) {
          if (m != "interleaved" && sp != cfg.storage_paths.front()) continue;
          const std::string tag = paths ? "+" + sp : "";
          // A --cold-slots list sweeps dual-queue's cold queue (MosaicDB Fig. 8) in one process.
          const bool dual = s == "dual-queue";
          for (std::uint32_t qs : cfg.cold_slots) {
            if (!dual && qs != cfg.cold_slots.front()) continue;
            const std::string qs_tag =
                dual && cfg.cold_slots.size() > 1 ? "@" + std::to_string(qs) : "";
            out.push_back({m, s, pct, m + tag + "/" + s + qs_tag + " " + std::to_string(pct) + "%",
                           m == "interleaved" ? sp : "nested", dual ? qs : 0});
          }
        }
      }
    }
  }
  return out;
}

// Per worker, per run.
struct ClassResult {
  std::uint64_t commits = 0;
  Histogram latency;
};
struct ThreadResult {
  ClassResult hot, cold;
  std::uint64_t aborts = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t sink = 0;
};

class ColdmixGenerator : public TxnGenerator {
 public:
  ColdmixGenerator(Table& hot, Table& cold, const Config& cfg, std::uint32_t cold_pct,
                   std::uint64_t seed, const std::atomic<bool>& stop, ThreadResult* out)
      : hot_(hot),
        cold_(cold),
        cfg_(cfg),
        cold_pct_(cold_pct),
        rng_(seed),
        stop_(stop),
        out_(out) {}

  bool next(Tx& tx, Task<Status>* task) override {
    if (stop_.load(std::memory_order_relaxed)) return false;
    const bool storage_bound = rng_.uniform(100) < cold_pct_;
    const bool rmw = cfg_.rw && rng_.uniform(2) == 0;
    // Which of the 10 operations go to the cold table: 2 distinct positions.
    std::uint32_t cold_mask = 0;
    while (storage_bound && __builtin_popcount(cold_mask) < static_cast<int>(kColdOpsPerTxn)) {
      cold_mask |= 1u << rng_.uniform(kOpsPerTxn);
    }
    *task = transaction(tx, cold_mask, rmw, rng_.next());
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    // Commits and their latency are counted by the transaction itself (it awaits its commit).
    if (s.is_ok() || s == Code::kConflict) return;
    ++out_->errors;
    if (out_->first_error.empty()) out_->first_error = s.to_string();
  }

 private:
  // Parameters by value (the lifetime rule of <braid/task.h>).
  Task<Status> transaction(Tx& tx, std::uint32_t cold_mask, bool rmw, std::uint64_t seed) {
    const auto t0 = Clock::now();
    util::Rng rng(seed);
    char key[8];
    std::string value(cfg_.value_bytes, '\0');
    for (std::uint32_t i = 0; i < kOpsPerTxn; ++i) {
      const bool cold = (cold_mask >> i) & 1u;
      Table& table = cold ? cold_ : hot_;
      make_key(rng.uniform(cold ? cfg_.cold_records : cfg_.hot_records), 8, key);
      const std::string_view k(key, 8);
      Result<std::string_view> r = co_await tx.get(table, k);
      if (!r.is_ok()) co_return r.status();
      out_->sink += r->size();
      if (!rmw) continue;
      fill_value(value.data(), cfg_.value_bytes, seed + i);
      if (Status s = co_await tx.update(table, k, value); !s.is_ok()) co_return s;
    }
    Status s = co_await tx.commit();
    if (s == Code::kConflict) {
      ++out_->aborts;
      co_return s;
    }
    if (!s.is_ok()) co_return s;
    ClassResult& c = cold_mask != 0 ? out_->cold : out_->hot;
    ++c.commits;
    c.latency.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
    co_return Status::ok();
  }

  Table& hot_;
  Table& cold_;
  const Config& cfg_;
  const std::uint32_t cold_pct_;
  util::Rng rng_;
  const std::atomic<bool>& stop_;
  ThreadResult* out_;
};

struct RunResult {
  double run_s = 0;
  ThreadResult total;
  double txn_per_s = 0, hot_txn_per_s = 0, cold_txn_per_s = 0;
  double iops = 0, io_depth = 0;
  double log_syncs_per_s = 0;
  ExecStats exec;
};

ExecOptions exec_of(const Config& cfg, const Variant& v) {
  ExecOptions e;
  (void)parse_exec_mode(v.mode, &e.mode);  // names the flag parser accepted
  if (v.scheduler != "none") (void)parse_scheduler(v.scheduler, &e.scheduler);
  e.batch = e.scheduler == SchedulerPolicy::kDualQueue  ? cfg.hot_slots
            : e.scheduler == SchedulerPolicy::kPipeline ? cfg.pipeline_slots
                                                        : cfg.batch;
  if (v.cold_slots != 0) e.cold_slots = v.cold_slots;
  e.cold_check_every = cfg.check_every;
  e.storage_path = v.storage_path == "flattened" ? StoragePath::kFlattened : StoragePath::kNested;
  e.seed = cfg.seed;
  e.profile_storage = cfg.profile_stages;
  e.read_batch = cfg.read_batch;
  e.read_window_us = cfg.read_window_us;
  return e;
}

Status run_variant(Database& db, Table& hot, Table& cold, const Config& cfg, const Variant& v,
                   std::uint64_t stream, RunResult* res) {
  std::atomic<bool> stop{false};
  std::vector<ThreadResult> results(cfg.threads);
  std::vector<std::unique_ptr<ColdmixGenerator>> gens;
  std::vector<TxnGenerator*> ptrs;
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    gens.push_back(std::make_unique<ColdmixGenerator>(hot, cold, cfg, v.cold_pct,
                                                      cfg.seed * 1000003 + stream * 65537 + t + 1,
                                                      stop, &results[t]));
    ptrs.push_back(gens.back().get());
  }
  const ExecStats ebefore = db.exec_stats();
  const DatabaseStats sbefore = db.stats();
  const DurabilityStats dbefore = db.durability_stats();
  const auto start = Clock::now();
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
    stop.store(true);
  });
  Status status = db.run(ptrs, exec_of(cfg, v));
  timer.join();
  res->run_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (ThreadResult& r : results) {
    res->total.hot.commits += r.hot.commits;
    res->total.hot.latency.merge(r.hot.latency);
    res->total.cold.commits += r.cold.commits;
    res->total.cold.latency.merge(r.cold.latency);
    res->total.aborts += r.aborts;
    res->total.errors += r.errors;
    res->total.sink += r.sink;
    if (res->total.first_error.empty()) res->total.first_error = r.first_error;
  }
  res->hot_txn_per_s = static_cast<double>(res->total.hot.commits) / res->run_s;
  res->cold_txn_per_s = static_cast<double>(res->total.cold.commits) / res->run_s;
  res->txn_per_s = res->hot_txn_per_s + res->cold_txn_per_s;
  const ColdFigures f = ColdFigures::of(sbefore, db.stats(), res->run_s);
  res->iops = f.cold_reads_per_s;
  res->io_depth = f.io_depth;
  const DurabilityStats dafter = db.durability_stats();
  res->log_syncs_per_s = static_cast<double>(dafter.log_flushes - dbefore.log_flushes) / res->run_s;
  res->exec = exec_delta(ebefore, db.exec_stats());
  if (dafter.halted) status = Status::io_error(dafter.halt_reason);
  return status;
}

std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err, {"rw", "profile-stages"})) return err;
  cfg->hot_records = flags.u64("hot-records", 20'000'000, 1, std::uint64_t{1} << 36);
  cfg->cold_records = flags.u64("cold-records", 2'000'000, 1, std::uint64_t{1} << 36);
  for (std::uint64_t p : flags.u64_list("cold-pct", {10}, 0, 100)) {
    cfg->cold_pcts.push_back(static_cast<std::uint32_t>(p));
  }
  cfg->cache_cold = flags.choice("cache-cold", "on", {"on", "off"}) == "on";
  cfg->rw = flags.u64("rw", 0, 0, 1) != 0;
  cfg->profile_stages = flags.u64("profile-stages", 0, 0, 1) != 0;
  cfg->read_batch =
      static_cast<std::uint32_t>(flags.u64("read-batch", ExecOptions{}.read_batch, 1, 64));
  cfg->read_window_us = static_cast<std::uint32_t>(
      flags.u64("read-window-us", ExecOptions{}.read_window_us, 0, 100'000));
  cfg->threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 1024));
  cfg->seconds = flags.f64("seconds", 5, 0.01, 86400);
  cfg->value_bytes = static_cast<std::uint32_t>(flags.u64("value-bytes", 8, 0, 4000));
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  std::vector<std::string> modes = exec_mode_names();
  cfg->modes = parse_name_list("mode", flags.str("mode", "sequential,interleaved"), modes, &err);
  cfg->schedulers =
      parse_name_list("scheduler", flags.str("scheduler", "dual-queue"), scheduler_names(), &err);
  cfg->storage_paths = parse_name_list("storage-path", flags.str("storage-path", "nested"),
                                       {"nested", "flattened"}, &err);
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  cfg->batch = static_cast<std::uint32_t>(flags.u64("batch", 8, 1, 64));
  cfg->pipeline_slots = static_cast<std::uint32_t>(flags.u64("pipeline-slots", 16, 1, 64));
  cfg->hot_slots = static_cast<std::uint32_t>(flags.u64("hot-slots", 8, 1, 64));
  for (std::uint64_t qs : flags.u64_list("cold-slots", {16}, 1, 192)) {
    cfg->cold_slots.push_back(static_cast<std::uint32_t>(qs));
  }
  cfg->check_every = static_cast<std::uint32_t>(flags.u64("check-every", 8, 1, 1 << 20));
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->db = DbFlags::parse(flags);
  if (!err.empty() || !flags.finish(&err)) return err;
  if (cfg->db.dir.empty()) return "coldmix needs --dir (the cold table lives on storage)";
  if (cfg->db.memory_budget_mib != 0) {
    return "coldmix takes no --memory-budget-mib: the hot table stays in memory and the cold "
           "one is loaded to storage";
  }
  for (std::size_t i = 0; i < cfg->cold_pcts.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (cfg->cold_pcts[i] == cfg->cold_pcts[j]) {
        return "--cold-pct lists " + std::to_string(cfg->cold_pcts[i]) + " twice";
      }
    }
  }
  return "";
}

std::string report(const Config& cfg, const Variant& v, const RunResult& r, std::uint32_t rep,
                   double load_s) {
  const double hp50 = r.total.hot.latency.quantile(0.5) / 1000.0;
  const double hp99 = r.total.hot.latency.quantile(0.99) / 1000.0;
  const double cp50 = r.total.cold.latency.quantile(0.5) / 1000.0;
  const double cp99 = r.total.cold.latency.quantile(0.99) / 1000.0;
  std::printf("  %-36s %10.0f %10.0f %9.0f %8.0f %6.1f %8.1f %8.1f %9.1f %9.1f\n", v.label.c_str(),
              r.txn_per_s, r.hot_txn_per_s, r.cold_txn_per_s, r.iops, r.io_depth, hp50, hp99, cp50,
              cp99);
  const ExecStats& x = r.exec;
  const double reads = static_cast<double>(x.cold_reads_reaped);
  std::uint64_t worker_ns = 0;
  for (std::uint64_t ns : x.storage_stage_ns) worker_ns += ns;
  if (cfg.profile_stages && worker_ns != 0) {
    // The engine's own per-stage profile: worker time per cold read each stage took.
    const std::uint64_t path_ns = worker_ns - x.storage_stage_ns[0];
    std::printf("    stages, us per cold read:");
    for (int i = 1; i < ExecStats::kStorageStages; ++i) {
      std::printf(" %s %.2f%s", storage_stage_name(i),
                  reads == 0 ? 0.0 : static_cast<double>(x.storage_stage_ns[i]) / reads / 1000.0,
                  i + 1 < ExecStats::kStorageStages ? "," : "");
    }
    std::printf(
        "\n    storage path %.2f us per cold read, %.1f %% of worker time; "
        "%.2f reads per submission, %.2f per reap, %.0f %% into registered buffers\n",
        reads == 0 ? 0.0 : static_cast<double>(path_ns) / reads / 1000.0,
        100.0 * static_cast<double>(path_ns) / static_cast<double>(worker_ns),
        x.cold_read_submissions == 0 ? 0.0
                                     : static_cast<double>(x.cold_reads_issued) /
                                           static_cast<double>(x.cold_read_submissions),
        x.cold_reaps == 0 ? 0.0 : reads / static_cast<double>(x.cold_reaps),
        x.cold_reads_issued == 0 ? 0.0
                                 : 100.0 * static_cast<double>(x.cold_reads_registered) /
                                       static_cast<double>(x.cold_reads_issued));
  }
  std::fflush(stdout);
  if (cfg.json == "none") return "";
  const ExecOptions e = exec_of(cfg, v);
  JsonObject o;
  o.add("bench", "coldmix").add("time", iso_time());
  o.add("mode", v.mode).add("scheduler", v.scheduler).add("cold_pct", v.cold_pct);
  o.add("storage_path", v.mode == "nested" ? "nested (all)" : v.storage_path);
  o.add("txn_per_s", r.txn_per_s).add("hot_txn_per_s", r.hot_txn_per_s);
  o.add("cold_txn_per_s", r.cold_txn_per_s).add("iops", r.iops).add("io_depth", r.io_depth);
  o.add("hot_p50_us", hp50).add("hot_p99_us", hp99);
  o.add("cold_p50_us", cp50).add("cold_p99_us", cp99);
  o.add("rw", cfg.rw ? 1 : 0).add("cache_cold", cfg.cache_cold ? "on" : "off");
  o.add("batch", e.batch).add("cold_slots", v.cold_slots);
  o.add("check_every", cfg.check_every);
  o.add("hot_records", cfg.hot_records).add("cold_records", cfg.cold_records);
  o.add("threads", cfg.threads).add("seconds", cfg.seconds).add("value_bytes", cfg.value_bytes);
  o.add("commit", cfg.db.commit).add("log_sync", cfg.db.log_sync).add("dir", cfg.db.dir);
  o.add("sq_poll_cpu", cfg.db.sq_poll_cpu);
  o.add("read_batch", cfg.read_batch).add("read_window_us", cfg.read_window_us);
  o.add("seed", cfg.seed).add("rep", rep).add("repeat", cfg.repeat).add("run_s", r.run_s);
  o.add("load_s", load_s).add("hot_commits", r.total.hot.commits);
  o.add("cold_commits", r.total.cold.commits).add("aborts", r.total.aborts);
  o.add("errors", r.total.errors).add("log_syncs_per_s", r.log_syncs_per_s);
  o.add("io_checks", r.exec.io_checks).add("resumes", r.exec.resumes);
  o.add("peak_rss_mib", peak_rss_mib());
  o.add("cold_reads_issued", x.cold_reads_issued).add("cold_reaps", x.cold_reaps);
  o.add("cold_read_submissions", x.cold_read_submissions);
  o.add("cold_reads_registered", x.cold_reads_registered);
  o.add("cold_reads_reaped", x.cold_reads_reaped);
  if (cfg.profile_stages) {
    for (int i = 0; i < ExecStats::kStorageStages; ++i) {
      std::string name = std::string("stage_") + storage_stage_name(i) + "_ns";
      for (char& c : name) c = c == ' ' ? '_' : c;
      o.add(name, x.storage_stage_ns[i]);
    }
  }
  o.add_object("machine", machine_description());
  return append_json_line(cfg.json, o);
}

}  // namespace

const char* coldmix_usage() {
  return R"(usage: braid-bench coldmix --dir PATH [flags]

MosaicDB's hot/cold microbenchmark (§6.2): a hot table in memory, a cold table loaded straight
to storage. A memory-bound transaction reads 10 hot records; a storage-bound one reads 8 hot
and 2 cold ones. Every combination of --cold-pct, --mode and --scheduler runs on the one loaded
database, round-robin, --repeat times.

  --dir PATH         database directory (new or empty; required)
  --hot-records N    records of the hot table (default 20000000)
  --cold-records N   records of the cold table (default 2000000)
  --cold-pct P[,P]   percent of transactions that are storage-bound (default 10)
  --cache-cold C     on | off: whether cold records read stay in memory (default on);
                     off is MosaicDB's setup, every cold access an I/O
  --rw               half of the transactions read-modify-write their 10 records (a
                     cold record updated stays in memory, even with --cache-cold off)
  --read-batch N     a worker's cold reads issued together, up to N with one kernel entry
                     (ExecOptions::read_batch, 1..64; default 8; 1: each at once)
  --read-window-us U the oldest of them waits at most U us (default 200, at most 100000)
  --profile-stages   charge the workers' time to the stages of the storage path
                     (ExecOptions::profile_storage) and print each stage's time per
                     cold read (costs two clock reads per stage entered)
  --mode M[,M]       sequential | prefetch | nested | interleaved | auto | all
                     (default sequential,interleaved); the sequential modes read cold
                     records synchronously and ignore --scheduler
  --scheduler S[,S]  batch | pipeline | storage-batch | dual-queue | all (default dual-queue)
  --storage-path P[,P]  nested | flattened | all: interleaved's cold-read path as a nested
                     coroutine (selective nesting, default) or inlined into the operation's
                     coroutine (MosaicDB Fig. 11; mode nested nests every path)
  --batch N          slots of batch and storage-batch (default 8)
  --pipeline-slots N slots of pipeline (default 16, MosaicDB's)
  --hot-slots N      dual-queue's hot queue (default 8)
  --cold-slots N[,N] dual-queue's cold queue (default 16); a list runs dual-queue once
                     per size (labelled dual-queue@N)
  --check-every N    hot completions between two looks at the cold queue (default 8)
  --threads T        workers (default 1)
  --seconds S        per run (default 5)
  --repeat R         rounds over every combination (default 1)
  --value-bytes V    value length (default 8, MosaicDB's)
  --seed N           random seed (default 1)
  --commit C         durable | async (default durable)
  --log-sync S       fdatasync | dsync | direct (default fdatasync)
  --sq-poll-cpu C    off | a CPU: a kernel thread pinned to CPU C submits the workers' I/O
                     (io_uring SQPOLL; DurabilityOptions::sq_poll_cpu; default off)
  --checkpoint-mib M checkpoint after the logs grew M MiB (default 1024; 0: never)
  --prefault-mib M   version memory made resident at open (default 0)
  --prefault-index-mib M  index node memory made resident at open (default 0)
  --l2-kib K         the per-core cache the trees are sized against (default 0: the machine's)
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl;
                     'none' to skip)
)";
}

int coldmix_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    return usage_error("coldmix", err, coldmix_usage());
  }
  const std::uint32_t slots = std::max(
      {cfg.batch, cfg.pipeline_slots,
       cfg.hot_slots + *std::max_element(cfg.cold_slots.begin(), cfg.cold_slots.end()),
       // kAuto's largest hot queue with its cold queue
       16 + 16 * *std::max_element(cfg.cold_slots.begin(), cfg.cold_slots.end()) / cfg.hot_slots});
  Options options;
  if (std::string e =
          bench_options(cfg.threads, std::min<std::uint32_t>(slots, 256), cfg.db, &options);
      !e.empty()) {
    std::fprintf(stderr, "braid-bench coldmix: %s\n", e.c_str());
    return 2;
  }
  std::unique_ptr<Database> db = open_bench_db(options);
  if (db == nullptr) return 1;
  Result<Table*> hot = db->create_table("hot");
  Result<Table*> cold = db->create_table("cold");
  if (!hot.is_ok() || !cold.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s\n",
                 (hot.is_ok() ? cold.status() : hot.status()).to_string().c_str());
    return 1;
  }
  const auto t0 = Clock::now();
  double seconds = 0;  // both tables: the total is timed below
  Status s = ycsb_bulk_load(*db, **hot, cfg.hot_records, 8, cfg.value_bytes,
                            {.keep_in_memory = true}, "loading hot", &seconds);
  if (s.is_ok()) {
    s = ycsb_bulk_load(*db, **cold, cfg.cold_records, 8, cfg.value_bytes, {.keep_in_memory = false},
                       "loading cold", &seconds);
  }
  if (s.is_ok()) s = db->set_cache_reads(**cold, cfg.cache_cold);
  if (!s.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", s.to_string().c_str());
    return 1;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "braid-bench coldmix: %s hot + %s cold records (cold cached: %s), %s, %u thread%s, "
      "value %u B, load %.1f s\n",
      with_commas(cfg.hot_records).c_str(), with_commas(cfg.cold_records).c_str(),
      cfg.cache_cold ? "on" : "off", cfg.rw ? "50% read-only / 50% RMW" : "read-only", cfg.threads,
      cfg.threads == 1 ? "" : "s", cfg.value_bytes, load_s);
  std::printf("  %-36s %10s %10s %9s %8s %6s %8s %8s %9s %9s\n", "variant", "txn_per_s", "hot/s",
              "cold/s", "iops", "depth", "hot_p50", "hot_p99", "cold_p50", "cold_p99");

  const std::vector<Variant> variants = variants_of(cfg);
  std::vector<std::vector<double>> rates(variants.size());
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t stream = 0;
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    for (std::size_t i = 0; i < variants.size(); ++i) {
      RunResult r;
      if (Status st = run_variant(*db, **hot, **cold, cfg, variants[i], stream++, &r);
          !st.is_ok()) {
        std::fprintf(stderr, "braid-bench: run failed: %s\n", st.to_string().c_str());
        return 1;
      }
      rates[i].push_back(r.txn_per_s);
      errors += r.total.errors;
      if (first_error.empty()) first_error = r.total.first_error;
      if (r.total.sink == 1) std::fprintf(stderr, " ");
      if (std::string e = report(cfg, variants[i], r, rep, load_s); !e.empty()) {
        std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
        return 1;
      }
    }
  }
  std::printf("  latencies in us; iops: cold reads per second; depth: mean reads in flight\n");
  std::vector<std::string> labels;
  for (const Variant& v : variants) labels.push_back(v.label);
  // The ratio table grows with the square of the variants: only for a handful.
  if (cfg.repeat > 1 && variants.size() <= 8) print_rounds_summary(labels, rates, "txn/s");
  std::printf("  peak RSS %.1f MiB\n", peak_rss_mib());
  return run_exit(errors, first_error);
}

}  // namespace braid::bench
