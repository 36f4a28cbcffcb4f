// braid-bench churn: the workload of a session store, a cache, a queue or an order book. The
// live set stays constant: every transaction removes --keys-per-txn live keys and inserts as
// many new ones (each a key never used before, ascending), so every key written is a key that
// must, sooner or later, give its memory back. --pattern fifo removes the oldest live keys (a
// queue: inserts at the index's tail, removals at its head), random removes live keys picked
// at random. A round writes --live keys; after each the run prints and records what the
// process and the database hold: resident memory, index nodes, live versions, the directory's
// size. A store that reclaims keeps them flat while the keys written grow without bound.
//
// Each worker owns a share of the live set (a slot array: slot i holds the key now live
// there), so two transactions never pick the same key; a slot takes its new key when the
// transaction's body succeeds (the commit of disjoint writes under snapshot isolation does
// not refuse them).
#include "churn.h"
#include "command.h"

#include <braid/braid.h>
#include <braid/tx.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
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

constexpr std::uint32_t kMaxKeysPerTxn = 16;
constexpr std::uint32_t kKeyBytes = 8;

struct Config {
  std::uint64_t live;
  std::uint32_t rounds;
  std::uint32_t keys_per_txn;
  std::uint32_t value_bytes;
  std::string pattern;  // fifo | random
  std::string mode;
  std::string scheduler;
  std::uint32_t batch;
  std::uint32_t threads;
  std::uint64_t seed;
  std::string json;
  DbFlags db;
};

// A worker's share of the live set and its transactions. Slots are touched only by this
// generator's transactions, which its worker runs one at a time or interleaved, never in
// parallel: plain memory is enough.
class ChurnGenerator : public TxnGenerator {
 public:
  ChurnGenerator(Table& table, const Config& cfg, std::uint64_t first_slot,
                 std::uint64_t slot_count, std::atomic<std::uint64_t>* next_key, std::uint64_t seed)
      : table_(table),
        cfg_(cfg),
        slots_(slot_count),
        next_key_(next_key),
        rng_(seed),
        value_(cfg.value_bytes, 'v') {
    // The initial load wrote keys 0..live-1; this share holds a contiguous range of them, so
    // FIFO's cursor starts at the oldest.
    for (std::uint64_t i = 0; i < slot_count; ++i) slots_[i] = first_slot + i;
  }

  // A round: transactions until `budget` keys were written (shared by every generator).
  void start_round(std::atomic<std::int64_t>* budget) { budget_ = budget; }

  bool next(Tx& tx, Task<Status>* task) override {
    const std::uint32_t k = cfg_.keys_per_txn;
    if (budget_->fetch_sub(k, std::memory_order_relaxed) <= 0) return false;
    std::array<std::uint32_t, kMaxKeysPerTxn> picks{};
    for (std::uint32_t j = 0; j < k; ++j) {
      if (cfg_.pattern == "fifo") {
        picks[j] = static_cast<std::uint32_t>(cursor_);
        cursor_ = cursor_ + 1 == slots_.size() ? 0 : cursor_ + 1;
      } else {
        // Distinct slots: a slot picked twice would remove one key and insert two.
        do {
          picks[j] = static_cast<std::uint32_t>(rng_.uniform(slots_.size()));
        } while (std::find(picks.begin(), picks.begin() + j, picks[j]) != picks.begin() + j);
      }
    }
    const std::uint64_t first_new = next_key_->fetch_add(k, std::memory_order_relaxed);
    *task = churn(tx, picks, first_new);
    return true;
  }

  void finished(const Status& s, std::uint64_t) override { outcomes.count(s); }

  Outcomes outcomes;

 private:
  // By value: the picks outlive next()'s frame (lazy task).
  Task<Status> churn(Tx& tx, std::array<std::uint32_t, kMaxKeysPerTxn> picks,
                     std::uint64_t first_new) {
    const std::uint32_t k = cfg_.keys_per_txn;
    char key[kKeyBytes];
    for (std::uint32_t j = 0; j < k; ++j) {
      make_key(slots_[picks[j]], kKeyBytes, key);
      if (Status s = co_await tx.remove(table_, std::string_view(key, kKeyBytes)); !s.is_ok()) {
        co_return s;
      }
    }
    for (std::uint32_t j = 0; j < k; ++j) {
      make_key(first_new + j, kKeyBytes, key);
      if (Status s = co_await tx.insert(table_, std::string_view(key, kKeyBytes), value_);
          !s.is_ok()) {
        co_return s;
      }
    }
    // Each picked slot takes one of the new keys.
    for (std::uint32_t j = 0; j < k; ++j) slots_[picks[j]] = first_new + j;
    co_return Status::ok();
  }

  Table& table_;
  const Config& cfg_;
  std::vector<std::uint64_t> slots_;
  std::atomic<std::uint64_t>* next_key_;
  util::Rng rng_;
  std::size_t cursor_ = 0;
  const std::string value_;
  std::atomic<std::int64_t>* budget_ = nullptr;
};

double current_rss_mib() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE))) /
         (1 << 20);
}

double dir_mib(const std::string& dir) {
  if (dir.empty()) return 0;
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fe;
    if (it->is_regular_file(fe)) bytes += it->file_size(fe);
  }
  return static_cast<double>(bytes) / (1 << 20);
}

std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  cfg->live = flags.u64("live", 1'000'000, 16, std::uint64_t{1} << 32);
  cfg->rounds = static_cast<std::uint32_t>(flags.u64("rounds", 20, 1, 100'000));
  cfg->keys_per_txn = static_cast<std::uint32_t>(flags.u64("keys-per-txn", 4, 1, kMaxKeysPerTxn));
  cfg->value_bytes = static_cast<std::uint32_t>(flags.u64("value-bytes", 32, 0, 4000));
  cfg->pattern = flags.choice("pattern", "fifo", {"fifo", "random"});
  cfg->mode = flags.choice("mode", "interleaved", exec_mode_names());
  cfg->scheduler = flags.choice("scheduler", "batch", scheduler_names());
  cfg->batch = static_cast<std::uint32_t>(flags.u64("batch", 8, 1, 64));
  cfg->threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 256));
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->db = DbFlags::parse(flags);
  if (!err.empty() || !flags.finish(&err)) return err;
  if (cfg->live < std::uint64_t{cfg->threads} * cfg->keys_per_txn * 4) {
    return "--live must be at least 4 x --threads x --keys-per-txn (each worker's share must "
           "outnumber its transaction's keys)";
  }
  return "";
}

}  // namespace

const char* churn_usage() {
  return R"(usage: braid-bench churn [flags]
A constant live set under churn: every transaction removes --keys-per-txn live keys and
inserts as many new ones, so keys come and go while the number alive stays --live. Each
round writes --live keys and reports the process's resident memory, index nodes, live
versions and the directory's size beside the round's throughput: a store that reclaims keeps
them flat.
  --live N           live keys (default 1000000; loaded first)
  --rounds R         rounds of --live keys written each (default 20)
  --keys-per-txn K   keys removed and inserted per transaction (default 4, at most 16)
  --pattern P        fifo (remove the oldest: a queue) | random (default fifo)
  --value-bytes V    value length (default 32)
  --mode M           execution mode (default interleaved)
  --scheduler S      scheduler of the interleaving modes (default batch)
  --batch N          open transactions per worker (default 8)
  --threads T        workers (default 1)
  --seed S           random picks (default 1)
  --dir DIR          a fresh database directory (default: in memory); with --commit,
                     --log-sync, --checkpoint-mib, --checkpoint-part-kib (parts of a
                     checkpoint; 0: as large as log segments), --memory-budget-mib,
                     --prefault-mib; dir_peak_mib is the largest size sampled every 10 ms
  --json FILE        append one JSON line per round (default results/braid-bench.jsonl;
                     'none' to skip)
)";
}

int churn_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    return usage_error("churn", err, churn_usage());
  }
  Options options;
  if (std::string e = bench_options(cfg.threads, cfg.batch, cfg.db, &options); !e.empty()) {
    return usage_error("churn", e, churn_usage());
  }
  std::unique_ptr<Database> db = open_bench_db(options);
  if (db == nullptr) return 1;
  Result<Table*> table = db->create_table("churn");
  if (!table.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s\n", table.status().to_string().c_str());
    return 1;
  }
  // The directory's size between round ends too (and during the load, round 0): a checkpoint
  // under way holds more than either end shows. A thread of the benchmark's (measuring, not part of
  // the engine).
  std::atomic<bool> sampling{!cfg.db.dir.empty()};
  std::atomic<std::uint64_t> dir_peak_kib{0};
  std::thread sampler([&] {
    while (sampling.load(std::memory_order_relaxed)) {
      const auto kib = static_cast<std::uint64_t>(dir_mib(cfg.db.dir) * 1024);
      std::uint64_t seen = dir_peak_kib.load(std::memory_order_relaxed);
      while (kib > seen && !dir_peak_kib.compare_exchange_weak(seen, kib)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  struct Join {
    std::atomic<bool>* flag;
    std::thread* t;
    ~Join() {
      flag->store(false);
      t->join();
    }
  } join{&sampling, &sampler};
  double load_s = 0;
  if (Status s =
          ycsb_load(*db, **table, cfg.live, kKeyBytes, cfg.value_bytes, cfg.threads, &load_s);
      !s.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", s.to_string().c_str());
    return 1;
  }
  std::atomic<std::uint64_t> next_key{cfg.live};
  std::vector<std::unique_ptr<ChurnGenerator>> gens;
  std::vector<TxnGenerator*> ptrs;
  const std::uint64_t share = cfg.live / cfg.threads;
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    const std::uint64_t from = t * share;
    const std::uint64_t count = t + 1 == cfg.threads ? cfg.live - from : share;
    gens.push_back(std::make_unique<ChurnGenerator>(**table, cfg, from, count, &next_key,
                                                    cfg.seed * 7919 + t));
    ptrs.push_back(gens.back().get());
  }
  ExecOptions e = options.exec;
  (void)parse_exec_mode(cfg.mode, &e.mode);
  (void)parse_scheduler(cfg.scheduler, &e.scheduler);
  e.batch = cfg.batch;

  std::printf("braid-bench churn: %s live keys, %s pattern, %u keys/txn, %s/%s, %u worker(s), %s\n",
              with_commas(cfg.live).c_str(), cfg.pattern.c_str(), cfg.keys_per_txn,
              cfg.mode.c_str(), cfg.scheduler.c_str(), cfg.threads,
              cfg.db.dir.empty() ? "in memory" : cfg.db.dir.c_str());
  std::printf("  %5s %12s %12s %9s %11s %13s %13s %9s %9s %11s\n", "round", "keys_written",
              "live_records", "rss_mib", "index_nodes", "live_versions", "tombstones", "dir_mib",
              "dir_peak", "txn_per_s");
  auto report = [&](std::uint32_t round, std::uint64_t written, double txn_per_s) -> bool {
    const DatabaseStats st = db->stats();
    const double rss = current_rss_mib();
    const double dir = dir_mib(cfg.db.dir);
    const double dir_peak = std::max(dir, static_cast<double>(dir_peak_kib.exchange(0)) / 1024);
    std::printf("  %5u %12s %12s %9.1f %11s %13s %13s %9.1f %9.1f %11.0f\n", round,
                with_commas(written).c_str(), with_commas(st.records).c_str(), rss,
                with_commas(st.index_nodes).c_str(), with_commas(st.live_versions).c_str(),
                with_commas(st.tombstones_pending).c_str(), dir, dir_peak, txn_per_s);
    std::fflush(stdout);
    if (cfg.json == "none") return true;
    JsonObject o;
    o.add("bench", "churn").add("time", iso_time());
    o.add("round", round).add("keys_written", written).add("live_records", st.records);
    o.add("rss_mib", rss).add("index_nodes", st.index_nodes);
    o.add("index_nodes_free", st.index_nodes_free).add("live_versions", st.live_versions);
    o.add("tombstones_pending", st.tombstones_pending).add("oids_free", st.oids_free);
    o.add("dir_mib", dir).add("dir_peak_mib", dir_peak).add("txn_per_s", txn_per_s);
    // Cumulative since open: what the directory's growth and the round's speed follow.
    const DurabilityStats d = db->durability_stats();
    o.add("checkpoints", d.checkpoints).add("log_flushes", d.log_flushes);
    o.add("checkpoint_parts_passed", d.checkpoint_parts_passed);
    o.add("checkpoint_roll_misses", d.checkpoint_roll_misses);
    o.add("checkpoint_part_kib", cfg.db.checkpoint_part_kib);
    o.add("log_mib", static_cast<double>(d.log_bytes) / (1 << 20));
    o.add("live", cfg.live).add("pattern", cfg.pattern).add("keys_per_txn", cfg.keys_per_txn);
    o.add("value_bytes", cfg.value_bytes).add("mode", cfg.mode).add("scheduler", cfg.scheduler);
    o.add("batch", cfg.batch).add("threads", cfg.threads);
    o.add("dir", cfg.db.dir.empty() ? "none" : "yes");
    o.add("memory_budget_mib", cfg.db.memory_budget_mib);
    o.add_object("machine", machine_description());
    if (std::string err = append_json_line(cfg.json, o); !err.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", err.c_str());
      return false;
    }
    return true;
  };
  if (!report(0, 0, 0)) return 1;
  std::uint64_t errors = 0;
  std::string first_error;
  for (std::uint32_t round = 1; round <= cfg.rounds; ++round) {
    std::atomic<std::int64_t> budget{static_cast<std::int64_t>(cfg.live)};
    for (auto& g : gens) g->start_round(&budget);
    std::uint64_t commits_before = 0;
    for (auto& g : gens) commits_before += g->outcomes.commits;
    const auto start = Clock::now();
    if (Status s = db->run(ptrs, e); !s.is_ok()) {
      std::fprintf(stderr, "braid-bench: run failed: %s\n", s.to_string().c_str());
      return 1;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::uint64_t commits = 0;
    for (auto& g : gens) {
      commits += g->outcomes.commits;
      errors += g->outcomes.errors;
      if (first_error.empty()) first_error = g->outcomes.first_error;
      g->outcomes.errors = 0;
      g->outcomes.first_error.clear();
    }
    const std::uint64_t written = next_key.load() - cfg.live;
    if (!report(round, written, static_cast<double>(commits - commits_before) / secs)) return 1;
  }
  std::printf("  load %.1f s, peak RSS %.1f MiB\n", load_s, peak_rss_mib());
  return run_exit(errors, first_error);
}

}  // namespace braid::bench
